"""The row index of a kept view file (catalog.row_index) against Arrow: its order is
``sort_indices``' order, it finds exactly the copies a search of the rows finds, and a merge
equals sorting everything."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from catalog.row_index import RowIndex, indexable, row_keys


def _random_table(rng: np.random.Generator, n: int) -> pa.Table:
    """Few distinct values per column (many ties): strings past ASCII (UTF-8 byte order),
    negative and wide integers, dates, booleans."""

    def pick(values: list[object]) -> list[object]:
        return [values[i] for i in rng.integers(0, len(values), n)]

    return pa.table(
        {
            "s": pa.array(pick(["b", "a", "", "ab", "é", "z", "\U0001f600", "Z"]), pa.string()),
            "i": pa.array(pick([3, -1, 0, 7, -(2**62), 2**62]), pa.int64()),
            "u": pa.array(pick([0, 200, 255]), pa.uint8()),
            "d": pa.array(pick([dt.date(2020, 1, 1), dt.date(1999, 5, 5)]), pa.date32()),
            "b": pa.array(pick([True, False]), pa.bool_()),
            "l": pa.array(pick(["x", "xy", "w"]), pa.large_string()),
        }
    )


def _sorted(t: pa.Table) -> pa.Table:
    return t.take(pc.sort_indices(t, sort_keys=[(c, "ascending") for c in t.column_names]))


@pytest.mark.parametrize("seed", range(40))
def test_index_order_locate_and_merge_equal_arrow(seed: int) -> None:
    rng = np.random.default_rng(seed)
    old = _sorted(_random_table(rng, int(rng.integers(0, 300))))
    assert indexable(old)
    index = RowIndex.of(old)
    assert index.keys == sorted(index.keys)  # Python's order is Arrow's
    stored = Counter(index.keys)
    # locate: a random multiset of stored rows, then one copy too many
    picked = list(stored)
    picked = [picked[i] for i in rng.permutation(len(picked))[: int(rng.integers(0, 6))]]
    counts = [int(rng.integers(1, stored[k] + 1)) for k in picked]
    found = index.locate(picked, counts)
    assert found is not None
    expected = sorted(
        p for k, c in zip(picked, counts, strict=True) for p in [*_positions(index.keys, k)][:c]
    )
    assert found.tolist() == expected
    if picked:
        assert index.locate(picked, [stored[picked[0]] + 1, *counts[1:]]) is None
    missing = ("never", 1, 1, dt.date(2000, 1, 1), True, "x")
    assert index.locate([missing], [1]) is None
    # merge: cut those rows out, put new rows in (copies of old rows among them)
    new = _random_table(rng, int(rng.integers(0, 65)))
    if old.num_rows and seed % 3 == 0:
        new = pa.concat_tables([new, old.take(pa.array(rng.integers(0, old.num_rows, 4)))])
    new = _sorted(new)
    take = index.merge(found, row_keys(new))
    merged = pa.concat_tables([old, new]).take(pa.array(take))
    keep = np.ones(old.num_rows, bool)
    keep[found] = False
    expected_rows = _sorted(pa.concat_tables([old.filter(pa.array(keep)), new]))
    assert merged.equals(expected_rows)
    assert index.keys == row_keys(merged)  # the index now describes the result


def _positions(keys: list[tuple[object, ...]], k: tuple[object, ...]) -> list[int]:
    return [i for i, x in enumerate(keys) if x == k]


def test_not_indexable() -> None:
    """NULLs, floats (NaN, -0.0), nested types and timestamps are left to Arrow."""
    assert not indexable(pa.table({"a": pa.array([1, None], pa.int64())}))
    assert not indexable(pa.table({"a": pa.array([1.0, 2.0])}))
    assert not indexable(pa.table({"a": pa.array([[1], [2]])}))
    assert not indexable(pa.table({"a": pa.array([dt.datetime(2020, 1, 1)])}))
    assert not indexable(pa.table({}))
    assert indexable(pa.table({"a": [1], "b": ["x"]}))


def test_the_file_cache_bounds_the_rows_indexed(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Indexes cost several times their rows: past ``INDEX_ROWS`` indexed rows the oldest
    files' indexes go (their rows stay kept); the newest file keeps its index."""
    from catalog import file_cache

    monkeypatch.setattr(file_cache, "INDEX_ROWS", 25)
    file_cache.clear()
    tables = []
    for i in range(3):
        location = str(tmp_path / f"f{i}")
        Path(location).write_bytes(b"x")
        rows = pa.table({"k": list(range(10 * i, 10 * i + 10))})
        file_cache.keep(location, rows, index=RowIndex.of(rows))
        tables.append((location, rows))
    held = [file_cache.index(loc, file_cache.rows(loc, t.schema)) for loc, t in tables]
    assert [h is not None for h in held] == [False, True, True]  # 20 rows indexed of 30
    assert all(file_cache.rows(loc, t.schema) is t for loc, t in tables)
    # an index attached later is the newest: the oldest indexed file's goes
    file_cache.attach_index(tables[0][0], tables[0][1], RowIndex.of(tables[0][1]))
    held = [file_cache.index(loc, t) for loc, t in tables]
    assert [h is not None for h in held] == [True, False, True]
    taken = file_cache.detach_index(tables[2][0], tables[2][1])
    assert taken is not None and file_cache.index(tables[2][0], tables[2][1]) is None
    file_cache.clear()
