"""End-to-end refresh latency beside Spark SQL recomputing the view (``python -m bench refresh``).

Workload: ``orders`` (1,000,000 rows by default) joined with ``customers`` (10,000 rows) and
aggregated per customer and region — the view has one row per customer.  A change of ``n``
rows to ``orders`` is ``n/2`` inserts and ``n/2`` deletes committed with delta-rs (not timed).
Then, timed:

* ``ivm refresh``: ``Session.refresh()`` end to end — pin versions and read the change data
  feed, push the changes through the engine, checkpoint, and append the view's change to its
  Delta table (breakdown from the report's timings);
* ``spark recompute``: Spark SQL running the view's query over the same Delta tables (read
  through the ``delta`` data source) and collecting the result — what a non-incremental
  refresh has to do at least (it would then also rewrite the view).

Each is repeated (median reported).  The view's creation is timed too (wall and CPU): first
in the process, where the engine's compiled kernels and the SQL front end load, and as the
median of ``--repeat`` re-creations under other names; both are compared with Spark SQL's
median run (its first run pays the JVM's warm-up).  Results go to
``bench/results/refresh.json``.

Usage: ``python -m bench refresh [--rows N] [--repeat R] [--no-spark]``
"""

from __future__ import annotations

import argparse
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

RESULTS = Path(__file__).resolve().parent / "results" / "refresh.json"
VIEW = """SELECT c.region, o.cust, count(*) AS n, sum(o.amount) AS total
          FROM orders o JOIN customers c ON o.cust = c.id
          GROUP BY c.region, o.cust"""
CUSTOMERS = 10_000
REGIONS = 20


def _change(s: Any, rng: np.random.Generator, n: int, next_id: int) -> int:
    from catalog import delta

    path = s.table_path("orders")
    half = n // 2
    delta.insert(
        path,
        pa.table(
            {
                "id": np.arange(next_id, next_id + half),
                "cust": rng.integers(0, CUSTOMERS, half),
                "amount": rng.integers(1, 1000, half),
            }
        ),
    )
    victims = rng.choice(next_id, n - half, replace=False)
    delta.delete(path, f"id IN ({', '.join(str(int(v)) for v in victims)})")
    return next_id + half


def setup(warehouse: Path, rows: int, rng: np.random.Generator) -> Any:
    """A Session over ``warehouse`` with ``customers`` and ``rows`` ``orders`` written."""
    from catalog import delta
    from spark_exec.session import Session

    s = Session(warehouse=warehouse)
    s.sql(
        "CREATE TABLE customers (id BIGINT NOT NULL, region STRING);"
        "CREATE TABLE orders (id BIGINT NOT NULL, cust BIGINT NOT NULL, amount BIGINT NOT NULL)"
    )
    regions = [f"region {i % REGIONS}" for i in range(CUSTOMERS)]
    delta.insert(
        s.table_path("customers"), pa.table({"id": np.arange(CUSTOMERS), "region": regions})
    )
    orders = {
        "id": np.arange(rows),
        "cust": rng.integers(0, CUSTOMERS, rows),
        "amount": rng.integers(1, 1000, rows),
    }
    delta.insert(s.table_path("orders"), pa.table(orders))
    return s


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench refresh")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--changes", type=int, nargs="+", default=[10, 1_200])
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark SQL baseline")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="ivm-bench-refresh-"))
    try:
        rng = np.random.default_rng(0)
        s = setup(root / "wh", args.rows, rng)
        created, create_s, create_cpu = _timed_create(s, "revenue")
        print(
            f"view created from {args.rows:,} orders in {create_s:.2f}s, CPU {create_cpu:.2f}s "
            f"({created.differences:,} differences; the process's first view: the engine's "
            "compiled kernels and the SQL front end load here)"
        )
        again = _recreations(s, args.repeat)
        print(
            f"  created again {args.repeat}x: median {again['median_seconds']:.2f}s, "
            f"CPU {again['median_cpu_seconds']:.2f}s"
        )
        next_id = args.rows
        rows: list[dict[str, Any]] = []
        for n in args.changes:
            runs = []
            for _ in range(args.repeat):
                next_id = _change(s, rng, n, next_id)
                t = time.perf_counter()
                (r,) = s.refresh()
                wall = time.perf_counter() - t
                runs.append(
                    {
                        "seconds": wall,
                        "differences": r.differences,
                        "rows_in": r.rows_in,
                        "rows_written": r.rows_written,
                        "files_written": r.files_written,
                        "peak_rss_bytes": r.peak_rss_bytes,
                        **{f"{k}_seconds": v for k, v in r.timings.items()},
                    }
                )
            med = {k: statistics.median(x[k] for x in runs) for k in runs[0]}
            rows.append({"change_rows": n, "median": med, "runs": runs})
            print(
                f"  {n:>6}-row change: ivm refresh {med['seconds'] * 1000:8.1f} ms "
                f"({med['differences']:,.0f} differences, {med['rows_written']:,.0f} "
                "view rows written)"
            )
        spark_s = spark_first = None
        spark_runs: list[float] = []
        if not args.no_spark:
            spark = s.spark
            t = time.perf_counter()
            spark.sql(VIEW).collect()  # the first run: JIT, Python workers, table loading
            spark_first = time.perf_counter() - t
            for _ in range(args.repeat):
                t = time.perf_counter()
                spark.sql(VIEW).collect()
                spark_runs.append(time.perf_counter() - t)
            spark_s = statistics.median(spark_runs)
            check = sorted(tuple(x) for x in spark.sql(VIEW).collect())
            mine = sorted(tuple(x.values()) for x in s.read("revenue").to_pylist())
            assert check == mine, "the view differs from Spark SQL's recomputation"
        result = {
            "benchmark": "refresh",
            "rows": args.rows,
            "customers": CUSTOMERS,
            "view": " ".join(VIEW.split()),
            "create_seconds": create_s,
            "create_cpu_seconds": create_cpu,
            "create_differences": created.differences,
            "create_again": again,
            "changes": rows,
            "spark_recompute_seconds": spark_s,
            "spark_first_seconds": spark_first,
            "spark_runs": spark_runs,
            "speedup": {str(c["change_rows"]): spark_s / c["median"]["seconds"] for c in rows}
            if spark_s
            else None,
            # against Spark's median (its first run pays the JVM's warm-up, ours the kernels')
            "create_vs_spark": create_s / spark_s if spark_s else None,
            "create_again_vs_spark": again["median_seconds"] / spark_s if spark_s else None,
            "loadavg_1m": os.getloadavg()[0],
            "machine": {"python": platform.python_version(), "cpus": _cpus()},
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1))
        print()
        print(table(result))
        print(f"\nwritten to {out}")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _timed_create(s: Any, name: str) -> tuple[Any, float, float]:
    """``CREATE MATERIALIZED VIEW name AS VIEW``: (its report, wall seconds, CPU seconds)."""
    t, c = time.perf_counter(), time.process_time()
    report = s.create_view(name, VIEW)[0]
    return report, time.perf_counter() - t, time.process_time() - c


