"""Which Delta reader Spark uses: delta-spark's JVM connector, else the project's Python one.

Sessions built by :func:`spark_exec.spark_session.local_spark` always have delta-spark, so
``spark.read.format("delta")`` is the JVM connector (parallel scans, deletion vectors, column
mapping).  :func:`ensure_delta_format` also covers a session the caller built without
delta-spark: there it registers :class:`spark_exec.delta_source.DeltaDataSource`, a Python
data source named ``delta`` that reads through delta-rs (one partition).  The Python reader is
registered as ``ivm_delta`` in every session too, so both can be compared in one session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DELTA_JVM_CLASS = "io.delta.tables.DeltaTable"
PYTHON_FORMAT = "ivm_delta"
Connector = Literal["jvm", "python"]
_ATTR = "_spark_ivm_delta_connector"


def has_delta_jvm(spark: SparkSession) -> bool:
    """Whether delta-spark's classes are on the driver's classpath."""
    jvm = getattr(spark, "_jvm", None) or getattr(spark.sparkContext, "_jvm", None)
    if jvm is None:  # Spark Connect: no py4j; ask the server by reading a known format
        return False
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(DELTA_JVM_CLASS, False, loader)
        return True
    except Exception:
        return False


def ensure_delta_format(spark: SparkSession) -> Connector:
    """Make ``format("delta")`` readable; returns the connector in use (cached per session)."""
    cached: Connector | None = getattr(spark, _ATTR, None)
    if cached is not None:
        return cached
    from spark_exec.delta_source import DeltaDataSource, IvmDeltaDataSource

    spark.dataSource.register(IvmDeltaDataSource)
    connector: Connector
    if has_delta_jvm(spark):
        connector = "jvm"
    else:
        spark.dataSource.register(DeltaDataSource)
        connector = "python"
    setattr(spark, _ATTR, connector)
    return connector
