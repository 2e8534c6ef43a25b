"""Grouping gathered rows by probe (``ivm.operators.reduce.group_order``): the counting sort
a reduction uses gives the same groups as a comparison sort, in a stable order; and
consolidating them per (probe, row) (``consolidate_groups``) equals a plain-Python sum."""

from __future__ import annotations

import numpy as np
from engine_helpers import examples
from hypothesis import given
from hypothesis import strategies as st

from ivm.batch import hash_rows
from ivm.kernels import counting_order
from ivm.operators.reduce import consolidate_groups, group_order
from ivm.trace import Gathered


@given(st.lists(st.integers(0, 40), max_size=300))
@examples(40)
def test_counting_order_is_the_stable_sort(keys: list[int]) -> None:
    a = np.asarray(keys, dtype=np.int64)
    k = int(a.max()) + 1 if len(a) else 0
    assert counting_order(a, k).tolist() == np.argsort(a, kind="stable").tolist()


@given(st.lists(st.integers(0, 10_000), min_size=0, max_size=400), st.integers(0, 3))
@examples(40)
def test_group_order_groups_every_row_once(keys: list[int], spread: int) -> None:
    # spread: small key ranges take the counting sort, wide ones the comparison sort
    a = np.asarray(keys, dtype=np.int64) // (10 ** (3 - spread))
    order = group_order(a)
    assert sorted(order.tolist()) == list(range(len(a)))
    assert (np.diff(a[order]) >= 0).all()


def _reference_groups(owner: list[int], rows: list[int], diff: list[int]) -> list[tuple]:
    """Plain-Python consolidation per (probe, row), sorted: (probe, row, sum) with sum != 0."""
    sums: dict[tuple[int, int], int] = {}
    for o, r, d in zip(owner, rows, diff, strict=True):
        sums[(o, r)] = sums.get((o, r), 0) + d
    return sorted((o, r, s) for (o, r), s in sums.items() if s != 0)


@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 25), st.integers(-2, 2)),
        min_size=0,
        max_size=600,
    ),
    st.booleans(),
)
@examples(60)
def test_consolidate_groups_matches_reference(items: list[tuple], collide: bool) -> None:
    # a probe's rows: few (pairwise) or many (a table sized to the probe's rows); with
    # ``collide`` different rows share row hashes, and the rows must still be told apart
    owner = [o if o < 25 else 0 for o, _, _ in items]  # probe 0 gathers many rows
    rows = [r for _, r, _ in items]
    diff = [d for _, _, d in items]
    o = np.asarray(owner, dtype=np.int64)
    col = np.asarray(rows, dtype=np.int64)
    other = col % 7  # a second column: the row hash is then not injective
    rh = hash_rows((col, other), len(col))
    if collide:
        rh = rh & np.uint64(3)
    acc = Gathered(
        o, (col, other), np.zeros((len(o), 0), dtype=np.int64), np.asarray(diff, dtype=np.int64), rh
    )
    sel, sums = consolidate_groups(acc)
    assert (np.diff(o[sel]) >= 0).all()  # grouped by probe, in probe order
    got = sorted(zip(o[sel].tolist(), col[sel].tolist(), sums.tolist(), strict=True))
    assert got == _reference_groups(owner, rows, diff)
