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

import edge_churn
import networkx as nx
import numpy as np

from ivm.library.graphs import connected_components


def main(argv: list[str] | None = None) -> dict:
    ap = edge_churn.churn_arguments(
        __doc__.splitlines()[0], nodes=1000, edges=1500, batch=10, seed=1
    )
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)

    # 1. The dataflow: one input of (src, dst) edges, one output of (node, label).
    g, edges, labels = edge_churn.edge_dataflow("wcc", connected_components, "labels")

    # 2. Initial graph: push the edges, then step (one epoch).
    live, initial, ref = edge_churn.initial_graph(rng, a, edges, directed=False)
    rep = g.step()
    n_comp = len({label for (_node, label) in labels.counts()})
    print(
        f"initial: {len(initial)} edges, {n_comp} components, "
        f"{rep.differences:,} differences, {rep.seconds * 1e3:.0f} ms"
    )

    def check(step: int) -> dict[int, int]:
        want = edge_churn.smallest_member_labels(nx.connected_components(ref))
        return edge_churn.compare_labels(step, labels.counts(), want, "labels")

    # 3. Change the graph: each step deletes some live edges, inserts new ones and steps
    #    again; the labels are checked against networkx every --check-every steps.
    checks, mine = edge_churn.churn_steps(rng, a, (g, edges, labels), live, ref, check)
    print(
        f"ok: labels equal networkx's at {checks} checked steps "
        f"({len(mine)} nodes with edges, {len(set(mine.values()))} components)"
    )
    return dict(checks=checks, steps=a.steps, nodes=len(mine))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"done in {time.perf_counter() - t0:.1f}s")
