"""Issue 16: generators (``stack``, ``json_tuple``, ``explode`` & co) and LATERAL VIEW.

Edge rows (malformed JSON, duplicate keys, numbers Spark reprints, NULLs, empty arrays) go
through each query in our engine and in Spark: the rows, the column names and the column types
must be Spark's. Then the rows are deleted and changed, and the view must follow (a generator
is a flat-map: each input row's difference is its generated rows' difference). Refusals name
the generator, its position and what to write instead, where Spark refuses too. The random
change sequences are ``tests/fixtures/sql_views/generators.sql`` in ``test_coverage.py``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sql_harness import multiset, normalize

import ivm
from sql_frontend.compile import compile_view
from sql_frontend.errors import SqlError

COLUMNS = [("k", "bigint"), ("j", "string"), ("n", "bigint")]
ROWS: list[tuple[Any, ...]] = [
    (1, '{"a":1.50,"b":1e2,"c":{"x": [1, 2.0, "s"], "y":null},"d":true,"a":7, "g": 1.5e300}', 2),
    (2, '{"a":1, bad', None),
    (3, "", 0),
    (4, "[1]", -1),
    (5, ' {"a":null, "b":"null", "c": 1E-7, "d": 100000000000000000000000.5} ', 7),
    (6, '{"a":"\\"q\\""}', 3),
    (7, '{"a":"x\\ny","b":"\\u00e9", "c": 12345678901234567890, "d": 1.0E10, "f":-0}', 3),
    (8, None, None),
    (9, '{"a":1}xx', 5),
    (10, '{"A":1,"a":2, "b": {}, "c": [ ], "d": false}', 1),
    (None, '{"a":{"b":{"c":[]}}, "e": -1.5e-10, "g": 0.001}', 4),
]

QUERIES = [
    "SELECT k, json_tuple(j, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'A') FROM e",
    "SELECT k, x, y FROM e LATERAL VIEW OUTER json_tuple(j, 'a', 'zz') jt AS x, y",
    "SELECT k, json_tuple(j, CAST(n AS STRING), 'a') AS (p, q) FROM e",
    "SELECT jt.* FROM e LATERAL VIEW json_tuple(j, 'b', 'd') jt",
    "SELECT k, stack(3, k, j, NULL, NULL, k + 1) FROM e",
    "SELECT stack(2, NULL, NULL) FROM e",
    "SELECT k, stack(1, j) AS (only) FROM e",
    "SELECT k, col0 FROM e LATERAL VIEW stack(2, j, 'x') st WHERE col0 IS NOT NULL",
    "SELECT k, stack(2, n, k) AS (a), stack(2, 'x', j) AS (b) FROM e",
    "SELECT c0, count(*) AS c FROM e LATERAL VIEW json_tuple(j, 'a') jt GROUP BY c0",
    "SELECT k, explode(array(k, n)) FROM e",
    "SELECT k, posexplode_outer(filter(array(k, n), x -> x > 2)) FROM e",
    "SELECT k, explode(map('a', k, 'b', n)) FROM e",
    "SELECT k, inline_outer(array(named_struct('p', k, 'q', j), NULL)) FROM e",
    "SELECT k, pos, col FROM e LATERAL VIEW posexplode(array(j, j)) p",
    "SELECT k, key, value FROM e LATERAL VIEW OUTER explode(map_filter(map('a', k), (x, y) -> y > 3)) m",
    "SELECT k, transform(array(k, n), (x, i) -> x * i) AS t, "
    "aggregate(array(k, n), 0L, (a, x) -> a + coalesce(x, 0)) AS s FROM e",
]


def _engine(sql: str) -> tuple[ivm.InputCollection, Any, list[str], list[str], ivm.Dataflow]:
    g = ivm.Dataflow()
    e = g.input("e", [(c, "str" if t == "string" else "any") for c, t in COLUMNS])
    cv = compile_view(sql, {"e": COLUMNS}, g, {"e": e})
    names = [n for n, _ in cv.schema]
    types = [str(t).lower().replace("null", "void") for _, t in cv.schema]
    return e, g.output(cv.collection, "view"), names, types, g


def _spark(spark: Any, sql: str, rows: list[tuple[Any, ...]]) -> tuple[Counter, list, list]:
    spark.createDataFrame(rows, "k BIGINT, j STRING, n BIGINT").createOrReplaceTempView("e")
    df = spark.sql(sql)
    types = [f.dataType.simpleString() for f in df.schema.fields]
    return multiset([tuple(r) for r in df.collect()]), df.columns, types


def _rows(out: Any) -> Counter:
    got: Counter = Counter()
    for row, count in out.counts().items():
        got[tuple(normalize(v) for v in row)] += count
    return +got


@pytest.mark.spark
@pytest.mark.parametrize("sql", QUERIES)
def test_generators_on_edge_rows_equal_spark_after_changes(spark: Any, sql: str) -> None:
    e, out, names, types, g = _engine(sql)
    e.insert(ROWS)
    g.step()
    want, spark_names, spark_types = _spark(spark, sql, ROWS)
    assert (names, types) == (spark_names, spark_types)
    assert _rows(out) == want
    # deletes and an update: the view follows its input
    changed = [(11, '{"a": [true, null]}', 2)]
    e.delete(ROWS[:4])
    e.insert(changed)
    g.step()
    assert _rows(out) == _spark(spark, sql, ROWS[4:] + changed)[0]


def test_explain_says_a_generator_is_maintained_per_change() -> None:
    g = ivm.Dataflow()
    e = g.input("e", [(c, "any") for c, _ in COLUMNS])
    cv = compile_view(
        "SELECT k, x FROM e LATERAL VIEW stack(2, k, n) s AS x", {"e": COLUMNS}, g, {"e": e}
    )
    assert "Generate stack(2, #0:k, #2:n) (per change: a flat-map)" in cv.explain


REFUSED = [
    ("SELECT abs(stack(2, k, n)) FROM e", "stack nested in an expression", "LATERAL VIEW", 1, 12),
    ("SELECT k FROM e\nWHERE stack(1, k) > 0", "generator stack in WHERE", "LATERAL VIEW", 2, 7),
    ("SELECT k FROM e GROUP BY k HAVING json_tuple(j, 'a') = 'x'", "in HAVING", "LATERAL", 1, 35),
    ("SELECT stack(2, k, n) AS (a, b) FROM e", "UDTF_ALIAS_NUMBER_MISMATCH", "col0", 1, 8),
    ("SELECT stack(k, n) FROM e", "NON_FOLDABLE_INPUT", "stack(2, ...)", 1, 8),
    ("SELECT stack(0, n) FROM e", "VALUE_OUT_OF_RANGE", "between 1 and", 1, 8),
    ("SELECT stack(2, k, j) FROM e", "STACK_COLUMN_DIFF_TYPES", "cast them", 1, 8),
    ("SELECT json_tuple(j, 1) FROM e", "NON_STRING_TYPE", "cast them to STRING", 1, 8),
    ("SELECT json_tuple(j) FROM e", "WRONG_NUM_ARGS", "2 or more", 1, 8),
    ("SELECT x FROM e LATERAL VIEW abs(k) t AS x", "LATERAL VIEW abs(...)", "a generator", 1, 30),
    ("SELECT explode(j) FROM e", "UNEXPECTED_INPUT_TYPE", "an ARRAY or a MAP", 1, 8),
    ("SELECT filter(array(k), x -> x + 1) FROM e", "filter needs", "returning BOOLEAN", 1, 8),
    ("SELECT aggregate(array(k), 0, (a, x) -> a + x) FROM e", "merge", "CAST(", 1, 8),
    ("SELECT transform(array(k), (a, b, c) -> a) FROM e", "NUM_ARGS_MISMATCH", "1 or 2", 1, 41),
]


@pytest.mark.spark
@pytest.mark.parametrize(("sql", "what", "advice", "line", "column"), REFUSED)
def test_refusals_say_what_where_and_what_to_write(
    spark: Any, sql: str, what: str, advice: str, line: int, column: int
) -> None:
    with pytest.raises(SqlError) as err:
        _engine(sql)
    text = str(err.value)
    assert what in text and advice in text, text
    assert (err.value.line, err.value.column) == (line, column), text
    with pytest.raises(Exception):  # noqa: B017 - Spark refuses it too (its own error types)
        _spark(spark, sql, ROWS)
