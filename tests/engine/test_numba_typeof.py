"""numba's typing of plain arrays without ``numpy.ma`` (:mod:`ivm.numba_typeof`): the
types are numba's own for every kind of array the engine passes, and what numba rejects
(a masked array, an unsupported dtype) it still rejects."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import errors, njit
from numba.core import types
from numba.core.typing import typeof as numba_typeof

from ivm.batch import distinct_int_counts, distinct_ints
from ivm.numba_typeof import typeof_plain_ndarray

ARRAYS = [
    np.arange(4, dtype=np.int64),
    np.arange(4, dtype=np.uint64),
    np.zeros((3, 2), dtype=np.int64),
    np.zeros((3, 2), dtype=np.int64).T,  # Fortran order
    np.arange(10, dtype=np.float64)[::3],  # strided
    np.array([True, False]),
    np.zeros(0, dtype=np.int32),
]


@pytest.mark.parametrize("a", ARRAYS, ids=lambda a: f"{a.dtype}-{a.ndim}d-{a.flags.c_contiguous}")
def test_types_are_numbas(a: np.ndarray) -> None:
    assert typeof_plain_ndarray(a) == numba_typeof._typeof_ndarray(a, None)
    ro = a.copy()
    ro.flags.writeable = False
    assert typeof_plain_ndarray(ro) == numba_typeof._typeof_ndarray(ro, None)
    assert typeof_plain_ndarray(ro).mutable is False


@njit
def _total(a: np.ndarray) -> float:
    return a.sum()


@njit
def _first(a: np.ndarray) -> float:
    return a[0]


def test_what_numba_rejects_is_still_rejected() -> None:
    import ivm  # noqa: F401  (installs the rule)

    assert _total(np.arange(5, dtype=np.int64)) == 10
    # typed by the rule (a dispatcher that has not seen the array type yet: once it has,
    # numba's compiled type check lets subclasses through, with or without this module)
    with pytest.raises((TypeError, errors.NumbaError)):
        _first(np.ma.masked_array([1, 2], mask=[0, 1]))
    with pytest.raises((ValueError, errors.NumbaError)):
        numba_typeof.typeof(np.zeros(2, dtype=np.longdouble))
    assert numba_typeof.typeof(np.arange(3)) == types.Array(types.int64, 1, "C")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=60))
def test_distinct_ints_are_np_unique(values: list) -> None:
    a = np.array(values, dtype=np.int64)
    got, counts = distinct_int_counts(a)
    assert distinct_ints(a).tolist() == got.tolist()
    want, want_counts = np.unique(a, return_counts=True)
    assert got.tolist() == want.tolist()
    assert counts.tolist() == want_counts.tolist()
