"""Checked multiplicity arithmetic (``ivm.difference``) and every kernel that sums diffs.

Each primitive is compared with Python's unbounded integers: it returns the exact result
when every intermediate value fits ``±(2**63 - 1)`` and raises
:class:`MultiplicityOverflowError` otherwise — never a wrapped or saturated number.  On
today's main the same sums and products wrap silently (``2**32 · 2**32`` is 0, four
``2**62`` sum to 0, so a row vanishes).
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_helpers import examples
from hypothesis import given
from hypothesis import strategies as st

import ivm
from ivm.batch import Batch, consolidate_hashed, hash_rows
from ivm.difference import (
    DIFF_MAX,
    abs_max,
    add_arrays,
    add_at,
    mul_arrays,
    mul_gathered,
    segment_sums,
)
from ivm.errors import (
    ArithmeticOverflowError,
    DiffError,
    IvmError,
    MultiplicityOverflowError,
    SumOverflowError,
)
from ivm.kernels import group_hashes
from ivm.trace import SMALL_RUN, Trace

MAX = 2**63 - 1
I64 = np.int64
EDGES = [
    0,
    1,
    -1,
    2,
    3,
    2**31 - 1,
    2**31,
    -(2**31),
    3037000499,  # floor(sqrt(MAX))
    3037000500,
    2**32,
    -(2**32),
    2**62,
    MAX // 2,
    MAX // 2 + 1,
    MAX - 1,
    MAX,
    -MAX,
]
diff_value = st.one_of(
    st.sampled_from(EDGES),
    st.integers(-MAX, MAX),
    st.integers(-(2**34), 2**34),
    st.integers(-5, 5),
)


def arr(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=I64)


def fits(v: int) -> bool:
    return -MAX <= v <= MAX


def running_sums_fit(values: list[int], start: int = 0) -> bool:
    s = start
    for v in values:
        s += v
        if not fits(s):
            return False
    return True


# -- the primitives at the boundary ---------------------------------------------------------
ADD_INSIDE = [
    (MAX - 1, 1),
    (MAX, 0),
    (MAX, -MAX),
    (-MAX, 0),
    (-MAX + 1, -1),
    (2**62, 2**62 - 1),
    (-(2**62), -(2**62) + 1),
]
ADD_OUTSIDE = [
    (MAX, 1),
    (1, MAX),
    (2**62, 2**62),  # 2**63: wraps to -2**63 in numpy
    (-MAX, -1),  # -2**63 is outside the symmetric range
    (-(2**62), -(2**62)),
    (-MAX, -MAX),  # wraps to 2
]
MUL_INSIDE = [
    (2**31 - 1, 2**31 - 1),  # the fast path's largest factors
    (2**31, 2**31),  # just past it: the exact check
    (3037000499, 3037000499),
    (-3037000499, 3037000499),
    (MAX, 1),
    (MAX, -1),
    (-1, -MAX),
    (MAX // 2, 2),
    (2**62, 1),
    (0, MAX),
    (MAX, 0),
    (-(2**31), 2**32 - 1),
]
MUL_OUTSIDE = [
    (3037000500, 3037000500),
    (2**32, 2**32),  # 2**64: wraps to exactly 0 in numpy
    (-(2**32), 2**31),  # -2**63: outside the symmetric range
    (MAX // 2 + 1, 2),
    (MAX, 2),
    (MAX, -MAX),
    (2**62, -2),
    (2, 2**62),
]


@pytest.mark.parametrize(("a", "b"), ADD_OUTSIDE)
def test_add_at_the_boundary(a: int, b: int) -> None:
    """Each sum just past the range raises, and the sums just inside it are exact."""
    for x, y in ADD_INSIDE:
        assert add_arrays(arr([x]), arr([y])).tolist() == [x + y]
        assert segment_sums(arr([x, y]), arr([0])).tolist() == [x + y]
    with pytest.raises(MultiplicityOverflowError):
        add_arrays(arr([a]), arr([b]))
    with pytest.raises(MultiplicityOverflowError):
        segment_sums(arr([a, b]), arr([0]))
    with pytest.raises(MultiplicityOverflowError):
        add_at(arr([a]), arr([0]), arr([b]))


@pytest.mark.parametrize(("a", "b"), MUL_OUTSIDE)
def test_mul_at_the_boundary(a: int, b: int) -> None:
    """Each product just past the range raises, and the products just inside it are exact."""
    for x, y in MUL_INSIDE:
        assert mul_arrays(arr([x]), arr([y])).tolist() == [x * y]
        assert mul_gathered(arr([7, x]), arr([1]), arr([y])).tolist() == [x * y]
    with pytest.raises(MultiplicityOverflowError):
        mul_arrays(arr([a]), arr([b]))
    with pytest.raises(MultiplicityOverflowError):
        mul_gathered(arr([a]), arr([0]), arr([b]))


def test_int64_min_is_never_a_result() -> None:
    mn = np.iinfo(np.int64).min
    assert mul_arrays(arr([mn]), arr([0])).tolist() == [0]
    for a, b in [(mn, 1), (1, mn), (mn, -1)]:
        with pytest.raises(MultiplicityOverflowError):
            mul_arrays(arr([a]), arr([b]))
    with pytest.raises(MultiplicityOverflowError):
        add_arrays(arr([0]), arr([mn]))


@examples(300)
@given(st.lists(st.tuples(diff_value, diff_value), min_size=1, max_size=12))
def test_products_are_exact_or_raise(pairs: list[tuple[int, int]]) -> None:
    a, b = arr([p[0] for p in pairs]), arr([p[1] for p in pairs])
    exact = [x * y for x, y in pairs]
    if all(fits(v) for v in exact):
        assert mul_arrays(a, b).tolist() == exact
        idx = np.arange(len(pairs), dtype=I64)[::-1].copy()
        assert mul_gathered(a[::-1].copy(), idx, b).tolist() == exact
    else:
        with pytest.raises(MultiplicityOverflowError):
            mul_arrays(a, b)
        with pytest.raises(MultiplicityOverflowError):
            mul_gathered(a, np.arange(len(pairs), dtype=I64), b)


@examples(300)
@given(st.lists(st.tuples(diff_value, diff_value), min_size=1, max_size=12))
def test_element_sums_are_exact_or_raise(pairs: list[tuple[int, int]]) -> None:
    a, b = arr([p[0] for p in pairs]), arr([p[1] for p in pairs])
    exact = [x + y for x, y in pairs]
    if all(fits(v) for v in exact):
        assert add_arrays(a, b).tolist() == exact
    else:
        with pytest.raises(MultiplicityOverflowError):
            add_arrays(a, b)


@examples(300)
@given(
    st.lists(st.tuples(st.integers(0, 3), diff_value), min_size=1, max_size=16),
)
def test_grouped_sums_are_exact_or_raise(rows: list[tuple[int, int]]) -> None:
    """segment_sums, add_at, group_hashes and consolidation: running sums in input order."""
    groups: dict[int, list[int]] = {}
    for g, d in rows:
        groups.setdefault(g, []).append(d)
    ok = all(running_sums_fit(v) for v in groups.values())
    keys = arr([g for g, _ in rows])
    diff = arr([d for _, d in rows])
    # segment_sums over the rows sorted by group (stable: same order within a group)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]]).astype(I64)
    want = {g: sum(v) for g, v in groups.items()}
    calls = [
        lambda: dict(
            zip(sk[starts].tolist(), segment_sums(diff[order], starts).tolist(), strict=True)
        ),
        lambda: _add_at(keys, diff),
        lambda: _group_hashes(keys, diff),
        lambda: _consolidate(keys, diff),
    ]
    for call in calls:
        if ok:
            got = call()
            assert {g: v for g, v in got.items() if v} == {g: v for g, v in want.items() if v}
        else:
            with pytest.raises(MultiplicityOverflowError):
                call()


def _add_at(keys: np.ndarray, diff: np.ndarray) -> dict[int, int]:
    sums = np.zeros(4, dtype=I64)
    add_at(sums, keys, diff)
    return dict(enumerate(sums.tolist()))


def _group_hashes(keys: np.ndarray, diff: np.ndarray) -> dict[int, int]:
    _, rep, sums = group_hashes(keys.view(np.uint64), diff)
    return dict(zip(keys[rep].tolist(), sums.tolist(), strict=True))


def _consolidate(keys: np.ndarray, diff: np.ndarray) -> dict[int, int]:
    b = Batch((keys,), diff).consolidate()
    return dict(zip(b.cols[0].tolist(), b.diff.tolist(), strict=True))


def test_abs_max() -> None:
    assert abs_max(arr([])) == 0
    assert abs_max(arr([3, -MAX, 5])) == MAX
    assert abs_max(arr([-2, 1])) == 2


# -- consolidation and traces -----------------------------------------------------------------
def test_a_row_whose_count_wraps_to_zero_raises_instead_of_vanishing() -> None:
    """The issue's symptom: four copies of 2**62 sum to 2**64, which wraps to exactly 0."""
    b = Batch((arr([7, 7, 7, 7]),), arr([2**62] * 4))
    with pytest.raises(MultiplicityOverflowError):
        b.consolidate()
    # rows that share a hash (here: all of them) are grouped by sorting: checked too
    obj = np.array(["b", "a", "b", "b", "b", "b"], dtype=object)
    h = np.zeros(6, dtype=np.uint64)
    keep, sums = consolidate_hashed(h, (obj,), arr([1, 1, 2**61, 2**61, 2**61, -5]))
    assert sorted(zip(obj[keep].tolist(), sums.tolist(), strict=True)) == [
        ("a", 1),
        ("b", 3 * 2**61 - 4),
    ]
    with pytest.raises(MultiplicityOverflowError):
        consolidate_hashed(h, (obj,), arr([1, 1] + [2**62] * 4))