def _recreations(s: Any, repeat: int) -> dict[str, Any]:
    """The view created again ``repeat`` times in this process (each copy dropped after):
    the creation's cost without the process's one-time loading, as Spark's median run is
    without its first run's."""
    runs = []
    for i in range(repeat):
        _, wall, cpu = _timed_create(s, f"revenue_again_{i}")
        s.drop_view(f"revenue_again_{i}")
        runs.append({"seconds": wall, "cpu_seconds": cpu})
    return {
        "median_seconds": statistics.median(r["seconds"] for r in runs),
        "median_cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
        "runs": runs,
    }


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0


def table(result: dict[str, Any]) -> str:
    """Markdown table of a result."""
    spark = result["spark_recompute_seconds"]
    first = result.get("spark_first_seconds")
    vs = f", Spark SQL's query: first run {first:.2f}s, median {spark:.2f}s" if spark else ""
    again = result.get("create_again")
    built = f"{result['create_seconds']:.2f}s" + (
        f" first, {again['median_seconds']:.2f}s median of re-creations" if again else ""
    )
    if spark:
        built += f" ({result['create_seconds'] / spark:.2f}x Spark's median"
        built += f", {again['median_seconds'] / spark:.2f}x)" if again else ")"
    lines = [
        f"Refresh of a join + aggregate view over {result['rows']:,} orders "
        f"(view built in {built}{vs}; "
        f"load average {result.get('loadavg_1m', 0):.1f})",
        "",
        "| change | ivm refresh (ms) | recover | read | engine | write | commit | gc "
        "| differences | view rows written | Spark SQL recompute (ms) | speed-up |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in result["changes"]:
        m = c["median"]
        sp = f"{spark * 1000:.0f}" if spark else "-"
        speed = f"{spark / m['seconds']:.0f}x" if spark else "-"
        phases = " | ".join(
            f"{m.get(f'{k}_seconds', 0) * 1000:.1f}"
            for k in ("recover", "read", "engine", "write", "commit", "gc")
        )
        lines.append(
            f"| {c['change_rows']:,} | {m['seconds'] * 1000:.1f} | {phases} | "
            f"{m['differences']:,.0f} | {m['rows_written']:,.0f} | {sp} | {speed} |"
        )
    return "\n".join(lines)
