"""The one-call kernels for runs of int64 columns against the general path they replace:
:func:`ivm.kernels.push_key_run` (sort and merge) and :func:`ivm.kernels.merge_key_runs`
(merged straight to its outputs) against :func:`ivm.kernels.sort_key_run` and the general
:func:`ivm.kernels.merge_runs` with the column gathered from its positions — the same
arrays, row for row, on random runs with cancellations, sort keys that collide in their
iteration bits, and empty runs; the staging and two-column kernels likewise; and traces
written through them against a plain multiset of updates."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import numpy as np
from engine_helpers import examples
from hypothesis import given
from hypothesis import strategies as st

from ivm.batch import Batch, hash_rows
from ivm.kernels import (
    merge_int_runs,
    merge_key_runs,
    merge_runs,
    push_key_run,
    sort_key_run,
)
from ivm.trace import LOOP_MERGE_RATIO, MERGE_RATIO, SMALL_RUN, Run, Trace

#: few iteration bits, so capped iterations and keys differing in their low bits share a
#: sort key
BITS = 2


def updates(max_size: int) -> st.SearchStrategy:
    """Consolidated updates ``{(value, iteration): diff}`` (values 0-9, so that their key
    hashes, the values themselves, collide in the high bits; iterations 0-6, past the
    2-bit cap)."""
    return st.dictionaries(
        st.tuples(st.integers(0, 9), st.integers(0, 6)),
        st.integers(-3, 3).filter(bool),
        max_size=max_size,
    )


def arrays(upd: dict, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(keyhash, times, diff, column)`` of ``upd`` in a shuffled order; the key hash of
    a value is the value (an injective "hash" whose high bits collide)."""
    items = list(upd.items())
    col = np.array([v for (v, _), _ in items], dtype=np.int64)
    times = np.array([t for (_, t), _ in items], dtype=np.int64).reshape(len(items), 1)
    diff = np.array([d for _, d in items], dtype=np.int64)
    return col.astype(np.uint64), np.ascontiguousarray(times[:, :depth]), diff, col


def with_cancellations(old: dict, new: dict, cancel: list[bool]) -> dict:
    """``new`` plus the negation of some of ``old``'s updates (and doubling others)."""
    out = dict(new)
    for (key, d), c in zip(old.items(), cancel, strict=False):
        out[key] = -d if c else out.get(key, d)
    return {k: v for k, v in out.items() if v}


def same(x: tuple, y: tuple) -> None:
    assert len(x) == len(y)
    for p, q in zip(x, y, strict=True):
        if isinstance(p, np.ndarray):
            assert p.dtype == q.dtype and p.shape == q.shape
            assert (p == q).all()
        else:
            assert p == q


@given(updates(12), updates(12), st.lists(st.booleans(), max_size=12), st.booleans())
@examples(300)
def test_push_key_run_is_sort_then_merge(old: dict, new: dict, cancel: list, by_time: bool) -> None:
    depth = 1 if by_time else 0
    if not by_time:  # one update per value: a trace without times
        old = {(v, 0): d for (v, _), d in old.items()}
        new = {(v, 0): d for (v, _), d in new.items()}
    new = with_cancellations(old, new, cancel)
    a = sort_key_run(*arrays(old, depth), by_time, BITS)
    kh, times, diff, col = arrays(new, depth)
    fused = push_key_run(*a[:5], kh, times, diff, col, by_time, BITS)
    b = sort_key_run(kh, times, diff, col, by_time, BITS)
    if fused[5] == -1:
        # gives up only on a block of equal sort keys of more than 64 pairs
        blocks_a = Counter(a[0].tolist())
        assert any(blocks_a[s] * c > 64 for s, c in Counter(b[0].tolist()).items())
        return
    same(fused, general_merge(a, b))
    same(merge_key_runs(*a[:5], *b[:5]), fused)