def trace_with(runs: list[list[tuple[int, int]]]) -> Trace:
    """A depth-0 trace of one int64 column, one run per list of (row, diff)."""
    t = Trace((np.dtype(np.int64),), (0,), ())
    for run in runs:
        rows = arr([r for r, _ in run])
        t.runs.append(
            t.make_run((rows,), np.zeros((len(run), 0), dtype=I64), arr([d for _, d in run]))
        )
    return t


def test_merging_two_small_runs_is_checked() -> None:
    t = trace_with([[(1, MAX), (2, 5)], [(1, 1)]])
    runs = list(t.runs)
    with pytest.raises(MultiplicityOverflowError):
        t._merge(runs)
    ok = trace_with([[(1, MAX), (2, 5)], [(1, -1)]])
    assert sorted(ok._merge(list(ok.runs)).diff.tolist()) == [5, MAX - 1]


def test_merging_large_runs_is_checked() -> None:
    big = [(i, 1) for i in range(SMALL_RUN + 10)]
    t = trace_with([[*big[:-1], (10**6, MAX)], [(10**6, 1)]])
    with pytest.raises(MultiplicityOverflowError):
        t._merge(list(t.runs))


def test_a_push_that_overflows_leaves_the_runs_as_they_were() -> None:
    t = trace_with([])
    t.insert((arr([1]),), np.zeros((1, 0), dtype=I64), arr([MAX]))
    before = list(t.runs)
    with pytest.raises(MultiplicityOverflowError):
        t.insert((arr([1]),), np.zeros((1, 0), dtype=I64), arr([1]))
    assert t.runs == before


