"""A plain PySpark application that reads a spark-ivm warehouse by name (docs/spark_attach.md).

It does not import spark-ivm: only pyspark and delta-spark's jars.  Usage::

    python examples/spark_attach_app.py WAREHOUSE JAR_DIR "SELECT * FROM sales.orders" ...

prints one JSON line per query: ``{"sql": ..., "rows": [[...], ...], "partitions": n}``.
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession


def main(argv: list[str]) -> int:
    W, JARS, *queries = argv
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.jars", ",".join(glob.glob(f"{JARS}/*.jar")))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark_ivm.warehouse", W)  # the one-line attach:
    for ddl in Path(W, "spark_attach.sql").read_text().split(";\n")[:-1]:
        spark.sql(ddl)

    for q in queries:
        df = spark.sql(q)
        rows = [list(r) for r in df.collect()]
        print(json.dumps({"sql": q, "rows": rows, "partitions": df.rdd.getNumPartitions()}))
    project = sorted(m for m in sys.modules if m.split(".")[0] in {"ivm", "catalog", "spark_exec"})
    print(json.dumps({"project_modules": project}))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
