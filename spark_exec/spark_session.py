"""One local SparkSession, configured for spark-ivm.

``local_spark()`` returns the active session if there is one (Spark allows one per process),
otherwise builds one: master ``local[*]`` and as many shuffle partitions as cores unless
told otherwise (the Session resolves both through :mod:`spark_exec.config`), the UI off,
quiet logs, UTC session time, Python workers on this interpreter (so they import this project and deltalake), and
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
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_CONF: dict[str, str] = {
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


def _with_s3a(settings: dict[str, str], *, required: bool) -> dict[str, str]:
    """``settings`` plus the S3A jars: always when ``required`` (raising, with the fix, if
    they were not fetched), otherwise when ``./run env`` fetched them."""
    from spark_exec.delta_jars import s3a_cached, s3a_jars

    if not required and not s3a_cached():
        return settings
    jars = [j for j in settings.get("spark.jars", "").split(",") if j]
    return {**settings, "spark.jars": ",".join([*jars, *s3a_jars()])}


def local_spark(
    warehouse_dir: str | os.PathLike[str] | None = None,
    *,
    master: str = "local[*]",
    app_name: str = "spark-ivm",
    conf: Mapping[str, str] | None = None,
    s3: bool = False,
) -> SparkSession:
    """The process's SparkSession: the active one, or a new local one.

    ``s3``: the caller needs ``s3://`` in Spark SQL (a warehouse on S3): the S3A jars must be
    there (fetched by ``./run env``); otherwise they are added when present."""
    # pyspark 4.x warns that pandas >= 3 is not fully supported; we do not use pandas here.
    warnings.filterwarnings("ignore", message=".*pandas >= 3.*", category=FutureWarning)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from spark_exec.delta_jars import require_java

    require_java()
    delta = _with_s3a(delta_conf(), required=s3)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    cores = str(os.cpu_count() or 1)
    settings = {
        "spark.sql.shuffle.partitions": cores,
        "spark.default.parallelism": cores,
        **DEFAULT_CONF,
        **delta,
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        # executors of a cluster master import this project too (sharded epochs run there)
        "spark.executorEnv.PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        **(conf or {}),
    }
    if warehouse_dir is not None:
        settings["spark.sql.warehouse.dir"] = os.path.abspath(os.fspath(warehouse_dir))
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def missing_for_spark_ivm(spark: SparkSession) -> list[str]:
    """What a caller's SparkSession lacks for spark-ivm to register its tables and views by
    name (empty when nothing): Spark Connect (no JVM catalog), delta-spark's classes, its
    session extension, its catalog."""
    from spark_exec.connector import has_delta_jvm

    if getattr(spark, "_jsparkSession", None) is None:
        return [
            "a classic (py4j) SparkSession: Spark Connect sessions cannot register tables in "
            "the session catalog from Python"
        ]
    missing = []
    if not has_delta_jvm(spark):
        missing.append("delta-spark's jars on the driver's classpath (spark.jars)")
    conf = spark.sparkContext.getConf()
    extensions = conf.get("spark.sql.extensions", "") or ""
    if DELTA_CONF["spark.sql.extensions"] not in extensions:
        missing.append(f"spark.sql.extensions = {DELTA_CONF['spark.sql.extensions']}")
    key = "spark.sql.catalog.spark_catalog"
    if conf.get(key, "") != DELTA_CONF[key]:
        missing.append(f"{key} = {DELTA_CONF[key]}")
    return missing


def require_spark_ivm_ready(spark: SparkSession) -> None:
    """Refuse a caller's SparkSession that cannot hold spark-ivm's tables, saying what to add.

    These settings are static in Spark (fixed when the session starts), so the fix is to build
    the session with them: ``SparkSession.builder.config(map=delta_conf())``.
    """
    missing = missing_for_spark_ivm(spark)
    if not missing:
        return
    from spark_exec.errors import SparkSetupError

    lines = "\n".join(f"  - {m}" for m in missing)
    raise SparkSetupError(
        "this SparkSession cannot hold spark-ivm's tables and views; it lacks:\n"
        f"{lines}\n"
        "Build it with these settings, e.g. `SparkSession.builder.config(map="
        "spark_exec.spark_session.delta_conf())`, or let Session() start its own "
        "(`./run env` fetches the jars into build/jars)"
    )