def test_compaction_finds_an_overflow_split_across_runs() -> None:
    """A big run and a small one are not merged eagerly: the row's sum over runs exceeds
    64 bits although each run's diff fits.  Compaction sees the runs' bounds add up past
    64 bits and merges them, which raises in the epoch that caused it."""
    big = [(i, 1) for i in range(5000)] + [(10**6, MAX)]
    t = trace_with([big, [(10**6, 1)]])
    assert len(t.runs) == 2
    with pytest.raises(MultiplicityOverflowError):
        t.compact()
    # bounds that add up past 64 bits on different rows merge without an error
    t = trace_with([[(i, 1) for i in range(5000)] + [(10**6, MAX)], [(10**7, 1)]])
    t.compact()
    assert len(t.runs) == 1
    assert sorted(t.runs[0].diff.tolist())[-1] == MAX


def test_key_sums_are_checked() -> None:
    t = trace_with([[(1, MAX), (2, 3)], [(1, 1)]])
    probe = arr([1, 2])
    with pytest.raises(MultiplicityOverflowError):
        t.key_sums(hash_rows((probe,), 2), (probe,))
    t = trace_with([[(1, MAX), (2, 3)], [(1, -1)]])
    assert t.key_sums(hash_rows((probe,), 2), (probe,)).tolist() == [MAX - 1, 3]


# -- input diffs -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "diffs",
    [-(2**63), [1, -(2**63)], np.array([-(2**63)], dtype=I64), np.array([2**63], dtype=np.uint64)],
)
def test_diffs_outside_the_symmetric_range_are_rejected(diffs: object) -> None:
    g = ivm.Dataflow()
    x = g.input("x", [("a", "int64")])
    n = len(diffs) if isinstance(diffs, list | np.ndarray) else 1
    with pytest.raises(DiffError, match=r"2\*\*63 - 1"):
        x.send([(i,) for i in range(n)], diffs)
    x.send([(1,)], -MAX)  # the most negative diff allowed
    x.send([(2,)], np.array([MAX], dtype=np.uint64))
    out = g.output(x, "x")
    g.step()
    assert out.counts() == {(1,): -MAX, (2,): MAX}


# -- the error type ----------------------------------------------------------------------------
def test_error_types_and_wording() -> None:
    for cls in (MultiplicityOverflowError, SumOverflowError):
        assert issubclass(cls, ArithmeticOverflowError)
        assert issubclass(cls, IvmError)
        assert issubclass(cls, OverflowError)
        assert issubclass(cls, ArithmeticError)
    e = MultiplicityOverflowError("a product of multiplicities")
    assert str(e).startswith("a product of multiplicities does not fit a signed 64-bit")
    assert "distinct()" in str(e) and "UNION" in str(e)
    e.operator, e.outputs, e.rolled_back = "join#3 (a ⋈ b)", ("v1", "v2"), True
    msg = str(e)
    assert msg.startswith("join#3 (a ⋈ b): a product of multiplicities does not fit")
    assert "it feeds 'v1', 'v2'" in msg and "rolled back" in msg
    s = SumOverflowError("an integer SUM", column="total")
    assert "an integer SUM (column 'total') does not fit" in str(s)
    assert "float64" in str(s)
    assert DIFF_MAX == MAX