def general_merge(a: tuple, b: tuple) -> tuple:
    """Two sorted one-column runs merged by :func:`merge_runs` (row hash = key hash) and
    their column gathered from its positions."""
    src, sk, kh, _, times, diff, _, _, big = merge_runs(
        a[0], a[1], a[1], a[2], a[3], b[0], b[1], b[1], b[2], b[3]
    )
    return sk, kh, times, diff, np.concatenate([a[4], b[4]])[src], big


def test_push_key_run_gives_up_on_a_large_block() -> None:
    # one value at 9 and at 12 capped iterations: 108 pairs in one block of the sort key
    old = {(1, t): 1 for t in range(3, 12)}
    new = {(1, t): -1 for t in range(3, 15)}
    a = sort_key_run(*arrays(old, 1), True, BITS)
    kh, times, diff, col = arrays(new, 1)
    assert push_key_run(*a[:5], kh, times, diff, col, True, BITS)[5] == -1
    b = sort_key_run(kh, times, diff, col, True, BITS)
    same(merge_key_runs(*a[:5], *b[:5]), general_merge(a, b))
    # the trace then merges the general way: 3 updates left, at iterations 12-14
    tr = Trace((np.dtype(np.int64),), (0,), ("iter",))
    for upd in (old, new):
        kh, times, diff, col = arrays(upd, 1)
        tr.insert_consolidated((col,), times, diff, hash_rows((col,), len(col)))
    cols, times, diff = tr.all_updates()
    assert sorted(zip(cols[0].tolist(), times[:, 0].tolist(), diff.tolist(), strict=True)) == [
        (1, 12, -1),
        (1, 13, -1),
        (1, 14, -1),
    ]


@given(st.lists(updates(40), max_size=12), st.booleans(), st.booleans())
@examples(80)
def test_trace_of_one_integer_column_holds_the_multiset(
    batches: list, by_time: bool, staged: bool
) -> None:
    """Updates inserted (the one-call push) or staged and committed (the small merge)
    into a trace of one int64 column: its contents are the summed updates, its runs sorted
    with no zero diffs, and its runs' sizes the same as the general merge gives."""
    depth = 1 if by_time else 0
    tr = Trace((np.dtype(np.int64),), (0,), ("iter",) if by_time else ())
    want: Counter = Counter()
    for k, upd in enumerate(batches):
        if not by_time:
            upd = {(v, 0): d for (v, _), d in upd.items()}
        _, times, diff, col = arrays(upd, depth)
        h = hash_rows((col,), len(col))
        if staged and by_time:
            # staged at one time (one iteration for the whole batch, consolidated first)
            tr.stage_batch(Batch((col,), diff), (0, k % 5), h)
            pairs = [((int(v), k % 5), int(d)) for v, d in zip(col, diff, strict=True)]
        else:
            tr.insert_consolidated((col,), times, diff, h)
            pairs = list(upd.items())
        for key, d in pairs:
            want[key if by_time else (key[0], None)] += d
        want = Counter({key: v for key, v in want.items() if v})
        got: Counter = Counter()
        for run in [*tr.runs, *([tr.staged] if tr.staged is not None else [])]:
            assert (run.sortkey[1:] >= run.sortkey[:-1]).all()
            assert (run.diff != 0).all()
            for i in range(len(run)):
                t = int(run.times[i, 0]) if by_time else None
                got[int(run.cols[0][i]), t] += int(run.diff[i])
        assert Counter({key: v for key, v in got.items() if v}) == want
        # merged as _push merges: no two neighbouring runs of similar sizes
        ratio = LOOP_MERGE_RATIO if by_time else MERGE_RATIO
        sizes = [len(r) for r in tr.runs]
        for x, y in pairwise(sizes):
            assert x > ratio * y or x + y > SMALL_RUN


def rows_of(cols: tuple, diff: np.ndarray, rowhash: np.ndarray | None) -> Counter:
    return Counter(
        {(int(v), int(h) if rowhash is not None else None): int(d)
         for v, d, h in zip(cols[0], diff, rowhash if rowhash is not None else diff, strict=True)}
    )  # fmt: skip


