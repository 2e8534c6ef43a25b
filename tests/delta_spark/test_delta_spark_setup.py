"""delta-spark is on every project SparkSession; a missing jar or Java fails with a typed error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from spark_exec import delta_jars
from spark_exec.connector import has_delta_jvm
from spark_exec.errors import SparkSetupError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parents[2]


def test_jars_are_fetched_for_this_pyspark() -> None:
    jars = delta_jars.delta_jars()  # raises if ./run env did not fetch them
    names = {Path(j).name for j in jars}
    assert f"delta-spark_{delta_jars.spark_binary()}_2.13-{delta_jars.DELTA_VERSION}.jar" in names
    assert f"delta-storage-{delta_jars.DELTA_VERSION}.jar" in names
    # Spark's own copies win: nothing pyspark already ships is added again
    assert not any(n.startswith(("scala-library", "hadoop-client", "parquet-")) for n in names)


def test_missing_jars_raise_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_IVM_JARS", str(tmp_path))
    with pytest.raises(SparkSetupError, match=r"\./run env"):
        delta_jars.delta_jars()
    d = delta_jars.cache_dir()
    d.mkdir(parents=True)
    (d / delta_jars.MANIFEST).write_text("delta-spark_4.2_2.13-4.4.0.jar\n")
    with pytest.raises(SparkSetupError, match=r"delta-spark_4\.2_2\.13-4\.4\.0\.jar"):
        delta_jars.delta_jars()


def test_missing_java_raises_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(SparkSetupError, match="Java 17"):
        delta_jars.require_java()


def test_new_process_without_jars_fails_before_spark_starts(tmp_path: Path) -> None:
    code = "from spark_exec.spark_session import local_spark; local_spark()"
    env = {**os.environ, "SPARK_IVM_JARS": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "SparkSetupError" in done.stderr and "./run env" in done.stderr


def test_artifact_name_strips_versions() -> None:
    assert delta_jars._artifact_name("jackson-core-2.13.5.jar") == "jackson-core"
    assert delta_jars._artifact_name("delta-spark_4.2_2.13-4.4.0.jar") == "delta-spark_4.2_2.13"
    assert delta_jars._artifact_name("zstd-jni-1.5.7-3.jar") == "zstd-jni"


@pytest.mark.spark
def test_session_has_delta_from_local_jars(spark: SparkSession) -> None:
    conf = spark.sparkContext.getConf()
    assert spark.conf.get("spark.sql.extensions") == "io.delta.sql.DeltaSparkSessionExtension"
    assert "DeltaCatalog" in spark.conf.get("spark.sql.catalog.spark_catalog")
    jars = conf.get("spark.jars").split(",")
    assert jars and all(os.path.isfile(j.removeprefix("file:")) for j in jars)
    assert conf.get("spark.jars.packages") is None  # Spark never downloads
    assert has_delta_jvm(spark)


def test_s3a_jars_match_the_bundled_hadoop_without_the_sdk_bundle() -> None:
    jars = delta_jars.s3a_jars()  # raises if ./run env did not fetch them
    names = {Path(j).name for j in jars}
    assert f"hadoop-aws-{delta_jars.hadoop_version()}.jar" in names
    assert any(n.startswith("s3-2.") for n in names)  # the SDK's S3 module, not its bundle
    assert not any(n.startswith(("bundle-", "hadoop-client")) for n in names)


def test_missing_s3a_jars_raise_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARK_IVM_JARS", str(tmp_path))
    with pytest.raises(SparkSetupError, match=r"S3A .*hadoop-aws.*\./run env"):
        delta_jars.s3a_jars()
    from spark_exec.spark_session import _with_s3a

    assert _with_s3a({"spark.jars": "a.jar"}, required=False) == {"spark.jars": "a.jar"}
    with pytest.raises(SparkSetupError, match=r"\./run env"):
        _with_s3a({"spark.jars": "a.jar"}, required=True)


def test_s3a_settings_come_from_the_aws_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from spark_exec import s3a

    for k, v in {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_REGION": "eu-west-1",
    }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    conf = s3a.spark_conf()
    assert conf["spark.hadoop.fs.s3.impl"] == s3a.S3A_CLASS  # s3:// is read through S3A
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.access.key"] == "k"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert all(Path(j).is_file() for j in conf["spark.jars"].split(","))
