"""A view's key is read off its SQL, conservatively: no key whenever unsure."""

from __future__ import annotations

import pyarrow as pa
import pytest

from catalog.names import parse_identifier
from catalog.pipeline.languages import language_of
from catalog.store import ViewEntry
from catalog.view_key import view_key

KEYED = [
    ("SELECT k, count(*) AS n FROM t GROUP BY k", ["k", "n"], ("k",)),
    ("SELECT region AS r, sum(x) AS s FROM t GROUP BY region", ["r", "s"], ("r",)),
    ("SELECT k, count(*) AS n FROM t GROUP BY 1", ["k", "n"], ("k",)),
    ("SELECT n, k FROM (SELECT 1) GROUP BY k, n", ["n", "k"], ("n", "k")),
    ("SELECT count(*) AS c, k FROM t GROUP BY k HAVING count(*) > 1", ["c", "k"], ("k",)),
    (
        "SELECT o.cust, sum(o.q * p.price) AS total FROM o JOIN p ON o.i = p.i GROUP BY o.cust",
        ["cust", "total"],
        ("cust",),
    ),
    ("SELECT k + 1 AS k1, max(v) AS m FROM t GROUP BY k + 1", ["k1", "m"], ("k1",)),
    (
        "WITH c AS (SELECT * FROM t) SELECT k, v, count(*) AS n FROM c GROUP BY k, v",
        ["k", "v", "n"],
        ("k", "v"),
    ),
    (
        "SELECT k, sum(v) AS s, rank() OVER (ORDER BY sum(v)) AS r FROM t GROUP BY k",
        ["k", "s", "r"],
        ("k",),
    ),
    ("SELECT count(*) AS n, sum(v) AS s FROM t", ["n", "s"], ()),
    ("SELECT max(v) AS m FROM t HAVING max(v) > 3", ["m"], ()),
]

UNKEYED = [
    ("SELECT a, b FROM t", ["a", "b"]),  # no GROUP BY, no aggregate
    ("SELECT DISTINCT a FROM t", ["a"]),  # the key would be every column
    ("SELECT * FROM t", ["a", "b"]),
    ("SELECT k, count(*) AS n FROM t GROUP BY k, v", ["k", "n"]),  # v not projected
    ("SELECT k + 1 AS k1, count(*) AS n FROM t GROUP BY k", ["k1", "n"]),  # not the same expr
    ("SELECT k, count(*) AS n FROM t GROUP BY ROLLUP(k)", ["k", "n"]),
    ("SELECT k, count(*) AS n FROM t GROUP BY CUBE(k)", ["k", "n"]),
    ("SELECT k, count(*) AS n FROM t GROUP BY GROUPING SETS ((k), ())", ["k", "n"]),
    ("SELECT k, count(*) AS n FROM t GROUP BY k WITH ROLLUP", ["k", "n"]),
    ("SELECT k, count(*) AS n FROM t GROUP BY ALL", ["k", "n"]),
    ("SELECT k, explode(a) AS e FROM t GROUP BY k, a", ["k", "e"]),
    ("SELECT k, stack(2, 1, 2) FROM t GROUP BY k", ["k", "c"]),
    ("SELECT k, count(*) AS n FROM t GROUP BY k UNION ALL SELECT 1, 2", ["k", "n"]),
    ("SELECT * FROM (SELECT k, count(*) AS n FROM t GROUP BY k)", ["k", "n"]),
    ("SELECT count(*) OVER () AS c FROM t", ["c"]),  # a window, one row per input row
    ("SELECT a, (SELECT max(x) FROM u) AS m FROM t", ["a", "m"]),  # the subquery aggregates
    ("SELECT k, count(*) AS n FROM t GROUP BY k", ["k"]),  # names do not match the SELECT
    ("SELECT k, k, count(*) AS n FROM t GROUP BY k", ["k", "k", "n"]),  # duplicate names
    ("SELECT k, count(*) AS n FROM t GROUP BY 3", ["k", "n"]),  # ordinal out of range
    ("SELECT k, count(*) FROM t GROUP BY (k", ["k", "n"]),  # does not parse
]


@pytest.mark.parametrize(("sql", "columns", "key"), KEYED)
def test_keys_of_grouped_and_global_aggregates(
    sql: str, columns: list[str], key: tuple[str, ...]
) -> None:
    assert view_key(sql, columns) == key


@pytest.mark.parametrize(("sql", "columns"), UNKEYED)
def test_no_key_when_unsure(sql: str, columns: list[str]) -> None:
    assert view_key(sql, columns) is None


def test_datalog_views_have_no_key() -> None:
    schema = pa.schema([("x", pa.int64()), ("n", pa.int64())])

    def entry(language: str, definition: str) -> ViewEntry:
        return ViewEntry(parse_identifier("v"), definition, language, (), "/w/v", schema, "v")  # type: ignore[arg-type]

    sql = entry("sql", "SELECT x, count(*) AS n FROM t GROUP BY x")
    datalog = entry("datalog", "v(x, n) :- t(x, n).")
    assert language_of(sql).key(sql) == ("x",)
    assert language_of(datalog).key(datalog) is None
