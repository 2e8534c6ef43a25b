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
