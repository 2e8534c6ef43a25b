"""Partially ordered times: the product lattice of epochs and loop counters, with alt/neu.

A time is a tuple ``(epoch, c1, ..., cd)``.  Each coordinate after the epoch belongs to one
scope and has a *kind*:

* ``ITERATE`` — a loop counter; the time of the scope is ``Product(outer, counter)`` and is
  compared coordinate-wise (CIDR 2013 §2.2, the product order).
* ``ALTNEU`` — the two moments ``alt < neu`` that ``differentiate`` adds to a time (the
  blog-post seed, "AltNeu"): ``AltNeu(a, n) <= AltNeu(b, m)`` iff ``a == b and n <= m`` or
  ``a != b and a <= b``.

The scalar functions take whole times; the ``*_rows`` functions take a matrix of inner
coordinates (one row per update, the epoch left out: every time kept in a trace has been
advanced to the current epoch, see :func:`advance_rows`) and one inner time, and are
vectorized with numpy.  Scheduling uses the lexicographic order of the tuples, which is a
linear extension of this partial order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ITERATE = 0
ALTNEU = 1

Time = tuple[int, ...]
Kinds = tuple[int, ...]


def less_equal(a: Time, b: Time, kinds: Kinds) -> bool:
    """``a <= b`` in the partial order (epochs compared as a product coordinate)."""
    le = a[0] <= b[0]
    eq = a[0] == b[0]
    for k, kind in enumerate(kinds, start=1):
        x, y = a[k], b[k]
        if kind == ITERATE:
            le = le and x <= y
        else:
            le = (x <= y) if eq else le
        eq = eq and x == y
    return le


def join(a: Time, b: Time, kinds: Kinds) -> Time:
    """The least upper bound of ``a`` and ``b``."""
    return _bound(a, b, kinds, upper=True)


def meet(a: Time, b: Time, kinds: Kinds) -> Time:
    """The greatest lower bound of ``a`` and ``b``."""
    return _bound(a, b, kinds, upper=False)


def _bound(a: Time, b: Time, kinds: Kinds, *, upper: bool) -> Time:
    """Join (``upper``) or meet, coordinate by coordinate.  An ITERATE coordinate takes the
    max (min).  An ALTNEU coordinate is ordered only after equal prefixes: it takes the max
    (min) when the prefixes so far are equal, the greater (smaller) side's value when they are
    ordered, and when they are incomparable the bound's prefix already lies strictly above
    (below) both, so the coordinate is the least value ``0`` (the greatest, ``1``)."""
    pick = max if upper else min
    out = [pick(a[0], b[0])]
    le, ge, eq = a[0] <= b[0], a[0] >= b[0], a[0] == b[0]
    for k, kind in enumerate(kinds, start=1):
        x, y = a[k], b[k]
        if kind == ITERATE:
            out.append(pick(x, y))
            le, ge = le and x <= y, ge and x >= y
        else:
            if eq:
                out.append(pick(x, y))
            elif le:
                out.append(y if upper else x)
            elif ge:
                out.append(x if upper else y)
            else:
                out.append(0 if upper else 1)
            if eq:
                le, ge = x <= y, x >= y
        eq = eq and x == y
    return tuple(out)


def less_equal_rows(times: np.ndarray, t: Sequence[int], kinds: Kinds) -> np.ndarray:
    """For each row of inner coordinates (same epoch as ``t``): is it ``<= t``?"""
    n = times.shape[0]
    if not kinds:
        return np.ones(n, dtype=bool)
    if len(kinds) == 1 and kinds[0] == ITERATE:
        return times[:, 0] <= t[0]
    # in a lattice x <= t exactly when x joined with t is t: the order has one definition
    d = len(kinds)
    return (join_rows(times, t, kinds)[:, :d] == np.asarray(t[:d])).all(axis=1)


def join_rows(times: np.ndarray, t: Sequence[int], kinds: Kinds) -> np.ndarray:
    """Row-wise join of inner coordinates with one inner time ``t`` (same epoch)."""
    n = times.shape[0]
    out = np.empty_like(times)
    le = np.ones(n, dtype=bool)
    ge = np.ones(n, dtype=bool)
    eq = np.ones(n, dtype=bool)
    for k, kind in enumerate(kinds):
        x = times[:, k]
        y = t[k]
        if kind == ITERATE:
            out[:, k] = np.maximum(x, y)
            le &= x <= y
            ge &= x >= y
        else:
            out[:, k] = np.where(eq, np.maximum(x, y), np.where(le, y, np.where(ge, x, 0)))
            le = np.where(eq, x <= y, le)
            ge = np.where(eq, x >= y, ge)
        eq &= x == y
    return out


def advance_rows(times: np.ndarray, kinds: Kinds) -> np.ndarray:
    """Advance inner coordinates of a past epoch to the frontier of the next epoch.

    Joining ``(e, c)`` with the frontier ``(e+1, 0, ..., alt)`` keeps every loop counter and
    sets every alt/neu coordinate to ``alt``: the epoch differs, so no alt/neu pair can be
    told apart any more.  This is the compaction rule of CIDR 2013 §3.3 for our times.
    """
    if not kinds or ALTNEU not in kinds:
        return times
    out = times.copy()
    for k, kind in enumerate(kinds):
        if kind == ALTNEU:
            out[:, k] = 0
    return out
