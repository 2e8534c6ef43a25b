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

import edge_churn
import networkx as nx
import numpy as np

from ivm.library.graphs import strongly_connected_components


def main(argv: list[str] | None = None) -> dict:
    ap = edge_churn.churn_arguments(
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
    g, edges, scc = edge_churn.edge_dataflow("scc", strongly_connected_components, "scc")
    live, initial, ref = edge_churn.initial_graph(rng, a, edges, directed=True)
    rep = g.step()

    def sizes(labels: dict[int, int]) -> list[int]:
        return (
            sorted(np.unique(list(labels.values()), return_counts=True)[1].tolist(), reverse=True)
            if labels
            else []
        )

    def check(step: int) -> dict[int, int]:
        want = edge_churn.smallest_member_labels(nx.strongly_connected_components(ref))
        return edge_churn.compare_labels(step, scc.counts(), want, "SCC labels")

    mine = check(0)
    print(
        f"initial: {len(initial)} edges, SCC sizes {sizes(mine)[:8]} ..., "
        f"{rep.differences:,} differences, {rep.seconds * 1e3:.0f} ms, "
        f"{len(g.metrics.by_iteration(rep.epoch))} (outer, inner) loop times"
    )

    checks, mine = edge_churn.churn_steps(rng, a, (g, edges, scc), live, ref, check)
    checks += 1  # and the initial state
    print(f"ok: SCCs equal networkx's at {checks} checked steps (largest SCCs {sizes(mine)[:5]})")
    return dict(checks=checks, steps=a.steps, nodes=len(mine))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"done in {time.perf_counter() - t0:.1f}s")
