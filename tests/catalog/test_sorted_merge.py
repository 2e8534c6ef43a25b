"""Merging a few rows into a sorted table equals sorting everything (catalog.sorted_merge)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from catalog import sorted_merge


def _random_table(rng: np.random.Generator, n: int) -> pa.Table:
    """Few distinct values per column (many ties), NULLs, NaN, strings, dates, booleans."""

    def pick(values: list[object]) -> list[object]:
        return [values[i] for i in rng.integers(0, len(values), n)]

    return pa.table(
        {
            "s": pa.array(pick(["b", "a", None, "", "ab"]), pa.string()),
            "i": pa.array(pick([3, -1, None, 0, 7]), pa.int64()),
            "f": pa.array(pick([0.5, float("nan"), None, -2.0]), pa.float64()),
            "d": pa.array(pick([dt.date(2020, 1, 1), None, dt.date(1999, 5, 5)]), pa.date32()),
            "b": pa.array(pick([True, False, None]), pa.bool_()),
        }
    )


@pytest.mark.parametrize("seed", range(60))
def test_merge_equals_sorting_everything(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    cols = ["s", "i", "f", "d", "b"]
    order = list(rng.permutation(cols)) if seed % 2 else cols
    keys = [(c, "descending" if seed % 5 == 0 and c == "i" else "ascending") for c in order]
    old = _random_table(rng, n)
    old = old.take(pc.sort_indices(old, sort_keys=keys))
    kept = np.flatnonzero(rng.random(n) < 0.9)
    new = _random_table(rng, int(rng.integers(0, sorted_merge.MAX_NEW + 1)))
    if n and seed % 3 == 0:  # copies of old rows: ties with whole runs
        new = pa.concat_tables([new, old.take(pa.array(rng.integers(0, n, 4)))])
    merged = sorted_merge.merge(old, kept, new, keys)
    both = pa.concat_tables([old.take(pa.array(kept, pa.int64())), new])
    expected = both.take(pc.sort_indices(both, sort_keys=keys))
    # equal rows may come in either order; NaN compared by its text
    assert repr(merged.to_pylist()) == repr(expected.to_pylist())


@pytest.mark.parametrize("step", [1, 2, 3, 7, 1000])
def test_places_at_any_fence_spacing(step: int) -> None:
    old = pa.table({"k": [1, 1, 2, 4, 4, 4, 9, None]})
    keys = [("k", "ascending")]
    new = pa.table({"k": pa.array([0, 1, 3, 4, 9, 10, None], pa.int64())})
    assert sorted_merge.places(old, new, keys, step=step).tolist() == [0, 2, 3, 6, 7, 7, 8]
