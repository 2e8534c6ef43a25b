"""Correlated subqueries unnested by joining with the domain of their outer values
(``sql_frontend/rules/unnest_correlated.py``), against Spark after every random change.

Every view here was refused by name before: a correlation that is not an equality, a
reference two levels out, a correlated subquery that joins, groups or aggregates, an IN / EXISTS
inside an aggregate of a grouping query, EXISTS over a subquery with LIMIT or OFFSET, a tuple IN that is a value rather than a WHERE filter. The tables (``sql_harness.TABLES``) hold NULLs in every nullable column and
duplicates; each step inserts, deletes and updates rows in all of them, and every view must
then equal Spark's answer as a multiset — three-valued logic included.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from fixture_cases import FIXTURES, named_queries
from sql_harness import failures_over_steps

from sql_frontend.errors import UnsupportedSqlError
from sql_frontend.planner import plan_sql

SEED = int(os.environ.get("IVM_SQL_SEED", "1234"))

VIEWS: dict[str, str] = named_queries(FIXTURES / "sql_views" / "unnest_correlated.sql")


# The pinned Spark (4.2) does not resolve a reference two or more levels out
# (UNRESOLVED_COLUMN); its answer for those views is that of an equivalent query it takes.
SPARK_TEXT = {
    "two_levels_exists": "SELECT k, v, EXISTS (SELECT 1 FROM u JOIN e ON e.dst = u.w "
    "WHERE u.k = t.k AND e.src = t.v) FROM t",
    "two_levels_filter": "SELECT k FROM t WHERE EXISTS (SELECT 1 FROM u JOIN e ON u.w = e.dst "
    "WHERE u.k = t.k AND e.src = t.v)",
    # inside the conjunct u.k = t.k, t.k is u.k
    "two_levels_not_in": "SELECT k, v FROM t WHERE v NOT IN (SELECT w FROM u WHERE u.k = t.k "
    "AND NOT EXISTS (SELECT 1 FROM e WHERE e.src = u.w AND e.dst > u.k))",
    # the inner scalar subquery reads t only: computed as a column of t first
    "two_levels_scalar": "SELECT q.k, (SELECT count(*) FROM u WHERE u.k = q.k AND u.w > q.m) "
    "FROM (SELECT t.k, (SELECT min(dst) FROM e WHERE e.src = t.v) AS m FROM t) q",
    # nested EXISTS in positive conjuncts: the existence of one combination of rows
    "three_levels_exists": "SELECT k FROM t WHERE EXISTS (SELECT 1 FROM u JOIN e ON e.src = u.w "
    "JOIN u AS u2 ON u2.w = e.dst WHERE u.k = t.k AND u2.k = t.v)",
    "three_levels_value": "SELECT k, v, EXISTS (SELECT 1 FROM u JOIN e ON u.w = e.src "
    "JOIN u AS u2 ON u2.w = e.src WHERE u.k = t.k AND e.dst > t.v AND u2.k < t.k) FROM t",
    "three_levels_not_exists": "SELECT k, v FROM t WHERE NOT EXISTS (SELECT 1 FROM u "
    "JOIN e ON e.src = u.w JOIN u AS u2 ON u2.k = e.dst WHERE u.k = t.k AND u2.w = t.v)",
    # the innermost value computed as a column of t first; "some e.dst of src above m" is
    # "the largest e.dst of src above m"
    "three_levels_scalar": "SELECT q.k, (SELECT count(*) FROM u JOIN (SELECT src, max(dst) AS md "
    "FROM e GROUP BY src) em ON em.src = u.w WHERE u.k = q.k AND em.md > q.m) "
    "FROM (SELECT t.k, (SELECT min(u2.w) FROM u AS u2 WHERE u2.k = t.v) AS m FROM t) q",
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_refused_before_planned_now(name: str) -> None:
    """Each view plans (the refusal by name is gone)."""
    from sql_harness import TABLES

    plan_sql(VIEWS[name], TABLES)


REFUSED = {
    # Spark 4.2 refuses these too (UNSUPPORTED_IN_EXISTS_SUBQUERY, and a correlated scalar
    # subquery neither grouped nor aggregated)
    "SELECT k, v FROM t ORDER BY EXISTS (SELECT 1 FROM u WHERE u.k = t.k) LIMIT 3": (
        "EXISTS in ORDER BY",
        44,
    ),
    "SELECT k, count(*) FROM t GROUP BY k ORDER BY k IN (SELECT w FROM u)": (
        "IN (subquery) in ORDER BY",
        47,
    ),
    "SELECT k, count(*), (SELECT max(w) FROM u WHERE u.k < t.k) FROM t GROUP BY k": (
        "a correlated scalar subquery outside the aggregates of a grouping query",
        29,
    ),
    "SELECT k, (SELECT w FROM u WHERE u.k < t.k) FROM t": (
        "a correlated scalar subquery that does not aggregate",
        19,
    ),
    # which rows these keep is not defined (Spark keeps arbitrary ones)
    "SELECT k, v IN (SELECT w FROM u WHERE u.k < t.k LIMIT 2) FROM t": (
        "LIMIT without ORDER BY in a correlated IN (subquery)",
        55,
    ),
    "SELECT k, v IN (SELECT max(w) FROM u WHERE u.k = t.k GROUP BY s OFFSET 1) FROM t": (
        "OFFSET without ORDER BY in a correlated IN (subquery)",
        72,
    ),
    # Spark takes these two; the domain cannot join before a FULL join's ON, nor inside a
    # derived table that is NULL-extended
    "SELECT k FROM t WHERE EXISTS (SELECT 1 FROM u FULL JOIN e ON u.w = e.src AND e.dst = t.k)": (
        "correlated EXISTS reading an outer column in an ON before its FULL JOIN",
        57,
    ),
    "SELECT k FROM t WHERE EXISTS (SELECT 1 FROM e LEFT JOIN (SELECT w FROM u "
    "WHERE u.k = t.k) x ON x.w = e.src)": (
        "correlated EXISTS reading an outer column inside a derived table",
        88,
    ),
}


@pytest.mark.parametrize("sql", list(REFUSED))
def test_refused_by_name_with_position(sql: str) -> None:
    """The position is that of the first token of the refused construct that has one."""
    from sql_harness import TABLES

    construct, column = REFUSED[sql]
    with pytest.raises(UnsupportedSqlError) as info:
        plan_sql(sql, TABLES)
    assert info.value.construct == construct
    assert (info.value.line, info.value.column) == (1, column)


@pytest.mark.spark
def test_unnested_views_equal_spark_after_every_step(spark: Any) -> None:
    failures = failures_over_steps(spark, VIEWS, SEED, SPARK_TEXT)
    assert not failures, f"seed {SEED}:\n" + "\n".join(failures)
