"""Strongly connected components, maintained under edge insertions and deletions.

The doubly nested fixed point of CIDR 2013 Fig. 7/8 (``ivm.library.graphs``):

* ``trim(E)``: label every node with the smallest node id that reaches it along ``E`` (an
  inner min-label fixed point), keep the edges whose two endpoints got the same label —
  an edge between different labels cannot be on a cycle — and reverse them;
* ``SCC edges = fixed point of  E -> trim(trim(E))`` (forward, then on the reversed graph),
  which converges to the edges inside strongly connected components;
* components: min-label propagation over the remaining edges (undirected).

So the loop that trims is itself iterated: two levels of loop coordinates in every time.
The engine maintains all of it incrementally; each step deletes and inserts a few random
edges, and the result is compared with networkx (SCCs of at least two nodes, labelled by
their smallest node).

Run:  python examples/scc.py [--nodes 1000] [--edges 1300] [--steps 50] [--batch 5]
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
from edge_churn import churn, churn_arguments, compare_labels, random_edges, smallest_member_labels

import ivm
from ivm.library.graphs import strongly_connected_components


def main(argv: list[str] | None = None) -> dict:
    ap = churn_arguments(
        __doc__.splitlines()[0],
        nodes=1000,
        edges=1300,
        batch=5,
        seed=7,
        edges_help="about 1.3 edges per node gives a mix of SCC sizes",
    )
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)

    # The dataflow: directed edges in, (node, SCC label) out.
    g = ivm.Dataflow("scc")
    edges = g.input("edges", [("src", "int64"), ("dst", "int64")])
    scc = g.output(strongly_connected_components(edges), "scc")

    live: set[tuple[int, int]] = set()
    initial = random_edges(rng, a.nodes, a.edges, live, directed=True)
    edges.insert(initial)
    rep = g.step()
    ref = nx.DiGraph(initial)

    def sizes(labels: dict[int, int]) -> list[int]:
        return (
            sorted(np.unique(list(labels.values()), return_counts=True)[1].tolist(), reverse=True)
            if labels
            else []
        )

    def check(step: int) -> dict[int, int]:
        want = smallest_member_labels(nx.strongly_connected_components(ref))
        return compare_labels(step, scc.counts(), want, "SCC labels")

    mine = check(0)
    print(
        f"initial: {len(initial)} edges, SCC sizes {sizes(mine)[:8]} ..., "
        f"{rep.differences:,} differences, {rep.seconds * 1e3:.0f} ms, "
        f"{len(g.metrics.by_iteration(rep.epoch))} (outer, inner) loop times"
    )

    checks = 1
    for step in range(1, a.steps + 1):
        gone, new = churn(rng, a, live, edges, ref)
        rep = g.step()
        if step <= 3 or step == a.steps:
            print(
                f"step {step}: -{len(gone)} +{len(new)} edges -> "
                f"{scc.changes().num_rows} output changes, {rep.differences:,} differences, "
                f"{rep.seconds * 1e3:.0f} ms"
            )
        if (a.check_every and step % a.check_every == 0) or step == a.steps:
            mine = check(step)
            checks += 1
    print(f"ok: SCCs equal networkx's at {checks} checked steps (largest SCCs {sizes(mine)[:5]})")
    return dict(checks=checks, steps=a.steps, nodes=len(mine))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"done in {time.perf_counter() - t0:.1f}s")
