"""Real processes on a warehouse on S3 (moto's server on 127.0.0.1): the local suite's
SIGKILL and concurrency tests (tests/e2e/test_crash_restart.py,
tests/reliability/test_concurrent_refresh.py) against an object store, where the group lock
is a lease that a dead holder keeps until it expires (catalog.leases) and ``CURRENT`` is
replaced by compare-and-swap (docs/reliability.md, "A warehouse on an object store").

* A refresh process SIGKILLed at each crash point of the refresh protocol
  (docs/refresh-protocol.md): right after the kill the warehouse is exactly the state before
  the refresh or its commit point's state (checkpoint ``CURRENT``, each view table's version
  and rows, the catalog); its lease expires within the lease time; the next process breaks
  it, recovers, and the views equal a plain-Python recomputation, each epoch committed once.
* Processes refreshing the same warehouse at once, a DDL among them: every epoch is one
  Delta commit per view, the views equal recomputation.
* A frozen lease holder (SIGSTOP: every thread stops, its lease renewals too) whose lease
  expired and was taken over: once thawed it commits nothing over its successor.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from e2e_helpers import CRASH_CHILD, run_child
from refresh_children import Child, change, check_views, events, expected, interleave, setup
from refresh_children import wait_until as wait_for
from s3_fixture import s3_bucket, s3_server  # noqa: F401 (fixtures)

from catalog import Catalog, delta, leases, storage
from spark_exec import Session

LEASE_SECONDS = 4.0
"""Short leases, so a dead holder's lease expires within the test (default 60 s)."""
GROUP = "agg"  # views agg and top form one group, named after its first view
VIEWS = ("agg", "top")

# (crash point, CURRENT moved, views committed): the state right after the kill
CRASH_POINTS: list[tuple[str, bool, tuple[str, ...]]] = [
    ("locked", False, ()),
    ("stepped", False, ()),
    ("before_checkpoint", False, ()),
    ("files_written", False, ()),
    ("renamed", False, ()),
    ("checkpointed", True, ()),
    ("files_written:agg", True, ()),
    ("committed:agg", True, ("agg",)),
    ("files_written:top", True, ("agg",)),
    ("committed:top", True, VIEWS),
    ("published", True, VIEWS),
]
REPRESENTATIVE = "committed:agg"  # past the commit point, one view of two published


@pytest.fixture
def uri(
    s3_bucket: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    """A warehouse on S3 with table ``t`` and views ``agg``, ``top`` (refresh_children.setup);
    the environment (inherited by child processes) uses short leases."""
    monkeypatch.setenv("IVM_LEASE_SECONDS", str(LEASE_SECONDS))
    monkeypatch.setenv("IVM_CACHE_DIR", str(tmp_path / "cache"))
    wh = f"{s3_bucket}/wh"
    setup(wh)
    return wh


def group_lock(wh: str) -> str:
    return Catalog(wh).warehouse.group_lock_file(GROUP).as_posix()  # type: ignore[arg-type]


def lock_keys(bucket: str, endpoint: str) -> list[str]:
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket.removeprefix("s3://"))
    return [o["Key"] for p in pages for o in p.get("Contents", []) if "/locks/" in o["Key"]]


def snapshot(wh: str) -> dict[str, Any]:
    """What a crash may change: the checkpoint's epoch, each view table's version and rows
    (as a plain deltalake reader sees them), and the catalog document."""
    cat = Catalog(wh)  # type: ignore[arg-type]
    catalog_file = cat.warehouse.catalog_file.as_posix()
    state: dict[str, Any] = {
        "current": cat.checkpoints.current_epoch(GROUP),
        "catalog": storage.backend(catalog_file).read_bytes(catalog_file),
    }
    for view in VIEWS:
        path = cat.view(view).path
        rows = pa.table(
            DeltaTable(path, storage_options=storage.delta_storage_options(path)).scan()
        )
        state[view] = (
            delta.current_version(path),
            Counter(tuple(r.values()) for r in rows.to_pylist()),
        )
    return state


