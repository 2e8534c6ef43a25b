"""Statements that the Session hands to Spark SQL: Spark's parse and analysis errors reach
the user as a typed ``SparkSqlError`` (on main: pyspark's raw ``ParseException`` /
``AnalysisException``), with the statement's line and column in the script."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_fixture import spark

from ivm.errors import IvmError
from spark_exec import Session
from spark_exec.errors import SparkSqlError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["spark"]


@pytest.mark.parametrize(
    ("text", "condition"),
    [
        ("\n\nSELECT", "PARSE_SYNTAX_ERROR"),
        ("\n\nSELECT nope FROM t", "UNRESOLVED_COLUMN"),
        ("\n\nSELECT * FROM no_such_table", "TABLE_OR_VIEW_NOT_FOUND"),
    ],
)
def test_spark_errors_are_typed(
    spark: SparkSession, tmp_path: Path, text: str, condition: str
) -> None:
    s = Session(spark, warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (k BIGINT)")
    with pytest.raises(SparkSqlError) as err:
        s.sql("SELECT 1;" + text)
    assert isinstance(err.value, IvmError)
    assert err.value.line == 3
    assert err.value.spark_error is not None and condition in err.value.spark_error
