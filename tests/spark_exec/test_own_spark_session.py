"""``Session(spark=existing)`` works fully with delta-spark, or refuses at once saying what the
session lacks (issue 18, item 3) — instead of a warning per table and unqueryable views."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from pyspark.sql import SparkSession
from spark_exec.errors import SparkSetupError
from spark_exec.session import Session
from spark_exec.spark_session import delta_conf

builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
if {with_jars}:
    builder = builder.config("spark.jars", delta_conf()["spark.jars"])
spark = builder.getOrCreate()
try:
    Session(spark=spark, warehouse={warehouse!r})
except SparkSetupError as exc:
    print(exc)
    sys.exit(0)
print("accepted")
sys.exit(3)
"""


@pytest.mark.parametrize("with_jars", [False, True], ids=["no-delta-jars", "jars-no-extension"])
def test_session_without_delta_spark_is_refused_with_what_is_missing(
    tmp_path: Path, with_jars: bool
) -> None:
    code = textwrap.dedent(SCRIPT.format(with_jars=with_jars, warehouse=str(tmp_path / "wh")))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "cannot hold spark-ivm's tables" in out
    assert "spark.sql.extensions = io.delta.sql.DeltaSparkSessionExtension" in out
    assert "spark.sql.catalog.spark_catalog" in out
    assert ("delta-spark's jars" in out) is (not with_jars)
    assert "delta_conf()" in out  # says how to fix it


def test_session_with_delta_spark_is_accepted(spark) -> None:  # type: ignore[no-untyped-def]
    from spark_exec.spark_session import missing_for_spark_ivm

    assert missing_for_spark_ivm(spark) == []
