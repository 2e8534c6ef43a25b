"""Spark over a 1M-row materialized view: delta-spark's JVM connector vs the project's Python
data source (issue 14: "a Spark aggregate over the 1M-row view through the connector runs at
least 3x faster than through today's Python data source").

    python -m bench.bench_connector [--rows 1000000] [--refreshes 3] [--repeat 5]

The view is built as in ``python -m bench view-table``: ``facts`` has ``--rows`` rows, the
view ``wide`` (``SELECT id, k, v * 2 AS w FROM facts WHERE k >= 0``) holds all of them, and
``--refreshes`` 10-row changes (5 inserts, 5 deletes) are refreshed into it first, so its
table is what such a view's table really is after a while: several data files and deletion
vectors.  Then, in one SparkSession, the same aggregate
``SELECT k % 100, count(*), sum(w) FROM <view> GROUP BY 1`` is timed through

* ``jvm``: ``spark.read.format("delta").load(<view table>)`` — delta-spark's connector;
* ``python``: ``spark.read.format("ivm_delta").load(<view table>)`` — the project's Python
  data source (spark_exec.delta_source: delta-rs, one partition), which was Spark's only way
  to read the project's tables when the issue was written.  The issue's baseline read the
  old change-batch view tables and decoded their ``__diff__`` column as well; that format is
  gone (view tables hold plain rows), so this baseline reads the same plain rows with the
  same reader minus the decoding: if anything it is faster than the issue's baseline.

For comparison only, both also run over a copy of the view's rows written by delta-spark
without deletion vectors (``*_copy_without_dv``): what the deletion vectors cost each reader.

Two floors put the figures in proportion: ``spark_parquet_without_delta`` (Spark's own
vectorized Parquet reader over the view's data files, no Delta, deletion vectors ignored) and
``jvm_10_row_table`` (the same query over a 10-row Delta table: planning, the Delta snapshot
and two stages, with almost no rows).  Sources are timed in interleaved rounds.

Reported: the session start, each connector's scan partitions and median query time (first
round excluded as warm-up), their ratio, and the load average (the machine is shared).  Every
reading must return the same 100 groups.  Results in ``bench/results/connector.json``.
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

RESULTS = Path(__file__).resolve().parent / "results" / "connector.json"
QUERY = "SELECT k % 100 AS g, count(*) AS n, sum(w) AS s FROM {table} GROUP BY 1"


def build_view(root: Path, rows: int, refreshes: int, spark: Any) -> tuple[str, int]:
    """The 1M-row view of ``bench view-table`` after ``refreshes`` 10-row changes."""
    from catalog import delta
    from spark_exec.session import Session

    rng = np.random.default_rng(0)
    s = Session(spark=spark, warehouse=root / "wh")
    s.sql("CREATE TABLE facts (id BIGINT NOT NULL, k BIGINT NOT NULL, v BIGINT NOT NULL)")
    ids = np.arange(rows)
    facts = s.table_path("facts")
    delta.insert(facts, pa.table({"id": ids, "k": rng.integers(0, 1000, rows), "v": ids}))
    s.sql("CREATE MATERIALIZED VIEW wide AS SELECT id, k, v * 2 AS w FROM facts WHERE k >= 0")
    next_id = rows
    for _ in range(refreshes):
        victims = rng.choice(next_id, 5, replace=False)
        new = {"id": np.arange(next_id, next_id + 5), "k": rng.integers(0, 1000, 5)}
        delta.insert(facts, pa.table({**new, "v": np.arange(5)}))
        delta.delete(facts, f"id IN ({', '.join(str(int(v)) for v in victims)})")
        next_id += 5
        s.refresh()
    return s.table_path("wide"), s.read("wide").num_rows


def time_rounds(
    spark: Any, sources: dict[str, tuple[str, Any]], repeat: int
) -> dict[str, dict[str, Any]]:
    """Each source's query timed ``repeat + 1`` times, one source after another in each round
    (so a shared machine's load swings hit every source alike); the first round is warm-up.

    ``sources``: label -> (query, DataFrame the query names as ``view_<label>``)."""
    for label, (_, df) in sources.items():
        df.createOrReplaceTempView(f"view_{label}")
    runs: dict[str, list[float]] = {label: [] for label in sources}
    got: dict[str, list[Any]] = {}
    for _ in range(repeat + 1):
        for label, (query, _) in sources.items():
            t = time.perf_counter()
            got[label] = spark.sql(query.format(table=f"view_{label}")).collect()
            runs[label].append(time.perf_counter() - t)
    return {
        label: {
            "partitions": df.rdd.getNumPartitions(),
            "median_s": statistics.median(runs[label][1:]),
            "runs_s": runs[label],
            "groups": sorted((int(r.g), int(r.n), int(r.s)) for r in got[label]),
        }
        for label, (_, df) in sources.items()
    }


def main(argv: list[str] | None = None) -> int:
    ap = bench_arguments(
        "python -m bench.bench_connector", out=RESULTS, rows=1_000_000, refreshes=3, repeat=5
    )
    args = ap.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="bench-connector-"))
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    from spark_exec.connector import PYTHON_FORMAT, ensure_delta_format
    from spark_exec.spark_session import local_spark

    spark = local_spark(root / "spark-warehouse")
    spark.range(1).count()
    start_s = time.perf_counter() - t0
    try:
        assert ensure_delta_format(spark) == "jvm"
        path, view_rows = build_view(root, args.rows, args.refreshes, spark)
        from catalog import view_table

        lay = view_table.layout(path)
        out: dict[str, Any] = {
            "benchmark": "connector",
            "rows": args.rows,
            "view_rows": view_rows,
            "view_files": lay.files,
            "view_deleted_rows": lay.deleted_records,
            "uses_deletion_vectors": view_table.uses_deletion_vectors(path),
            "query": QUERY.format(table="<view>"),
            "start_s": start_s,
        }
        # the same rows rewritten by delta-spark without deletion vectors: what the deletion
        # vectors cost each connector (not a view table: for comparison only)
        copy = (root / "copy_without_deletion_vectors").as_posix()
        spark.read.format("delta").load(path).write.format("delta").save(copy)
        # floors, for the diagnosis: Spark's own Parquet reader over the view's data files
        # without Delta (ignores the deletion vectors: 15 rows too many), and the same query
        # over a 10-row Delta table (what one query costs besides reading rows)
        tiny = (root / "tiny").as_posix()
        spark.range(10).selectExpr("id", "id AS k", "id AS w").write.format("delta").save(tiny)
        data_files = [os.path.join(path, f) for f in os.listdir(path) if f.endswith(".parquet")]
        read = spark.read
        results = time_rounds(
            spark,
            {
                "jvm": (QUERY, read.format("delta").load(path)),
                "python": (QUERY, read.format(PYTHON_FORMAT).load(path)),
                "jvm_copy_without_dv": (QUERY, read.format("delta").load(copy)),
                "python_copy_without_dv": (QUERY, read.format(PYTHON_FORMAT).load(copy)),
                "spark_parquet_without_delta": (QUERY, read.parquet(*data_files)),
                "jvm_10_row_table": (QUERY, read.format("delta").load(tiny)),
            },
            args.repeat,
        )
        jvm, py = results["jvm"], results["python"]
        assert len(jvm["groups"]) == 100, "expected 100 groups"
        same = ("jvm", "python", "jvm_copy_without_dv", "python_copy_without_dv")
        assert all(results[k]["groups"] == jvm["groups"] for k in same), "results differ"
        assert sum(n for _, n, _ in jvm["groups"]) == view_rows
        for label, r in results.items():
            out[f"{label}_partitions"] = r["partitions"]
            out[f"{label}_median_s"] = r["median_s"]
            out[f"{label}_runs_s"] = r["runs_s"]
        out["speedup"] = py["median_s"] / jvm["median_s"]
        out["speedup_copy_without_dv"] = (
            results["python_copy_without_dv"]["median_s"]
            / results["jvm_copy_without_dv"]["median_s"]
        )
        out["spark_conf"] = {
            k: spark.conf.get(k)
            for k in (
                "spark.master",
                "spark.sql.shuffle.partitions",
                "spark.sql.files.maxPartitionBytes",
                "spark.sql.adaptive.enabled",
            )
        }
        out["machine"] = {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        }
        out["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        print(json.dumps({k: v for k, v in out.items() if not k.endswith("runs_s")}))
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1))
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
