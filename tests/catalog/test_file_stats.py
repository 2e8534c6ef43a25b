"""A data file's Delta statistics read off the Parquet writer's row-group statistics equal
the ones computed from the rows (catalog.delta_commit ``file_stats``)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catalog import delta_commit


def _random_table(rng: np.random.Generator, n: int) -> pa.Table:
    def pick(values: list[Any]) -> list[Any]:
        return [values[i] for i in rng.integers(0, len(values), n)]

    long = "x" * 70  # past the 64 characters a bound may have
    huge = "y" * 5000  # past the writer's statistics size: no bounds in its row group
    return pa.table(
        {
            "s": pa.array(pick(["b", "a", None, "", "é", "\U0001f600", long, huge]), pa.string()),
            "ls": pa.array(pick(["q", None, "Q"]), pa.large_string()),
            "i": pa.array(pick([3, -1, None, 0, -(2**63), 2**63 - 1]), pa.int64()),
            "i8": pa.array(pick([-128, 127, None]), pa.int8()),
            "u": pa.array(pick([0, 2**64 - 1, None]), pa.uint64()),
            "f": pa.array(pick([0.5, float("nan"), None, -2.0, float("inf")]), pa.float64()),
            "d": pa.array(pick([dt.date(2020, 1, 1), None, dt.date(1, 1, 1)]), pa.date32()),
            "b": pa.array(pick([True, False, None]), pa.bool_()),
            "nulls": pa.nulls(n, pa.int32()),
        }
    )


@pytest.mark.parametrize("seed", range(30))
def test_stats_from_the_written_metadata_equal_the_computed_ones(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    data = _random_table(rng, n)
    if seed % 3 == 0:  # leave some columns without a value, or with only a long one
        data = data.filter(pa.array(rng.random(n) < 0.2))
    collected: list[Any] = []
    sink = pa.BufferOutputStream()
    group = int(rng.integers(1, 8))  # several row groups, some of only NULLs
    pq.write_table(data, sink, row_group_size=group, metadata_collector=collected)
    assert delta_commit.file_stats(data, collected[0]) == delta_commit.file_stats(data)
    for j, name in [(1, "ls"), (2, "i"), (6, "d")]:  # these are read off the metadata
        col = data.column(name)
        if col.null_count < len(col):
            assert delta_commit._written_bounds(collected[0], j, name, col.type) is not None


def test_a_written_file_carries_the_computed_stats(tmp_path: Any) -> None:
    """Through the writer itself (delta-encoded integers, dictionary strings), read back."""
    rng = np.random.default_rng(5)
    data = _random_table(rng, 30_000)  # four row groups
    action = delta_commit.write_data_file(str(tmp_path), data)
    assert json.loads(action["stats"]) == json.loads(
        delta_commit.compact_json(delta_commit.file_stats(data))
    )
    back = pq.read_table(delta_commit.file_location(str(tmp_path), action))
    assert repr(back.to_pylist()) == repr(data.to_pylist())  # NaN compared by its text
