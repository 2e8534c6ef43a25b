"""A PySpark Python data source named ``delta`` that reads Delta tables through delta-rs.

Registered as ``delta`` only where delta-spark's JVM connector is not on the classpath (a
session the caller built without it), and always as ``ivm_delta`` (spark_exec.connector)::

    spark.read.format("delta").load(path)                            # latest version
    spark.read.format("delta").option("versionAsOf", 3).load(path)   # time travel

* The schema comes from the Delta schema (Arrow -> Spark types via pyspark's mapping).
* Without ``versionAsOf`` the latest version is resolved when the partition is read, i.e. at
  every execution (measured: Spark creates the reader once per DataFrame, but calls
  ``read()`` per query), so a temp view over ``load(path)`` shows the latest committed
  version each time it is queried; one query reads one snapshot (a single partition).
  The schema is fixed when the DataFrame is created: re-register after a schema change.
* View tables (catalog.view_table) hold plain rows and read like any table.
* One input partition per query; fine for ``local[*]``, a known limit for large base tables
  on a cluster.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

VERSION_OPTIONS = ("versionasof", "version")


def _spark_schema(arrow_schema: pa.Schema) -> StructType:
    from pyspark.sql.pandas.types import from_arrow_schema

    from catalog.dtypes import storage_schema

    return from_arrow_schema(storage_schema(arrow_schema), prefer_timestamp_ntz=True)


@dataclass(frozen=True)
class _Target:
    path: str
    version: int | None


def _target(options: Any) -> _Target:
    path = options.get("path")
    if not path:
        raise ValueError("format('delta') needs a path: spark.read.format('delta').load(path)")
    version = None
    for key in VERSION_OPTIONS:
        if options.get(key) is not None:
            version = int(options.get(key))
    return _Target(str(path), version)


class DeltaDataSource(DataSource):
    """``format("delta")`` backed by delta-rs."""

    @classmethod
    def name(cls) -> str:
        return "delta"

    def schema(self) -> StructType:
        from catalog import delta

        t = _target(self.options)
        return _spark_schema(delta.table_schema(t.path, t.version))

    def reader(self, schema: StructType) -> DataSourceReader:
        return DeltaReader(_target(self.options), schema)


class IvmDeltaDataSource(DeltaDataSource):
    """The same reader as ``format("ivm_delta")``, beside delta-spark's ``delta``."""

    @classmethod
    def name(cls) -> str:
        return "ivm_delta"


@dataclass
class _Partition(InputPartition):
    target: _Target


class DeltaReader(DataSourceReader):
    def __init__(self, target: _Target, schema: StructType) -> None:
        self.target = target
        self.columns = [f.name for f in schema.fields]

    def partitions(self) -> Sequence[InputPartition]:
        return [_Partition(self.target)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from catalog import delta

        t: _Target = partition.target  # type: ignore[attr-defined]
        table = delta.read_snapshot(t.path, t.version).select(self.columns)
        yield from table.combine_chunks().to_batches(max_chunksize=65_536)
