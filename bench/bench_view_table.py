"""View-table writes: a 1M-row view under 10-row changes, and a trickle of one-row refreshes.

``python -m bench view-table [--rows N] [--repeat R] [--trickle T]``

1. **Large view** (issue 14): ``facts`` has ``--rows`` rows; the view ``wide`` selects almost
   all of them (a ``--rows``-row view table).  Each round changes 10 rows of ``facts`` (5
   inserts, 5 deletes, committed with delta-rs, not timed), then times ``Session.refresh()``
   end to end (pin, read the change feed, engine step, checkpoint, the view's Delta commit
   and the maintenance policy).  Reported: median wall time, and the bytes the view commit
   wrote (data file + deletion vectors + change-data file) as a share of the table's bytes.
2. **Trickle** (issue 12): ``--trickle`` refreshes of one inserted and one deleted row of a
   small table whose view keeps every row.  Reported: the median of the first ten refreshes
   and of the last ten, the time to read the view with a plain ``deltalake`` reader after
   the first and after the last refresh (median of 5), and the table's file count.

Results go to ``bench/results/view_table.json``.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench.cli import bench_arguments

RESULTS = Path(__file__).resolve().parent / "results" / "view_table.json"


def _read_seconds(path: str) -> float:
    from deltalake import DeltaTable

    runs = []
    for _ in range(5):
        t = time.perf_counter()
        dt = DeltaTable(path)
        if "deletionVectors" in (dt.protocol().reader_features or []):
            pa.table(dt.scan())
        else:
            dt.to_pyarrow_table()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def large_view(root: Path, rows: int, repeat: int) -> dict[str, Any]:
    from catalog import delta, view_table
    from spark_exec.session import Session

    rng = np.random.default_rng(0)
    s = Session(warehouse=root / "large")
    s.sql("CREATE TABLE facts (id BIGINT NOT NULL, k BIGINT NOT NULL, v BIGINT NOT NULL)")
    ids = np.arange(rows)
    delta.insert(
        s.table_path("facts"), pa.table({"id": ids, "k": rng.integers(0, 1000, rows), "v": ids})
    )
    t = time.perf_counter()
    s.sql("CREATE MATERIALIZED VIEW wide AS SELECT id, k, v * 2 AS w FROM facts WHERE k >= 0")
    create_s = time.perf_counter() - t
    path = s.table_path("wide")
    runs = []
    next_id = rows
    for _ in range(repeat):
        victims = rng.choice(next_id, 5, replace=False)
        delta.insert(
            s.table_path("facts"),
            pa.table(
                {
                    "id": np.arange(next_id, next_id + 5),
                    "k": rng.integers(0, 1000, 5),
                    "v": np.arange(5),
                }
            ),
        )
        delta.delete(s.table_path("facts"), f"id IN ({', '.join(str(int(v)) for v in victims)})")
        next_id += 5
        t = time.perf_counter()
        (r,) = s.refresh()
        wall = time.perf_counter() - t
        commit = delta.commit_at(path, r.version) if r.version is not None else None
        written = int(commit.metrics.get("num_bytes_written", 0)) if commit else 0
        size = view_table.layout(path).bytes
        runs.append(
            {
                "seconds": wall,
                "bytes_written": written,
                "table_bytes": size,
                "written_share": written / size,
                "deletion_vectors": int(commit.metrics.get("num_deletion_vectors", 0))
                if commit
                else 0,
                **{f"{k}_seconds": v for k, v in r.timings.items()},
            }
        )
        print(
            f"  refresh {wall * 1000:7.1f} ms, wrote {written:,} B of {size:,} B "
            f"({100 * written / size:.3f} %)"
        )
    rows_now = s.read("wide").num_rows
    return {
        "rows": rows,
        "view_rows": rows_now,
        "create_seconds": create_s,
        "runs": runs,
        "median_seconds": statistics.median(r["seconds"] for r in runs),
        "max_written_share": max(r["written_share"] for r in runs[1:] or runs),
        "first_written_share": runs[0]["written_share"],
        "read_seconds": _read_seconds(path),
    }


def _log_counts(path: str) -> dict[str, int]:
    """Counted, load-independent figures of one Delta table's log and files."""
    from catalog import delta_commit

    log = os.path.join(path, "_delta_log")
    names = os.listdir(log)
    commits = sorted(int(n[:20]) for n in names if n.endswith(".json") and n[:20].isdigit())
    last = os.path.join(log, "_last_checkpoint")
    cp = json.loads(Path(last).read_text())["version"] if os.path.exists(last) else -1
    version, files = delta_commit.snapshot_files(path)
    return {
        "version": version,
        "log_entries": len(names),
        "json_after_checkpoint": sum(1 for v in commits if v > cp),
        "data_files": len(files),
        "data_bytes": sum(f.size for f in files.values()),
    }


