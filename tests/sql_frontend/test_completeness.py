"""Nothing of a query is dropped silently: every argument sqlglot can give a clause node is
consumed by the translator or refused by name (``sql_frontend.completeness``).

The cases are generated from sqlglot's own ``arg_types`` of every clause type, so a new
argument in a new sqlglot version is a new case here: a supported argument needs a real query
that uses it (and translates, which the walk after translation proves consumed); any other is
injected into a real query and must be refused, named.
"""

from __future__ import annotations

import pytest
import sqlglot
from fixture_cases import FIXTURES, named_queries
from sqlglot import exp

from sql_frontend import completeness
from sql_frontend.analyze import analyze
from sql_frontend.errors import UnsupportedSqlError
from sql_frontend.planner import plan_sql, translate_checked

CAT = {
    "t": [("k", "bigint"), ("v", "bigint"), ("s", "string")],
    "u": [("k", "bigint"), ("w", "bigint")],
}

_SETOP = "SELECT k FROM t {op} SELECT k FROM u ORDER BY k LIMIT 2 OFFSET 1"

EXAMPLES: dict[tuple[type[exp.Expr], str], str] = {
    **{
        (getattr(exp, name.split(".")[0]), name.split(".")[1]): sql
        for name, sql in named_queries(FIXTURES / "completeness" / "examples.sql").items()
    },
    **{
        (cls, key): _SETOP.format(op=op)
        for cls, op in ((exp.Union, "UNION"), (exp.Intersect, "INTERSECT"), (exp.Except, "EXCEPT"))
        for key in ("this", "expression", "distinct", "order", "limit", "offset")
    },
}
"""For each supported argument, a real query whose analysed tree carries it (the set
operations' shared arguments generated, the others in ``tests/fixtures/completeness``)."""

BASES: dict[type[exp.Expr], str] = {
    exp.Select: "SELECT k FROM t",
    exp.Union: "SELECT k FROM t UNION SELECT k FROM u",
    exp.Intersect: "SELECT k FROM t INTERSECT SELECT k FROM u",
    exp.Except: "SELECT k FROM t EXCEPT SELECT k FROM u",
    exp.Subquery: "(SELECT k FROM t) ORDER BY k LIMIT 1",
    exp.From: "SELECT k FROM t",
    exp.Join: "SELECT t.k FROM t JOIN u ON t.k = u.k",
    exp.Lateral: "SELECT k, x FROM t LATERAL VIEW stack(2, k, v) st AS x",
    exp.Table: "SELECT k FROM t",
    exp.TableAlias: "SELECT x.k FROM t AS x",
    exp.With: "WITH a AS (SELECT k FROM t) SELECT k FROM a",
    exp.CTE: "WITH a AS (SELECT k FROM t) SELECT k FROM a",
    exp.Where: "SELECT k FROM t WHERE v > 1",
    exp.Having: "SELECT k FROM t GROUP BY k HAVING count(*) > 1",
    exp.Group: "SELECT k, count(*) FROM t GROUP BY k",
    exp.Cube: "SELECT k, count(*) FROM t GROUP BY CUBE(k)",
    exp.Rollup: "SELECT k, count(*) FROM t GROUP BY ROLLUP(k)",
    exp.GroupingSets: "SELECT k, count(*) FROM t GROUP BY GROUPING SETS (k)",
    exp.Order: "SELECT k FROM t ORDER BY v LIMIT 2",
    exp.Ordered: "SELECT k FROM t ORDER BY v LIMIT 2",
    exp.Limit: "SELECT k FROM t ORDER BY v LIMIT 2",
    exp.Offset: "SELECT k FROM t ORDER BY v LIMIT 2 OFFSET 1",
    exp.Distinct: "SELECT DISTINCT k FROM t",
    exp.Window: "SELECT k, sum(v) OVER (PARTITION BY k) FROM t",
}
"""For each clause type, a real query that contains one (arguments are injected into it)."""

CASES = [(cls, key) for cls in completeness.CLAUSES for key in cls.arg_types]


def _first(tree: exp.Expr, cls: type[exp.Expr]) -> exp.Expr:
    return next(n for n in completeness._clauses(tree) if type(n) is cls)


@pytest.mark.parametrize(("cls", "key"), CASES, ids=[f"{c.__name__}.{k}" for c, k in CASES])
def test_every_clause_argument_is_consumed_or_refused(cls: type[exp.Expr], key: str) -> None:
    if key in completeness.SUPPORTED[cls]:
        sql = EXAMPLES[(cls, key)]
        parsed = sqlglot.parse_one(sql, read="spark")
        tree = analyze(sql, CAT)
        assert any(
            completeness.present(n, key)
            for t in (parsed, tree)
            for n in completeness._clauses(t)
            if type(n) is cls
        ), f"the example for {cls.__name__}.{key} does not carry it"
        # the walk after translation refuses what was not used (analysis may have rewritten
        # the argument away, as qualify does USING and eliminate_subqueries derived tables)
        translate_checked(tree, CAT)
        return
    tree = analyze(BASES[cls], CAT)
    node = _first(tree, cls)
    node.set(key, exp.Var(this="injected"))
    with pytest.raises(UnsupportedSqlError) as e:
        translate_checked(tree, CAT)
    assert e.value.construct == completeness._name(node, key)


@pytest.mark.parametrize(
    ("sql", "construct", "column"),
    [
        # ignored on the old main: the whole table was read, LIMIT ... WITH TIES cut at 2 rows,
        # UNPIVOT passed the table through, GROUP BY ... WITH CUBE grouped by (k, s) only
        ("SELECT k FROM t TABLESAMPLE (10 PERCENT)", "TABLESAMPLE", 30),
        ("SELECT k FROM t UNPIVOT (x FOR y IN (k, v))", "PIVOT / UNPIVOT", 15),
        ("SELECT k FROM t ORDER BY k LIMIT 2 WITH TIES", "LIMIT ... WITH TIES / PERCENT", None),
    ],
)
def test_argument_ignored_before_is_refused_by_name(
    sql: str, construct: str, column: int | None
) -> None:
    with pytest.raises(UnsupportedSqlError) as e:
        plan_sql(sql, CAT)
    assert e.value.construct == construct
    assert e.value.column == column


def test_argument_skipped_on_a_path_is_refused_after_translation() -> None:
    """A recursive CTE's UNION is split into its parts; an ORDER BY … LIMIT on it was
    silently dropped on the old main. The walk after translation finds it unconsumed."""
    sql = (
        "WITH RECURSIVE r(n) AS (SELECT k FROM t UNION SELECT r.n + 1 FROM r WHERE r.n < 3 "
        "ORDER BY 1 LIMIT 2) SELECT n FROM r"
    )
    with pytest.raises(UnsupportedSqlError) as e:
        plan_sql(sql, CAT)
    assert e.value.construct in ("UNION ORDER", "UNION LIMIT")
    assert "no use for it" in str(e.value)
