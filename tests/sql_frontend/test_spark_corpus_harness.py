"""The corpus harness (``bench/spark_corpus.py``) reads Spark's SQL test files as Spark's own
suite does: comment lines dropped, statements split at semicolons outside quotes, and a query
told from a setup statement."""

from __future__ import annotations

from decimal import Decimal

from bench.spark_corpus import QUERY_START, SKIPPED, multiset, statements


def test_statements_split_outside_quotes_and_comments() -> None:
    text = (
        "-- a comment; with a semicolon\n"
        "create temporary view t as select * from values ('a;b', 1) as t(s, n);\n"
        "SELECT s FROM t WHERE s = 'x;y' -- trailing\n"
        ";\n"
        "select `odd;name` from t;\n"
        "set spark.sql.ansi.enabled = false;"
    )
    got = statements(text)
    assert got == [
        "create temporary view t as select * from values ('a;b', 1) as t(s, n)",
        "SELECT s FROM t WHERE s = 'x;y' -- trailing",
        "select `odd;name` from t",
        "set spark.sql.ansi.enabled = false",
    ]
    assert [bool(QUERY_START.match(s)) for s in got] == [False, True, True, False]
    assert SKIPPED.match(got[3])


def test_rows_compare_as_multisets_of_normalised_values() -> None:
    spark_rows = [(Decimal("1.50"), bytearray(b"x"), 0.1 + 0.2), (None, b"y", 1.0)]
    ours = [(None, b"y", 1), (1.5, b"x", 0.3)]
    assert multiset(spark_rows) == multiset(ours)
    assert multiset([(1,), (1,)]) != multiset([(1,)])
