"""Triangles on a skewed graph: state of the binary plan vs the delta-query plan.

``python -m bench triangles [--nodes N] [--edges M] [--hubs H] [--steps S]``

The binary plan arranges ``(a,b) ⋈ (a,c)``: a node of degree d contributes d² rows, so its
state grows with the sum of squared degrees.  The delta-query plan (ivm.collection.delta_join)
arranges only the edges.  Reported: rows held in arrangements by each plan (counted, not
timed), the sum of squared out-degrees, and the per-change latency of each plan on the same
random edge changes; both outputs are checked equal after every step.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import numpy as np

import ivm
from bench.cli import bench_arguments
from ivm.collection import delta_join

TRIANGLE = [((0, "a"), (1, "a")), ((0, "b"), (2, "a")), ((1, "b"), (2, "b"))]
RESULTS = Path(__file__).parent / "results" / "triangles.json"


def skewed_edges(n: int, m: int, hubs: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` distinct directed edges; ``hubs`` nodes are the source of half of them."""
    hub_src = rng.integers(0, hubs, m // 2)
    other_src = rng.integers(hubs, n, m - m // 2)
    src = np.concatenate([hub_src, other_src])
    dst = rng.integers(0, n, m)
    e = np.unique(np.stack([src, dst], 1), axis=0)
    return e[e[:, 0] != e[:, 1]]


def binary_triangles(e: ivm.Collection) -> ivm.Collection:
    ab_ac = e.join(e, on=[("a", "a")])
    return ab_ac.join(e, on=[("b", "a"), ("b_r", "b")])


def run_plan(plan: str, edges: np.ndarray, steps: list[tuple[np.ndarray, np.ndarray]]) -> dict:
    g = ivm.Dataflow(plan)
    e = g.input("e", [("a", "int64"), ("b", "int64")])
    coll = delta_join([e, e, e], TRIANGLE) if plan == "delta" else binary_triangles(e)
    out = g.output(coll, "triangles")
    e.insert({"a": edges[:, 0], "b": edges[:, 1]})
    t = time.perf_counter()
    g.step()
    initial = time.perf_counter() - t
    lat, outputs = [], []
    for rem, add in steps:
        e.delete({"a": rem[:, 0], "b": rem[:, 1]})
        e.insert({"a": add[:, 0], "b": add[:, 1]})
        t = time.perf_counter()
        g.step()
        lat.append(time.perf_counter() - t)
        outputs.append(len(out.changes()))
    state = sum(g.arrangement_rows().values())
    return {
        "initial_s": initial,
        "median_ms": 1000 * statistics.median(lat),
        "p90_ms": 1000 * float(np.percentile(lat, 90)),
        "arrangement_rows": state,
        "triangles": sum(out.counts().values()),
        "changes_per_step": outputs,
    }


def main(argv: list[str]) -> int:
    ap = bench_arguments(
        "python -m bench triangles", nodes=20_000, edges=40_000, hubs=5, steps=10, batch=10, seed=7
    )
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    edges = skewed_edges(a.nodes, a.edges, a.hubs, rng)
    cur = edges
    steps = []
    for _ in range(a.steps):
        idx = rng.choice(len(cur), a.batch, replace=False)
        rem = cur[idx]
        add = skewed_edges(a.nodes, a.batch * 2, a.hubs, rng)[: a.batch]
        add = np.array([r for r in add.tolist() if r not in cur.tolist()])[: a.batch]
        cur = np.concatenate([np.delete(cur, idx, 0), add])
        steps.append((rem, add))
    deg = np.bincount(edges[:, 0])
    results = {
        "edges": len(edges),
        "sum_sq_out_degree": int((deg.astype(np.int64) ** 2).sum()),
        "max_out_degree": int(deg.max()),
    }
    for plan in ("delta", "binary"):
        results[plan] = run_plan(plan, edges, steps)
    assert results["delta"]["triangles"] == results["binary"]["triangles"]
    assert results["delta"]["changes_per_step"] == results["binary"]["changes_per_step"]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(
        f"edges {results['edges']:,}, max out-degree {results['max_out_degree']:,}, "
        f"sum of squared out-degrees {results['sum_sq_out_degree']:,}"
    )
    print("| plan | rows in arrangements | rows / edges | initial s | median ms | p90 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for plan in ("delta", "binary"):
        r = results[plan]
        print(
            f"| {plan} | {r['arrangement_rows']:,} | {r['arrangement_rows'] / len(edges):.1f} "
            f"| {r['initial_s']:.2f} | {r['median_ms']:.1f} | {r['p90_ms']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
