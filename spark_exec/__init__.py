"""Spark glue: the local SparkSession with delta-spark, the ``ivm_delta`` Python data source, and
view/table names in Spark SQL.  (Running an ``ivm`` dataflow on Spark lives here too, later.)

Modules: :mod:`spark_exec.spark_session` (``local_spark``), :mod:`spark_exec.delta_jars`
(delta-spark's JVM jars: fetch and locate), :mod:`spark_exec.connector` (JVM connector
detection, ``ensure_delta_format``), :mod:`spark_exec.delta_source` (the Python data source),
:mod:`spark_exec.registry` (names in Spark's catalog, the attach script).  Nothing here is
imported eagerly, so ``import spark_exec`` does not start or import Spark.
"""
