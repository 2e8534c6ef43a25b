"""Spark reads tables and views: delta-spark's ``delta``, the ``ivm_delta`` Python data source,
and names in Spark SQL."""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from catalog import Catalog, delta, view_table
from catalog.changes import DIFF
from spark_exec.connector import PYTHON_FORMAT, ensure_delta_format, has_delta_jvm
from spark_exec.registry import read_delta, register, spark_name, unregister

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

EDGES = pa.schema([("src", pa.int64()), ("dst", pa.int64())])


def rows(df: object) -> Counter[tuple[object, ...]]:
    return Counter(tuple(r) for r in df.collect())  # type: ignore[attr-defined]


def test_session_settings(spark: SparkSession) -> None:
    cores = str(os.cpu_count() or 1)  # the defaults: local[*], a shuffle partition per core
    assert spark.conf.get("spark.sql.shuffle.partitions") == cores
    assert spark.sparkContext.master == "local[*]"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_connector_detection(spark: SparkSession) -> None:
    assert has_delta_jvm(spark) is True  # local_spark always puts delta-spark's jars on
    assert ensure_delta_format(spark) == "jvm"
    assert ensure_delta_format(spark) == "jvm"  # idempotent


@pytest.mark.parametrize("fmt", ["delta", PYTHON_FORMAT])
def test_load_path_latest_and_version(spark: SparkSession, tmp_path: Path, fmt: str) -> None:
    cat = Catalog(tmp_path)
    p = cat.create_table("edges", EDGES).path
    delta.insert(p, pa.table({"src": [1, 2], "dst": [2, 3]}))
    ensure_delta_format(spark)
    df = spark.read.format(fmt).load(p)
    assert [f.name for f in df.schema.fields] == ["src", "dst"]
    assert rows(df) == Counter({(1, 2): 1, (2, 3): 1})
    delta.delete(p, "src = 1")
    assert rows(spark.read.format(fmt).load(p)) == Counter({(2, 3): 1})
    old = spark.read.format(fmt).option("versionAsOf", 1).load(p)
    assert rows(old) == Counter({(1, 2): 1, (2, 3): 1})


def test_types_reach_spark(spark: SparkSession, tmp_path: Path) -> None:
    p = str(tmp_path / "typed")
    ts = dt.datetime(2024, 5, 6, 7, 8, 9)
    t = pa.table(
        {
            "i": pa.array([1, None], pa.int32()),
            "s": ["a", None],
            "d": pa.array([Decimal("1.50"), None], pa.decimal128(5, 2)),
            "day": [dt.date(2024, 1, 2), None],
            "ts": pa.array([ts, None], pa.timestamp("us")),
            "b": [True, None],
            "f": [0.5, None],
        }
    )
    write_deltalake(p, t)
    got = read_delta(spark, p).collect()
    assert sorted(tuple(r) for r in got if r.i is not None) == [
        (1, "a", Decimal("1.50"), dt.date(2024, 1, 2), ts, True, 0.5)
    ]
    assert any(all(v is None for v in r) for r in got)


def test_names_show_latest_refresh_of_a_view(spark: SparkSession, tmp_path: Path) -> None:
    cat = Catalog(tmp_path)
    t = cat.create_table("edges", EDGES)
    v = cat.create_view("sales.pairs", "SELECT src, dst FROM edges", "sql", ["edges"], EDGES)
    assert register(spark, "edges", t.path) == "`edges`"
    assert (
        register(spark, "sales.pairs", v.path, view=True)
        == spark_name(v.ident)
        == "`sales`.`pairs`"
    )
    assert spark.sql("SELECT * FROM sales.pairs").count() == 0
    delta.insert(t.path, pa.table({"src": [1, 1, 2], "dst": [2, 2, 3]}))
    assert spark.sql("SELECT count(*) FROM edges").collect()[0][0] == 3
    changes = pa.table({"src": [1, 2], "dst": [2, 3], DIFF: [2, 1]})
    view_table.commit_view_changes(
        v.path, changes, view=v.name, epoch=1, input_versions={"edges": 1}
    )
    # duplicates shown exactly; no re-registration needed after a refresh
    assert rows(spark.sql("SELECT * FROM sales.pairs")) == Counter({(1, 2): 2, (2, 3): 1})
    view_table.commit_view_changes(
        v.path,
        pa.table({"src": [1, 5], "dst": [2, 6], DIFF: [-1, 1]}),
        view=v.name,
        epoch=2,
        input_versions={"edges": 2},
    )
    assert rows(spark.sql("SELECT * FROM sales.pairs")) == Counter(
        {(1, 2): 1, (2, 3): 1, (5, 6): 1}
    )
    assert spark.sql("SELECT src, count(*) FROM sales.pairs GROUP BY src").count() == 3
    # both connectors read the view table's plain rows: no internal columns
    assert rows(spark.read.format("delta").load(v.path)) == rows(spark.table("sales.pairs"))
    assert rows(spark.read.format(PYTHON_FORMAT).load(v.path)) == rows(spark.table("sales.pairs"))
    assert spark.table("sales.pairs").columns == ["src", "dst"]
    view_table.compact_view(v.path)
    assert rows(spark.sql("SELECT * FROM sales.pairs")) == Counter(
        {(1, 2): 1, (2, 3): 1, (5, 6): 1}
    )
    assert unregister(spark, "sales.pairs") and not unregister(spark, "sales.pairs")


def test_view_with_deletion_vectors_reads_in_spark(spark: SparkSession, tmp_path: Path) -> None:
    """A view table that uses deletion vectors reads as its rows (time travel too)."""
    p = str(tmp_path / "v")
    view_table.create_view_table(p, EDGES, view="v")
    view_table.commit_view_changes(
        p,
        pa.table({"src": [1, 2, 3], "dst": [1, 2, 3], DIFF: [3, 1, 1]}),
        view="v",
        epoch=1,
        input_versions={},
    )
    old = view_table.COW_MAX_BYTES
    view_table.COW_MAX_BYTES = 0
    try:
        view_table.commit_view_changes(
            p,
            pa.table({"src": [1, 3], "dst": [1, 3], DIFF: [-1, -1]}),
            view="v",
            epoch=2,
            input_versions={},
        )
    finally:
        view_table.COW_MAX_BYTES = old
    assert view_table.uses_deletion_vectors(p)
    assert rows(read_delta(spark, p, view=True)) == Counter({(1, 1): 2, (2, 2): 1})
    assert rows(read_delta(spark, p, version=1)) == Counter({(1, 1): 3, (2, 2): 1, (3, 3): 1})
    python = spark.read.format(PYTHON_FORMAT).load(p)
    assert rows(python) == Counter({(1, 1): 2, (2, 2): 1})
