"""Grouping gathered rows by probe (``ivm.operators.reduce.group_order``): the counting sort
a reduction uses gives the same groups as a comparison sort, in a stable order."""

from __future__ import annotations

import numpy as np
from engine_helpers import examples
from hypothesis import given
from hypothesis import strategies as st

from ivm.kernels import counting_order
from ivm.operators.reduce import group_order


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
