"""A trace's probe search on runs evicted from the caches: ``python -m bench lookup``.

Compares, on sorted random uint64 sort keys (as a trace's runs hold them) and sorted probes
(as lookups pass them), one ``np.searchsorted`` per probe inside a compiled loop (how
``probe_run``/``sum_run`` searched before) with :func:`ivm.kernels.lower_bounds` (every
probe's halving steps taken together, branchless).  Before each timed call a 40 MB array is
written, evicting the run from the caches, as a step's other work and other processes do
between two lookups into a large arrangement.  Results: ``bench/results/lookup.json``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from numba import njit

from bench.cli import bench_arguments
from ivm.kernels import lower_bounds

RESULTS = Path(__file__).resolve().parent / "results"


@njit(cache=True, nogil=True)
def one_by_one(a: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The former search: one binary search after another."""
    out = np.empty(targets.shape[0], dtype=np.int64)
    for j in range(targets.shape[0]):
        out[j] = np.searchsorted(a, targets[j], side="left")
    return out


def cold_median_us(f: object, a: np.ndarray, t: np.ndarray, evict: np.ndarray, reps: int) -> float:
    """Median microseconds of ``f(a, t)`` with the caches flushed before each call."""
    times = []
    for _ in range(reps):
        evict[::8] += 1.0
        c = time.perf_counter()
        f(a, t)  # type: ignore[operator]
        times.append(time.perf_counter() - c)
    times.sort()
    return times[len(times) // 2] * 1e6


def main(argv: list[str]) -> int:
    ap = bench_arguments("python -m bench lookup", out=RESULTS / "lookup.json", steps=30, seed=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    evict = np.zeros(40_000_000 // 8)
    rows = []
    for m in (45_000, 100_000, 1_000_000):
        a = np.sort(rng.integers(0, 2**63, m).astype(np.uint64))
        for n in (10, 100, 1000):
            hits = a[rng.integers(0, m, n // 2)]
            misses = rng.integers(0, 2**63, n - n // 2).astype(np.uint64)
            t = np.sort(np.concatenate([hits, misses]))
            want = np.searchsorted(a, t)
            assert (one_by_one(a, t) == want).all() and (lower_bounds(a, t) == want).all()
            before = cold_median_us(one_by_one, a, t, evict, args.steps)
            after = cold_median_us(lower_bounds, a, t, evict, args.steps)
            rows.append(dict(run_rows=m, probes=n, one_by_one_us=before, batched_us=after))
            print(
                f"run {m:>9,} rows, {n:>4} probes: one by one {before:7.1f} µs, "
                f"batched {after:7.1f} µs ({before / after:.2f}×)"
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "lookup", "reps": args.steps, "rows": rows}, indent=1))
    print(f"stored {out}")
    return 0
