"""Issue 19, findings 4, 6 and 8: functions, implicit casts and errors as Spark 4 (ANSI mode)
has them. Every expected value is Spark 4.3's answer; ``test_expectations_are_sparks`` asks a
live Spark for all of them in one query, so the table cannot drift from the oracle."""

from __future__ import annotations

import ast
import datetime as dt
import re
from decimal import Decimal
from typing import Any

import pytest
from fixture_cases import FIXTURES, read_cases
from sql_harness import normalize

import ivm
from sql_frontend.compile import compile_view
from sql_frontend.errors import SqlAnalysisError, SqlError, SqlRuntimeError

SEMANTICS = FIXTURES / "spark_semantics"


def python_value(text: str) -> Any:
    """A fixture's ``-- value:``: a Python literal, or a ``Decimal``, ``date`` or ``datetime``
    written as its constructor call."""
    m = re.fullmatch(r"(Decimal|date|datetime)\((.*)\)", text)
    if m is None:
        return ast.literal_eval(text)
    make = {"Decimal": Decimal, "date": dt.date, "datetime": dt.datetime}[m.group(1)]
    return make(*ast.literal_eval(f"({m.group(2)},)"))


def expectations(name: str) -> list[tuple[str, Any, str]]:
    """``(expression over the one-row table one(k INT = 1), Spark's value, Spark's type)`` of
    each case of ``tests/fixtures/spark_semantics/<name>.sql``."""
    out = []
    for case in read_cases(SEMANTICS / f"{name}.sql"):
        (expr,) = case.sql
        out.append((expr, python_value(case.meta["value"]), case.meta["type"]))
    return out


def expressions(name: str) -> list[str]:
    """The expressions of ``tests/fixtures/spark_semantics/<name>.sql``, one a line."""
    (case,) = read_cases(SEMANTICS / f"{name}.sql")
    return list(case.sql)


FUNCTIONS = expectations("functions")  # finding 4 and neighbours
COERCIONS = expectations("coercions")  # finding 6
ERRORS = expectations("errors")  # finding 8: these raised decimal.InvalidOperation / TypeError
# Spark refuses these at analysis (DATATYPE_MISMATCH), or fails them at run time
REFUSED = expressions("refused")
FAILING = expressions("failing")


def evaluate(expr: str) -> tuple[Any, str]:
    """The value and Spark type name of ``expr`` computed by our front end and engine."""
    g = ivm.Dataflow()
    one = g.input("one", [("k", "any")])
    cv = compile_view(f"SELECT {expr} AS r FROM one", {"one": [("k", "int")]}, g, {"one": one})
    out = g.output(cv.collection, "v")
    one.insert([(1,)])
    g.step()
    ((row, _),) = out.counts().items()
    return row[0], cv.schema[0][1].simple


def same(a: Any, b: Any) -> bool:
    nested = (list, tuple, dict)  # Spark's arrays, structs (Rows) and maps; ours are tuples
    if isinstance(a, nested) or isinstance(b, nested):
        if isinstance(a, dict) != isinstance(b, dict):  # a map: Spark's dict, our pairs
            a, b = (dict(x) if isinstance(x, tuple) else x for x in (a, b))
        return isinstance(a, nested) and isinstance(b, nested) and normalize(a) == normalize(b)
    if isinstance(a, float) and isinstance(b, float):
        if a == b or (a != a and b != b):  # infinities, NaN
            return True
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
