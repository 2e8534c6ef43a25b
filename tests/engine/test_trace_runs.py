"""Traces built from many small runs: merges (compiled pair merge and the general path),
run sorting and lookups, against a plain multiset of ``(row, time)`` updates."""

from __future__ import annotations

from collections import Counter

import numpy as np
from engine_helpers import examples
from hypothesis import given
from hypothesis import strategies as st

from ivm.batch import hash_rows
from ivm.trace import Run, Trace

KINDS = {0: (), 1: ("iter",), 2: ("iter", "iter")}


def updates(depth: int) -> st.SearchStrategy:
    row = st.tuples(st.integers(0, 4), st.sampled_from(["a", "b", None]))
    time = st.tuples(*[st.integers(0, 3)] * depth)
    return st.lists(st.lists(st.tuples(row, time, st.integers(-2, 2)), max_size=12), max_size=12)


def as_arrays(batch: list, depth: int) -> tuple:
    cols = (
        np.array([r[0] for r, _, _ in batch], dtype=np.int64),
        np.array([r[1] for r, _, _ in batch], dtype=object),
    )
    times = np.array([t for _, t, _ in batch], dtype=np.int64).reshape(len(batch), depth)
    return cols, times, np.array([d for _, _, d in batch], dtype=np.int64)


def contents(tr: Trace) -> Counter:
    cols, times, diff = tr.all_updates()
    out: Counter = Counter()
    for i in range(len(diff)):
        out[(int(cols[0][i]), cols[1][i]), tuple(times[i].tolist())] += int(diff[i])
    return out


@given(st.integers(0, 2).flatmap(lambda d: st.tuples(st.just(d), updates(d))), st.booleans())
@examples(80)
def test_runs_merge_to_the_multiset_of_updates(case: tuple, by_key: bool) -> None:
    depth, batches = case
    tr = Trace((np.dtype("int64"), np.dtype(object)), (0,) if by_key else (0, 1), KINDS[depth])
    want: Counter = Counter()
    for batch in batches:
        for r, t, d in batch:
            want[r, t] += d
        if batch:
            tr.insert(*as_arrays(batch, depth))
        want = Counter({k: v for k, v in want.items() if v})
        assert contents(tr) == want
        for run in tr.runs:
            assert (run.sortkey[1:] >= run.sortkey[:-1]).all()
            assert (run.diff != 0).all()
    # every key's updates come back from a lookup, exactly once
    keys = np.arange(5, dtype=np.int64)
    if by_key:
        found = tr.lookup(hash_rows((keys,), 5), (keys,))
        got: Counter = Counter()
        for j in range(len(found.owner)):
            assert found.cols[0][j] == keys[found.owner[j]]
            row = (int(found.cols[0][j]), found.cols[1][j])
            got[row, tuple(found.times[j].tolist())] += int(found.diff[j])
        assert Counter({k: v for k, v in got.items() if v}) == want


def _run(tr: Trace, rows: list[tuple[int, str]], diff: list[int], rowhash: int) -> Run:
    """A run whose rows all share one row hash (a forced collision)."""
    n = len(rows)
    cols = (
        np.array([r[0] for r in rows], dtype=np.int64),
        np.array([r[1] for r in rows], dtype=object),
    )
    h = np.full(n, rowhash, dtype=np.uint64)
    return tr.make_run(cols, np.zeros((n, 1), dtype=np.int64), np.array(diff, dtype=np.int64), h, h)


def test_pair_merge_never_sums_different_rows_that_share_a_hash() -> None:
    tr = Trace((np.dtype("int64"), np.dtype(object)), (0, 1), ("iter",))
    a = _run(tr, [(1, "x"), (2, "y")], [1, 1], 7)
    b = _run(tr, [(3, "z"), (1, "x")], [1, -1], 7)
    merged = tr._merge([a, b])
    got = Counter()
    for i in range(len(merged)):
        got[int(merged.cols[0][i]), merged.cols[1][i]] += int(merged.diff[i])
    assert +got == Counter({(2, "y"): 1, (3, "z"): 1})


def test_an_insert_of_rows_whose_hashes_collide_keeps_each_row_with_its_count() -> None:
    """CPython hashes 2**62 like 2: consolidation groups such rows by sorting, and every
    kept row must stay beside its own count even when none cancels."""
    t = Trace((np.dtype(np.int64), np.dtype(object)), (0,), ())
    v = np.empty(3, dtype=object)
    v[:] = [2**62, 0, 2]
    k = np.array([2, 1, 2])
    t.insert((k, v), np.zeros((3, 0), dtype=np.int64), np.array([1, 2, 3]))
    cols, _, diff = t.all_updates()
    got = sorted(zip(cols[0].tolist(), cols[1].tolist(), diff.tolist(), strict=True))
    assert got == [(1, 0, 2), (2, 2, 3), (2, 2**62, 1)]
