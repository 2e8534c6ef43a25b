"""View tables: one append per refresh, exact multisets, metadata, compaction."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from catalog import delta, view_table
from catalog.changes import DIFF

ROWS = pa.schema([("k", pa.int64()), ("s", pa.string())])


def changes(rows: list[tuple[int, str | None]], diffs: list[int]) -> pa.Table:
    return pa.table({"k": [r[0] for r in rows], "s": [r[1] for r in rows], DIFF: diffs})


def as_bag(t: pa.Table) -> Counter[tuple[object, ...]]:
    return Counter(tuple(r.values()) for r in t.to_pylist())


@pytest.fixture
def view(tmp_path: Path) -> str:
    p = str(tmp_path / "v")
    view_table.create_view_table(p, ROWS, view="v")
    return p


def test_multiset_with_duplicates(view: str) -> None:
    r = view_table.commit_view_changes(
        view, changes([(1, "a"), (2, None)], [3, 1]), view="v", epoch=1, input_versions={"t": 4}
    )
    assert r is not None and r.version == 1
    view_table.commit_view_changes(
        view, changes([(1, "a"), (3, "c")], [-2, 1]), view="v", epoch=2, input_versions={"t": 6}
    )
    assert as_bag(view_table.read_view(view)) == Counter({(1, "a"): 1, (2, None): 1, (3, "c"): 1})
    assert as_bag(view_table.read_view(view, 1)) == Counter({(1, "a"): 3, (2, None): 1})
    rec = view_table.last_refresh(view)
    assert rec is not None and (rec.epoch, dict(rec.input_versions)) == (2, {"t": 6})
    assert view_table.committed_epoch(view, "v") == 2
    assert view_table.is_view_table(view)
    assert view_table.read_view(view).schema == ROWS


def test_nothing_to_commit_commits_nothing(view: str) -> None:
    assert (
        view_table.commit_view_changes(view, changes([], []), view="v", epoch=1, input_versions={})
        is None
    )
    # changes that cancel out are nothing too
    assert (
        view_table.commit_view_changes(
            view, changes([(1, "a"), (1, "a")], [1, -1]), view="v", epoch=1, input_versions={}
        )
        is None
    )
    assert delta.current_version(view) == 0


def test_commit_is_idempotent_per_epoch(view: str) -> None:
    c = changes([(1, "a")], [1])
    assert view_table.commit_view_changes(view, c, view="v", epoch=5, input_versions={}) is not None
    assert view_table.commit_view_changes(view, c, view="v", epoch=5, input_versions={}) is None
    assert view_table.commit_view_changes(view, c, view="v", epoch=4, input_versions={}) is None
    assert as_bag(view_table.read_view(view)) == Counter({(1, "a"): 1})


def test_writes_are_proportional_to_the_change(view: str) -> None:
    n = 200_000
    big = pa.table({"k": np.arange(n), "s": pa.array(["x"] * n), DIFF: np.ones(n, np.int64)})
    view_table.commit_view_changes(view, big, view="v", epoch=1, input_versions={"t": 1})
    small = changes([(5, "x"), (7, "x"), (n + 1, "y")], [-1, -1, 1])
    r = view_table.commit_view_changes(view, small, view="v", epoch=2, input_versions={"t": 2})
    assert r is not None
    # exactly the changed rows, one new file, nothing removed or rewritten
    assert r.metrics["num_added_rows"] == 3
    assert r.metrics["num_added_files"] == 1
    assert r.metrics["num_removed_files"] == 0
    assert delta.commit_at(view, r.version).metrics["num_added_rows"] == 3
    assert view_table.table_rows(view) == n + 3
    assert view_table.read_view(view).num_rows == n - 1


def test_view_change_feed(view: str) -> None:
    view_table.commit_view_changes(
        view, changes([(1, "a")], [2]), view="v", epoch=1, input_versions={}
    )
    view_table.commit_view_changes(
        view, changes([(1, "a"), (2, "b")], [-1, 1]), view="v", epoch=2, input_versions={}
    )
    feed = view_table.read_view_changes(view, 1, 2)
    assert as_bag(feed) == Counter({(1, "a", -1): 1, (2, "b", 1): 1})
    assert as_bag(view_table.read_view_changes(view, None, 2)) == Counter(
        {(1, "a", 1): 1, (2, "b", 1): 1}
    )


def test_compaction(view: str) -> None:
    view_table.commit_view_changes(
        view,
        changes([(i, "x") for i in range(8)], [1] * 8),
        view="v",
        epoch=1,
        input_versions={"t": 1},
    )
    view_table.commit_view_changes(
        view,
        changes([(0, "x"), (1, "x"), (9, "y")], [-1, -1, 2]),
        view="v",
        epoch=2,
        input_versions={"t": 2},
    )
    before = as_bag(view_table.read_view(view))
    assert view_table.needs_compaction(view, min_rows=2)
    assert not view_table.needs_compaction(view, min_rows=100)
    r = view_table.compact_view(view)
    assert r is not None
    assert as_bag(view_table.read_view(view)) == before
    assert view_table.table_rows(view) == 7  # 6 distinct rows + (9, y) stored once with 2
    rec = view_table.last_refresh(view)
    assert rec is not None and rec.operation == "compact"
    assert (rec.epoch, dict(rec.input_versions), rec.log_retractions) == (2, {"t": 2}, 0)
    assert not view_table.needs_compaction(view, min_rows=2)
    # the compaction is invisible in the view's change feed
    assert view_table.read_view_changes(view, r.version - 1, r.version).num_rows == 0
    assert view_table.committed_epoch(view, "v") == 2  # txn survives the overwrite


def test_reserved_column_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="__diff__"):
        view_table.create_view_table(str(tmp_path / "x"), pa.schema([(DIFF, pa.int64())]), view="x")
