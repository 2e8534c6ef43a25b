"""Column names that are not identifiers, end to end (issue 19, finding 7).

A base table whose columns are named ``1`` (what ``SELECT 1`` produces), ``a b``, ``ü`` and
``Abc`` feeds a view and a view over that view; every refresh after an INSERT and a DELETE must
give the rows a plain recomputation gives. On the old main the first refresh after a change
failed: the change feed was read with the names as SQL expressions (``missing column '1'``,
``No field named a``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from spark_exec.session import Session


def _rows(session: Session, name: str) -> Counter:
    t = session.read(name)
    return Counter(zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True))


def test_odd_column_names_survive_refreshes(tmp_path: Path) -> None:
    s = Session(warehouse=tmp_path)
    s.sql("CREATE TABLE t (`1` INT, `a b` INT, `ü` STRING, `Abc` INT)")
    s.sql("INSERT INTO t VALUES (1, 2, 'x', 7), (3, 4, 'y', 8)")
    s.sql(
        "CREATE MATERIALIZED VIEW v AS "
        "SELECT `1`, `a b` + 1 AS `c d`, `ü`, `Abc` + 0 AS n FROM t WHERE `1` > 0"
    )
    s.sql("CREATE MATERIALIZED VIEW w AS SELECT `ü`, sum(`c d`) AS `Σ` FROM v GROUP BY `ü`")
    base = [(1, 2, "x", 7), (3, 4, "y", 8)]

    def check() -> None:
        assert s.read("v").column_names == ["1", "c d", "ü", "n"]
        assert _rows(s, "v") == Counter((a, b + 1, c, d) for a, b, c, d in base if a > 0)
        sums: Counter = Counter()
        for _, b, c, _ in base:
            sums[c] += b + 1
        assert _rows(s, "w") == Counter(sums.items())

    check()
    s.sql("INSERT INTO t VALUES (5, 6, 'x', 9)")
    base.append((5, 6, "x", 9))
    s.sql("REFRESH MATERIALIZED VIEW w")
    check()
    s.sql("DELETE FROM t WHERE `1` = 1")
    base.remove((1, 2, "x", 7))
    s.sql("REFRESH MATERIALIZED VIEW w")
    check()


def test_qualified_stars_over_a_natural_join_as_a_view(tmp_path: Path) -> None:
    """``nt1.*, nt2.*`` repeats the name ``k``: the view stores ``k, v1, k_1, v2`` and every
    refresh compiles to that schema (on the old main: an internal SchemaChangeError, the
    compiled schema ``k, v1, k, v2`` against the stored one)."""
    s = Session(warehouse=tmp_path)
    s.sql("CREATE TABLE nt1 (k INT, v1 STRING)")
    s.sql("CREATE TABLE nt2 (k INT, v2 STRING)")
    s.sql("INSERT INTO nt1 VALUES (1, 'a'), (2, 'b')")
    s.sql("INSERT INTO nt2 VALUES (1, 'x'), (3, 'y')")
    s.sql("CREATE MATERIALIZED VIEW w AS SELECT nt1.*, nt2.* FROM nt1 NATURAL JOIN nt2")
    assert s.read("w").column_names == ["k", "v1", "k_1", "v2"]
    assert _rows(s, "w") == Counter({(1, "a", 1, "x"): 1})
    s.sql("INSERT INTO nt2 VALUES (2, 'z')")
    s.sql("REFRESH MATERIALIZED VIEW w")
    assert _rows(s, "w") == Counter({(1, "a", 1, "x"): 1, (2, "b", 2, "z"): 1})


# Issue 19, item 3: output names as Spark gives them. (query over ``nm``, Spark 4.2's
# ``df.columns``) — ``test_names_are_sparks`` re-asks a live Spark for every entry. On the old
# main every unaliased expression was ``_col_<i>`` and ``SELECT A`` was ``a``.
NM_COLUMNS = [("a", "int"), ("b", "int"), ("s", "string"), ("f", "double")]
SPARK_NAMES = [
    ("SELECT A, nm.B, NM.a, a AS Foo FROM nm", ["A", "B", "a", "Foo"]),
    (
        "SELECT a + 1, -a, a * 2.5, 1, 'x', 1.5, NULL, true FROM nm",
        ["(a + 1)", "(- a)", "(a * 2.5)", "1", "x", "1.5", "NULL", "true"],
    ),
    (
        "SELECT Count(*), count(a), COUNT(DISTINCT a), sum(a + 1), avg(f), Max(s) FROM nm",
        ["count(1)", "count(a)", "count(DISTINCT a)", "sum((a + 1))", "avg(f)", "max(s)"],
    ),
    (
        "SELECT upper(s), ceil(f), coalesce(a, b), nvl(a, b), abs(a), length(s) FROM nm",
        ["upper(s)", "CEIL(f)", "coalesce(a, b)", "nvl(a, b)", "abs(a)", "length(s)"],
    ),
    (
        "SELECT a = b, a <> b, a <=> b, a IS NULL, a IS NOT NULL, a IN (1, 2) FROM nm",
        [
            "(a = b)",
            "(NOT (a = b))",
            "(a <=> b)",
            "(a IS NULL)",
            "(a IS NOT NULL)",
            "(a IN (1, 2))",
        ],
    ),
    (
        "SELECT CASE WHEN a = 1 THEN 'one' ELSE 'other' END, CASE a WHEN 1 THEN 2 END, "
        "if(a = 1, 2, 3), (a + b) * 2, a div b FROM nm",
        [
            "CASE WHEN (a = 1) THEN one ELSE other END",
            "CASE WHEN (a = 1) THEN 2 END",
            "(IF((a = 1), 2, 3))",
            "((a + b) * 2)",
            "(a div b)",
        ],
    ),
    (
        "SELECT a > 1 AND b < 2 OR a = 3, a BETWEEN 1 AND 2, s LIKE 'x%', s || 'y' FROM nm",
        ["(((a > 1) AND (b < 2)) OR (a = 3))", "between(a, 1, 2)", "s LIKE x%", "concat(s, y)"],
    ),
    ("SELECT a, sum(b) FROM nm GROUP BY a UNION ALL SELECT b, a FROM nm", ["a", "sum(b)"]),
    (
        "SELECT a IN (SELECT b FROM nm), NOT (a IN (SELECT x.b FROM nm x WHERE x.a = nm.b)), "
        "EXISTS (SELECT 1 FROM nm x WHERE x.b = nm.a) FROM nm",
        ["(a IN (listquery()))", "(NOT (a IN (listquery(b))))", "exists(a)"],
    ),
]


def test_names_are_sparks_recorded() -> None:
    from sql_frontend.planner import plan_sql

    got = {q: [n for n, _ in plan_sql(q, {"nm": NM_COLUMNS}).schema] for q, _ in SPARK_NAMES}
    assert got == {q: names for q, names in SPARK_NAMES}


@pytest.mark.spark
def test_names_are_sparks(spark: Any) -> None:
    """The recorded names are a live Spark's, and so are ours."""
    from sql_frontend.planner import plan_sql

    spark.createDataFrame(
        [(1, 2, "x", 1.5)], "a int, b int, s string, f double"
    ).createOrReplaceTempView("nm")
    live = {q: spark.sql(q).columns for q, _ in SPARK_NAMES}
    assert live == dict(SPARK_NAMES)
    ours = {q: [n for n, _ in plan_sql(q, {"nm": NM_COLUMNS}).schema] for q, _ in SPARK_NAMES}
    assert ours == live


