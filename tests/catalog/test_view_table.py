"""View tables hold exactly the view's rows; one commit per refresh; CDF = the diff."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from catalog import delta, delta_commit, view_table
from catalog.changes import DIFF

ROWS = pa.schema([("k", pa.int64()), ("s", pa.string())])


def changes(rows: list[tuple[int, str | None]], diffs: list[int]) -> pa.Table:
    return pa.table({"k": [r[0] for r in rows], "s": [r[1] for r in rows], DIFF: diffs})


def as_bag(t: pa.Table) -> Counter[tuple[object, ...]]:
    return Counter(tuple(r.values()) for r in t.to_pylist())


def feed_bag(path: str, version: int) -> Counter[tuple[object, ...]]:
    """The change data feed of one version as a signed multiset (deltalake's own reader)."""
    cdf = pa.table(DeltaTable(path).load_cdf(starting_version=version, ending_version=version))
    out: Counter[tuple[object, ...]] = Counter()
    sign = {"insert": 1, "delete": -1, "update_postimage": 1, "update_preimage": -1}
    for r in cdf.to_pylist():
        key = (r["k"], r["s"])
        out[key] += sign[r["_change_type"]]
    return Counter({k: v for k, v in out.items() if v})


def signed(c: pa.Table) -> Counter[tuple[object, ...]]:
    out: Counter[tuple[object, ...]] = Counter()
    for r in c.to_pylist():
        out[(r["k"], r["s"])] += r[DIFF]
    return out


def plain_rows(path: str, version: int | None = None) -> pa.Table:
    """What a user's plain deltalake reader sees."""
    dt = DeltaTable(path, version=version)
    if "deletionVectors" in (dt.protocol().reader_features or []):
        return pa.table(dt.scan())
    return dt.to_pyarrow_table()


@pytest.fixture
def view(tmp_path: Path) -> str:
    p = str(tmp_path / "v")
    view_table.create_view_table(p, ROWS, view="v")
    return p


def test_plain_rows_multiset_time_travel_and_feed(view: str) -> None:
    c1 = changes([(1, "a"), (2, None)], [3, 1])
    r1 = view_table.commit_view_changes(view, c1, view="v", epoch=1, input_versions={"t": 4})
    assert r1 is not None and r1.version == 1
    c2 = changes([(1, "a"), (3, "c"), (2, None)], [-1, 1, -1])
    r2 = view_table.commit_view_changes(view, c2, view="v", epoch=2, input_versions={"t": 6})
    assert r2 is not None and r2.version == 2
    now = DeltaTable(view).to_pyarrow_table()
    assert now.column_names == ["k", "s"]
    assert as_bag(now) == Counter({(1, "a"): 2, (3, "c"): 1})
    assert as_bag(DeltaTable(view, version=1).to_pyarrow_table()) == Counter(
        {(1, "a"): 3, (2, None): 1}
    )
    assert feed_bag(view, 1) == signed(c1)
    assert feed_bag(view, 2) == signed(c2)
    cdf = pa.table(DeltaTable(view).load_cdf(starting_version=2, ending_version=2))
    assert cdf.num_rows == 3  # exactly one feed row per changed copy
    rec = view_table.last_refresh(view)
    assert rec is not None and (rec.epoch, dict(rec.input_versions)) == (2, {"t": 6})
    assert view_table.committed_epoch(view, "v") == 2
    assert view_table.is_view_table(view) and not view_table.is_legacy(view)
    hist = DeltaTable(view).history(1)[0]
    assert '"inputs": {"t": 6}' in hist["userMetadata"]


def test_empty_change_commits_nothing_and_retry_is_idempotent(view: str) -> None:
    assert (
        view_table.commit_view_changes(view, changes([], []), view="v", epoch=1, input_versions={})
        is None
    )
    assert (
        view_table.commit_view_changes(
            view, changes([(1, "a"), (1, "a")], [1, -1]), view="v", epoch=1, input_versions={}
        )
        is None
    )
    c = changes([(1, "a")], [1])
    assert view_table.commit_view_changes(view, c, view="v", epoch=5, input_versions={}) is not None
    assert view_table.commit_view_changes(view, c, view="v", epoch=5, input_versions={}) is None
    assert view_table.commit_view_changes(view, c, view="v", epoch=4, input_versions={}) is None
    assert as_bag(view_table.read_view(view)) == Counter({(1, "a"): 1})


def test_retracting_a_missing_row_is_refused_and_writes_nothing(view: str) -> None:
    view_table.commit_view_changes(
        view, changes([(1, "a")], [1]), view="v", epoch=1, input_versions={}
    )
    with pytest.raises(view_table.ViewTableMismatchError, match="lacks 2 row"):
        view_table.commit_view_changes(
            view, changes([(1, "a"), (7, "z")], [-2, -1]), view="v", epoch=2, input_versions={}
        )
    assert delta.current_version(view) == 1


def test_deletion_vectors_write_in_proportion_to_the_change(
    view: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    # wide random keys: a file of consecutive ones delta-encodes to almost nothing
    ks = np.unique(rng.integers(0, 2**62, 200_000))
    n = len(ks)
    big = pa.table({"k": ks, "s": pa.array([f"s{i % 97}" for i in range(n)]), DIFF: np.ones(n)})
    view_table.commit_view_changes(view, big, view="v", epoch=1, input_versions={"t": 1})
    assert not view_table.uses_deletion_vectors(view)
    size = view_table.layout(view).bytes
    victims = np.sort(rng.choice(n, 10, replace=False))
    c = pa.table(
        {
            "k": np.concatenate([ks[victims], ks[victims]]),
            "s": [f"s{v % 97}" for v in victims] + ["new"] * 10,
            DIFF: [-1] * 10 + [1] * 10,
        }
    )
    monkeypatch.setattr(view_table, "COW_MAX_BYTES", 0)
    r = view_table.commit_view_changes(view, c, view="v", epoch=2, input_versions={"t": 2})
    assert r is not None and view_table.uses_deletion_vectors(view)
    assert r.metrics["num_bytes_written"] < 0.01 * size
    assert r.metrics["num_deletion_vectors"] >= 1 and r.metrics["num_removed_files"] == 0
    got = plain_rows(view)
    assert got.num_rows == n and got.column_names == ["k", "s"]
    expected = Counter({(int(ks[i]), f"s{i % 97}"): 1 for i in range(n)})
    expected -= Counter({(int(ks[v]), f"s{v % 97}"): 1 for v in victims})
    expected += Counter({(int(ks[v]), "new"): 1 for v in victims})
    assert as_bag(got) == expected
    assert feed_bag(view, r.version) == signed(c)
    assert plain_rows(view, r.version - 1).num_rows == n  # time travel, before the DV upgrade
    # a second retraction in a file that already has a deletion vector
    v0 = int(victims[0])
    if v0 + 1 in set(victims.tolist()) or v0 + 1 >= n:
        pytest.skip("adjacent victims")  # pragma: no cover - seed-dependent guard
    gone = [(int(ks[v0]), "new"), (int(ks[v0 + 1]), f"s{(v0 + 1) % 97}")]
    c3 = changes(gone, [-1, -1])
    r3 = view_table.commit_view_changes(view, c3, view="v", epoch=3, input_versions={"t": 3})
    assert r3 is not None
    assert as_bag(plain_rows(view)) == expected - Counter(gone)
    assert feed_bag(view, r3.version) == signed(c3)
    before = as_bag(plain_rows(view))
    view_table.compact_view(view)
    assert as_bag(plain_rows(view)) == before  # compaction applies the deletion vectors
    assert view_table.read_view_changes(view, r3.version, delta.current_version(view)).num_rows == 0


@pytest.mark.parametrize("steps", [60, pytest.param(500, marks=pytest.mark.slow)])
def test_a_trickle_of_refreshes_keeps_reads_flat(view: str, steps: int) -> None:
    """Issue 12: 500 one-row refreshes leave a reader as much to open as after the first."""
    n = 5_000
    base = pa.table({"k": np.arange(n), "s": pa.array(["x"] * n), DIFF: np.ones(n)})
    view_table.commit_view_changes(view, base, view="v", epoch=1, input_versions={})
    first = None
    written = []
    for e in range(2, steps + 2):
        c = changes([(e - 2, "x"), (n + e, "y")], [-1, 1])
        r = view_table.commit_view_changes(view, c, view="v", epoch=e, input_versions={"t": e})
        assert r is not None
        written.append(r.metrics["num_bytes_written"])
        view_table.maintain(view, retention_hours=0)
        if first is None:
            first = view_table.layout(view)
    last = view_table.layout(view)
    assert first is not None
    assert last.files <= 2 * first.files
    assert last.bytes <= 2 * first.bytes
    assert last.commits_since_checkpoint <= view_table.CHECKPOINT_EVERY + 1
    assert max(written[-10:]) <= 2 * max(written[:10])
    assert as_bag(DeltaTable(view).to_pyarrow_table()) == Counter(
        {**{(k, "x"): 1 for k in range(steps, n)}, **{(n + e, "y"): 1 for e in range(2, steps + 2)}}
    )


def test_old_change_batch_tables_are_refused(tmp_path: Path) -> None:
    p = str(tmp_path / "old")
    delta.create_table(
        p,
        pa.schema([("k", pa.int64()), pa.field(DIFF, pa.int64(), False)]),
        description=view_table.LEGACY_MARKER,
    )
    with pytest.raises(view_table.LegacyViewTableError, match="drop the view and create it"):
        view_table.read_view(p)
    with pytest.raises(view_table.LegacyViewTableError):
        view_table.commit_view_changes(
            p, pa.table({"k": [1], DIFF: [1]}), view="v", epoch=1, input_versions={}
        )


def test_reserved_column_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="__diff__"):
        view_table.create_view_table(str(tmp_path / "x"), pa.schema([(DIFF, pa.int64())]), view="x")


def test_heavily_deleted_files_are_purged(view: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compaction also rewrites files whose deletion vectors hide over 20 % of the rows."""
    n = 3_000
    rows = pa.table({"k": np.arange(n), "s": pa.array(["x"] * n), DIFF: np.ones(n)})
    view_table.commit_view_changes(view, rows, view="v", epoch=1, input_versions={})
    monkeypatch.setattr(view_table, "COW_MAX_BYTES", 0)
    gone = np.arange(0, n, 2)
    c = pa.table({"k": gone, "s": pa.array(["x"] * len(gone)), DIFF: -np.ones(len(gone))})
    view_table.commit_view_changes(view, c, view="v", epoch=2, input_versions={})
    assert view_table.layout(view).heavy_files == 1 and view_table.needs_compaction(view)
    before = delta.current_version(view)
    done = view_table.maintain(view)
    assert done["compact"]["purged_files"] == 1
    lay = view_table.layout(view)
    assert (lay.deleted_records, lay.records) == (0, n - len(gone))
    assert as_bag(plain_rows(view)) == Counter({(int(k), "x"): 1 for k in range(1, n, 2)})
    after = delta.current_version(view)
    assert view_table.read_view_changes(view, before, after).num_rows == 0  # no data change
    assert view_table.committed_epoch(view, "v") == 2


def test_open_layout_has_the_current_schema_metadata_and_protocol(view: str) -> None:
    """``delta.open_layout`` (a kept table not brought forward over data commits) reports
    the schema, configuration, description and protocol a freshly opened table reports,
    after refresh commits, property changes (deletion vectors on), log checkpoints and
    appends by delta-rs; and it is not brought forward when only data commits came."""
    rng = np.random.default_rng(3)
    for e in range(1, 25):
        rows = [(int(k), "y") for k in rng.integers(0, 100, 2)]
        view_table.commit_view_changes(
            view, changes(rows, [1, 1]), view="v", epoch=e, input_versions={}
        )
        if e % 6 == 0:
            delta.open_table(view).alter.set_table_properties(
                {"delta.logRetentionDuration": f"interval {e} days"}, raise_if_not_exists=False
            )
        if e == 10:
            view_table._enable_deletion_vectors(view)
        if e % 5 == 0:
            delta.insert(view, pa.table({"k": [-e], "s": ["o"]}))
        view_table.maintain(view, retention_hours=0, history_versions=5)
        got, fresh = delta.open_layout(view), DeltaTable(view)
        assert got.schema().to_arrow() == fresh.schema().to_arrow(), e
        assert got.metadata().configuration == fresh.metadata().configuration, e
        assert got.metadata().description == fresh.metadata().description, e
        assert got.protocol() == fresh.protocol(), e
        assert delta_commit.layout_version(view) <= int(got.version()) <= int(fresh.version())
    kept = delta.open_layout(view)
    view_table.commit_view_changes(
        view, changes([(5, "z")], [1]), view="v", epoch=99, input_versions={}
    )
    assert delta.open_layout(view) is kept  # a data commit only: not brought forward


def test_committed_epoch_reads_the_txn_deltalake_reads(view: str) -> None:
    """The epoch read off the kept log replay equals deltalake's ``transaction_version``
    after refresh commits, commits of other writers (delta-rs appends with their own
    ``txn``), log checkpoints, trimmed logs and a table recreated at the same path."""
    rng = np.random.default_rng(7)
    live: list[tuple[int, str]] = []
    for e in range(1, 40):
        add = [(int(k), "x") for k in rng.integers(0, 1000, 3)]
        drop = live[: int(rng.integers(0, 3))]
        rows, diffs = add + drop, [1] * len(add) + [-1] * len(drop)
        view_table.commit_view_changes(
            view, changes(rows, diffs), view="v", epoch=e, input_versions={}
        )
        live = [r for r in live if r not in drop] + add
        if e % 7 == 0:  # another application's transaction, written by delta-rs
            delta.insert(
                view,
                pa.table({"k": [-e], "s": ["o"]}),
                app_transaction=(view_table.app_id("other"), e),
            )
            live.append((-e, "o"))
        view_table.maintain(view, retention_hours=0, history_versions=5)
        for app in ("v", "other", "absent"):
            ours = view_table.committed_epoch(view, app)
            theirs = DeltaTable(view).transaction_version(view_table.app_id(app))
            assert ours == theirs, (e, app)
    assert view_table.layout(view).commits_since_checkpoint <= view_table.CHECKPOINT_EVERY
    delta_commit._replayed.clear()  # as a new process: replayed from the log checkpoint
    assert view_table.committed_epoch(view, "v") == 39
    assert view_table.committed_epoch(view, "other") == 35
    shutil.rmtree(view)
    view_table.create_view_table(view, ROWS, view="v")
    assert view_table.committed_epoch(view, "v") is None
    view_table.commit_view_changes(
        view, changes([(1, "a")], [1]), view="v", epoch=3, input_versions={}
    )
    assert view_table.committed_epoch(view, "v") == 3


@pytest.mark.parametrize("seed", range(4))
def test_locating_by_join_finds_what_comparing_tuples_finds(
    view: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hash-join locator (rows without NULLs or floats) against the tuple one, over random
    multisets spread over several files, duplicates and deletion vectors included."""
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(view_table, "COW_MAX_BYTES", 0)  # removals by deletion vectors
    for epoch in range(1, 6):  # inserting refreshes (a file each), then one that removes rows
        n = int(rng.integers(5, 40))
        rows = [(int(k), f"s{int(k) % 3}") for k in rng.integers(0, 12, n)]
        change = changes(rows, [1] * n)
        if epoch == 5:
            held = Counter(tuple(r.values()) for r in view_table.read_view(view).to_pylist())
            gone = list(held)[:3]
            change = changes(gone, [-1] * len(gone))
        view_table.commit_view_changes(view, change, view="v", epoch=epoch, input_versions={})
    stored = Counter(tuple(r.values()) for r in view_table.read_view(view).to_pylist())
    keys = sorted(stored)
    picked = [keys[i] for i in rng.choice(len(keys), min(5, len(keys)), replace=False)]
    retract = pa.table({"k": [k for k, _ in picked], "s": [s for _, s in picked]}, schema=ROWS)
    counts = np.array([int(rng.integers(1, stored[r] + 1)) for r in picked], np.int64)
    _, files = delta_commit.snapshot_files(view)
    assert any(f.deletion_vector is not None for f in files.values())
    assert view_table._joinable(retract)
    joined = view_table._locate(view, files, retract, counts)
    too_many = counts.copy()
    too_many[0] = stored[picked[0]] + 1
    with pytest.raises(view_table.ViewTableMismatchError, match="lacks 1 row"):
        view_table._locate(view, files, retract, too_many)
    monkeypatch.setattr(view_table, "_joinable", lambda rows: False)  # tuples compared
    by_keys = view_table._locate(view, files, retract, counts)
    assert joined.keys() == by_keys.keys()
    for path in joined:
        assert joined[path].tolist() == by_keys[path].tolist()
    with pytest.raises(view_table.ViewTableMismatchError, match="lacks 1 row"):
        view_table._locate(view, files, retract, too_many)


def test_updates_merge_into_the_kept_sorted_file(
    view: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small view updated by small changes: its one file is rewritten by merging the new
    rows into the kept sorted rows (no full sort), and holds exactly the oracle's rows, sorted,
    after every refresh (NULLs, duplicates and a row's last copy removed included)."""
    import pyarrow.compute as pc

    from catalog import file_cache, sorted_merge

    merges = []
    real = sorted_merge.merge
    monkeypatch.setattr(sorted_merge, "merge", lambda *a, **k: merges.append(1) or real(*a, **k))
    rng = np.random.default_rng(7)
    values: list[str | None] = ["a", "b", None, "c"]
    first = [(int(k), values[int(k) % 4]) for k in rng.integers(0, 50, 300)]
    oracle = Counter(first)
    view_table.commit_view_changes(
        view, changes(first, [1] * len(first)), view="v", epoch=1, input_versions={}
    )
    for epoch in range(2, 12):
        if epoch == 6:
            file_cache.clear()  # read back from the file: sorted again, then merged
        held = sorted(oracle.elements(), key=repr)
        gone = [held[i] for i in rng.choice(len(held), 5, replace=False)]
        new = [(int(k), values[int(k) % 4]) for k in rng.integers(0, 60, 6)]
        change = changes(gone + new, [-1] * len(gone) + [1] * len(new))
        view_table.commit_view_changes(view, change, view="v", epoch=epoch, input_versions={})
        oracle = oracle - Counter(gone) + Counter(new)
        stored = plain_rows(view)
        assert as_bag(stored) == oracle
        keys = [("k", "ascending"), ("s", "ascending")]
        assert stored.equals(stored.take(pc.sort_indices(stored, sort_keys=keys)))
        assert len(delta_commit.snapshot_files(view)[1]) == 1
    # every update but the first (the inserting commit keeps no rows) and the one after the
    # cache was cleared: those read the file back and sort all of its rows
    assert len(merges) == 8


def test_updates_by_the_kept_row_index(view: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small changes to a view of NULL-free strings and integers: the removed rows are found
    and the new rows placed by the kept file's row index (catalog.row_index), and after every
    commit the file holds exactly the oracle's rows, sorted, and each version's change data
    feed is the change (duplicates, a row's last copy removed, deletes only, the cache
    cleared, a change with a NULL and a retraction of a missing row included)."""
    import pyarrow.compute as pc

    from catalog import file_cache, row_index

    merges, builds = [], []
    real_merge, real_of = row_index.RowIndex.merge, row_index.RowIndex.of.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        row_index.RowIndex, "merge", lambda *a, **k: merges.append(1) or real_merge(*a, **k)
    )
    monkeypatch.setattr(
        row_index.RowIndex,
        "of",
        classmethod(lambda cls, rows: builds.append(1) or real_of(cls, rows)),
    )
    rng = np.random.default_rng(11)
    words = ["a", "b", "é", "ab", ""]
    first = [(int(k), words[int(k) % 5]) for k in rng.integers(0, 40, 200)]
    oracle = Counter(first)
    view_table.commit_view_changes(
        view, changes(first, [1] * len(first)), view="v", epoch=1, input_versions={}
    )
    keys = [("k", "ascending"), ("s", "ascending")]
    for epoch in range(2, 16):
        if epoch == 7:
            file_cache.clear()  # read back: sorted again, then indexed again
        held = sorted(oracle.elements())
        gone = [held[i] for i in rng.choice(len(held), 4, replace=False)]
        if epoch == 4:  # every copy of one row
            gone = [held[0]] * oracle[held[0]]
        new = [] if epoch == 9 else [(int(k), words[int(k) % 5]) for k in rng.integers(0, 50, 5)]
        change = changes(gone + new, [-1] * len(gone) + [1] * len(new))
        view_table.commit_view_changes(view, change, view="v", epoch=epoch, input_versions={})
        oracle = oracle - Counter(gone) + Counter(new)
        stored = plain_rows(view)
        assert as_bag(stored) == oracle
        assert stored.equals(stored.take(pc.sort_indices(stored, sort_keys=keys)))
        assert feed_bag(view, epoch) == signed(change)
        assert len(delta_commit.snapshot_files(view)[1]) == 1
    # epoch 2 reads the inserting commit's file back and sorts it; the index is built at
    # epoch 3 and again at 8, after the cache was cleared at 7: every other update used it
    assert len(builds) == 2
    assert len(merges) == 13 - 1
    # a row the table lacks: the search by Arrow reports it; the table is unchanged
    missing = changes([(999, "zz")], [-1])
    with pytest.raises(view_table.ViewTableMismatchError, match="lacks 1 row"):
        view_table.commit_view_changes(view, missing, view="v", epoch=16, input_versions={})
    assert as_bag(plain_rows(view)) == oracle
    # a commit that fails after the index was changed for its new file: the old file's
    # rows are found again (their index is built anew), nothing is lost or doubled
    held = sorted(oracle.elements())
    change = changes([held[2], (3, "ab")], [-1, 1])
    monkeypatch.setattr(
        delta_commit, "commit", lambda *a, **k: (_ for _ in ()).throw(OSError("disk"))
    )
    with pytest.raises(OSError, match="disk"):
        view_table.commit_view_changes(view, change, view="v", epoch=16, input_versions={})
    monkeypatch.undo()
    view_table.commit_view_changes(view, change, view="v", epoch=16, input_versions={})
    oracle = oracle - Counter([held[2]]) + Counter([(3, "ab")])
    assert as_bag(plain_rows(view)) == oracle
    assert feed_bag(view, view_table.last_refresh(view).version) == signed(change)  # type: ignore[union-attr]
    # a NULL among the new rows: placed by catalog.sorted_merge, still exact
    held = sorted(oracle.elements())
    change = changes([held[1], (5, None)], [-1, 1])
    view_table.commit_view_changes(view, change, view="v", epoch=17, input_versions={})
    stored = plain_rows(view)
    assert stored.equals(stored.take(pc.sort_indices(stored, sort_keys=keys)))
    oracle = oracle - Counter([held[1]]) + Counter([(5, None)])
    assert as_bag(plain_rows(view)) == oracle
    assert feed_bag(view, view_table.last_refresh(view).version) == signed(change)  # type: ignore[union-attr]


def test_large_files_of_narrow_columns_are_neither_packed_nor_rewritten(view: str) -> None:
    """Delta-encoded integers keep a file of many rows under the byte limits: compaction does
    not count it as small (else a packed file would be packed again every refresh), and a
    removal from it uses a deletion vector (``COW_MAX_ROWS``), not a rewrite."""
    n = max(view_table.FILE_ROWS // 2, view_table.COW_MAX_ROWS) + 1_000
    for e in range(1, 4):
        k = np.arange(e * n, (e + 1) * n)
        rows = pa.table({"k": k, "s": ["x"] * n, DIFF: np.ones(n, np.int64)})
        view_table.commit_view_changes(view, rows, view="v", epoch=e, input_versions={})
    lay = view_table.layout(view)
    assert lay.files == 3 and lay.bytes < view_table.SMALL_FILE_BYTES  # each file tiny
    assert "compact" not in view_table.maintain(view)
    r = view_table.commit_view_changes(
        view, changes([(n, "x")], [-1]), view="v", epoch=4, input_versions={}
    )
    assert r is not None and r.metrics["num_deletion_vectors"] == 1
    assert r.metrics["num_removed_files"] == 0
    assert view_table.table_rows(view) == 3 * n and view_table.read_view(view).num_rows == 3 * n - 1


def test_a_staged_commit_equals_a_direct_one(tmp_path: Path) -> None:
    """A commit staged ahead (``stage_view_changes``, as catalog.refresh does while the
    checkpoint is saved) writes what a direct commit writes: the same rows after every
    commit, the same change data feed; a staging made stale by another commit in between is
    not used; a staging never writes."""
    direct, ahead = str(tmp_path / "direct"), str(tmp_path / "ahead")
    for p in (direct, ahead):
        view_table.create_view_table(p, ROWS, view="v")
    rng = np.random.default_rng(5)
    words = ["a", "b", "é", None]
    first = [(int(k), words[int(k) % 4]) for k in rng.integers(0, 30, 120)]
    oracle = Counter(first)
    used = 0
    for epoch in range(1, 14):
        if epoch == 1:
            change = changes(first, [1] * len(first))
        else:
            held = sorted(oracle.elements(), key=repr)
            gone = [held[i] for i in rng.choice(len(held), 3, replace=False)]
            new = [(int(k), words[int(k) % 4]) for k in rng.integers(0, 40, 4)]
            if epoch % 3 == 0:  # no NULLs: the row index's path
                gone = [g for g in gone if g[1] is not None]
                new = [(k, s or "z") for k, s in new]
            change = changes(gone + new, [-1] * len(gone) + [1] * len(new))
            oracle = oracle - Counter(gone) + Counter(new)
        versions = delta.current_version(ahead)
        staged = view_table.stage_view_changes(ahead, change, view="v", epoch=epoch)
        assert delta.current_version(ahead) == versions  # nothing written
        if epoch == 7:  # another commit first: the staging is stale
            bump = changes([sorted(oracle.elements(), key=repr)[0]], [1])
            for p in (direct, ahead):
                view_table.commit_view_changes(p, bump, view="w", epoch=1, input_versions={})
            oracle = oracle + Counter([sorted(oracle.elements(), key=repr)[0]])
            assert staged is not None and not staged.current("v", epoch)
        elif staged is not None and staged.files is not None:
            used += 1
        for p, st in ((direct, None), (ahead, staged)):
            r = view_table.commit_view_changes(
                p, change, view="v", epoch=epoch, input_versions={}, staged=st
            )
            assert r is not None
        assert as_bag(plain_rows(direct)) == as_bag(plain_rows(ahead)) == oracle
        assert feed_bag(ahead, delta.current_version(ahead)) == signed(change)
        assert feed_bag(direct, delta.current_version(direct)) == signed(change)
    assert used >= 4  # the encoded path was taken
    missing = changes([(999, "zz")], [-1])
    with pytest.raises(view_table.ViewTableMismatchError):
        view_table.stage_view_changes(ahead, missing, view="v", epoch=99)
    assert as_bag(plain_rows(ahead)) == oracle


def test_compact_json_is_json_dumps_without_spaces() -> None:
    """The kept encoder of the commit entries writes what ``json.dumps`` writes."""
    objs = [
        {"add": {"path": "a=%C3%A9/part.parquet", "size": 3, "dataChange": True, "x": None}},
        {"commitInfo": {"t": 1.5, "s": 'é\n"q"', "l": [1, -0.0, 2**70], "e": {}}},
        [],
        "plain",
    ]
    for o in objs:
        assert delta_commit.compact_json(o) == json.dumps(o, separators=(",", ":"))
