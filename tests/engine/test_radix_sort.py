"""Large runs are sorted by a radix sort (``ivm.kernels.radix_order``): the same order as a
stable comparison sort, and traces built from large batches answer lookups exactly."""

from __future__ import annotations

from collections import Counter

import numpy as np
from engine_helpers import examples
from hypothesis import given
from hypothesis import strategies as st

from ivm.batch import hash_rows
from ivm.kernels import radix_order
from ivm.trace import Trace

U64 = st.integers(0, 2**64 - 1)


@given(
    st.lists(st.one_of(U64, st.sampled_from([0, 1, 2**63, 2**64 - 1, 65535, 65536])), max_size=400)
)
@examples(60)
def test_radix_order_is_the_stable_sort(keys: list[int]) -> None:
    a = np.asarray(keys, dtype=np.uint64)
    assert radix_order(a).tolist() == np.argsort(a, kind="stable").tolist()


@given(st.integers(0, 3), st.integers(1, 3))
@examples(6)
def test_large_runs_answer_lookups(seed: int, batches: int) -> None:
    rng = np.random.default_rng(seed)
    n = 40_000
    a = rng.integers(0, 5_000, n).astype(np.int64)
    b = rng.integers(0, 3, n).astype(np.int64)
    tr = Trace((np.dtype("int64"), np.dtype("int64")), (0,), ())
    for part in np.array_split(np.arange(n), batches):
        tr.insert(
            (a[part], b[part]), np.zeros((len(part), 0), np.int64), np.ones(len(part), np.int64)
        )
    for r in tr.runs:
        assert (r.sortkey[1:] >= r.sortkey[:-1]).all()
    probes = np.arange(0, 5_000, 7, dtype=np.int64)
    found = tr.lookup(hash_rows([probes], len(probes)), (probes,))
    got = Counter(
        (int(probes[o]), int(x), int(y))
        for o, x, y, d in zip(found.owner, found.cols[0], found.cols[1], found.diff, strict=True)
        for _ in range(int(d))
    )
    want = Counter((int(x), int(x), int(y)) for x, y in zip(a, b, strict=True) if x % 7 == 0)
    assert got == want