@given(
    st.lists(st.tuples(st.integers(-3, 3), st.integers(-2, 2)), max_size=60),
    st.sampled_from([(0,), (0, 0), (0, 3), (0, (1 << 20) + 5)]),
    st.booleans(),
)
@examples(200)
def test_stage_key_batch_is_stage_batch(rows: list, time: tuple, extreme: bool) -> None:
    """One compiled call stages what hashing, consolidating and sorting stage: the same
    consolidated batch (as a multiset, with its row hashes) and the same staged run."""
    base = np.iinfo(np.int64).max - 3 if extreme else 0
    col = np.array([base + v for v, _ in rows], dtype=np.int64)
    diff = np.array([d for _, d in rows], dtype=np.int64)
    kinds = ("iter",) * (len(time) - 1)
    new, old = (Trace((np.dtype(np.int64),), (0,), kinds) for _ in range(2))
    got = new.stage_key_batch(Batch((col,), diff), time)
    want = old.stage_batch(Batch((col,), diff), time, hash_rows((col,), len(col)))
    assert got.rowhash is not None and want.rowhash is not None
    assert (got.rowhash == hash_rows(got.cols, len(got.diff))).all()
    assert rows_of(got.cols, got.diff, got.rowhash) == rows_of(want.cols, want.diff, want.rowhash)
    assert (new.staged is None) == (old.staged is None)
    if new.staged is not None and old.staged is not None:
        a, b = new.staged, old.staged
        assert new.staged_time == old.staged_time == time
        for x, y in ((a.sortkey, b.sortkey), (a.times, b.times), (a.diff, b.diff)):
            assert x.dtype == y.dtype and x.shape == y.shape
        assert (a.sortkey == b.sortkey).all() and (a.times == b.times).all()
        assert a.bound == b.bound
        assert rows_of(a.cols, a.diff, a.keyhash) == rows_of(b.cols, b.diff, b.keyhash)
        assert a.keyhash is a.rowhash


def int_run(upd: dict, collide: bool) -> Run:
    """A sorted run of rows ``(src, dst)`` keyed by ``src``; with ``collide`` every row's
    "row hash" is its key's (different rows sharing one), as a hash collision would."""
    items = sorted(upd.items())
    src = np.array([s for (s, _), _ in items], dtype=np.int64)
    dst = np.array([d for (_, d), _ in items], dtype=np.int64)
    diff = np.array([x for _, x in items], dtype=np.int64)
    kh = src.astype(np.uint64)  # keys collide in no bits: the order is the key's
    rh = kh.copy() if collide else hash_rows((src, dst), len(src))
    order = np.lexsort((rh, kh))
    return Run(
        kh[order], kh[order], rh[order], (src[order], dst[order]),
        np.zeros((len(src), 0), dtype=np.int64), diff[order], int(abs(diff).max(initial=0)),
    )  # fmt: skip


