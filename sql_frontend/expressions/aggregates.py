"""Aggregates over one group's whole multiset, with Spark's semantics.

Used where an aggregate has no incremental form (``SUM(DISTINCT x)``, ``COUNT(DISTINCT a, b)``,
``max_by``, ``percentile``, ``collect_list`` / ``collect_set``): the Aggregate holding it is recomputed per affected group
(``reduce_group``, CIDR 2013 §3.4), every aggregate of that node computed here. NULLs are
ignored as Spark does; a group with no non-NULL value gives NULL (0 for counts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sql_frontend.errors import SqlRuntimeError
from sql_frontend.expressions.vec import value_order
from sql_frontend.sql_types import SqlType


def _order_key(v: Any) -> tuple:
    """Spark's ordering of one value: NaN above every other double."""
    if isinstance(v, float) and math.isnan(v):
        return (1, 0.0)
    return (0, v)


def _checked_sum(values: Sequence[Any], t: SqlType) -> Any:
    if t.is_fractional:
        return float(math.fsum(float(v) for v in values)) if values else None
    total = sum(values)
    if t.is_integral and not -(2**63) <= total < 2**63:
        raise SqlRuntimeError("[ARITHMETIC_OVERFLOW] sum overflows BIGINT")
    if t.is_decimal:
        from sql_frontend.expressions.evaluate import _decimal_result

        return _decimal_result(Decimal(total), t)
    return total


def _average(values: Sequence[Any], t: SqlType) -> Any:
    if not values:
        return None
    if t.is_decimal:
        from sql_frontend.expressions.evaluate import DECIMAL_CONTEXT, _decimal_result

        total = sum(Decimal(v) for v in values)
        return _decimal_result(DECIMAL_CONTEXT.divide(total, Decimal(len(values))), t)
    return math.fsum(float(v) for v in values) / len(values)


def percentile(values: Sequence[Any], fraction: float) -> float | None:
    """Spark's exact ``percentile``: linear interpolation between the two closest ranks."""
    if not values:
        return None
    xs = sorted((float(v) for v in values), key=_order_key)
    pos = (len(xs) - 1) * fraction
    lo, hi = math.floor(pos), math.ceil(pos)
    if lo == hi:
        return xs[lo]
    return (hi - pos) * xs[lo] + (pos - lo) * xs[hi]


def group_value(func: str, cols: Sequence[int], param: Any, t: SqlType, rows: list[tuple]) -> Any:
    """Aggregate ``func`` over ``rows`` (the group's rows, one per multiplicity) reading
    columns ``cols`` (the argument, then the extra arguments)."""
    if func == "count_star":
        return len(rows)
    a = cols[0]
    live = [r for r in rows if all(r[c] is not None for c in cols)]
    if func in ("count", "count_distinct_tuple"):
        return len({tuple(r[c] for c in cols) for r in live}) if param == "distinct" else len(live)
    vals = [r[a] for r in live]
    if func == "sum":
        return _checked_sum(vals, t) if vals else None
    if func == "avg":
        return _average(vals, t)
    if func == "sum_distinct":
        return _checked_sum(list(set(vals)), t) if vals else None
    if func == "avg_distinct":
        return _average(list(set(vals)), t)
    if func in ("min", "max"):
        if not vals:
            return None
        pick = min if func == "min" else max
        return pick(vals, key=_order_key)
    if func in ("max_by", "min_by"):
        # rows whose ordering is NULL are ignored; the value itself may be NULL
        ordered = [r for r in rows if r[cols[1]] is not None]
        if not ordered:
            return None
        pick = max if func == "max_by" else min
        return pick(ordered, key=lambda r: _order_key(r[cols[1]]))[a]
    if func == "percentile":
        return percentile(vals, float(param))
    if func == "collect_list":  # our order: Spark leaves it to the order rows arrive in
        return tuple(sorted(vals, key=value_order))
    if func == "collect_set":
        return tuple(sorted(set(vals), key=value_order))
    raise SqlRuntimeError(f"[INTERNAL_ERROR] aggregate {func}")
