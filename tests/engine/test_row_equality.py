"""Row equality and grouping of object columns, compared with plain Python.

:func:`ivm.batch.rows_equal` compares object columns by pointer first (the same object is
equal to itself) and by value only where the objects differ; :func:`ivm.batch.sort_groups`
sorts large inputs by a radix sort.  Both must group exactly as Python's equality does,
with NULL equal to NULL and a NaN equal to itself (SQL grouping), whatever objects hold
the values: shared objects, equal copies, hash collisions (``hash(-1) == hash(-2)``), and
strided views.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ivm.batch import Batch, hash_column, hash_rows, rows_equal, sort_groups

VALUES = ["a", "b", "region 1", None, -1, -2, 2**62, 2, float("nan"), 1.5]


def _key(v: object) -> object:
    return ("nan",) if isinstance(v, float) and math.isnan(v) else v


def _column(picks: list[int], copies: list[bool]) -> np.ndarray:
    """Values of ``VALUES``, each either the shared object or (strings) an equal copy.  A
    NaN is always the one object: CPython (3.10+) hashes NaN objects by identity, so two
    NaN objects in an object column are different keys to the engine's hashing before any
    comparison."""
    col = np.empty(len(picks), dtype=object)
    for i, (p, copy) in enumerate(zip(picks, copies, strict=True)):
        v = VALUES[p]
        if copy and isinstance(v, str):
            v = "".join(list(v))  # an equal string, another object
        col[i] = v
    return col


picks = st.lists(st.integers(0, len(VALUES) - 1), min_size=1, max_size=60)


@given(picks, st.data())
@settings(max_examples=60, deadline=None)
def test_rows_equal_is_python_equality(a_picks: list[int], data: st.DataObject) -> None:
    n = len(a_picks)
    a = _column(a_picks, data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    ints = np.arange(n, dtype=np.int64) % 3
    ia = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=40)))
    ib = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=len(ia), max_size=len(ia))))
    got = rows_equal((a, ints), ia, (a, ints), ib)
    want = [_key(a[i]) == _key(a[j]) and ints[i] == ints[j] for i, j in zip(ia, ib, strict=True)]
    assert got.tolist() == want
    # ia=None (every row in order), on a strided view of the column
    view = np.repeat(a, 2)[::2]
    got = rows_equal((view,), None, (a,), np.arange(n))
    assert got.all()


def test_sort_groups_large_input_groups_exactly() -> None:
    """Above the radix sort's threshold, with shared objects, equal copies and colliding
    hashes (CPython hashes -1 like -2), every group holds equal rows and equal rows are
    one group."""
    rng = np.random.default_rng(3)
    n = 70_000
    p = rng.integers(0, len(VALUES), n).tolist()
    col = _column(p, rng.random(n).tolist() < np.full(n, 0.3))
    other = rng.integers(0, 4, n)
    order, starts = sort_groups(hash_rows((col, other), n), (col, other))
    assert sorted(order.tolist()) == list(range(n))
    bounds = [*starts.tolist(), n]
    seen: set[tuple[object, int]] = set()
    for lo, hi in itertools.pairwise(bounds):
        keys = {(_key(col[r]), int(other[r])) for r in order[lo:hi].tolist()}
        assert len(keys) == 1
        (k,) = keys
        assert k not in seen
        seen.add(k)
    assert len(seen) == len({(_key(v), int(o)) for v, o in zip(col, other, strict=True)})


def test_consolidate_object_rows_matches_counter() -> None:
    rng = np.random.default_rng(4)
    n = 50_000
    col = _column(rng.integers(0, len(VALUES), n).tolist(), (rng.random(n) < 0.5).tolist())
    diff = rng.choice(np.array([-1, 1, 2]), n)
    b = Batch((col,), diff).consolidate()
    want: Counter[object] = Counter()
    for v, d in zip(col, diff, strict=True):
        want[_key(v)] += int(d)
    assert {_key(v): int(d) for v, d in zip(b.cols[0], b.diff, strict=True)} == {
        k: d for k, d in want.items() if d
    }


NAN_HASH = int(np.array([np.nan]).view(np.int64)[0])  # every NaN alike (test_shard_invariants)


def test_hash_column_of_objects_is_per_value() -> None:
    """An object column's hashes (computed once per distinct object from 4,096 rows on, or
    from 1,024 when its first objects repeat) are each value's own: shared objects, equal
    copies, one object per row, -1 and -2."""
    rng = np.random.default_rng(5)
    runs = ((10_000, 0.2), (10_000, 1.0), (5_000, 0.0), (1_200, 0.0), (1_200, 0.3), (2_000, 1.0))
    for n, copies in runs:
        col = _column(rng.integers(0, len(VALUES), n).tolist(), (rng.random(n) < copies).tolist())
        strided = np.repeat(col, 2)[::2]
        for c in (col, strided):
            want = [-1 if v == -1 else NAN_HASH if v != v else hash(v) for v in c]
            assert hash_column(c).view(np.int64).tolist() == want
    for n in (8_000, 1_500):
        unique = np.array([f"s{i}" for i in range(n)], dtype=object)
        assert hash_column(unique).view(np.int64).tolist() == [hash(v) for v in unique]
        # a head of repeated objects, distinct objects after it
        head = np.concatenate([np.full(64, unique[0], dtype=object), unique])
        assert hash_column(head).view(np.int64).tolist() == [hash(v) for v in head]
    fixed = np.array([f"s{i % 7}" for i in range(8_000)])  # numpy's own strings, not objects
    assert hash_column(fixed).view(np.int64).tolist() == [hash(v) for v in fixed]
