"""Weakly connected components, maintained under edge insertions and deletions.

Each node's label is the smallest node id in its component, found by min-label propagation:
every node starts with its own id, and each round a node takes the smallest label among
itself and its neighbours (``ivm.library.graphs.connected_components``, a fixed point of
join + min; CIDR 2013 §4).  The engine keeps the whole computation (every round of the
loop) as differences, so after a change only the labels it actually affects are recomputed.

Run:  python examples/wcc.py [--nodes 1000] [--edges 1500] [--steps 50] [--batch 10]

Each step deletes ``batch`` random existing edges and inserts ``batch`` new ones; the labels
are compared with networkx after every step (``--check-every``), and at the end.
"""

from __future__ import annotations

import argparse
import time

import networkx as nx
import numpy as np

import ivm
from ivm.library.graphs import connected_components


def reference_labels(graph: nx.Graph) -> dict[int, int]:
    """networkx: node -> smallest node id of its component (nodes with an edge only)."""
    out = {}
    for comp in nx.connected_components(graph):
        if len(comp) > 1:
            m = min(comp)
            out.update(dict.fromkeys(comp, m))
    return out


def random_edges(rng: np.random.Generator, n: int, k: int, avoid: set) -> list[tuple[int, int]]:
    """``k`` new undirected edges (no loops, none in ``avoid``)."""
    out: list[tuple[int, int]] = []
    while len(out) < k:
        a, b = (int(x) for x in rng.integers(0, n, size=2))
        e = (min(a, b), max(a, b))
        if a != b and e not in avoid:
            avoid.add(e)
            out.append(e)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--edges", type=int, default=1500)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=10, help="edges deleted and inserted per step")
    ap.add_argument(
        "--check-every",
        type=int,
        default=1,
        help="compare with networkx every k steps (0: only at the end)",
    )
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)

    # 1. The dataflow: one input of (src, dst) edges, one output of (node, label).
    g = ivm.Dataflow("wcc")
    edges = g.input("edges", [("src", "int64"), ("dst", "int64")])
    labels = g.output(connected_components(edges), "labels")

    # 2. Initial graph: push the edges, then step (one epoch).
    live: set[tuple[int, int]] = set()
    initial = random_edges(rng, a.nodes, a.edges, live)
    edges.insert(initial)
    rep = g.step()
    ref = nx.Graph(initial)
    n_comp = len({label for (_node, label) in labels.counts()})
    print(
        f"initial: {len(initial)} edges, {n_comp} components, "
        f"{rep.differences:,} differences, {rep.seconds * 1e3:.0f} ms"
    )

    checks = 0
    for step in range(1, a.steps + 1):
        # 3. Change the graph: delete some live edges, insert new ones, step again.
        gone = [tuple(e) for e in rng.permutation(sorted(live))[: a.batch].tolist()]
        live.difference_update(gone)
        new = random_edges(rng, a.nodes, a.batch, live)
        edges.delete(gone)
        edges.insert(new)
        rep = g.step()
        ref.remove_edges_from(gone)
        ref.add_edges_from(new)
        # The output's changes of this epoch: (node, label, __diff__) rows.
        changed = labels.changes().num_rows
        if step <= 3 or step == a.steps:
            print(
                f"step {step}: -{len(gone)} +{len(new)} edges -> {changed} label changes, "
                f"{rep.differences:,} differences, {rep.seconds * 1e3:.0f} ms"
            )
        if (a.check_every and step % a.check_every == 0) or step == a.steps:
            got = dict(labels.counts())  # {(node, label): 1}
            mine = {node: label for (node, label) in got}
            if len(mine) != len(got):
                raise AssertionError(f"step {step}: a node has two labels")
            want = reference_labels(ref)
            if mine != want:
                bad = [v for v in set(mine) | set(want) if mine.get(v) != want.get(v)]
                raise AssertionError(
                    f"step {step}: {len(bad)} labels differ from networkx, "
                    f"e.g. node {bad[0]}: {mine.get(bad[0])} vs "
                    f"{want.get(bad[0])}"
                )
            checks += 1
    print(
        f"ok: labels equal networkx's at {checks} checked steps "
        f"({len(mine)} nodes with edges, {len(set(mine.values()))} components)"
    )
    return dict(checks=checks, steps=a.steps, nodes=len(mine))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"done in {time.perf_counter() - t0:.1f}s")
