"""CPU time of a refresh, measured where the wall clock cannot be: ``python -m bench
refresh-cpu``.

The workload of ``bench refresh`` (orders ⋈ customers, aggregated; ``--rows`` orders), without
Spark: per change size, 3 warm-up refreshes, then ``--refreshes`` timed ones, each with
``time.process_time`` (this process's CPU time, all its threads) and the wall clock.  On a
machine shared with other work the wall clock measures the queue for a core and the disk's
journal; CPU time moves far less, so two trees can be compared in the same minutes: run the
module from each tree in turn (``cd TREE && PYTHONPATH=. python -m bench refresh-cpu``).
Prints the tenth percentile, minimum, median and mean of CPU per refresh (the mean includes
the periodic base checkpoints, catalog.pipeline.meta, which the median leaves out) and the
median wall time and phase timings (wall); results go to ``bench/results/refresh_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "refresh_cpu.json"


def main(argv: list[str]) -> int:
    from bench import bench_refresh as br

    ap = argparse.ArgumentParser(prog="python -m bench refresh-cpu")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--refreshes", type=int, default=20)
    ap.add_argument("--changes", type=int, nargs="+", default=[10, 1_200])
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument(
        "--phase-cpu",
        action="store_true",
        help="also the CPU of each phase alone (catalog.pipeline.phases' recover, "
        "read_inputs, step, write_outputs, commit, collect_garbage) and of the rest of the "
        "refresh (the Session's and the pipeline's own work: 'outside'), median ms",
    )
    args = ap.parse_args(argv)
    phase_cpu: dict[str, float] = {}
    if args.phase_cpu:
        _time_phases(phase_cpu)
    root = Path(tempfile.mkdtemp(prefix="ivm-bench-cpu-"))
    try:
        rng = np.random.default_rng(0)
        s = br.setup(root / "wh", args.rows, rng)
        s.create_view("revenue", br.VIEW)
        next_id = args.rows
        sizes: list[dict[str, Any]] = []
        for n in args.changes:
            for _ in range(3):  # past the first refreshes' one-off work
                next_id = br._change(s, rng, n, next_id)
                s.refresh()
            cpu, wall, phases = [], [], []
            alone: dict[str, list[float]] = {}
            phase_cpu.clear()
            for _ in range(args.refreshes):
                next_id = br._change(s, rng, n, next_id)
                c, t = time.process_time(), time.perf_counter()
                (r,) = s.refresh()
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                phases.append(r.timings)
                for k, v in phase_cpu.items():
                    alone.setdefault(k, []).append(v)
                if phase_cpu:
                    alone.setdefault("outside", []).append(cpu[-1] - sum(phase_cpu.values()))
                phase_cpu.clear()
            q = sorted(cpu)
            row = {
                "change_rows": n,
                "cpu_ms_p10": q[len(q) // 10] * 1000,
                "cpu_ms_min": q[0] * 1000,
                "cpu_ms_median": statistics.median(cpu) * 1000,
                "cpu_ms_mean": statistics.mean(cpu) * 1000,
                "wall_ms_median": statistics.median(wall) * 1000,
                "phase_ms_median": {
                    k: statistics.median(p[k] for p in phases) * 1000 for k in phases[0]
                },
                "loadavg_1m": os.getloadavg()[0],
            }
            if alone:
                row["phase_cpu_ms_median"] = {
                    k: statistics.median(v) * 1000 for k, v in alone.items()
                }
            sizes.append(row)
            print(
                f"{n:>6}-row change: CPU p10 {row['cpu_ms_p10']:.2f} ms, min "
                f"{row['cpu_ms_min']:.2f}, median {row['cpu_ms_median']:.2f}, mean "
                f"{row['cpu_ms_mean']:.2f}; wall median "
                f"{row['wall_ms_median']:.1f} ms (load {row['loadavg_1m']:.1f})"
            )
            for k, v in row.get("phase_cpu_ms_median", {}).items():
                print(f"        {k}: CPU median {v:.3f} ms")
        result = {"benchmark": "refresh-cpu", "rows": args.rows, "sizes": sizes}
        Path(args.out).write_text(json.dumps(result, indent=1))
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _time_phases(into: dict[str, float]) -> None:
    """Wrap every phase so that each call adds its CPU time to ``into`` (by phase name, as
    in the refresh report's timings)."""
    from catalog.pipeline import phases as ph

    def timed(fn: Any, name: str) -> Any:
        def run(*args: Any, **kw: Any) -> Any:
            c = time.process_time()
            try:
                return fn(*args, **kw)
            finally:
                into[name] = into.get(name, 0.0) + time.process_time() - c

        return run

    for fn, name in (
        ("recover", "recover"),
        ("read_inputs", "read"),
        ("step", "engine"),
        ("write_outputs", "write"),
        ("commit", "commit"),
        ("collect_garbage", "gc"),
    ):
        setattr(ph, fn, timed(getattr(ph, fn), name))