def test_spark_named_columns_in_a_view_table(tmp_path: Path) -> None:
    """Names with parentheses, spaces and upper case reach the view's Delta table."""
    s = Session(warehouse=tmp_path)
    s.sql("CREATE TABLE t (a INT, b INT)")
    s.sql("INSERT INTO t VALUES (1, 2), (1, 3)")
    s.sql("CREATE MATERIALIZED VIEW v AS SELECT A, count(*), sum(a + b) FROM t GROUP BY A")
    assert s.read("v").column_names == ["A", "count(1)", "sum((a + b))"]
    s.sql("INSERT INTO t VALUES (2, 5)")
    s.refresh("v")
    assert _rows(s, "v") == Counter({(1, 2, 7): 1, (2, 1, 7): 1})


def test_table_names_match_inputs_case_insensitively() -> None:
    """A catalog that spells a table ``EMP`` serves a query that writes ``emp`` or ``EMP``
    (Spark's identifiers are case-insensitive). On the old main a correlated subquery over
    such a table failed: ``view reads 'emp' but no input of that name was given``."""
    import ivm
    from sql_frontend.compile import compile_view

    catalog = {"EMP": [("id", "bigint"), ("name", "string")]}
    g = ivm.Dataflow()
    emp = g.input("EMP", [("id", "any"), ("name", "str")])
    sql = (
        "SELECT tt1.id FROM EMP AS tt1 WHERE EXISTS "
        "(SELECT 1 FROM emp AS tt2 WHERE tt2.id > tt1.id AND tt1.name IS NULL)"
    )
    out = g.output(compile_view(sql, catalog, g, {"EMP": emp}).collection, "v")
    rows = [(1, None), (2, "b"), (3, None)]
    emp.insert(rows)
    g.step()
    assert Counter(out.counts()) == Counter({(1,): 1})
    emp.delete([(1, None)])
    emp.insert([(4, "d")])
    g.step()
    assert Counter(out.counts()) == Counter({(3,): 1})
