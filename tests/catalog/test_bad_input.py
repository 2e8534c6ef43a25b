"""Bad table locations give typed errors that name the table, and leave the warehouse (and the
location) as they were: a location that is not a Delta table (a plain Parquet directory, an
empty directory, a file, an empty ``_delta_log``), and a Delta table whose protocol delta-rs
cannot read (reader version 4, an unknown reader feature; logs written by hand here).  Both
when the table is registered and when a registered input turns bad under a view.  (A view
location outside the warehouse: tests/reliability/test_warehouse_copy.py,
tests/spark_exec/test_statements_ddl.py.)"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from catalog import (
    Catalog,
    DroppedInputError,
    NotADeltaTableError,
    UnsupportedProtocolError,
    delta,
)
from spark_exec import Session

SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]}
)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes, except a failed refresh's records (status,
    event log) and the lock files a refresh creates once."""
    if root.is_file():
        return {"": root.read_bytes()}
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not {"status", "locks", "event_log"} & set(p.relative_to(root).parts)
    }


def hand_written_log(path: Path, protocol: dict[str, object]) -> None:
    """A Delta table of one commit (no data files) whose protocol action is ``protocol``."""
    (path / "_delta_log").mkdir(parents=True)
    actions = [
        {"commitInfo": {"timestamp": 1, "operation": "CREATE TABLE"}},
        {"protocol": protocol},
        {
            "metaData": {
                "id": "b5b6a7c4-0000-4000-8000-000000000001",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": SCHEMA,
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 1,
            }
        },
    ]
    text = "".join(json.dumps(a) + "\n" for a in actions)
    (path / "_delta_log" / f"{0:020d}.json").write_text(text)


def upgrade_protocol(path: Path, protocol: dict[str, object]) -> None:
    """Another writer's next commit: only a new protocol action."""
    log = path / "_delta_log"
    version = 1 + max(int(p.name.split(".")[0]) for p in log.glob("*.json"))
    actions = [
        {"commitInfo": {"timestamp": 2, "operation": "UPGRADE PROTOCOL"}},
        {"protocol": protocol},
    ]
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


READER_4 = {"minReaderVersion": 4, "minWriterVersion": 7, "writerFeatures": []}
UNKNOWN_FEATURE = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["fancyFutureFeature"],
    "writerFeatures": ["fancyFutureFeature"],
}


def parquet_dir(p: Path) -> None:
    p.mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), p / "part-00000.parquet")


NOT_DELTA: dict[str, tuple[Callable[[Path], None], str]] = {
    "parquet_dir": (parquet_dir, r"1 Parquet file\(s\) and no _delta_log.*CONVERT TO DELTA"),
    "empty_dir": (lambda p: p.mkdir(), "an empty directory"),
    "file": (lambda p: p.write_text("not a table"), "a file, not a directory"),
    "empty_log": (lambda p: (p / "_delta_log").mkdir(parents=True), "without any commit"),
}
BAD_PROTOCOL: dict[str, tuple[dict[str, object], str]] = {
    "reader_version_4": (READER_4, "minReaderVersion=4"),
    "unknown_reader_feature": (UNKNOWN_FEATURE, "fancyFutureFeature"),
}


@pytest.mark.parametrize("kind", sorted(NOT_DELTA))
def test_registering_a_location_that_is_not_delta(tmp_path: Path, kind: str) -> None:
    make, found = NOT_DELTA[kind]
    loc = tmp_path / "ext"
    make(loc)
    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE keep (a BIGINT)")
    before, location = snapshot(s.warehouse), snapshot(loc)
    with pytest.raises(NotADeltaTableError, match=rf"table 'ext'.*{found}") as err:
        s.sql(f"CREATE TABLE ext USING DELTA LOCATION '{loc}'")
    assert err.value.name == "ext" and err.value.path == loc.as_posix()
    with pytest.raises(NotADeltaTableError, match=rf"table 'other'.*{found}"):
        Catalog(tmp_path / "wh").register_table("other", loc)
    assert snapshot(s.warehouse) == before and snapshot(loc) == location  # nothing written
    assert s.catalog.store.find("ext") is None and s.catalog.store.find("other") is None


