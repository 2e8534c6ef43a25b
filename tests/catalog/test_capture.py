"""Change capture verified per commit (catalog.capture): whoever wrote a commit, the changes
read for it equal ``snapshot(v) - snapshot(v-1)`` — including delta-rs's own UPDATE, whose
change data feed is incomplete, commits without a feed, OPTIMIZE and VACUUM."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from catalog import delta
from catalog.capture import expected_counts
from catalog.changes import DIFF, read_changes
from catalog.delta_log import Commit, read_commit
from catalog.errors import ChangesUnavailableError, TableReplacedError

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def bag(t: pa.Table) -> Counter[tuple[object, ...]]:
    out: Counter[tuple[object, ...]] = Counter()
    diffs = t.column(DIFF).to_pylist() if DIFF in t.column_names else [1] * t.num_rows
    rows = t.drop_columns([DIFF]) if DIFF in t.column_names else t
    for r, d in zip(rows.to_pylist(), diffs, strict=True):
        out[tuple(r.values())] += d
    return Counter({k: n for k, n in out.items() if n})


def truth(p: str, after: int, upto: int) -> Counter[tuple[object, ...]]:
    new = delta.read_snapshot(p, upto)
    old = delta.read_snapshot(p, after)
    for f in new.schema:  # a column added since reads NULL in the old rows
        if f.name not in old.column_names:
            old = old.append_column(f, pa.nulls(old.num_rows, f.type))
    out = bag(new)
    out.subtract(bag(old.select(new.column_names)))
    return Counter({k: n for k, n in out.items() if n})


def filled(p: str, *, cdf: bool = True, batches: int = 4) -> str:
    conf = {"delta.enableChangeDataFeed": "true"} if cdf else None
    DeltaTable.create(p, SCHEMA, configuration=conf)
    rng = np.random.default_rng(0)
    for _ in range(batches):
        data = {"k": rng.integers(0, 100, 1000), "v": rng.integers(0, 9, 1000)}
        write_deltalake(p, pa.table(data, schema=SCHEMA), mode="append")
    return p


def test_delta_rs_update_feed_is_incomplete_and_not_trusted(tmp_path: Path) -> None:
    p = filled(str(tmp_path / "t"))
    metrics = DeltaTable(p).update(updates={"v": "v + 1"}, predicate="k = 48")
    v = delta.current_version(p)
    # the writer's feed (measured, deltalake 1.x) misses most of the updated rows
    feed = pa.RecordBatchReader.from_stream(
        DeltaTable(p).load_cdf(starting_version=v, ending_version=v)
    ).read_all()
    kinds = Counter(feed.column("_change_type").to_pylist())
    assert kinds["update_preimage"] < metrics["num_updated_rows"]
    # what the refresh reads is the true change
    assert bag(read_changes(p, v - 1, v)) == truth(p, v - 1, v)


@pytest.mark.parametrize("whole_read_bytes", [0, 1 << 20])
def test_every_delta_rs_operation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whole_read_bytes: int
) -> None:
    """Each commit's changes and a range's equal the snapshot diff, with the commits' files
    read by Arrow (``0``) or read whole into memory first (catalog.capture._read_present)."""
    from catalog import capture

    monkeypatch.setattr(capture, "WHOLE_READ_BYTES", whole_read_bytes)
    p = filled(str(tmp_path / "t"))
    dt = DeltaTable(p)
    dt.update(updates={"v": "v * 2"})
    dt = DeltaTable(p)
    dt.merge(
        pa.table({"k": [7, 1000], "v": [1, 2]}, schema=SCHEMA), "t.k = s.k", "s", "t"
    ).when_matched_update({"v": "s.v"}).when_not_matched_insert_all().execute()
    DeltaTable(p).delete("k = 3")
    write_deltalake(p, pa.table({"k": [5, 5], "v": [1, 1]}, schema=SCHEMA), mode="append")
    DeltaTable(p).optimize.compact()
    write_deltalake(
        p, pa.table({"k": [1], "v": [1]}, schema=SCHEMA), mode="overwrite", predicate="k = 1"
    )
    DeltaTable(p).update(updates={"v": "v"}, predicate="k = 2")  # no-op update
    write_deltalake(p, pa.table({"k": [9], "v": [9]}, schema=SCHEMA), mode="overwrite")
    DeltaTable(p).delete()
    latest = delta.current_version(p)
    for v in range(1, latest + 1):
        assert bag(read_changes(p, v - 1, v)) == truth(p, v - 1, v), v
    assert bag(read_changes(p, 2, latest)) == truth(p, 2, latest)


def test_optimize_contributes_nothing(tmp_path: Path) -> None:
    p = filled(str(tmp_path / "t"))
    DeltaTable(p).optimize.compact()
    v = delta.current_version(p)
    c = read_commit(p, v)
    assert c is not None and c.operation == "OPTIMIZE" and not c.data_changed
    assert read_changes(p, v - 1, v).num_rows == 0


def test_feed_switched_off_is_detected_from_metadata(tmp_path: Path) -> None:
    p = filled(str(tmp_path / "t"))
    DeltaTable(p).alter.set_table_properties({"delta.enableChangeDataFeed": "false"})
    DeltaTable(p).delete("k < 10")
    DeltaTable(p).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    DeltaTable(p).delete("k = 50")
    latest = delta.current_version(p)
    assert bag(read_changes(p, 4, latest)) == truth(p, 4, latest)


def test_table_without_feed_and_with_schema_change(tmp_path: Path) -> None:
    p = filled(str(tmp_path / "t"), cdf=False)
    DeltaTable(p).alter.add_columns([__import__("deltalake").Field("w", "long", nullable=True)])
    DeltaTable(p).update(updates={"w": "k"}, predicate="k < 5")
    latest = delta.current_version(p)
    old = read_changes(p, 4, latest, schema=SCHEMA)
    assert bag(old) == Counter()  # only the new column changed
    new = read_changes(p, 4, latest)
    assert sum(new.column(DIFF).to_pylist()) == 0 and new.num_rows > 0
    assert bag(new) == truth(p, 4, latest)


def test_vacuumed_files_raise_changes_unavailable(tmp_path: Path) -> None:
    p = filled(str(tmp_path / "t"))
    write_deltalake(p, pa.table({"k": [1], "v": [1]}, schema=SCHEMA), mode="overwrite")
    ow = delta.current_version(p)
    DeltaTable(p).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    v = delta.current_version(p)
    assert read_changes(p, ow, v).num_rows == 0  # VACUUM changes no rows
    with pytest.raises(ChangesUnavailableError, match="recomputed"):
        read_changes(p, ow - 1, v)  # the overwritten files are gone


def test_replaced_table_is_detected(tmp_path: Path) -> None:
    import shutil

    p = filled(str(tmp_path / "t"), batches=3)
    tid = str(DeltaTable(p).metadata().id)
    shutil.rmtree(p)
    filled(p, batches=5)  # recreated, with more versions than before
    with pytest.raises(TableReplacedError):
        read_changes(p, 3, 5, table_id=tid)
    shutil.rmtree(p)
    filled(p, batches=1)  # recreated with fewer versions
    with pytest.raises(TableReplacedError):
        read_changes(p, 3, 1, table_id=tid)


def test_metrics_of_both_writers() -> None:
    def commit(op: str, metrics: dict[str, int]) -> Commit:
        return Commit(0, op, metrics, (), (), 1)

    assert expected_counts(commit("UPDATE", {"numUpdatedRows": 3})) == Counter(
        update_preimage=3, update_postimage=3
    )
    spark_merge = {"numTargetRowsInserted": 1, "numTargetRowsUpdated": 2, "numTargetRowsDeleted": 0}
    assert expected_counts(commit("MERGE", spark_merge)) == Counter(
        insert=1, update_preimage=2, update_postimage=2
    )
    assert expected_counts(commit("DELETE", {"num_deleted_rows": 4})) == Counter(delete=4)
    assert expected_counts(commit("WRITE", {"num_added_rows": 4})) is None
    assert expected_counts(commit("UPDATE", {})) is None


def test_catalog_update_writes_a_complete_feed(tmp_path: Path) -> None:
    p = filled(str(tmp_path / "t"))
    w = delta.update(p, {"v": "v + 1"}, "k = 48")
    feed = pa.RecordBatchReader.from_stream(
        DeltaTable(p).load_cdf(starting_version=w.version, ending_version=w.version)
    ).read_all()
    kinds = Counter(feed.column("_change_type").to_pylist())
    assert kinds == Counter(update_preimage=40, update_postimage=40)
    assert w.metrics["num_target_rows_updated"] == 40
    assert bag(read_changes(p, w.version - 1, w.version)) == truth(p, w.version - 1, w.version)


@pytest.mark.parametrize("partitioned", [False, True])
def test_change_data_files_read_directly_equal_the_snapshot_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partitioned: bool
) -> None:
    """A DELETE's / MERGE's change-data files of an unpartitioned table are read from the
    files the commit names (no delta-rs feed reader); a partitioned table's through delta-rs
    (its files lack the partition columns).  Either way each commit's changes equal the
    snapshot diff, over a random sequence of inserts, deletes and merges."""
    from catalog import capture

    p = str(tmp_path / "t")
    conf = {"delta.enableChangeDataFeed": "true"}
    DeltaTable.create(p, SCHEMA, configuration=conf, partition_by=["v"] if partitioned else None)
    direct: list[bool] = []
    real = capture._direct_feed

    def spy(commit: Commit, reader: object) -> pa.Table | None:
        got = real(commit, reader)  # type: ignore[arg-type]
        direct.append(got is not None)
        return got

    monkeypatch.setattr(capture, "_direct_feed", spy)
    rng = np.random.default_rng(7)
    for step in range(12):
        data = {"k": rng.integers(0, 40, 30), "v": rng.integers(0, 4, 30)}
        write_deltalake(p, pa.table(data, schema=SCHEMA), mode="append")
        if step % 3 == 2:
            src = pa.table({"k": rng.integers(0, 40, 5), "v": rng.integers(0, 4, 5)}, schema=SCHEMA)
            DeltaTable(p).merge(src, "t.k = s.k", "s", "t").when_matched_delete().execute()
        else:
            DeltaTable(p).delete(f"k = {int(rng.integers(0, 40))}")
    latest = delta.current_version(p)
    for v in range(1, latest + 1):
        assert bag(read_changes(p, v - 1, v)) == truth(p, v - 1, v), v
    assert direct and all(d != partitioned for d in direct)


@pytest.mark.parametrize("row_groups", [1, 3])
def test_a_small_file_parsed_whole_reads_what_parquet_file_reads(
    tmp_path: Path, row_groups: int
) -> None:
    """``_parse_whole`` (Arrow's reader on the file's bytes) returns the same columns as
    ``ParquetFile.read``: nested columns with all their leaves, asked-for columns the file
    lacks left out, the order asked for."""
    import pyarrow.parquet as pq

    from catalog import capture

    rng = np.random.default_rng(row_groups)
    n = 12
    t = pa.table(
        {
            "id": pa.array(rng.integers(0, 100, n)),
            "s": pa.array([None if i % 4 == 0 else f"v{i}" for i in range(n)]),
            "st": pa.array([{"a": i, "b": [i, i + 1]} for i in range(n)]),
            "l": pa.array([[float(i)] * (i % 3) for i in range(n)]),
            "_change_type": pa.array(["insert", "delete"] * (n // 2)),
        }
    )
    path = tmp_path / "f.parquet"
    pq.write_table(t, path, row_group_size=max(1, n // row_groups))
    for columns in (["id", "s", "st", "l"], ["l", "missing", "id"], ["st"], ["missing"], []):
        pf = pq.ParquetFile(path)
        have = set(pf.schema_arrow.names)
        want = pf.read(columns=[c for c in columns if c in have])
        got = capture._parse_whole(path.read_bytes(), columns)
        assert got.equals(want), columns
