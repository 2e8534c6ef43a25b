"""delta-spark reads a view table of ARRAY / MAP / STRUCT columns (written by delta-rs from
the engine's tuples) with Spark's types and the view's rows, after a refresh that deleted and
inserted rows; the base table's nested columns are written by delta-rs too."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from spark_exec import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_delta_spark_reads_nested_view_columns(spark: SparkSession, tmp_path: Path) -> None:
    s = Session(warehouse=tmp_path / "wh")
    s.sql(
        "CREATE TABLE t (k BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, INT>, pt STRUCT<x: INT, y: STRING>)"
    )
    s.sql(
        "INSERT INTO t VALUES (1, array('a', 'b'), map('p', 1), named_struct('x', 1, 'y', 'u')),"
        " (2, NULL, map(), NULL), (3, array('c', NULL), map('q', 2, 'p', NULL), struct(3, NULL))"
    )
    s.sql(
        "CREATE MATERIALIZED VIEW v AS SELECT k, tags, attrs, pt, named_struct('k', k, 'n',"
        " size(tags)) AS kn FROM t"
    )
    s.sql(
        "CREATE MATERIALIZED VIEW g AS SELECT pt.y AS y, collect_list(k) AS ks FROM t GROUP BY pt.y"
    )
    s.sql("DELETE FROM t WHERE k = 1")
    s.sql("INSERT INTO t VALUES (4, array('z'), map('r', 5), named_struct('x', 4, 'y', 'u'))")
    s.refresh()
    df = spark.read.format("delta").load(s.table_path("v"))
    assert df.schema.simpleString() == (
        "struct<k:bigint,tags:array<string>,attrs:map<string,int>,pt:struct<x:int,y:string>,"
        "kn:struct<k:bigint,n:int>>"
    )
    rows = {r["k"]: r for r in df.collect()}
    assert sorted(rows) == [2, 3, 4]
    assert rows[3]["tags"] == ["c", None] and rows[3]["attrs"] == {"q": 2, "p": None}
    assert rows[3]["pt"]["x"] == 3 and rows[3]["pt"]["y"] is None
    assert rows[2]["tags"] is None and rows[2]["attrs"] == {} and rows[2]["kn"]["n"] is None
    assert rows[4]["kn"].asDict() == {"k": 4, "n": 1}
    groups = {r["y"]: r["ks"] for r in spark.read.format("delta").load(s.table_path("g")).collect()}
    assert groups == {None: [2, 3], "u": [4]}
