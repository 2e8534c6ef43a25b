"""Creating a GROUP BY view over a 2M-row table: time, peak memory, checkpoint size (issue 15).

``python -m bench groupby [--rows N] [--groups G] [--repeat R] [--view sum|minmax]``

``events`` (``--rows`` rows: ``id``, ``k`` in ``--groups`` groups, ``v``, ``tag`` one of 50
strings, not read by the views) is written with delta-rs (not timed).  Then, in a fresh Python process each time
(so that its peak resident memory is the view's, read from ``resource.getrusage``):

* ``CREATE MATERIALIZED VIEW`` of ``--view sum`` (``SELECT k, count(*), sum(v), avg(v) FROM
  events GROUP BY k``: accumulable aggregates) or ``--view minmax`` (``count``, ``sum``,
  ``min``, ``max``: the value-counts plan, ivm/operators/value_counts.py) through a ``Session``
  (reading the table, the engine's initial computation, the checkpoint, the view table's
  first commit);
* the checkpoint's bytes on disk beside the input table's Parquet bytes.

The issue's targets: created in ≤ 8 s, peak memory ≤ 800 MB, checkpoint ≤ 2× the input's
Parquet bytes.  Results go to ``bench/results/groupby_<view>.json``.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.cli import bench_arguments

RESULTS = Path(__file__).resolve().parent / "results"
VIEWS = {
    "sum": "SELECT k, count(*) AS n, sum(v) AS total, avg(v) AS mean FROM events GROUP BY k",
    "minmax": "SELECT k, count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi "
    "FROM events GROUP BY k",
}
TAGS = 50


def _tree_bytes(root: Path, suffix: str = "") -> int:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and f.name.endswith(suffix))


def _setup(warehouse: Path, rows: int, groups: int) -> int:
    """Write ``events``; returns its Parquet bytes."""
    import numpy as np
    import pyarrow as pa

    from catalog import delta
    from spark_exec.session import Session

    rng = np.random.default_rng(0)
    s = Session(warehouse=warehouse)
    s.sql("CREATE TABLE events (id BIGINT NOT NULL, k BIGINT NOT NULL, v BIGINT, tag STRING)")
    tags = np.array([f"tag-{i:02d}" for i in range(TAGS)], dtype=object)
    delta.insert(
        s.table_path("events"),
        pa.table(
            {
                "id": np.arange(rows),
                "k": rng.integers(0, groups, rows),
                "v": rng.integers(0, 1_000_000, rows),
                "tag": pa.array(tags[rng.integers(0, TAGS, rows)]),
            }
        ),
    )
    return _tree_bytes(Path(s.table_path("events")), ".parquet")


def _create(warehouse: str, name: str, view: str) -> None:
    """In a child process: create the view; print its timing as JSON on the last line."""
    import resource

    from spark_exec.session import Session

    s = Session(warehouse=warehouse)
    before = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    (r,) = s.create_view(name, VIEWS[view])
    seconds = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    peak = after.ru_maxrss * 1024
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_seconds": cpu,
                "peak_rss_bytes": peak,
                "differences": r.differences,
                "timings": dict(r.timings),
                "rows_written": r.rows_written,
            }
        )
    )


def main(argv: list[str]) -> int:
    ap = bench_arguments("python -m bench groupby", rows=2_000_000, groups=100_000, repeat=2)
    ap.add_argument("--view", choices=sorted(VIEWS), default="sum")
    ap.add_argument("--out", default=None, help="default: bench/results/groupby_<view>.json")
    args = ap.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="ivm-bench-groupby-"))
    try:
        wh = root / "wh"
        input_bytes = _setup(wh, args.rows, args.groups)
        runs = []
        for i in range(args.repeat):
            name = f"g{i}"
            before = {p for p in wh.rglob("*") if p.is_dir()}
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "from bench.bench_groupby import _create; "
                    f"_create({str(wh)!r}, {name!r}, {args.view!r})",
                ],
                check=True,
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            )
            run = json.loads(out.stdout.strip().splitlines()[-1])
            new_dirs = {p for p in wh.rglob("*") if p.is_dir()} - before
            ckpt = [p for p in new_dirs if p.name == name and "checkpoints" in p.parts]
            run["checkpoint_bytes"] = sum(_tree_bytes(p) for p in ckpt)
            runs.append(run)
            print(
                f"  create {run['seconds']:.2f}s (CPU {run['cpu_seconds']:.2f}s), "
                f"peak RSS {run['peak_rss_bytes'] / 2**20:.0f} MB, checkpoint {run['checkpoint_bytes'] / 2**20:.1f} MB "
                f"(input {input_bytes / 2**20:.1f} MB)"
            )
        med = {
            k: statistics.median(r[k] for r in runs)
            for k in ("seconds", "cpu_seconds", "peak_rss_bytes", "checkpoint_bytes")
        }
        result = {
            "benchmark": "groupby",
            "rows": args.rows,
            "groups": args.groups,
            "view": VIEWS[args.view],
            "input_parquet_bytes": input_bytes,
            "median": med,
            "checkpoint_vs_input": med["checkpoint_bytes"] / input_bytes,
            "runs": runs,
            "targets": {"seconds": 8, "peak_rss_bytes": 800 * 2**20, "checkpoint_vs_input": 2},
            "loadavg_1m": os.getloadavg()[0],
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        out_path = Path(args.out or RESULTS / f"groupby_{args.view}.json")
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(result, indent=1))
        print(
            f"\n{args.rows:,}-row GROUP BY view: created in {med['seconds']:.2f}s, CPU "
            f"{med['cpu_seconds']:.2f}s (target 8), "
            f"peak RSS {med['peak_rss_bytes'] / 2**20:.0f} MB (target 800), checkpoint "
            f"{result['checkpoint_vs_input']:.2f}x the input's Parquet bytes (target 2); "
            f"load average {result['loadavg_1m']:.1f}\nwritten to {out_path}"
        )
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
