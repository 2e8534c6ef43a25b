"""Memory per arranged row (issue 15, "State size"): a trace stores each hash array once.

Outside loops a run's sort key is its key hash, and when the key is the whole row the key
hash is the row hash; runs are immutable, so such equal arrays are one array, not copies.
The bytes counted here are those of the distinct numpy arrays the runs hold.
"""

from __future__ import annotations

import numpy as np
from engine_helpers import examples
from hypothesis import given
from hypothesis import strategies as st

from ivm.trace import Trace

INT2 = (np.dtype("int64"), np.dtype("int64"))


def distinct_bytes(tr: Trace) -> int:
    seen: dict[int, int] = {}
    for r in tr.runs:
        for a in (r.sortkey, r.keyhash, r.rowhash, r.times, r.diff, *r.cols):
            seen[id(a)] = a.nbytes
    return sum(seen.values())


def fill(tr: Trace, n: int, batches: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    rows = rng.permutation(n)
    for part in np.array_split(rows, batches):
        cols = (part.astype(np.int64), (part * 7 % 1000).astype(np.int64))
        tr.insert(cols, np.zeros((len(part), 0), dtype=np.int64), np.ones(len(part), np.int64))
    tr.compact()


def test_whole_row_key_stores_one_hash_per_row() -> None:
    tr = Trace(INT2, (0, 1), ())
    fill(tr, 20_000, 4)
    assert tr.rows_held() == 20_000
    # two int64 columns, one hash, one diff (no inner times outside loops)
    assert distinct_bytes(tr) == 20_000 * (16 + 8 + 8)


def test_key_subset_shares_the_sort_key_with_the_key_hash() -> None:
    tr = Trace(INT2, (0,), ())
    fill(tr, 20_000, 4)
    # columns, key hash (= sort key), row hash, diff
    assert distinct_bytes(tr) == 20_000 * (16 + 8 + 8 + 8)


@given(st.integers(1, 6), st.integers(0, 3), st.booleans())
@examples(40)
def test_shared_hashes_keep_lookups_exact(batches: int, seed: int, whole_row: bool) -> None:
    """Sharing changes no answer: every key's rows come back from a lookup."""
    tr = Trace(INT2, (0, 1) if whole_row else (0,), ())
    fill(tr, 6_000, batches, seed)
    cols, _, diff = tr.all_updates()
    assert sorted(cols[0].tolist()) == list(range(6_000))
    assert (diff == 1).all()
    for r in tr.runs:
        assert (r.sortkey[1:] >= r.sortkey[:-1]).all()
