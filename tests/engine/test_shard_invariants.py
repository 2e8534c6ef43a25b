"""What sharding relies on: equal rows hash alike, and float sums do not depend on arrival order.

An exchange sends a row to ``hash(key) mod N``: a retraction must reach the shard that holds
the row it retracts.  SQL groups NaN with NaN and ``-0.0`` with ``0.0``, so those must hash
alike too, in float64 and in object (nullable) columns; Python hashes each NaN object by its
identity, which sent a retraction of a row holding NaN to another shard (found by the sharded
run of the function catalogue).  (A column's dtype is the operator's, fixed: an object
column and a float64 column never hold the same column's rows.)  And a group's float SUM must be the same however its rows
arrived (one process, or N shards): floating-point addition is not associative.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ivm.batch import hash_column, hash_rows
from ivm.operators.aggregates import ordered_float_sums, ordered_object_sum


def test_every_nan_hashes_alike_in_float_and_object_columns() -> None:
    negative_nan = -np.float64("nan")
    floats = np.array([np.nan, negative_nan, np.float64("nan") * 0, 0.0, -0.0, 2.5])
    objects = np.array([float("nan"), float("-nan"), None, -0.0, 0.0, 2.5], dtype=object)
    hf, ho = hash_column(floats), hash_column(objects)
    assert len(set(hf[:3].tolist())) == 1
    assert hf[3] == hf[4] and ho[3] == ho[4]
    assert ho[0] == ho[1]  # two NaN objects (of either sign) alike
    assert ho[2] != ho[0]  # NULL is not NaN


@settings(deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True), st.none()), min_size=1, max_size=30))
def test_rows_holding_nan_hash_alike_whatever_the_objects(values: list) -> None:
    a = np.array(values, dtype=object)
    b = np.array([v * 1.0 if v is not None else None for v in values], dtype=object)  # new objects
    assert (hash_rows((a,), len(a)) == hash_rows((b,), len(b))).all()


@given(
    st.lists(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=5),
    st.randoms(use_true_random=False),
)
def test_float_group_sums_do_not_depend_on_row_order(
    values: list[float], groups: int, rng: random.Random
) -> None:
    gid = np.sort(np.array([rng.randrange(groups) for _ in values]))
    starts = np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]])
    w = np.array(values)
    shuffled = w.copy()
    for lo, hi in zip(starts, [*starts[1:], len(w)], strict=True):
        part = shuffled[lo:hi].copy()
        rng.shuffle(part)  # another arrival order within each group
        shuffled[lo:hi] = part
    assert ordered_float_sums(w, starts).tolist() == ordered_float_sums(shuffled, starts).tolist()
    objects = list(values)
    rng.shuffle(objects)
    assert ordered_object_sum(objects) == ordered_object_sum([None, *values])
