"""Input tables by name through delta-spark: in the project's session and in a separate plain
PySpark application that attaches the warehouse (docs/spark_attach.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from spark_exec import Session
from spark_exec.connector import PYTHON_FORMAT
from spark_exec.delta_jars import cache_dir
from spark_exec.registry import ATTACH_FILE

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark
APP = Path(__file__).resolve().parents[2] / "examples" / "spark_attach_app.py"


def rows(df: object) -> Counter[tuple[object, ...]]:
    return Counter(tuple(r) for r in df.collect())  # type: ignore[attr-defined]


def _fill(s: Session) -> None:
    s.sql("CREATE TABLE edges (src BIGINT, dst BIGINT)")
    s.sql("CREATE TABLE sales.orders (id BIGINT, region STRING, amount DOUBLE)")
    for i in range(4):  # four commits, four data files
        s.sql(f"INSERT INTO edges VALUES ({i}, {i + 1}), ({i}, {i + 2})")
    s.sql("INSERT INTO sales.orders VALUES (1, 'eu', 2.5), (2, 'us', 4.0), (3, 'eu', 1.0)")
    s.sql("DELETE FROM sales.orders WHERE id = 2")


def test_input_tables_are_delta_tables_scanned_in_parallel(
    spark: SparkSession, tmp_path: Path
) -> None:
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    _fill(s)
    edges = spark.table("edges")
    assert rows(edges) == Counter({(i, i + d): 1 for i in range(4) for d in (1, 2)})
    # a real catalog table over the JVM connector, not a temp view over a Python source
    assert spark.catalog.getTable("default.edges").tableType == "EXTERNAL"
    assert not spark.catalog.getTable("default.edges").isTemporary
    detail = spark.sql("DESCRIBE DETAIL edges").collect()[0]
    assert detail.format == "delta" and detail.numFiles == 4
    assert edges.rdd.getNumPartitions() > 1
    python_scan = spark.read.format(PYTHON_FORMAT).load(s.table_path("edges"))
    assert python_scan.rdd.getNumPartitions() == 1
    assert rows(spark.sql("SELECT region, sum(amount) FROM sales.orders GROUP BY region")) == (
        Counter({("eu", 3.5): 1})
    )
    # each query reads the latest version: no re-registration after a write
    s.sql("INSERT INTO edges VALUES (9, 9)")
    assert spark.table("edges").count() == 9
    s.drop_table("edges")
    assert not spark.catalog.tableExists("edges")


def test_plain_pyspark_app_reads_input_tables_by_name(spark: SparkSession, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    s = Session(spark=spark, warehouse=wh)
    _fill(s)
    script = (wh / ATTACH_FILE).read_text()
    assert "${spark_ivm.warehouse}/tables/sales/orders" in script
    assert str(wh) not in script  # relative: a copied warehouse attaches its own files
    queries = ["SELECT * FROM edges", "SELECT * FROM sales.orders"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(APP), str(wh), str(cache_dir()), *queries],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert out[-1] == {"project_modules": []}  # the app never imported spark-ivm
    got = {o["sql"]: o for o in out[:-1]}
    for q in queries:
        assert Counter(tuple(r) for r in got[q]["rows"]) == rows(spark.sql(q))
    assert got[queries[0]]["partitions"] > 1
