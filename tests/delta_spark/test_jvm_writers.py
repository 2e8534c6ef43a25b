"""Input tables written by delta-spark (deletion vectors, column mapping, MERGE, OPTIMIZE, an
added column) keep views equal to Spark SQL's recomputation; each connector writes the other's
tables."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from catalog import delta
from spark_exec import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

VIEWS = {
    "by_b": "SELECT b, count(*) AS n, sum(a) AS s FROM t GROUP BY b",
    "thirds": "SELECT a, b FROM t WHERE a % 3 = 0",
}
FEATURES = {
    # DELETE / UPDATE / MERGE mark rows deleted in deletion vectors; CDF read by delta-rs
    "deletion_vectors": "'delta.enableDeletionVectors' = 'true', 'delta.enableChangeDataFeed' = 'true'",
    # physical column names in the files; delta-rs has no CDF for it (snapshot difference)
    "column_mapping": "'delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true', "
    "'delta.enableChangeDataFeed' = 'true'",
}
SPARK_WRITES = [
    "UPDATE t SET b = 'u' WHERE a < 10",
    "MERGE INTO t USING (SELECT id AS a, 'm' AS b FROM range(30, 60)) s ON t.a = s.a "
    "WHEN MATCHED AND s.a % 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET b = s.b "
    "WHEN NOT MATCHED THEN INSERT (a, b) VALUES (s.a, s.b)",
    "DELETE FROM t WHERE a % 7 = 0",
    "OPTIMIZE t",
    "ALTER TABLE t ADD COLUMNS (c INT)",
    "INSERT INTO t VALUES (300, 'x', 1), (303, 'u', 2)",
]


@pytest.fixture(autouse=True)
def no_temp_view_t(spark: SparkSession) -> None:
    """The tests name the table ``t``; a temporary view ``t`` left in the shared session by
    another test (the SQL harness registers its inputs so) would shadow it."""
    spark.catalog.dropTempView("t")


def bag(rows: Any) -> Counter[tuple[object, ...]]:
    return Counter(tuple(r) for r in rows)


def assert_views_match(s: Session, spark: SparkSession, step: str) -> None:
    s.refresh()
    for name, query in VIEWS.items():
        got = s.read(name)
        want = spark.sql(query).collect()
        assert bag(zip(*(got.column(c).to_pylist() for c in got.column_names), strict=True)) == (
            bag(want)
        ), f"view {name} after {step}"


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_views_follow_delta_spark_writes(spark: SparkSession, tmp_path: Path, feature: str) -> None:
    p = (tmp_path / "external" / "t").as_posix()
    spark.sql(
        f"CREATE TABLE delta.`{p}` (a BIGINT, b STRING) USING delta "
        f"TBLPROPERTIES ({FEATURES[feature]})"
    )
    spark.sql(f"INSERT INTO delta.`{p}` SELECT id, CAST(id % 5 AS STRING) FROM range(40)")
    spark.sql(f"DELETE FROM delta.`{p}` WHERE a IN (1, 2, 3)")  # before the views: a DV
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql(f"CREATE TABLE t USING delta LOCATION '{p}'")
    for name, query in VIEWS.items():
        s.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
    assert_views_match(s, spark, "create")
    for write in SPARK_WRITES:
        spark.sql(write)
        assert_views_match(s, spark, write)
    # delta-rs writes the delta-spark table too, and Spark reads what it wrote
    row = pa.table({"a": [600], "b": ["r"], "c": pa.array([3], pa.int32())})
    delta.insert(p, row)
    delta.delete(p, "a = 303")
    assert_views_match(s, spark, "delta-rs writes")
    assert bag(spark.sql("SELECT * FROM t WHERE a >= 300").collect()) == bag(
        [(300, "x", 1), (600, "r", 3)]
    )


def test_delta_spark_writes_tables_created_by_delta_rs(spark: SparkSession, tmp_path: Path) -> None:
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (a BIGINT, b STRING)")  # created and written by delta-rs
    s.sql("INSERT INTO t VALUES " + ", ".join(f"({i}, '{i % 4}')" for i in range(20)))
    for name, query in VIEWS.items():
        s.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
    for write in [*SPARK_WRITES[:3], "INSERT INTO t VALUES (90, 'z')", "OPTIMIZE t"]:
        spark.sql(write)
        assert_views_match(s, spark, write)
    s.sql("INSERT INTO t VALUES (91, 'z')")  # and delta-rs writes after delta-spark did
    assert_views_match(s, spark, "delta-rs insert")
    assert delta.read_snapshot(s.table_path("t")).num_rows == spark.table("t").count()
    assert pa.types.is_int64(delta.table_schema(s.table_path("t")).field("a").type)


def test_column_mapping_rows_and_changes_read_by_delta_rs(
    spark: SparkSession, tmp_path: Path
) -> None:
    """delta-rs' Arrow reader returns NULLs for a column-mapping table and has no change feed
    for it: the snapshot goes through the DataFusion scan, the changes through a difference."""
    from catalog.changes import DIFF, read_changes

    p = (tmp_path / "cm").as_posix()
    spark.sql(
        f"CREATE TABLE delta.`{p}` (a BIGINT, b STRING) USING delta TBLPROPERTIES "
        "('delta.columnMapping.mode' = 'name', 'delta.enableChangeDataFeed' = 'true')"
    )
    spark.sql(f"INSERT INTO delta.`{p}` VALUES (1, 'x'), (2, 'y')")  # version 1
    spark.sql(f"UPDATE delta.`{p}` SET b = 'z' WHERE a = 2")  # version 2
    snapshot = delta.read_snapshot(p).to_pylist()
    assert bag((r["a"], r["b"]) for r in snapshot) == bag([(1, "x"), (2, "z")])
    changes = read_changes(p, 1, 2)
    assert bag(zip(*(changes.column(c).to_pylist() for c in ["a", "b", DIFF]), strict=True)) == (
        bag([(2, "y", -1), (2, "z", 1)])
    )
