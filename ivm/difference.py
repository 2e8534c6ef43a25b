"""Multiplicities (diffs): the abelian group of the engine, as checked 64-bit integers.

A diff is a signed 64-bit integer in the *symmetric* range ``|d| <= 2**63 - 1``.  Every
operation that can leave that range — a sum (consolidation, accumulation, merging runs,
COUNT), a product (the join's ``da·db``) — is checked, and raises
:class:`~ivm.errors.MultiplicityOverflowError` instead of wrapping: a wrapped multiplicity
is a wrong answer that can look plausible (a row whose count wrapped to exactly 0 vanishes).
Nothing is ever saturated either.  Leaving ``-2**63`` out of the range makes negation (a
retraction, ``-d``) total, so negating never needs a check.

The checks are a compare or two inside compiled loops, made *before* the arithmetic they
guard (numba compiles signed arithmetic as overflow-free, so a test of a wrapped result
could be optimized away):

* ``a + b`` fits iff ``a <= MAX - b`` (for ``b > 0``) or ``a >= -MAX - b`` (for ``b < 0``);
* ``a * b`` fits when both factors are below ``2**31`` in magnitude (the common case, one
  predictable branch), and otherwise iff ``|a| <= MAX // |b|``.

The kernels raise the error with a fixed detail only; the dataflow adds which operator was
running and which outputs it feeds (see :meth:`ivm.dataflow.Dataflow.step`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ivm import aot as _aot
from ivm.errors import MultiplicityOverflowError

#: the largest magnitude of a diff
DIFF_MAX = int(np.iinfo(np.int64).max)
_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min
#: factors below this in magnitude have a product that fits without a check
_SAFE = np.int64(1 << 31)


@njit(cache=True, nogil=True, inline="always")
def add(a: np.int64, b: np.int64) -> np.int64:
    """``a + b``, or :class:`MultiplicityOverflowError`."""
    if (b > 0 and a > _MAX - b) or (b < 0 and a < -_MAX - b):
        raise MultiplicityOverflowError("a sum of multiplicities")
    return a + b


@njit(cache=True, nogil=True, inline="always")
def mul(a: np.int64, b: np.int64) -> np.int64:
    """``a * b``, or :class:`MultiplicityOverflowError`."""
    if -_SAFE < a < _SAFE and -_SAFE < b < _SAFE:
        return a * b
    if a == 0 or b == 0:
        return np.int64(0)
    if a == _MIN or b == _MIN or (a if a > 0 else -a) > _MAX // (b if b > 0 else -b):
        raise MultiplicityOverflowError("a product of multiplicities")
    return a * b


@njit(cache=True, nogil=True)
def mul_gathered(a: np.ndarray, idx: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a[idx] * b``, checked (the join's products ``da·db`` of matched pairs)."""
    out = np.empty(b.shape[0], dtype=np.int64)
    for i in range(b.shape[0]):
        out[i] = mul(a[idx[i]], b[i])
    return out


@njit(cache=True, nogil=True)
def mul_arrays(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a * b`` element-wise, checked."""
    out = np.empty(a.shape[0], dtype=np.int64)
    for i in range(a.shape[0]):
        out[i] = mul(a[i], b[i])
    return out


@njit(cache=True, nogil=True)
def add_arrays(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` element-wise, checked."""
    out = np.empty(a.shape[0], dtype=np.int64)
    for i in range(a.shape[0]):
        out[i] = add(a[i], b[i])
    return out


@njit(cache=True, nogil=True)
def segment_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sums of ``values[starts[k]:starts[k + 1]]`` (the last segment runs to the end),
    checked: ``np.add.reduceat`` for strictly increasing ``starts``."""
    n = values.shape[0]
    m = starts.shape[0]
    out = np.empty(m, dtype=np.int64)
    for k in range(m):
        hi = starts[k + 1] if k + 1 < m else n
        s = np.int64(0)
        for i in range(starts[k], hi):
            s = add(s, values[i])
        out[k] = s
    return out


@njit(cache=True, nogil=True)
def add_at(sums: np.ndarray, owner: np.ndarray, values: np.ndarray) -> None:
    """``sums[owner[i]] += values[i]`` for every ``i``, checked (``np.add.at``)."""
    for i in range(owner.shape[0]):
        j = owner[i]
        sums[j] = add(sums[j], values[i])


@njit(cache=True, nogil=True)
def abs_max(values: np.ndarray) -> int:
    """The largest ``|v|`` (0 for no values); ``values`` are diffs, so it fits."""
    m = 0
    for i in range(values.shape[0]):
        v = values[i]
        if v < 0:
            v = -v
        if v > m:
            m = v
    return m


# the ahead-of-time compiled versions of these kernels, when built for this machine (ivm.aot)
_aot.install(__name__, globals())
