"""Issue 19, findings 4, 6 and 8: functions, implicit casts and errors as Spark 4 (ANSI mode)
has them. Every expected value is Spark 4.3's answer; ``test_expectations_are_sparks`` asks a
live Spark for all of them in one query, so the table cannot drift from the oracle."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

import ivm
from sql_frontend.compile import compile_view
from sql_frontend.errors import SqlAnalysisError, SqlError, SqlRuntimeError

# (expression over the one-row table ``one(k INT = 1)``, Spark's value, Spark's type)
FUNCTIONS = [  # finding 4 and neighbours
    ("right('Sp', 3)", "Sp", "string"),
    ("right('Spark', 0)", "", "string"),
    ("right('Spark', -2)", "", "string"),
    ("left('Sp', 3)", "Sp", "string"),
    ("left('Sp', -1)", "", "string"),
    ("second('10:11:12')", 12, "int"),
    ("minute('10:11:12')", 11, "int"),
    ("hour('10:11:12')", 10, "int"),
    ("second('2024-01-01 10:11:12')", 12, "int"),
    ("hour(DATE'2024-01-01')", 0, "int"),
    ("substring('Spark', -3, 2)", "ar", "string"),
    ("substring('Spark', -10, 8)", "Spa", "string"),
    ("substring('Spark', -7, 3)", "S", "string"),
    ("substring('Spark', 0, 2)", "Sp", "string"),
    ("substring('Spark', 3, -1)", "", "string"),
    ("lpad('ab', -1, 'x')", "", "string"),
    ("repeat('ab', -1)", "", "string"),
    ("instr('abc', '')", 1, "int"),
    ("year('2024-01-01 10:00:00')", 2024, "int"),
]
COERCIONS = [  # finding 6
    ("CAST(1 AS STRING) = true", True, "boolean"),
    ("'t' = true", True, "boolean"),
    ("'1' = 1", True, "boolean"),
    ("'10' < 9", False, "boolean"),
    ("' 1 ' = 1", True, "boolean"),
    ("'1.0' = 1.0", True, "boolean"),
    ("'2024-01-01 00:00:00' = DATE'2024-01-01'", True, "boolean"),
    ("'a' = X'61'", True, "boolean"),
    ("'a' < X'62'", True, "boolean"),
    ("CASE WHEN k = 1 THEN '1' ELSE X'01' END", b"1", "binary"),
    ("coalesce('1', 1, 1.5)", Decimal("1.0"), "decimal(21,1)"),
    ("coalesce(1, 1.5, '1')", 1.0, "double"),
    ("nvl('1', 2)", 1, "bigint"),
    ("if(k = 1, '1', 2)", 1, "bigint"),
    ("nullif('1', 1)", None, "string"),
    ("1 IN ('1', 2)", True, "boolean"),
    ("least(1, 2.5)", Decimal("1.0"), "decimal(11,1)"),
    ("greatest(1, CAST(1 AS FLOAT))", 1.0, "double"),
    ("'1' + 1", 2, "bigint"),
    ("'1.5' + 1.5", 3.0, "double"),
    ("'1' * 1.5", 1.5, "double"),
    ("'1' % 2", 1, "bigint"),
    ("5 div 2", 2, "bigint"),
    ("1 + 1.5", Decimal("2.5"), "decimal(3,1)"),
    ("CAST(1 AS DECIMAL(10,2)) + 1", Decimal("2.00"), "decimal(11,2)"),
    ("CAST(1 AS FLOAT) % 2", 1.0, "double"),
    ("1 + DATE'2024-01-01'", dt.date(2024, 1, 2), "date"),
    ("DATE'2024-01-01' + NULL", None, "timestamp"),
    ("abs('-1')", 1.0, "double"),
    ("CAST(X'31' AS STRING)", "1", "string"),
    ("CAST('1' AS BINARY)", b"1", "binary"),
    ("CAST(' 1 ' AS INT)", 1, "int"),
    ("CAST('1d' AS DOUBLE)", 1.0, "double"),
    ("CAST(1.5 AS INT)", 1, "int"),
    ("try_cast('1.5' AS INT)", None, "int"),
    ("CAST(TIMESTAMP'2024-01-01 00:00:00' AS BIGINT)", 1704067200, "bigint"),
    ("CAST(1 AS TIMESTAMP)", dt.datetime(1970, 1, 1, 0, 0, 1), "timestamp"),
]
ERRORS = [  # finding 8: these raised decimal.InvalidOperation / TypeError
    ("round(CAST(1.5 AS DECIMAL(10,2)), 30)", Decimal("1.50"), "decimal(11,2)"),
    ("round(CAST(1.5 AS DECIMAL(10,2)), 80)", Decimal("1.50"), "decimal(11,2)"),
    ("round(CAST(1555.5 AS DECIMAL(10,2)), -3)", Decimal("2000"), "decimal(9,0)"),
    ("round(1.5D, 80)", 1.5, "double"),
    ("round(123.456D, -400)", 0.0, "double"),
    ("round(12, -1)", 10, "int"),
    ("- '1'", -1.0, "double"),
    ("- '1.5'", -1.5, "double"),
]
# Spark refuses these at analysis (DATATYPE_MISMATCH), or fails them at run time
REFUSED = [
    "true = 1",
    "greatest('1', 2)",
    "true + 1",
    "'a' + 'b'",
    "X'31' = 1",
    "CAST(1 AS DATE)",
    "CAST(true AS BINARY)",
    "CAST(DATE'2024-01-01' AS INT)",
]
FAILING = [
    "CAST('1.5' AS INT)",
    "CAST('1e2' AS INT)",
    "'1.5' = 1",
    "'tru' = true",
    "-'abc'",
    "coalesce('abc', true)",
    "'1.5' IN (1, 2)",
]


def evaluate(expr: str) -> tuple[Any, str]:
    """The value and Spark type name of ``expr`` computed by our front end and engine."""
    g = ivm.Dataflow()
    one = g.input("one", [("k", "any")])
    cv = compile_view(f"SELECT {expr} AS r FROM one", {"one": [("k", "int")]}, g, {"one": one})
    out = g.output(cv.collection, "v")
    one.insert([(1,)])
    g.step()
    ((row, _),) = out.counts().items()
    return row[0], str(cv.schema[0][1]).lower().replace("null", "void")


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a))
    return (type(a) is type(b) and a == b) or (a is None and b is None)


@pytest.mark.parametrize(("expr", "value", "type_"), FUNCTIONS)
def test_functions_as_spark(expr: str, value: Any, type_: str) -> None:
    got, t = evaluate(expr)
    assert same(got, value) and t == type_, (expr, got, t)


@pytest.mark.parametrize(("expr", "value", "type_"), COERCIONS)
def test_implicit_casts_as_spark(expr: str, value: Any, type_: str) -> None:
    got, t = evaluate(expr)
    assert same(got, value) and t == type_, (expr, got, t)


@pytest.mark.parametrize(("expr", "value", "type_"), ERRORS)
def test_former_python_errors_give_sparks_result(expr: str, value: Any, type_: str) -> None:
    got, t = evaluate(expr)
    assert same(got, value) and t == type_, (expr, got, t)


@pytest.mark.parametrize("expr", REFUSED)
def test_refused_as_spark_with_typed_error(expr: str) -> None:
    with pytest.raises(SqlAnalysisError, match="DATATYPE_MISMATCH"):
        evaluate(expr)


@pytest.mark.parametrize("expr", FAILING)
def test_fails_at_run_time_as_spark(expr: str) -> None:
    with pytest.raises(SqlRuntimeError, match="CAST_INVALID_INPUT"):
        evaluate(expr)


def test_union_of_string_and_boolean_widens_to_boolean() -> None:
    g = ivm.Dataflow()
    t = g.input("t", [("s", "any"), ("b", "any")])
    cv = compile_view(
        "SELECT s AS r FROM t UNION ALL SELECT b FROM t",
        {"t": [("s", "string"), ("b", "boolean")]},
        g,
        {"t": t},
    )
    out = g.output(cv.collection, "v")
    t.insert([("true", False), ("F", None)])
    g.step()
    assert str(cv.schema[0][1]) == "BOOLEAN"
    assert sorted(out.counts().items(), key=str) == [
        ((False,), 2),
        ((None,), 1),
        ((True,), 1),
    ]


@pytest.mark.spark
def test_expectations_are_sparks(spark: Any) -> None:
    rows = FUNCTIONS + COERCIONS + ERRORS
    items = ", ".join(f"{e} AS r{i}" for i, (e, _, _) in enumerate(rows))
    df = spark.sql(f"SELECT {items} FROM (SELECT 1 AS k)")
    (got,) = df.collect()
    for i, (expr, value, type_) in enumerate(rows):
        assert same(got[i], value), (expr, got[i], value)
        assert df.schema.fields[i].dataType.simpleString() == type_, expr
    for expr in REFUSED:
        with pytest.raises(Exception, match="DATATYPE_MISMATCH"):
            spark.sql(f"SELECT {expr} FROM (SELECT 1 AS k)")
    for expr in FAILING:
        with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
            spark.sql(f"SELECT {expr} FROM (SELECT 1 AS k)").collect()
    t = spark.sql("SELECT 'true' AS r UNION ALL SELECT false").schema.fields[0].dataType
    assert t.simpleString() == "boolean"
    assert issubclass(SqlAnalysisError, SqlError)
