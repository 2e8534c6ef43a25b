"""A change the refresh already consolidated is not consolidated again by the view commit.

catalog.refresh ``commit_refresh`` consolidates each view's change before the checkpoint;
catalog.view_table skips its own consolidation of such a change when conforming it to the
view's columns casts and drops nothing.  Oracle: the same changes committed with and without
the skip give the same signed change, the same rows after every step and the same feed —
floats with NaN, -0.0 and NULLs included — and a change that a cast could merge is still
consolidated.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from catalog import view_table
from catalog.changes import DIFF, consolidate

ROWS = pa.schema([("k", pa.int64()), ("x", pa.float64())])
SPECIAL = [0.0, -0.0, math.nan, None, 1.5, -2.25]


def _key(v: object, *, sql: bool = False) -> object:
    """A float by its bits (NaN and -0.0 kept apart, as Arrow's grouping may keep them);
    ``sql``: -0.0 is 0.0 (a view table's removal finds a row by SQL equality, so which of
    the two zeros it removes is not determined)."""
    if isinstance(v, float):
        if math.isnan(v):
            return ("nan",)
        return ("f", struct.pack("<d", v + 0.0 if sql else v))
    return v


def bag(t: pa.Table, diff: str | None = None, *, sql: bool = False) -> Counter[tuple[object, ...]]:
    out: Counter[tuple[object, ...]] = Counter()
    for r in t.to_pylist():
        out[(_key(r["k"]), _key(r["x"], sql=sql))] += r[diff] if diff else 1
    return Counter({k: v for k, v in out.items() if v})


def random_change(rng: np.random.Generator, live: list[tuple[int, float | None]]) -> pa.Table:
    """Inserts of new and repeated rows (NaN, -0.0, NULL among them), removals of live rows,
    the same row several times with opposite signs."""
    rows: list[tuple[int, float | None]] = []
    diffs: list[int] = []
    for _ in range(int(rng.integers(1, 40))):
        k = int(rng.integers(0, 6))
        x = SPECIAL[int(rng.integers(0, len(SPECIAL)))] if rng.random() < 0.6 else float(k)
        n = int(rng.integers(1, 3))
        rows += [(k, x)] * 2
        diffs += [n, -n] if rng.random() < 0.3 else [n, 0]
    for _ in range(min(len(live), int(rng.integers(0, 6)))):
        rows.append(live.pop(int(rng.integers(0, len(live)))))
        diffs.append(-1)
    return pa.table(
        {"k": [r[0] for r in rows], "x": [r[1] for r in rows], DIFF: diffs},
        schema=ROWS.append(pa.field(DIFF, pa.int64())),
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_skipping_the_second_consolidation_changes_nothing(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    paths = {skip: str(tmp_path / f"v{skip}") for skip in (True, False)}
    for p in paths.values():
        view_table.create_view_table(p, ROWS, view="v")
    live: list[tuple[int, float | None]] = []
    for epoch in range(1, 9):
        change = consolidate(random_change(rng, live))
        again = view_table._signed_change(change, ROWS, "v", consolidated=True)
        fresh = view_table._signed_change(change, ROWS, "v")
        assert (again is None) == (fresh is None)
        if again is not None and fresh is not None:
            assert bag(again.plus) == bag(fresh.plus)
            minus = again.minus_rows.append_column("n", pa.array(again.minus_counts))
            minus_fresh = fresh.minus_rows.append_column("n", pa.array(fresh.minus_counts))
            assert bag(minus, "n") == bag(minus_fresh, "n")
        versions = {}
        for skip, p in paths.items():
            r = view_table.commit_view_changes(
                p, change, view="v", epoch=epoch, input_versions={}, consolidated=skip
            )
            versions[skip] = None if r is None else r.version
        assert versions[True] == versions[False]
        read = {s: bag(DeltaTable(p).to_pyarrow_table(), sql=True) for s, p in paths.items()}
        assert read[True] == read[False]
        if versions[True] is not None:
            feeds = {
                s: pa.table(
                    DeltaTable(p).load_cdf(starting_version=versions[s], ending_version=versions[s])
                ).select(["k", "x", "_change_type"])
                for s, p in paths.items()
            }
            assert Counter(
                (r["k"], _key(r["x"], sql=True), r["_change_type"]) for r in feeds[True].to_pylist()
            ) == Counter(
                (r["k"], _key(r["x"], sql=True), r["_change_type"])
                for r in feeds[False].to_pylist()
            )
        live = [(r["k"], r["x"]) for r in DeltaTable(paths[True]).to_pyarrow_table().to_pylist()]


def test_a_change_a_cast_could_merge_is_consolidated_again() -> None:
    """Two float64 values that are one float32: consolidated once as float64 they are two rows,
    conformed to a float32 view they are one, and their opposite signs cancel."""
    rows32 = pa.schema([("k", pa.int64()), ("x", pa.float32())])
    a, b = 1.0, 1.0 + 2.0**-40  # distinct doubles, the same float
    change = consolidate(pa.table({"k": [1, 1], "x": [a, b], DIFF: [1, -1]}))
    assert change.num_rows == 2
    assert view_table._signed_change(change, rows32, "v", consolidated=True) is None


def test_a_change_with_extra_columns_is_consolidated_again() -> None:
    """A column the view does not hold is dropped by conforming: rows it told apart merge."""
    change = consolidate(pa.table({"k": [1, 1], "x": [2.0, 2.0], "y": [1, 2], DIFF: [1, -1]}))
    assert change.num_rows == 2
    assert view_table._signed_change(change, ROWS, "v", consolidated=True) is None
