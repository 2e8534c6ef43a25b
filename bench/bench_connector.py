"""Spark over Delta: session start with delta-spark's jars, and one aggregate over a 1M-row
table through the JVM connector (``format("delta")``) vs the project's Python data source
(``format("ivm_delta")``, delta-rs, one partition), in the same session.

    python -m bench.bench_connector [--rows 1000000] [--files 8] [--repeat 3]

Prints one JSON object: start seconds, the scan's partitions per connector, and the median
seconds of ``SELECT k % 100, count(*), sum(v) ... GROUP BY 1`` per connector (first run
excluded as warm-up).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

from catalog import delta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_connector")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    from spark_exec.connector import PYTHON_FORMAT, ensure_delta_format
    from spark_exec.spark_session import local_spark

    spark = local_spark(tempfile.mkdtemp(prefix="bench-spark-"))
    spark.range(1).count()
    start_s = time.perf_counter() - t0
    ensure_delta_format(spark)

    path = tempfile.mkdtemp(prefix="bench-delta-") + "/facts"
    rng = np.random.default_rng(7)
    schema = pa.schema([("k", pa.int64()), ("v", pa.float64())])
    delta.create_table(path, schema)
    per = args.rows // args.files
    for i in range(args.files):
        k = np.arange(i * per, (i + 1) * per, dtype=np.int64)
        delta.insert(path, pa.table({"k": k, "v": rng.random(per)}, schema=schema))

    out: dict[str, object] = {"rows": per * args.files, "files": args.files, "start_s": start_s}
    for label, fmt in (("jvm", "delta"), ("python", PYTHON_FORMAT)):
        df = spark.read.format(fmt).load(path)
        df.createOrReplaceTempView(f"facts_{label}")
        query = f"SELECT k % 100 AS g, count(*) AS n, sum(v) AS s FROM facts_{label} GROUP BY 1"
        times = []
        for _ in range(args.repeat + 1):
            t = time.perf_counter()
            got = spark.sql(query).collect()
            times.append(time.perf_counter() - t)
        assert len(got) == 100 and sum(r.n for r in got) == per * args.files
        out[f"{label}_partitions"] = df.rdd.getNumPartitions()
        out[f"{label}_median_s"] = statistics.median(times[1:])
    out["speedup"] = float(out["python_median_s"]) / float(out["jvm_median_s"])  # type: ignore[arg-type]
    print(json.dumps(out))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
