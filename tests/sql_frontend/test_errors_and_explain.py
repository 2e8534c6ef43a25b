"""Refusals name the construct and its position; EXPLAIN is stable text."""

from __future__ import annotations

import pytest
from fixture_cases import FIXTURES, read_cases

from sql_frontend.compile import explain
from sql_frontend.errors import (
    NonDeterministicError,
    SqlAnalysisError,
    SqlSyntaxError,
    UnsupportedSqlError,
)
from sql_frontend.plan import explain as explain_plan
from sql_frontend.planner import plan_sql

CAT = {
    "t": [("k", "bigint"), ("v", "bigint"), ("s", "string")],
    "u": [("k", "bigint"), ("w", "bigint")],
}


@pytest.mark.parametrize(
    ("sql", "construct", "line", "column"),
    [
        ("SELECT k, rand() FROM t", "RAND", 1, 11),
        ("SELECT k FROM t\nWHERE v > uuid()", "UUID", 2, 11),
        ("SELECT current_timestamp() FROM t", "CURRENT_TIMESTAMP", 1, 8),
    ],
)
def test_non_deterministic_refused(sql: str, construct: str, line: int, column: int) -> None:
    with pytest.raises(NonDeterministicError) as e:
        plan_sql(sql, CAT)
    assert e.value.construct == construct
    assert (e.value.line, e.value.column) == (line, column)
    assert "non-deterministic" in str(e.value)


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        ("SELECT k FROM t LIMIT 3", "LIMIT without ORDER BY"),
        ("SELECT k, kurtosis(v) FROM t GROUP BY k", "aggregate kurtosis"),
        (
            "SELECT k, sum(v) OVER (PARTITION BY k ORDER BY v RANGE BETWEEN 1 PRECEDING AND "
            "CURRENT ROW) FROM t",
            "RANGE BETWEEN with an offset",
        ),
        ("SELECT k FROM t GROUP BY GROUPING SETS (ROLLUP(k), (v))", "ROLLUP inside a grouping set"),
        ("SELECT make_interval(v) FROM t", "MAKE_INTERVAL"),
    ],
)
def test_unsupported_names_the_construct(sql: str, construct: str) -> None:
    with pytest.raises(UnsupportedSqlError) as e:
        plan_sql(sql, CAT)
    assert e.value.construct == construct
    assert str(e.value).startswith(f"unsupported SQL construct: {construct}")


def test_unsupported_has_position() -> None:
    with pytest.raises(UnsupportedSqlError) as e:
        plan_sql("SELECT k,\n  make_interval(v) FROM t", CAT)
    assert e.value.line == 2


def test_syntax_and_analysis_errors() -> None:
    with pytest.raises(SqlSyntaxError) as e:
        plan_sql("SELECT k FROM t WHERE", CAT)
    assert e.value.line == 1
    with pytest.raises(SqlAnalysisError):
        plan_sql("SELECT nope FROM t", CAT)
    with pytest.raises(ValueError):  # the hierarchy also derives from the builtins
        plan_sql("SELECT k FROM missing_table", CAT)


#: query -> its EXPLAIN, from ``tests/fixtures/explain/plans.sql``
GOLDEN = {c.sql[0]: "\n".join(c.sql[1:]) for c in read_cases(FIXTURES / "explain" / "plans.sql")}


@pytest.mark.parametrize("sql", list(GOLDEN))
def test_explain_golden(sql: str) -> None:
    assert explain_plan(plan_sql(sql, CAT)) == GOLDEN[sql]


def test_explain_shows_plan_and_dataflow() -> None:
    text = explain("SELECT k, count(*) FROM t GROUP BY k", CAT)
    assert "== Relational plan ==" in text and "== Dataflow ==" in text
