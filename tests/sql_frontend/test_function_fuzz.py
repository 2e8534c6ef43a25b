"""Issue 19, finding 8: no Python-level error escapes expression translation or evaluation.

Every function and operator the translator handles is applied to edge values (NULL, 0,
negatives, the largest integers and doubles, NaN, 38-digit decimals, empty and non-numeric
strings, dates, timestamps, binary). Each expression must be computed, or refused with a typed
:class:`~sql_frontend.errors.SqlError` that is Spark's error class — not a ``TypeError`` or
``decimal.InvalidOperation``, and not the evaluator's ``INTERNAL_ERROR`` safety net either.
"""

from __future__ import annotations

import numpy as np
import pytest
from fuzz_functions import expressions, function_names, outcome

from sql_frontend.errors import SqlRuntimeError
from sql_frontend.expressions.evaluate import compile_scalar
from sql_frontend.scalar import Call, Lit
from sql_frontend.sql_types import decimal


def test_function_list_is_read_from_the_translator() -> None:
    names = function_names()
    assert {"right", "second", "round", "substring", "concat", "coalesce"} <= set(names)


def test_edge_values_give_results_or_typed_errors() -> None:
    escaped = [o for e in expressions(per_template=12, sample=500) if (o := outcome(e)) is not None]
    assert not escaped, "\n".join(escaped[:30])


# found by the fuzz, kept as explicit regressions
FOUND = [
    "99999999999999999999999999999999999999 / 0.00000000000000000000000000000000000001",
    "CAST(1e308 AS DECIMAL(5,2))",
    "ceil(1e308)",
    "date_sub(DATE'2024-02-29', 2147483647)",
    "substring('abc')",
    "CAST(-1.5 AS DECIMAL(38,37)) div 0.00000000000000000000000000000000000001",
    "to_utc_timestamp(TIMESTAMP'2024-02-29 23:59:59.999999', '')",
    "format_number(-0.0D, 2147483647)",
    "format_number(99999999999999999999999999999999999999, ' 7 ')",
    "timestamp_seconds(9223372036854775807)",
    "date_from_unix_date(2147483647)",
    "from_unixtime(9223372036854775807)",
]


@pytest.mark.parametrize("expr", FOUND)
def test_found_by_the_fuzz(expr: str) -> None:
    assert outcome(expr) is None


@pytest.mark.slow
def test_edge_values_many_combinations() -> None:
    escaped = [o for e in expressions(per_template=150, seed=7) if (o := outcome(e)) is not None]
    assert not escaped, "\n".join(escaped[:30])


def test_safety_net_types_a_stray_python_error() -> None:
    """An operation the front end never builds (``neg`` of a STRING, which the translator casts
    to DOUBLE first) still fails typed, naming the operation, rather than as a TypeError."""
    f = compile_scalar(Call("neg", (Lit("1", decimal(1, 0)),), decimal(1, 0)))
    with pytest.raises(SqlRuntimeError, match=r"INTERNAL_ERROR\] neg"):
        f(np.array([1], dtype=object))