def trickle(root: Path, steps: int) -> dict[str, Any]:
    from catalog import delta, delta_cache, view_table
    from spark_exec.session import Session

    s = Session(warehouse=root / "trickle")
    s.sql("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT NOT NULL)")
    n = 10_000
    delta.insert(s.table_path("t"), pa.table({"id": np.arange(n), "v": np.arange(n) % 97}))
    s.sql("CREATE MATERIALIZED VIEW tv AS SELECT id, v + 1 AS w FROM t")
    path = s.table_path("tv")
    times = []
    phases: list[dict[str, float]] = []
    opens: list[int] = []
    read_first = files_first = None
    counts_first: dict[str, Any] = {}
    for i in range(steps):
        delta.insert(s.table_path("t"), pa.table({"id": [n + i], "v": [i % 97]}))
        delta.delete(s.table_path("t"), f"id = {i}")
        before = delta_cache.stats["opens"]
        t = time.perf_counter()
        (r,) = s.refresh()
        times.append(time.perf_counter() - t)
        opens.append(delta_cache.stats["opens"] - before)
        phases.append(dict(r.timings))
        if i == 0:
            read_first = _read_seconds(path)
            files_first = view_table.layout(path).files
            counts_first = {"input": _log_counts(s.table_path("t")), "view": _log_counts(path)}
    lay = view_table.layout(path)
    return {
        "counted_first": counts_first,
        "counted_last": {"input": _log_counts(s.table_path("t")), "view": _log_counts(path)},
        "table_opens_per_refresh_first10": opens[:10],
        "table_opens_per_refresh_last10": opens[-10:],
        "steps": steps,
        "first10_median_seconds": statistics.median(times[:10]),
        "last10_median_seconds": statistics.median(times[-10:]),
        "median_seconds": statistics.median(times),
        "first10_phases": {
            k: statistics.median(p.get(k, 0.0) for p in phases[:10]) for k in phases[0]
        },
        "last10_phases": {
            k: statistics.median(p.get(k, 0.0) for p in phases[-10:]) for k in phases[0]
        },
        "read_first_seconds": read_first,
        "read_last_seconds": _read_seconds(path),
        "files_first": files_first,
        "files_last": lay.files,
        "bytes_last": lay.bytes,
    }


def main(argv: list[str]) -> int:
    ap = bench_arguments(
        "python -m bench view-table",
        flags={"skip_large": "keep the large-view result already in --out"},
        out=RESULTS,
        rows=1_000_000,
        repeat=7,
        trickle=500,
    )
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="ivm-bench-view-"))
    try:
        if args.skip_large:
            large = json.loads(Path(args.out).read_text()).get("large", {})
        else:
            print(f"large view: {args.rows:,} rows, 10-row changes")
            large = large_view(root, args.rows, args.repeat)
            print(
                f"  median {large['median_seconds'] * 1000:.1f} ms; at most "
                f"{100 * large['max_written_share']:.3f} % of the table's bytes written"
            )
        print(f"trickle: {args.trickle} one-row refreshes")
        tr = trickle(root, args.trickle) if args.trickle else {}
        if tr:
            print(
                f"  refresh median first 10 {tr['first10_median_seconds'] * 1000:.1f} ms, "
                f"last 10 {tr['last10_median_seconds'] * 1000:.1f} ms; read "
                f"{tr['read_first_seconds'] * 1000:.1f} -> {tr['read_last_seconds'] * 1000:.1f} "
                f"ms; files {tr['files_first']} -> {tr['files_last']}"
            )
            print(
                f"  phases first 10 {tr['first10_phases']}\n  phases last 10 {tr['last10_phases']}"
            )
        result = {
            "benchmark": "view-table",
            "large": large,
            "trickle": tr,
            "machine": {"python": platform.python_version(), "load_average": os.getloadavg()},
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1))
        print(f"written to {out}")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
