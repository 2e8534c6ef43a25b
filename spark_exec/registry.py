"""Tables and views by name in Spark SQL.

A name is a temporary view over ``spark.read.format("delta").load(path)``.  Spark re-plans the
temp view for every query, and planning pins the Delta version (spark_exec.delta_source), so
``spark.sql("SELECT * FROM v")`` always shows the latest committed version of ``v``'s table —
one whole refresh — with no re-registration after a refresh.  View tables hold the view's
plain rows (catalog.view_table), so they read like any table with either connector.

Why temp views: ``CREATE TABLE ... USING delta LOCATION`` does not hand the location to a
Python data source, and options given in ``CREATE TABLE ... OPTIONS`` reach its ``schema()``
but not its reader (measured with pyspark 4.3).  Temp views cannot be qualified by a database,
so a name ``db.t`` outside the default database is registered as ``db__t`` (and ``t`` of the
default database as ``t``): :func:`spark_name` gives the mapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from catalog.names import Identifier, parse_identifier
from spark_exec.connector import ensure_delta_format

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def spark_name(name: str | Identifier) -> str:
    """The temp-view name under which ``name`` is queryable in Spark SQL."""
    ident = parse_identifier(name)
    return ident.name if ident.db is None else f"{ident.db}__{ident.name}"


def read_delta(
    spark: SparkSession, path: str, *, view: bool = False, version: int | None = None
) -> DataFrame:
    """A DataFrame of the Delta table at ``path`` (``view``: kept for callers; no effect)."""
    ensure_delta_format(spark)
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", str(version))
    return reader.load(path)


def register(spark: SparkSession, name: str | Identifier, path: str, *, view: bool = False) -> str:
    """Make the table (or view table) at ``path`` queryable as ``name``; returns the SQL name."""
    sql_name = spark_name(name)
    read_delta(spark, path, view=view).createOrReplaceTempView(sql_name)
    return sql_name


def unregister(spark: SparkSession, name: str | Identifier) -> bool:
    """Remove ``name`` from Spark SQL; whether it was registered."""
    return bool(spark.catalog.dropTempView(spark_name(name)))