@pytest.mark.parametrize("kind", sorted(BAD_PROTOCOL))
def test_registering_a_table_with_an_unreadable_protocol(tmp_path: Path, kind: str) -> None:
    protocol, shown = BAD_PROTOCOL[kind]
    loc = tmp_path / "ext"
    hand_written_log(loc, protocol)
    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE keep (a BIGINT)")
    before, location = snapshot(s.warehouse), snapshot(loc)
    with pytest.raises(UnsupportedProtocolError, match=rf"table 'ext'.*{shown}") as err:
        s.sql(f"CREATE TABLE ext USING DELTA LOCATION '{loc}'")
    assert err.value.protocol == protocol and err.value.operation == "read"
    assert isinstance(err.value, ValueError)
    assert snapshot(s.warehouse) == before and snapshot(loc) == location
    assert s.catalog.store.find("ext") is None


def test_a_hand_written_log_with_a_supported_protocol_registers() -> None:
    """The hand-written log itself is a valid table: only its protocol makes it unreadable."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        loc = Path(d) / "ok"
        hand_written_log(loc, {"minReaderVersion": 1, "minWriterVersion": 2})
        cat = Catalog(Path(d) / "wh")
        assert cat.register_table("ok", loc).schema.names == ["a"]
        assert cat.read("ok").num_rows == 0


BREAKS: dict[str, tuple[Callable[[Path], None], type[Exception], str]] = {
    **{
        k: (
            lambda p, make=make: (shutil.rmtree(p), make(p)),  # type: ignore[misc]
            DroppedInputError,
            found,
        )
        for k, (make, found) in NOT_DELTA.items()
    },
    **{
        k: (lambda p, pr=pr: upgrade_protocol(p, pr), UnsupportedProtocolError, shown)  # type: ignore[misc]
        for k, (pr, shown) in BAD_PROTOCOL.items()
    },
}


@pytest.mark.parametrize("kind", sorted(BREAKS))
def test_an_input_that_turns_bad_stops_the_refresh_and_writes_nothing(
    tmp_path: Path, kind: str
) -> None:
    brk, error, found = BREAKS[kind]
    ext = tmp_path / "ext"
    write_deltalake(ext, pa.table({"a": pa.array([1, 2, 3], pa.int64())}))
    s = Session(warehouse=tmp_path / "wh")
    s.sql(f"CREATE TABLE t USING DELTA LOCATION '{ext}'")
    s.sql("CREATE MATERIALIZED VIEW v AS SELECT a % 2 AS p, count(*) AS n FROM t GROUP BY a % 2")
    write_deltalake(ext, pa.table({"a": pa.array([5], pa.int64())}), mode="append")
    kept = tmp_path / "kept"
    shutil.copytree(ext, kept)
    brk(ext)
    before = snapshot(s.warehouse)
    view_version = delta.current_version(s.table_path("v"))
    with pytest.raises(error, match=rf"table 't'.*input of view 'v'.*{found}"):
        s.refresh()
    with pytest.raises(error, match=rf"table 't'.*{found}"):
        s.read("t")
    assert snapshot(s.warehouse) == before
    assert delta.current_version(s.table_path("v")) == view_version
    assert sorted(tuple(r.values()) for r in s.read("v").to_pylist()) == [(0, 1), (1, 2)]
    # the input repaired: the refresh goes on from where it stopped, nothing lost or doubled
    shutil.rmtree(ext) if ext.is_dir() else os.remove(ext)
    shutil.copytree(kept, ext)
    s.refresh()
    assert sorted(tuple(r.values()) for r in s.read("v").to_pylist()) == [(0, 1), (1, 3)]


def test_writing_a_table_with_an_unknown_writer_feature(tmp_path: Path) -> None:
    """Readable (reader version 1) but not writable by delta-rs: the DML statement is refused
    with the table's name, and the table keeps its rows."""
    ext = tmp_path / "ext"
    write_deltalake(ext, pa.table({"a": pa.array([1, 2], pa.int64())}))
    s = Session(warehouse=tmp_path / "wh")
    s.sql(f"CREATE TABLE t USING DELTA LOCATION '{ext}'")
    upgrade_protocol(
        ext, {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["fancyWriter"]}
    )
    before = snapshot(ext)
    for statement in ("INSERT INTO t VALUES (3)", "DELETE FROM t WHERE a = 1"):
        with pytest.raises(UnsupportedProtocolError, match=r"table 't'.*cannot write") as err:
            s.sql(statement)
        assert err.value.operation == "write" and "fancyWriter" in str(err.value)
    assert snapshot(ext) == before
    assert sorted(s.read("t").column("a").to_pylist()) == [1, 2]
