"""Issue 16: the registry's functions on edge values, equal to Spark 4 (ANSI mode). The cases
(``function_edges.py``) carry no expected values: Spark computes each one, and the engine must
give the same value and type, or fail with the same error class as a typed
:class:`~sql_frontend.errors.SqlError`."""

from __future__ import annotations

import re
from typing import Any

import pytest
from function_edges import BUILT_IN, EDGES
from test_spark_semantics import evaluate, same

from sql_frontend.errors import SqlError
from sql_frontend.expressions import registry

CASES = [e for es in (*EDGES.values(), *BUILT_IN.values()) for e in es]
_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")

Outcome = tuple[str, Any, str]
"""``("value", value, type)`` or ``("error", error class, "")``."""


def error_class(e: BaseException) -> str:
    m = _CLASS.search(str(e))
    return m.group(1).split(".")[0] if m else f"unclassified: {str(e)[:200]}"


def ours(expr: str) -> Outcome:
    try:
        value, t = evaluate(expr)
    except SqlError as e:
        return ("error", error_class(e), "")
    return ("value", bytes(value) if isinstance(value, bytearray) else value, t)


def sparks(spark: Any, exprs: list[str]) -> list[Outcome]:
    """Spark's outcome of each expression: all in one query, halved where one fails."""
    items = ", ".join(f"{e} AS r{i}" for i, e in enumerate(exprs))
    try:
        df = spark.sql(f"SELECT {items} FROM (SELECT 1 AS k)")
        (row,) = df.collect()
    except Exception as err:
        if len(exprs) == 1:
            return [("error", error_class(err), "")]
        mid = len(exprs) // 2
        return sparks(spark, exprs[:mid]) + sparks(spark, exprs[mid:])
    out: list[Outcome] = []
    for i in range(len(exprs)):
        v = row[i]
        t = df.schema.fields[i].dataType.simpleString()
        out.append(("value", bytes(v) if isinstance(v, bytearray) else v, t))
    return out


def agree(a: Outcome, b: Outcome) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        # an error Spark leaves without a class (a Java exception) must still be typed here
        return a[1] == b[1] or (a[1].startswith("unclassified") and "unclass" not in b[1])
    return same(a[1], _as_spark(b[1], b[2])) and a[2] == b[2]


def _as_spark(value: Any, spark_type: str) -> Any:
    """Our MAP value (a tuple of its entries) as PySpark gives Spark's (a dict)."""
    return dict(value) if spark_type.startswith("map<") and isinstance(value, tuple) else value


def test_every_new_registry_function_has_edge_cases() -> None:
    assert set(EDGES) <= set(registry.registry_names())
    assert set(BUILT_IN) <= set(registry.TRANSLATOR_FUNCTIONS)


def test_edge_values_give_values_or_typed_errors() -> None:
    untyped = [f"{e}: {o[1]}" for e in CASES if (o := ours(e))[0] == "error" and "unclass" in o[1]]
    assert not untyped, "\n".join(untyped)
    internal = [e for e in CASES if ours(e) == ("error", "INTERNAL_ERROR", "")]
    assert not internal, internal


@pytest.mark.spark
def test_edge_values_equal_spark(spark: Any) -> None:
    expected = sparks(spark, CASES)
    wrong = [
        f"{e}: spark {s!r}, engine {o!r}"
        for e, s in zip(CASES, expected, strict=True)
        if not agree(s, o := ours(e))
    ]
    assert not wrong, f"{len(wrong)} of {len(CASES)} differ:\n" + "\n".join(wrong)