def refresh_epochs(wh: str, view: str) -> list[int]:
    path = Catalog(wh).view(view).path  # type: ignore[arg-type]
    return [
        int(c.metadata["ivm.epoch"])
        for c in delta.history(path)
        if c.metadata.get("ivm.operation") == "refresh"
    ]


def each_epoch_once(wh: str) -> None:
    """Every epoch is at most one Delta commit of each view, in epoch order."""
    for view in VIEWS:
        epochs = refresh_epochs(wh, view)[::-1]  # history is newest first
        assert epochs == sorted(set(epochs)), (view, epochs)


def crash_case(point: str, moved: bool, published: tuple[str, ...]) -> Any:
    marks = () if point == REPRESENTATIVE else (pytest.mark.slow,)
    return pytest.param(point, moved, published, id=point, marks=marks)


@pytest.mark.parametrize(("point", "moved", "published"), [crash_case(*c) for c in CRASH_POINTS])
def test_sigkill_at_a_crash_point_on_s3(
    uri: str,
    s3_bucket: str,  # noqa: F811
    s3_server: str,  # noqa: F811
    point: str,
    moved: bool,
    published: tuple[str, ...],
) -> None:
    path = Session(warehouse=uri).table_path("t")
    change(path, 0)
    before = snapshot(uri)
    proc = run_child(CRASH_CHILD, env={"IVM_CRASH_AT": point, "IVM_WAREHOUSE": uri})
    killed_by = time.time()
    assert proc.returncode == -signal.SIGKILL, (point, proc.stdout, proc.stderr[-2000:])

    # exactly the state before, or the commit point's (each view before or after its commit)
    after = snapshot(uri)
    agg, top = expected(Session(warehouse=uri))
    want = {"agg": agg, "top": top}
    assert after["catalog"] == before["catalog"], point
    assert after["current"] == before["current"] + moved, point
    for view in VIEWS:
        version, rows = before[view]
        if view in published:
            assert after[view] == (version + 1, want[view]), (point, view)
        else:
            assert after[view] == (version, rows), (point, view)

    # the dead holder's lease lasts no longer than one lease time past its death
    held = leases.holder_of(group_lock(uri))
    if held:
        assert float(held["expires"]) <= killed_by + LEASE_SECONDS, (point, held)
    # the next process waits for the expiry at most, breaks the lease, recovers and refreshes
    change(path, 1)
    proc = run_child(CRASH_CHILD, env={"IVM_CRASH_AT": "never", "IVM_WAREHOUSE": uri})
    assert proc.returncode == 0, (point, proc.stderr[-2000:])
    check_views(uri)
    each_epoch_once(uri)
    assert lock_keys(s3_bucket, s3_server) == [], point  # every lease given up


@pytest.mark.slow  # the same interleaving runs locally in the default run
def test_a_second_refresh_waits_for_the_lease_on_s3(uri: str, tmp_path: Path) -> None:
    """Two processes: B refreshes while A holds the group's lease, paused inside the
    protocol; B waits, runs after A, and both views equal recomputation."""
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    interleave(uri, ctl, ["renamed", "committed:agg"])
    each_epoch_once(uri)


@pytest.mark.slow
def test_three_processes_and_a_ddl_refresh_one_s3_warehouse_at_once(
    uri: str,
    tmp_path: Path,
    s3_bucket: str,  # noqa: F811
    s3_server: str,  # noqa: F811
) -> None:
    """Three processes are told to refresh at the same moment, round after round, while the
    input changes; in one round a fourth creates a view and in another drops it.  Nothing
    fails, every epoch is one commit per view, the views equal recomputation."""
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    path = Session(warehouse=uri).table_path("t")
    procs = [Child(role, uri, ctl) for role in ("A", "B", "C", "D")]
    ddl = {
        1: "CREATE MATERIALIZED VIEW big AS SELECT k, v FROM t WHERE v > 1",
        3: "DROP MATERIALIZED VIEW big",
    }
    try:
        for i in range(5):
            change(path, i)
            for child in procs[:3]:
                child.refresh()
            if i in ddl:
                procs[3].sql(ddl[i])
            for child in procs[:3] if i not in ddl else procs:
                child.finished()
            assert not any(" error " in e for e in events(ctl)), (i, events(ctl)[-40:])
            check_views(uri)
            if i in (1, 2):  # the view created while the others refreshed is maintained too
                s = Session(warehouse=uri)
                s.refresh()
                rows = Counter(tuple(r.values()) for r in s.read("big").to_pylist())
                want = Counter((r["k"], r["v"]) for r in s.read("t").to_pylist() if r["v"] > 1)
                assert rows == want, i
        each_epoch_once(uri)
        assert lock_keys(s3_bucket, s3_server) == []
    finally:
        for child in procs:
            child.stop()


