"""A reduce written straight from the model, over explicit partially ordered times.

CIDR 2013 §3.4: a reduce's output accumulates, at every time ``t``, to ``f(A(t))`` where
``A(t)`` is the input accumulated over the times ``s <= t`` (product order).  Its
differences are therefore fixed: ``out(t) = f(A(t)) − Σ_{s < t} out(s)``.  This module
computes exactly that, time by time over a finite grid of times, with no trace, no
interesting-time schedule and no vectorization: slow, and obviously what the model says.
Every engine strategy must emit the same differences at the same times.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

Time = tuple[int, ...]
Update = tuple[tuple, Time, int]


def less_equal(s: Time, t: Time) -> bool:
    """The product order: every coordinate of ``s`` is at most that of ``t``."""
    return all(a <= b for a, b in zip(s, t, strict=True))


def grid(bounds: Sequence[int]) -> list[Time]:
    """Every time with coordinate ``j`` in ``range(bounds[j])``, in lexicographic order
    (a linear extension of the product order)."""
    return list(itertools.product(*(range(b) for b in bounds)))


def accumulate(updates: Iterable[Update], t: Time) -> Counter:
    """``A(t)``: the multiset of rows whose updates at times ``<= t`` sum to non-zero."""
    acc: Counter = Counter()
    for row, s, d in updates:
        if less_equal(s, t):
            acc[row] += d
    return Counter({r: n for r, n in acc.items() if n != 0})


def reduce_reference(
    updates: Sequence[Update],
    key: Callable[[tuple], tuple],
    f: Callable[[tuple, list[tuple]], tuple],
    times: Sequence[Time],
) -> dict[Time, Counter]:
    """The output differences at each of ``times`` (lexicographically sorted; non-empty
    ones only).  ``f(key, rows)`` gets each group's rows, repeated by multiplicity, for
    every group whose total count is positive, and returns the value columns."""
    out: dict[Time, Counter] = {}
    for t in times:
        groups: dict[tuple, list[tuple]] = {}
        for row, n in accumulate(updates, t).items():
            groups.setdefault(key(row), []).extend([row] * max(n, 0))
        want: Counter = Counter()
        for k, rows in groups.items():
            if rows:
                want[(*k, *f(k, rows))] += 1
        for s, diff in out.items():
            if s != t and less_equal(s, t):
                want.subtract(diff)
        here = Counter({r: n for r, n in want.items() if n != 0})
        if here:
            out[t] = here
    return out


def sql_aggregate(fn: str, values: list[Any]) -> Any:
    """One SQL aggregate over a group's values (one per row; None is NULL)."""
    if fn == "count*":
        return len(values)
    present = [v for v in values if v is not None]
    if fn == "count":
        return len(present)
    if fn == "count_distinct":
        return len(set(present))
    if not present:
        return None
    return {"sum": sum, "min": min, "max": max}[fn](present)
