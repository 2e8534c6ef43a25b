"""Spark SQL over ``s3://``: the S3A file system's settings, from the warehouse's S3 settings.

Spark reads Delta tables through Hadoop file systems; ``s3://`` and ``s3a://`` locations need
hadoop-aws (S3A) on the classpath — a jar set of its own, fetched by ``./run env``
(spark_exec.delta_jars, never downloaded by Spark) — and ``fs.s3a.*`` settings.  They come
from the same ``AWS_*`` variables the storage layer and delta-rs read (catalog.storage):
``AWS_ENDPOINT_URL`` becomes ``fs.s3a.endpoint`` with path-style access (what S3-compatible
servers need), the keys become ``fs.s3a.access.key`` / ``secret.key`` (otherwise S3A's default
credential chain applies), and ``fs.s3.impl`` maps ``s3://`` to S3A.

:func:`hadoop_settings` gives them as Hadoop keys; :func:`spark_conf` as ``spark.hadoop.*``
settings for a new SparkSession (e.g. another application reading a warehouse on S3);
:func:`configure` applies them to a running session's Hadoop configuration (the variables may
change after Spark started: tests start their S3 server later), and raises
:class:`~spark_exec.errors.SparkSetupError` saying how to fix a session without S3A's classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from catalog.storage import S3Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

S3A_CLASS = "org.apache.hadoop.fs.s3a.S3AFileSystem"


def hadoop_settings(settings: S3Settings | None = None) -> dict[str, str]:
    """The Hadoop keys that let S3A reach the store ``settings`` (default: the environment)."""
    s = settings or S3Settings.from_env()
    out = {
        "fs.s3.impl": S3A_CLASS,
        "fs.s3a.impl": S3A_CLASS,
        "fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A",
        "fs.s3a.endpoint.region": s.region,
    }
    if s.endpoint:
        out["fs.s3a.endpoint"] = s.endpoint
        out["fs.s3a.path.style.access"] = "true"
        out["fs.s3a.connection.ssl.enabled"] = "false" if s.allow_http else "true"
    if s.access_key and s.secret_key:
        out["fs.s3a.access.key"] = s.access_key
        out["fs.s3a.secret.key"] = s.secret_key
        out["fs.s3a.aws.credentials.provider"] = (
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        )
    return out


def spark_conf(settings: S3Settings | None = None) -> dict[str, str]:
    """:func:`hadoop_settings` as ``spark.hadoop.*`` settings, plus the S3A jars (local
    files: :func:`spark_exec.delta_jars.s3a_jars` raises if ``./run env`` did not fetch them)."""
    from spark_exec.delta_jars import s3a_jars

    return {
        "spark.jars": ",".join(s3a_jars()),
        **{f"spark.hadoop.{k}": v for k, v in hadoop_settings(settings).items()},
    }


def has_s3a(spark: SparkSession) -> bool:
    """Whether the session's JVM can load S3A."""
    try:
        spark._jvm.java.lang.Class.forName(  # type: ignore[union-attr]
            S3A_CLASS,
            True,
            spark._jvm.Thread.currentThread().getContextClassLoader(),  # type: ignore[union-attr]
        )
    except Exception:
        return False
    return True


def configure(spark: SparkSession) -> None:
    """Point the session's S3A at the environment's store; :class:`SparkSetupError` if the
    session has no S3A classes."""
    if not has_s3a(spark):
        from spark_exec.delta_jars import FIX
        from spark_exec.errors import SparkSetupError

        raise SparkSetupError(
            "this SparkSession cannot read s3:// locations: hadoop-aws (S3A) is not on its "
            f"classpath; {FIX}, then start the session with spark_exec.s3a.spark_conf() "
            "(Session() and local_spark() add the fetched jars themselves)"
        )
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for k, v in hadoop_settings().items():
        conf.set(k, v)