FENCE_POINTS = [
    pytest.param("renamed", id="before-commit-point"),
    pytest.param("committed:agg", id="between-views", marks=pytest.mark.slow),
    pytest.param("files_written:top", id="inside-a-view-commit", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("point", FENCE_POINTS)
def test_a_frozen_lease_holder_commits_nothing_over_its_successor(
    uri: str,
    tmp_path: Path,
    s3_bucket: str,  # noqa: F811
    s3_server: str,  # noqa: F811
    point: str,
) -> None:
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    path = Session(warehouse=uri).table_path("t")
    lock = group_lock(uri)
    a, b = Child("A", uri, ctl), Child("B", uri, ctl)
    try:
        change(path, 0)
        a.refresh(pause=point)
        wait_for(a.paused, f"A paused at {point}")
        a.freeze()  # a stall longer than the lease: no renewal either
        wait_for(lambda: float(leases.holder_of(lock).get("expires", 0)) < time.time(), "expiry")
        change(path, 1)
        b.refresh()  # breaks the expired lease, recovers whatever A committed, refreshes on
        b.finished()
        done = snapshot(uri)
        a.go()
        a.thaw()
        a.finished()
        log = events(ctl)
        assert "B done" in log, log
        assert any(e.startswith("A error CheckpointError") for e in log), log
        assert snapshot(uri) == done  # A, thawed, changed nothing
        check_views(uri)
        each_epoch_once(uri)
        Session(warehouse=uri).refresh()  # nothing stuck
        check_views(uri)
        assert lock_keys(s3_bucket, s3_server) == []
    finally:
        a.stop()
        b.stop()


@pytest.mark.parametrize("where", ["local", pytest.param("s3", marks=pytest.mark.slow)])
def test_drop_waits_for_a_refresh_of_its_group(
    where: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """DROP of a view while a refresh of its group is inside the protocol: the drop waits
    for the group's lock, the refresh finishes without error, the view and its table are
    gone and the other view equals recomputation; a process that planned the group before
    the drop skips the dropped view's group instead of failing."""
    wh: str = request.getfixturevalue("uri") if where == "s3" else str(tmp_path / "wh")
    if where == "local":
        setup(wh)
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    path = Session(warehouse=wh).table_path("t")
    Session(warehouse=wh).sql("CREATE MATERIALIZED VIEW solo AS SELECT k FROM t WHERE v > 3")
    top_table = Catalog(wh).view("top").path  # type: ignore[arg-type]
    a, b, c = Child("A", wh, ctl), Child("B", wh, ctl), Child("C", wh, ctl)
    try:
        change(path, 0)
        a.refresh(pause="checkpointed")
        wait_for(a.paused, "A paused after its commit point")
        c.refresh()  # plans groups agg (agg, top) and solo; waits for agg's lock
        wait_for(lambda: "C waiting" in events(ctl), "C to wait")
        b.sql("DROP MATERIALIZED VIEW solo")
        b.finished()
        b.sql("DROP MATERIALIZED VIEW top")  # waits for A
        a.go()
        a.finished()
        b.finished()
        c.finished()
        assert not any(" error " in e for e in events(ctl)), events(ctl)
        s = Session(warehouse=wh)
        assert {v.name for v in s.catalog.views()} == {"agg"}
        assert not storage.backend(top_table).exists(top_table + "/_delta_log")
        change(path, 1)
        s.refresh()
        agg, _ = expected(s)
        assert Counter(tuple(r.values()) for r in s.read("agg").to_pylist()) == agg
    finally:
        for child in (a, b, c):
            child.stop()
