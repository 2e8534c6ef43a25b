"""Lattice laws of ``ivm.lattice`` for times mixing loop counters and alt/neu moments.

A time is ``(epoch, c1, ..., cd)`` with one *kind* per inner coordinate.  ``less_equal``
must be a partial order and ``join`` / ``meet`` its least upper / greatest lower bounds; the
vectorized ``*_rows`` functions must agree with the scalar ones; ``advance_rows`` must equal
joining with the next epoch's frontier ``(e + 1, 0, ..., 0)``.  Besides the laws, the order
is checked against a reference written from the definition (nested ``Product`` / ``AltNeu``
pairs), so a law that holds for the wrong order still fails.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest
from engine_helpers import examples
from hypothesis import given
from hypothesis import strategies as st

from ivm.lattice import (
    ALTNEU,
    ITERATE,
    advance_rows,
    join,
    join_rows,
    less_equal,
    less_equal_rows,
    meet,
)

kinds_st = st.lists(st.sampled_from([ITERATE, ALTNEU]), min_size=0, max_size=4).map(tuple)


def time_st(
    kinds: tuple[int, ...], epoch: st.SearchStrategy[int] | None = None
) -> st.SearchStrategy[tuple[int, ...]]:
    coords = [epoch if epoch is not None else st.integers(0, 2)]
    coords += [st.integers(0, 2) if k == ITERATE else st.integers(0, 1) for k in kinds]
    return st.tuples(*coords)


@st.composite
def kinds_and_times(
    draw: st.DrawFn, n: int, same_epoch: bool = False
) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    kinds = draw(kinds_st)
    epoch = st.just(draw(st.integers(0, 2))) if same_epoch else None
    return kinds, [draw(time_st(kinds, epoch)) for _ in range(n)]


def ref_less_equal(a: tuple[int, ...], b: tuple[int, ...], kinds: tuple[int, ...]) -> bool:
    """The order from its definition: Product(outer, i) and AltNeu(outer, moment)."""
    if not kinds:
        return a[0] <= b[0]
    outer_a, outer_b = a[:-1], b[:-1]
    if kinds[-1] == ITERATE:
        return ref_less_equal(outer_a, outer_b, kinds[:-1]) and a[-1] <= b[-1]
    if outer_a == outer_b:
        return a[-1] <= b[-1]
    return ref_less_equal(outer_a, outer_b, kinds[:-1])


def all_times(kinds: tuple[int, ...]) -> list[tuple[int, ...]]:
    ranges = [range(3)] + [range(3) if k == ITERATE else range(2) for k in kinds]
    return list(itertools.product(*ranges))


@given(kinds_and_times(3))
@examples(150)
def test_less_equal_is_a_partial_order(kt: tuple) -> None:
    kinds, (a, b, c) = kt
    assert less_equal(a, a, kinds)
    assert less_equal(a, b, kinds) == ref_less_equal(a, b, kinds)
    if less_equal(a, b, kinds) and less_equal(b, a, kinds):
        assert a == b
    if less_equal(a, b, kinds) and less_equal(b, c, kinds):
        assert less_equal(a, c, kinds)


@pytest.mark.parametrize(
    ("op", "upward"), [(join, True), (meet, False)], ids=["join_least_upper", "meet_greatest_lower"]
)
@given(kt=kinds_and_times(3))
@examples(150)
def test_join_and_meet_are_the_tightest_bounds(op: Callable, upward: bool, kt: tuple) -> None:
    """join is the least upper bound; meet, the same read with the order reversed, is the
    greatest lower bound."""
    kinds, (a, b, c) = kt

    def below(x: tuple, y: tuple) -> bool:
        return less_equal(x, y, kinds) if upward else less_equal(y, x, kinds)

    bound = op(a, b, kinds)
    assert len(bound) == len(a)
    assert below(a, bound) and below(b, bound)
    if below(a, c) and below(b, c):
        assert below(bound, c), (a, b, c, bound)


@given(kinds_and_times(3))
@examples(150)
def test_join_meet_algebra(kt: tuple) -> None:
    kinds, (a, b, c) = kt
    for op in (join, meet):
        assert op(a, b, kinds) == op(b, a, kinds)
        assert op(op(a, b, kinds), c, kinds) == op(a, op(b, c, kinds), kinds)
        assert op(a, a, kinds) == a
    assert join(a, meet(a, b, kinds), kinds) == a
    assert meet(a, join(a, b, kinds), kinds) == a
    # the order agrees with the lattice operations
    assert less_equal(a, b, kinds) == (join(a, b, kinds) == b) == (meet(a, b, kinds) == a)


def test_laws_exhaustively_on_small_kinds() -> None:
    """Every triple of times for every kinds tuple up to depth 2 (complements hypothesis)."""
    for depth in range(3):
        for kinds in itertools.product([ITERATE, ALTNEU], repeat=depth):
            ts = all_times(kinds)
            for a, b in itertools.product(ts, ts):
                j, m = join(a, b, kinds), meet(a, b, kinds)
                uppers = [c for c in ts if less_equal(a, c, kinds) and less_equal(b, c, kinds)]
                lowers = [c for c in ts if less_equal(c, a, kinds) and less_equal(c, b, kinds)]
                assert all(less_equal(j, c, kinds) for c in uppers), (kinds, a, b, j)
                assert all(less_equal(c, m, kinds) for c in lowers), (kinds, a, b, m)
                assert less_equal(a, b, kinds) == ref_less_equal(a, b, kinds)


@given(kinds_and_times(6, same_epoch=True))
@examples(120)
def test_rows_versions_agree_with_scalar(kt: tuple) -> None:
    kinds, times = kt
    t = times[0]
    rows = times[1:]
    mat = np.asarray([r[1:] for r in rows], dtype=np.int64).reshape(len(rows), len(kinds))
    le = less_equal_rows(mat, t[1:], kinds)
    assert le.tolist() == [less_equal(r, t, kinds) for r in rows]
    jr = join_rows(mat, t[1:], kinds)
    assert [tuple(x) for x in jr.tolist()] == [join(r, t, kinds)[1:] for r in rows]


@given(kinds_and_times(5, same_epoch=True))
@examples(120)
def test_advance_rows_is_join_with_next_epoch_frontier(kt: tuple) -> None:
    kinds, times = kt
    e = times[0][0]
    mat = np.asarray([r[1:] for r in times], dtype=np.int64).reshape(len(times), len(kinds))
    before = mat.copy()
    adv = advance_rows(mat, kinds)
    np.testing.assert_array_equal(mat, before)  # the input is not modified
    frontier = (e + 1,) + (0,) * len(kinds)
    want = [join(r, frontier, kinds)[1:] for r in times]
    assert [tuple(x) for x in adv.tolist()] == want
    # advancing preserves the order against every time of the next epoch and later
    for r, a in zip(times, adv.tolist(), strict=True):
        for later in all_times(kinds):
            if later[0] > e:
                assert less_equal(r, later, kinds) == less_equal((e + 1, *a), later, kinds)
