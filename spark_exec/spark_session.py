"""One local SparkSession, configured for spark-ivm.

``local_spark()`` returns the active session if there is one (Spark allows one per process),
otherwise builds ``local[2]`` with 2 shuffle partitions, the UI off, quiet logs, UTC session
time, Python workers on this interpreter (so they import this project and deltalake), and
the given warehouse directory.  ``Session`` (spark_exec/session.py, another module) uses
it when the caller passes no session.

Every session it builds has delta-spark's JVM connector: the jars fetched by ``./run env``
(spark_exec.delta_jars) on ``spark.jars`` as local files (Spark downloads nothing),
``DeltaSparkSessionExtension`` and ``DeltaCatalog`` as the session catalog.  Without Java or
the jars it raises :class:`~spark_exec.errors.SparkSetupError` saying how to fix it.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.extraJavaOptions": "-Dlog4j2.level=error",
}

DELTA_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Delta rebuilds a table's state from its log (a Spark job per new version read) in 50
    # shuffle partitions by default: ~10 s per read on a loaded local[2] (measured); 1 is
    # enough for the small logs here.
    "spark.databricks.delta.snapshotPartitions": "1",
}


def delta_conf() -> dict[str, str]:
    """Settings that put delta-spark in a new SparkSession (jars as local paths)."""
    from spark_exec.delta_jars import delta_jars

    return {"spark.jars": ",".join(delta_jars()), **DELTA_CONF}


def local_spark(
    warehouse_dir: str | os.PathLike[str] | None = None,
    *,
    master: str = "local[2]",
    app_name: str = "spark-ivm",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """The process's SparkSession: the active one, or a new local one."""
    # pyspark 4.x warns that pandas >= 3 is not fully supported; we do not use pandas here.
    warnings.filterwarnings("ignore", message=".*pandas >= 3.*", category=FutureWarning)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from spark_exec.delta_jars import require_java

    require_java()
    delta = delta_conf()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {
        **DEFAULT_CONF,
        **delta,
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        **(conf or {}),
    }
    if warehouse_dir is not None:
        settings["spark.sql.warehouse.dir"] = os.path.abspath(os.fspath(warehouse_dir))
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
