"""Issue 12, steady trickle: what a refresh reads stays bounded, counted (no timers).

After many one-row refreshes the refresh must not replay a growing log: the input table's
log is checkpointed by our writes, opened tables are kept and brought forward (no table is
opened from scratch once warm), each refresh reads only its new commits, and the view table
keeps its file count.  Kept tables never outlive the table they were opened on.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from catalog import capture, delta, delta_cache, view_table
from spark_exec.session import Session


def _json_after_checkpoint(path: str) -> int:
    log = os.path.join(path, "_delta_log")
    last = os.path.join(log, "_last_checkpoint")
    cp = json.loads(Path(last).read_text())["version"] if os.path.exists(last) else -1
    return sum(1 for n in os.listdir(log) if n.endswith(".json") and int(n[:20]) > cp)


def test_a_trickle_of_one_row_refreshes_reads_a_bounded_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Session(warehouse=tmp_path / "w")
    s.sql("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT NOT NULL)")
    n = 2_000
    t = s.table_path("t")
    delta.insert(t, pa.table({"id": np.arange(n), "v": np.arange(n) % 7}))
    s.sql("CREATE MATERIALIZED VIEW tv AS SELECT id, v + 1 AS w FROM t")
    read: list[int] = []
    real = capture.read_commit

    def counting(path: Any, version: int) -> Any:
        read.append(version)
        return real(path, version)

    monkeypatch.setattr(capture, "read_commit", counting)
    steps = 60
    opens: list[int] = []
    commits_read: list[int] = []
    files: list[int] = []
    for i in range(steps):
        delta.insert(t, pa.table({"id": [n + i], "v": [i % 7]}))
        delta.delete(t, f"id = {i}")
        before, read[:] = delta_cache.stats["opens"], []
        (r,) = s.refresh()
        assert r.committed
        opens.append(delta_cache.stats["opens"] - before)
        commits_read.append(len(read))
        files.append(view_table.layout(s.table_path("tv")).files)
    # the input's log is checkpointed: opening it replays at most one interval of JSON
    assert _json_after_checkpoint(t) <= delta.CHECKPOINT_INTERVAL
    assert _json_after_checkpoint(s.table_path("tv")) <= view_table.CHECKPOINT_EVERY + 1
    # warm refreshes open no table from scratch, and read only their own two commits
    assert max(opens[-20:]) == 0, opens
    assert commits_read[-20:] == [2] * 20
    # the view table's file count stays at its first refresh's
    assert max(files) <= 2 * files[0]
    rows = s.read("tv")
    got = Counter(zip(rows.column("id").to_pylist(), rows.column("w").to_pylist(), strict=True))
    want = Counter((k, k % 7 + 1) for k in range(steps, n)) + Counter(
        (n + i, i % 7 + 1) for i in range(steps)
    )
    assert got == want


def test_a_kept_table_is_not_used_for_a_table_recreated_at_its_path(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64())])
    delta.create_table(p, schema)
    delta.insert(p, pa.table({"id": [1]}))
    old_id = str(delta.open_table(p).metadata().id)
    assert delta.read_snapshot(p).column("id").to_pylist() == [1]
    shutil.rmtree(p)
    delta.create_table(p, schema)
    delta.insert(p, pa.table({"id": [2]}))  # the same version number, another table
    assert str(delta.open_table(p).metadata().id) != old_id
    assert delta.read_snapshot(p).column("id").to_pylist() == [2]
    assert delta.read_snapshot(p, 1).column("id").to_pylist() == [2]


def test_a_kept_table_sees_commits_of_other_writers(tmp_path: Path) -> None:
    from deltalake import write_deltalake

    p = str(tmp_path / "t")
    delta.create_table(p, pa.schema([("id", pa.int64())]))
    assert delta.current_version(p) == 0
    write_deltalake(p, pa.table({"id": [5]}), mode="append")  # not through catalog.delta
    assert delta.current_version(p) == 1
    assert delta.read_snapshot(p).column("id").to_pylist() == [5]


def test_managed_tables_compact_small_files_and_foreign_tables_are_left_alone(
    tmp_path: Path,
) -> None:
    s = Session(warehouse=tmp_path / "w")
    s.sql("CREATE TABLE m (id BIGINT NOT NULL)")
    managed = s.table_path("m")
    foreign = str(tmp_path / "foreign")
    delta.create_table(foreign, pa.schema([pa.field("id", pa.int64(), False)]))
    for i in range(40):
        delta.insert(managed, pa.table({"id": [i]}))
        delta.insert(foreign, pa.table({"id": [i]}))
    assert view_table.layout(managed).files < delta.COMPACT_SMALL_FILES
    assert view_table.layout(foreign).files == 40
    ops = [h["operation"] for h in delta.open_table(foreign).history()]
    assert "OPTIMIZE" not in ops
    assert sorted(delta.read_snapshot(managed).column("id").to_pylist()) == list(range(40))


def test_a_view_keeps_a_bounded_history_and_every_version_in_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The view table's log keeps the last HISTORY_VERSIONS versions (issue 12's trickle: a
    fresh reader lists the log), each of them still readable; older ones are refused."""
    from deltalake import DeltaTable

    from catalog.errors import CatalogError

    keep = 16
    monkeypatch.setattr(view_table, "HISTORY_VERSIONS", keep)
    s = Session(warehouse=tmp_path / "w")
    s.sql("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT NOT NULL)")
    t = s.table_path("t")
    delta.insert(t, pa.table({"id": np.arange(50), "v": np.arange(50) % 5}))
    s.sql("CREATE MATERIALIZED VIEW tv AS SELECT v, count(*) AS n FROM t GROUP BY v")
    s.sql("CREATE MATERIALIZED VIEW top AS SELECT max(n) AS m FROM tv")
    path = s.table_path("tv")
    states: dict[int, Counter[tuple[Any, ...]]] = {}
    for i in range(60):
        delta.insert(t, pa.table({"id": [100 + i], "v": [i % 3]}))
        s.refresh()
        version = delta.current_version(path)
        states[version] = Counter(tuple(r.values()) for r in s.read("tv").to_pylist())
    log = os.listdir(os.path.join(path, "_delta_log"))
    jsons = [int(n[:20]) for n in log if n.endswith(".json")]
    latest = max(jsons)
    # bounded: the window plus at most two checkpoint intervals of slack
    assert len(jsons) <= keep + 2 * (view_table.CHECKPOINT_EVERY + 1), sorted(jsons)
    assert min(jsons) > 0  # trimmed
    # every version of the window reads back as it was committed, by a plain Delta reader too
    for version in range(latest - keep, latest + 1):
        if version in states:
            got = Counter(
                tuple(r.values()) for r in view_table.read_view(path, version).to_pylist()
            )
            assert got == states[version], version
            plain = DeltaTable(path, version=version).to_pyarrow_table()
            assert Counter(tuple(r.values()) for r in plain.to_pylist()) == states[version]
    # versions before the window are refused with a typed error
    with pytest.raises(CatalogError):
        view_table.read_view(path, min(jsons) - 2)
    # the view on top of it, and a cold Session, stay exact after the trimming
    delta.delete(t, "id < 10")
    cold = Session(warehouse=tmp_path / "w")
    cold.refresh()
    counts = Counter(r["v"] for r in delta.read_snapshot(t).to_pylist())
    assert Counter(tuple(r.values()) for r in cold.read("tv").to_pylist()) == Counter(
        counts.items()
    )
    assert cold.read("top").to_pylist() == [{"m": max(counts.values())}]