@given(
    st.dictionaries(
        st.tuples(st.integers(0, 4), st.integers(0, 5)), st.integers(-2, 2).filter(bool)
    ),
    st.dictionaries(
        st.tuples(st.integers(0, 4), st.integers(0, 5)), st.integers(-2, 2).filter(bool)
    ),
    st.booleans(),
)
@examples(300)
def test_merge_int_runs_is_merge_runs_and_gather(x: dict, y: dict, collide: bool) -> None:
    """Runs of two int64 columns merged in one call: :func:`merge_runs` and the columns
    gathered from its positions; on a collision (a summed pair of different rows) it
    declines, as :func:`merge_runs`' caller does after comparing the pair's rows."""
    y = {**y, **{k: -v for k, v in list(x.items())[::2]}}  # cancellations
    a, b = int_run(x, collide), int_run(y, collide)
    got = merge_int_runs(
        a.sortkey, a.keyhash, a.rowhash, a.times, a.diff, a.cols,
        b.sortkey, b.keyhash, b.rowhash, b.times, b.diff, b.cols,
    )  # fmt: skip
    src, sk, kh, rh, times, diff, ia, ib, big = merge_runs(
        a.sortkey, a.keyhash, a.rowhash, a.times, a.diff,
        b.sortkey, b.keyhash, b.rowhash, b.times, b.diff,
    )  # fmt: skip
    pairs_equal = all(
        (c[i] == e[j]) for p, q in zip(ia, ib, strict=True)
        for c, e, i, j in ((a.cols[0], b.cols[0], p, q), (a.cols[1], b.cols[1], p, q))
    )  # fmt: skip
    if not pairs_equal:
        assert got[6] == -1
        return
    cols = tuple(np.concatenate([u, v])[src] for u, v in zip(a.cols, b.cols, strict=True))
    same(got, (sk, kh, rh, times, diff, np.array(cols).reshape(2, len(src)), big))
    # and a trace of such rows holds their sum, whichever way it merged
    tr = Trace((np.dtype(np.int64),) * 2, (0,), ())
    for upd in (x, y):
        cols_u = (
            np.array([s for s, _ in upd], dtype=np.int64),
            np.array([d for _, d in upd], dtype=np.int64),
        )
        tr.insert(
            cols_u,
            np.zeros((len(upd), 0), dtype=np.int64),
            np.array(list(upd.values()), dtype=np.int64),
        )
    want = Counter(x)
    want.update(y)
    cols_t, _, diff_t = tr.all_updates()
    got_t = Counter({(int(s), int(d)): int(v) for s, d, v in zip(*cols_t, diff_t, strict=True)})
    assert got_t == Counter({k: v for k, v in want.items() if v})


def run_rows(run: Run) -> Counter:
    return Counter(
        {(tuple(int(c[i]) for c in run.cols), tuple(run.times[i].tolist()), int(run.rowhash[i])): int(run.diff[i])
         for i in range(len(run))}
    )  # fmt: skip


@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(-2, 2)), max_size=60),
    st.sampled_from([(0,), (0, 2), (0, (1 << 20) + 5)]),
    st.sampled_from(["rows", "key", "collide"]),
)
@examples(200)
def test_stage_int_batch_is_stage_batch(rows: list, time: tuple, hashes: str) -> None:
    """Rows of two int64 columns staged by one compiled call: the same consolidated batch
    and staged run as consolidating and sorting them (as multisets of rows with their
    hashes; the sort keys in order).  ``collide``: every row hash made its key's, so
    different rows share one — consolidated the general way."""
    src = np.array([s for s, _, _ in rows], dtype=np.int64)
    dst = np.array([d for _, d, _ in rows], dtype=np.int64)
    diff = np.array([x for _, _, x in rows], dtype=np.int64)
    key = (0,) if hashes != "rows" else (0, 1)
    kinds = ("iter",) * (len(time) - 1)
    h = hash_rows((src,), len(src)) if hashes == "collide" else hash_rows((src, dst), len(src))
    new, old = (Trace((np.dtype(np.int64),) * 2, key, kinds) for _ in range(2))
    got = new.stage_int_batch(Batch((src, dst), diff), time, h)
    want = old.stage_batch(Batch((src, dst), diff), time, h)

    def batch_rows(b: Batch) -> Counter:
        assert b.rowhash is not None
        return Counter({(int(s), int(d), int(r)): int(x) for s, d, x, r in zip(*b.cols, b.diff, b.rowhash, strict=True)})  # fmt: skip

    assert batch_rows(got) == batch_rows(want)
    assert (new.staged is None) == (old.staged is None)
    if new.staged is not None and old.staged is not None:
        assert (new.staged.sortkey == old.staged.sortkey).all()
        assert run_rows(new.staged) == run_rows(old.staged)
        assert new.staged.bound == old.staged.bound
        assert (
            new.staged.keyhash == hash_rows([new.staged.cols[i] for i in key], len(new.staged))
        ).all()
