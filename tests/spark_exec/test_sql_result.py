"""One result type for ``Session.sql`` (issue 18, item 8): DDL, DML, SELECT, SHOW, DESCRIBE,
EXPLAIN and REFRESH all give a :class:`~spark_exec.result.SqlResult` with the same methods."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from spark_exec.result import MissingDependencyError, NoSparkSessionError, SqlResult
from spark_exec.session import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def script(s: Session) -> dict[str, SqlResult]:
    """One result per kind of statement the Session owns (no Spark needed)."""
    out = {
        "create_table": s.sql("CREATE TABLE t (k BIGINT, v BIGINT)"),
        "insert": s.sql("INSERT INTO t VALUES (1, 10), (1, 5), (2, 7)"),
        "create_view": s.sql(
            "CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k"
        ),
        "update": s.sql("UPDATE t SET v = 1 WHERE k = 1"),
        "delete": s.sql("DELETE FROM t WHERE k = 2"),
        "refresh": s.sql("REFRESH MATERIALIZED VIEW m"),
        "show": s.sql("SHOW MATERIALIZED VIEWS"),
        "describe": s.sql("DESCRIBE MATERIALIZED VIEW m"),
        "history": s.sql("DESCRIBE HISTORY m"),
        "explain": s.sql("EXPLAIN MATERIALIZED VIEW m"),
        "drop": s.sql("DROP MATERIALIZED VIEW m"),
        "empty": s.sql("-- nothing here\n"),
    }
    return out


def test_every_statement_gives_one_result_type(tmp_path: Path) -> None:
    r = script(Session(warehouse=tmp_path / "wh"))
    assert all(type(x) is SqlResult for x in r.values())
    kinds = {name: x.kind for name, x in r.items()}
    assert kinds == {
        "create_table": "ddl",
        "insert": "dml",
        "create_view": "ddl",
        "update": "dml",
        "delete": "dml",
        "refresh": "refresh",
        "show": "show",
        "describe": "describe",
        "history": "describe",
        "explain": "explain",
        "drop": "ddl",
        "empty": "empty",
    }
    # affected rows: what DML wrote; what a CREATE / REFRESH of views wrote to the view table
    assert r["insert"].affected_rows == 3
    assert r["update"].affected_rows == 2
    assert r["delete"].affected_rows == 1
    assert r["create_view"].affected_rows == 2  # (1, 15), (2, 7)
    assert r["refresh"].affected_rows == 1  # rows written: (1, 2); (1, 15) and (2, 7) removed
    assert r["create_table"].affected_rows is None
    # every result has rows as Arrow
    assert r["insert"].to_arrow().to_pylist()[0]["num_affected_rows"] == 3
    (rep,) = r["refresh"].to_arrow().to_pylist()
    assert rep["view"] == "m" and rep["committed"] is True and rep["input_changes"] > 0
    assert r["show"].to_arrow().column("name").to_pylist() == ["m"]
    assert [c["col_name"] for c in r["describe"].collect()][:2] == ["k", "s"]
    assert r["history"].to_arrow().num_rows >= 2
    assert "refresh group m" in r["explain"].to_arrow().column("plan")[0].as_py()
    assert r["empty"].to_arrow().num_rows == 1


def test_display_text_repr_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = script(Session(warehouse=tmp_path / "wh"))
    assert repr(r["insert"]) == (
        "SqlResult(statement='INSERT', kind='dml', message='INSERT: table version 1 "
        "(num_added_files=1, num_added_rows=3)', affected_rows=3)"
    )
    r["show"].show()
    out = capsys.readouterr().out
    assert out.startswith("materialized views:\n+") and "| m " in out
    page = r["show"]._repr_html_()
    assert page.startswith("<div><p><b>SHOW MATERIALIZED VIEWS</b> (show)")
    assert "<th>name</th>" in page and "<td>m</td>" in page
    s = Session(warehouse=tmp_path / "wh2")
    s.sql("CREATE TABLE x (a STRING)")
    s.sql("INSERT INTO x VALUES ('<b>&')")
    s.sql("CREATE MATERIALIZED VIEW y AS SELECT a FROM x")
    html = s.sql("DESCRIBE MATERIALIZED VIEW y")._repr_html_()
    assert "<b>&" not in html.replace("<b>DESCRIBE", "")  # values are escaped
    big = SqlResult("SHOW X", "show", "", rows=pa.table({"n": list(range(30))}))
    assert "showing 20 of 30 rows" in big._repr_html_()
    assert "(10 more rows)" in big._text(20)


def test_to_pandas_without_pandas_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Session(warehouse=tmp_path / "wh")
    r = s.sql("CREATE TABLE t (k BIGINT)")
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if pandas were not installed
    with pytest.raises(MissingDependencyError, match="pip install pandas") as e:
        r.to_pandas()
    assert isinstance(e.value, ImportError) and e.value.package == "pandas"


@pytest.mark.parametrize("module", ["spark_exec.result", "spark_exec.statements"])
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    assert doctest.testmod(importlib.import_module(module)).failed == 0


def test_to_df_without_a_session_says_what_to_do() -> None:
    r = SqlResult("INSERT", "dml", "done", affected_rows=1)
    with pytest.raises(NoSparkSessionError, match="to_arrow"):
        r.toDF()


@pytest.mark.parametrize(
    ("text", "name", "kind"),
    [
        ("SELECT 1", "SELECT", "query"),
        ("SELECT 1 UNION ALL SELECT 2", "UNION", "query"),
        ("SHOW TABLES", "SHOW", "show"),
        ("DESCRIBE TABLE t", "DESCRIBE", "describe"),
        ("CREATE DATABASE IF NOT EXISTS other", "CREATE DATABASE", "ddl"),
        ("CREATE VIEW v AS SELECT 1", "CREATE VIEW", "ddl"),
        ("DROP VIEW v", "DROP VIEW", "ddl"),
        ("INSERT INTO spark_table SELECT 1", "INSERT", "dml"),
    ],
)
def test_kind_of_statements_spark_runs(text: str, name: str, kind: str) -> None:
    from spark_exec import statements as S

    (st,) = S.split_statements(text)
    assert S.spark_statement_kind(None, st) == (name, kind)


@pytest.mark.spark
def test_queries_and_spark_statements(spark: SparkSession, tmp_path: Path) -> None:
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT); INSERT INTO t VALUES (1, 10), (2, 7), (2, 1)")
    s.sql("CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k")
    q = s.sql("SELECT k, s FROM m ORDER BY k")
    assert (q.kind, q.statement) == ("query", "SELECT")
    assert q.to_arrow().to_pylist() == [{"k": 1, "s": 10}, {"k": 2, "s": 8}]
    assert q.toDF().count() == 2  # the query's own DataFrame
    assert "| 2 | 8 " in str(q)
    # a result Spark did not compute becomes a DataFrame of the Session's SparkSession
    shown = s.sql("SHOW MATERIALIZED VIEWS").toDF()
    assert shown.sparkSession is spark and shown.select("name").collect()[0][0] == "m"
