"""Spark glue: the local SparkSession, the ``delta`` Python data source, and view/table names
in Spark SQL.  (Running an ``ivm`` dataflow on Spark lives here too, later.)

Modules: :mod:`spark_exec.spark_session` (``local_spark``), :mod:`spark_exec.connector`
(JVM connector detection, ``ensure_delta_format``), :mod:`spark_exec.delta_source` (the data
source), :mod:`spark_exec.registry` (``register_table`` / ``register_view``).  Nothing here is
imported eagerly, so ``import spark_exec`` does not start or import Spark.
"""
