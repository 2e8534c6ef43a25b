"""Writers of Delta tables for the reliability tests: every DML kind, OPTIMIZE and VACUUM.

A :class:`Writer` is one connector's way of changing a table at a path.  The tests draw a
writer per statement, so a view must stay exact whichever connector wrote each commit:

* :class:`DeltaRsWriter` — deltalake (delta-rs) called directly, as another application
  would (its UPDATE writes an incomplete change data feed);
* :class:`CatalogWriter` — the project's own write path (catalog.delta: UPDATE as MERGE);
* :class:`DeltaSparkWriter` — Spark SQL through delta-spark, the JVM connector (deletion
  vectors on the tables it creates).  It needs a SparkSession, so tests take it from
  :func:`spark_writers` with the ``spark`` fixture.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from catalog import delta

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class Writer(Protocol):
    name: str

    def insert(self, path: str, rows: pa.Table) -> None: ...
    def update(self, path: str, assignments: dict[str, str], where: str) -> None: ...
    def delete(self, path: str, where: str | None) -> None: ...
    def upsert(self, path: str, rows: pa.Table, key: str, column: str) -> None: ...
    def overwrite(self, path: str, rows: pa.Table) -> None: ...
    def optimize(self, path: str) -> None: ...
    def vacuum(self, path: str) -> None: ...
    def recreate(self, path: str, rows: pa.Table, *, feed: bool) -> None: ...


class DeltaRsWriter:
    """deltalake's Python API, used the way any other application would use it."""

    name = "delta-rs"

    def insert(self, path: str, rows: pa.Table) -> None:
        write_deltalake(path, rows, mode="append")

    def update(self, path: str, assignments: dict[str, str], where: str) -> None:
        DeltaTable(path).update(updates=assignments, predicate=where)

    def delete(self, path: str, where: str | None) -> None:
        DeltaTable(path).delete(where)

    def upsert(self, path: str, rows: pa.Table, key: str, column: str) -> None:
        (
            DeltaTable(path)
            .merge(rows, f"t.{key} = s.{key}", source_alias="s", target_alias="t")
            .when_matched_update({column: f"s.{column}"})
            .when_not_matched_insert_all()
            .execute()
        )

    def overwrite(self, path: str, rows: pa.Table) -> None:
        write_deltalake(path, rows, mode="overwrite")

    def optimize(self, path: str) -> None:
        DeltaTable(path).optimize.compact()

    def vacuum(self, path: str) -> None:
        DeltaTable(path).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)

    def recreate(self, path: str, rows: pa.Table, *, feed: bool) -> None:
        """Drop the table (its directory) and create a new one at the same location."""
        shutil.rmtree(path)
        conf = {"delta.enableChangeDataFeed": "true"} if feed else None
        DeltaTable.create(path, rows.schema, configuration=conf)
        if rows.num_rows:
            write_deltalake(path, rows, mode="append")


class CatalogWriter(DeltaRsWriter):
    """The project's own write path (catalog.delta), as ``Session.sql`` DML uses it."""

    name = "catalog"

    def insert(self, path: str, rows: pa.Table) -> None:
        delta.insert(path, rows)

    def update(self, path: str, assignments: dict[str, str], where: str) -> None:
        delta.update(path, assignments, where)

    def delete(self, path: str, where: str | None) -> None:
        delta.delete(path, where)

    def upsert(self, path: str, rows: pa.Table, key: str, column: str) -> None:
        delta.merge(
            path,
            rows,
            f"t.{key} = s.{key}",
            [
                delta.MergeClause("matched", "update", assignments={column: f"s.{column}"}),
                delta.MergeClause("not_matched", "insert_all"),
            ],
        )

    def overwrite(self, path: str, rows: pa.Table) -> None:
        delta.overwrite(path, rows)


def writers() -> list[Writer]:
    """Every writer available in this environment."""
    return [DeltaRsWriter(), CatalogWriter()]


SPARK_TYPES = {pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "STRING"}


class DeltaSparkWriter:
    """Spark SQL on ``delta.`path``` through delta-spark, as a Spark job would write."""

    name = "delta-spark"

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        # VACUUM ... RETAIN 0 HOURS, as the other writers' vacuum does
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")

    def _write(self, path: str, rows: pa.Table, mode: str) -> None:
        schema = self.spark.read.format("delta").load(path).schema
        data = [tuple(r.values()) for r in rows.to_pylist()]
        df = self.spark.createDataFrame(data, schema=schema)
        df.write.format("delta").mode(mode).save(path)

    def insert(self, path: str, rows: pa.Table) -> None:
        self._write(path, rows, "append")

    def update(self, path: str, assignments: dict[str, str], where: str) -> None:
        sets = ", ".join(f"{c} = {e}" for c, e in assignments.items())
        self.spark.sql(f"UPDATE delta.`{path}` SET {sets} WHERE {where}")

    def delete(self, path: str, where: str | None) -> None:
        self.spark.sql(f"DELETE FROM delta.`{path}`" + (f" WHERE {where}" if where else ""))

    def upsert(self, path: str, rows: pa.Table, key: str, column: str) -> None:
        values = ", ".join(
            "(" + ", ".join("NULL" if v is None else repr(v) for v in r.values()) + ")"
            for r in rows.to_pylist()
        )
        names = ", ".join(rows.column_names)
        self.spark.sql(
            f"MERGE INTO delta.`{path}` t USING (SELECT * FROM VALUES {values} AS v({names})) s "
            f"ON t.{key} = s.{key} WHEN MATCHED THEN UPDATE SET {column} = s.{column} "
            "WHEN NOT MATCHED THEN INSERT *"
        )

    def overwrite(self, path: str, rows: pa.Table) -> None:
        self._write(path, rows, "overwrite")

    def optimize(self, path: str) -> None:
        self.spark.sql(f"OPTIMIZE delta.`{path}`")

    def vacuum(self, path: str) -> None:
        self.spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS")

    def recreate(self, path: str, rows: pa.Table, *, feed: bool) -> None:
        """Drop the table's directory and create a new Delta table there with Spark."""
        shutil.rmtree(path)
        jvm = self.spark.sparkContext._jvm
        assert jvm is not None
        jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # forget the dropped table's log
        columns = ", ".join(f"{f.name} {SPARK_TYPES[f.type]}" for f in rows.schema)
        props = "'delta.enableDeletionVectors' = 'true'"
        if feed:
            props += ", 'delta.enableChangeDataFeed' = 'true'"
        self.spark.sql(
            f"CREATE TABLE delta.`{path}` ({columns}) USING delta TBLPROPERTIES ({props})"
        )
        if rows.num_rows:
            self._write(path, rows, "append")


def spark_writers(spark: SparkSession) -> list[Writer]:
    """:func:`writers` and delta-spark's."""
    return [*writers(), DeltaSparkWriter(spark)]
