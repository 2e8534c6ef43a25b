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

import time

import networkx as nx
import numpy as np
from edge_churn import churn, churn_arguments, compare_labels, random_edges, smallest_member_labels

import ivm
from ivm.library.graphs import connected_components


def main(argv: list[str] | None = None) -> dict:
    ap = churn_arguments(__doc__.splitlines()[0], nodes=1000, edges=1500, batch=10, seed=1)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)

    # 1. The dataflow: one input of (src, dst) edges, one output of (node, label).
    g = ivm.Dataflow("wcc")
    edges = g.input("edges", [("src", "int64"), ("dst", "int64")])
    labels = g.output(connected_components(edges), "labels")

    # 2. Initial graph: push the edges, then step (one epoch).
    live: set[tuple[int, int]] = set()
    initial = random_edges(rng, a.nodes, a.edges, live, directed=False)
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
        gone, new = churn(rng, a, live, edges, ref)
        rep = g.step()
        # The output's changes of this epoch: (node, label, __diff__) rows.
        changed = labels.changes().num_rows
        if step <= 3 or step == a.steps:
            print(
                f"step {step}: -{len(gone)} +{len(new)} edges -> {changed} label changes, "
                f"{rep.differences:,} differences, {rep.seconds * 1e3:.0f} ms"
            )
        if (a.check_every and step % a.check_every == 0) or step == a.steps:
            want = smallest_member_labels(nx.connected_components(ref))
            mine = compare_labels(step, labels.counts(), want, "labels")
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
