"""``ivm serve``: the always-on refresher (issue 18, item 5).

In-process tests drive :class:`~spark_exec.serve.Refresher` one poll at a time; the process test
starts the real command, writes the input through delta-rs (another Session) and through
delta-spark, reads the metrics endpoint, and stops it with SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from spark_exec.serve import CommitWatcher, Refresher, ServeOptions, serve
from spark_exec.session import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parents[2]
IVM = str(Path(sys.executable).parent / "ivm")
VIEW = "SELECT k, SUM(v) AS s, COUNT(*) AS n FROM t GROUP BY k"


def expected(session: Session) -> Counter[tuple[Any, ...]]:
    """The view recomputed in Python from the table's current rows."""
    sums: dict[Any, list[int]] = {}
    for r in session.read("t").to_pylist():
        acc = sums.setdefault(r["k"], [0, 0])
        acc[0] += r["v"]
        acc[1] += 1
    return Counter((k, s, n) for k, (s, n) in sums.items())


def contents(session: Session, view: str = "m") -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r.values()) for r in session.read(view).to_pylist())


def make_warehouse(wh: Path) -> Session:
    s = Session(warehouse=wh)
    s.sql(
        "CREATE TABLE t (k INT, v INT) USING delta; INSERT INTO t VALUES (1, 10), (2, 20);"
        f"CREATE MATERIALIZED VIEW m AS {VIEW}"
    )
    return s


def test_refresher_refreshes_only_groups_whose_inputs_committed(tmp_path: Path) -> None:
    s = make_warehouse(tmp_path / "wh")
    s.sql("CREATE TABLE u (x INT) USING delta; INSERT INTO u VALUES (1)")
    s.sql("CREATE MATERIALIZED VIEW w AS SELECT COUNT(*) AS c FROM u")
    events: list[dict[str, Any]] = []
    r = Refresher(Session(warehouse=tmp_path / "wh"), events=events.append)
    assert r.tick() == []  # both groups reflect their inputs
    s.sql("INSERT INTO t VALUES (1, 5)")
    s.sql("DELETE FROM t WHERE k = 2")
    done = r.tick()
    assert [e["views"] for e in done] == [["m"]] and done[0]["outcome"] == "ok"
    assert done[0]["input_changes"] == 2 and done[0]["committed"] is True
    assert contents(s) == expected(s)
    assert r.tick() == []
    metrics = r.metrics.render()
    assert 'ivm_refreshes_total{group="m",outcome="ok"} 1' in metrics
    assert 'ivm_behind_versions{group="w"} 0' in metrics
    assert "ivm_polls_total 3" in metrics


def test_failing_group_backs_off_and_the_others_go_on(tmp_path: Path) -> None:
    s = make_warehouse(tmp_path / "wh")
    s.sql("CREATE TABLE u (x INT) USING delta; INSERT INTO u VALUES (1)")
    s.sql("CREATE MATERIALIZED VIEW w AS SELECT COUNT(*) AS c FROM u")
    r = Refresher(Session(warehouse=tmp_path / "wh"), backoff=60)
    shutil.rmtree(s.table_path("u"))  # u's view can no longer refresh
    s.sql("INSERT INTO t VALUES (3, 30)")
    first = {e["views"][0]: e for e in r.tick()}
    assert first["w"]["outcome"] == "failed" and first["w"]["retry_in"] == 60
    assert first["m"]["outcome"] == "ok"
    s.sql("INSERT INTO t VALUES (4, 40)")
    assert [e["views"] for e in r.tick()] == [["m"]]  # w waits for its retry time
    assert contents(s) == expected(s)
    assert 'ivm_refreshes_total{group="w",outcome="failed"} 1' in r.metrics.render()


def test_every_refreshes_on_a_schedule_without_new_commits(tmp_path: Path) -> None:
    make_warehouse(tmp_path / "wh")
    r = Refresher(Session(warehouse=tmp_path / "wh"), every=0.0)
    assert [e["outcome"] for e in r.tick()] == ["ok"]
    assert [e["committed"] for e in r.tick()] == [False]  # nothing new: nothing written


def test_watcher_follows_new_log_files_and_resyncs(tmp_path: Path) -> None:
    s = make_warehouse(tmp_path / "wh")
    path = s.table_path("t")
    w = CommitWatcher(resync_seconds=3600)
    v0 = w.latest([path])[path]
    s.sql("INSERT INTO t VALUES (9, 9)")
    assert w.latest([path])[path] == v0 + 1
    shutil.rmtree(path)
    assert w.latest([path])[path] == v0 + 1  # stat polling alone cannot see a drop ...
    assert CommitWatcher(resync_seconds=0).latest([path])[path] == -1  # ... a resync does


def test_serve_loop_stops_when_asked(tmp_path: Path) -> None:
    make_warehouse(tmp_path / "wh")
    events: list[dict[str, Any]] = []
    stop = threading.Event()
    t = threading.Thread(
        target=serve,
        args=(Session(warehouse=tmp_path / "wh"), ServeOptions(interval=0.05, port=0)),
        kwargs={"emit": events.append, "stop": stop},
    )
    t.start()
    deadline = time.monotonic() + 30
    while not any(e["event"] == "serving" for e in events) and time.monotonic() < deadline:
        time.sleep(0.05)
    url = events[0]["metrics"]
    body = urllib.request.urlopen(url, timeout=10).read().decode()
    assert body.startswith("# HELP ivm_up") and "ivm_up 1" in body
    stop.set()
    t.join(30)
    assert not t.is_alive() and events[-1]["event"] == "stopped"


def _read_events(proc: subprocess.Popen[str], until: Any, timeout: float) -> list[dict[str, Any]]:
    """JSON lines from the server's stdout until ``until(event)`` holds."""
    assert proc.stdout is not None
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        event = json.loads(line)
        out.append(event)
        if until(event):
            return out
    raise AssertionError(f"no such event within {timeout} s; saw {out}")


@pytest.mark.spark
def test_serve_process_follows_both_connectors_and_stops_on_sigterm(
    spark: SparkSession, tmp_path: Path
) -> None:
    wh = tmp_path / "wh"
    writer = make_warehouse(wh)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [IVM, "--warehouse", str(wh), "serve", "--interval", "0.2", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url = _read_events(proc, lambda e: e["event"] == "serving", 120)[-1]["metrics"]
        # delta-rs (another Session, another process's view of the table)
        writer.sql("INSERT INTO t VALUES (1, 1), (3, 3)")
        done = _read_events(proc, lambda e: e.get("rows_written", 0) > 0, 120)[-1]
        assert done["outcome"] == "ok" and done["input_changes"] == 2
        assert contents(writer) == expected(writer)
        # delta-spark, through Spark SQL on the table's path
        path = writer.table_path("t")
        spark.sql(f"UPDATE delta.`{path}` SET v = v * 100 WHERE k = 1")
        done = _read_events(proc, lambda e: e.get("rows_written", 0) > 0, 120)[-1]
        assert done["outcome"] == "ok"
        assert contents(writer) == expected(writer)
        metrics = urllib.request.urlopen(url, timeout=10).read().decode()
        ok = [
            line
            for line in metrics.splitlines()
            if line.startswith('ivm_refreshes_total{group="m",outcome="ok"}')
        ]
        assert ok and int(ok[0].split()[-1]) >= 2
        status = json.loads(urllib.request.urlopen(url.replace("metrics", "status")).read())
        assert [(v["name"], v["status"]) for v in status] == [("m", "fresh")]
        writer.sql("INSERT INTO t VALUES (5, 5)")  # SIGTERM may land during its refresh
        time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["event"] == "stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # nothing half-written: a new Session refreshes to exactly the recomputation
    after = Session(warehouse=wh)
    after.refresh()
    assert contents(after) == expected(after)
    assert [r["status"] for r in after.show_views().to_pylist()] == ["fresh"]


def test_schedule_every_waits_trigger_on_update_does_not(tmp_path: Path) -> None:
    s = make_warehouse(tmp_path / "wh")
    s.sql("CREATE TABLE u (x INT) USING delta; INSERT INTO u VALUES (1)")
    s.sql(
        "-- refreshed hourly\n"
        "CREATE MATERIALIZED VIEW hourly SCHEDULE EVERY 1 HOUR AS SELECT COUNT(*) AS c FROM u"
    )
    s.sql("ALTER MATERIALIZED VIEW m ADD TRIGGER ON UPDATE")
    r = Refresher(Session(warehouse=tmp_path / "wh"))
    assert r.tick() == []
    s.sql("INSERT INTO u VALUES (2)")
    s.sql("INSERT INTO t VALUES (7, 7)")
    assert [e["views"] for e in r.tick()] == [["m"]]  # the hourly view waits for its hour
    r._last_run[s.catalog.view("hourly").group] -= 3600
    assert [e["views"] for e in r.tick()] == [["hourly"]]
    assert s.read("hourly").to_pylist() == [{"c": 2}]


def test_a_long_lived_session_drops_dataflows_of_merged_groups(tmp_path: Path) -> None:
    s = make_warehouse(tmp_path / "wh")  # view m over t: group m
    assert set(s._runtime.built) == {"m"}
    s.sql("CREATE MATERIALIZED VIEW top AS SELECT MAX(s) AS best FROM m")  # m joins top's group
    (group,) = {v.group for v in s.catalog.views()}
    assert set(s._runtime.built) == {group}  # m's old dataflow is not kept alongside
    other = Session(warehouse=tmp_path / "wh")
    other.refresh()
    s.sql("CREATE TABLE u (x INT) USING delta")  # nothing else changes its groups
    other.sql("DROP MATERIALIZED VIEW top")  # another process splits the group again
    s.sql("INSERT INTO t VALUES (5, 5)")
    s.refresh()
    assert set(s._runtime.built) == {"m"}
    assert contents(s) == expected(s)


def test_checkpoints_of_former_groups_go_and_current_ones_stay(tmp_path: Path) -> None:
    """``stale_checkpoint_groups``: the checkpoint of a group no view has any more is removed
    by the next full refresh; a group another process created since this one planned is
    kept."""
    from catalog.pipeline import stale_checkpoint_groups

    s = make_warehouse(tmp_path / "wh")  # view m over t: group m
    on_disk = s.catalog.warehouse.checkpoint_groups
    assert set(on_disk()) == {"m"}
    assert stale_checkpoint_groups(s.catalog, ["m"]) == []
    former = s.catalog.warehouse.checkpoint_dir("former")  # e.g. left by a merged group
    former.mkdir(parents=True)
    (former / "CURRENT").write_text("{}")
    assert set(on_disk()) == {"m", "former"}
    other = Session(warehouse=tmp_path / "wh")
    other.sql("CREATE MATERIALIZED VIEW solo AS SELECT COUNT(*) AS n FROM t")
    solo = s.catalog.view("solo").group
    assert solo in on_disk()
    assert stale_checkpoint_groups(s.catalog, ["m"]) == ["former"]  # solo: planned again
    s.refresh()
    assert set(on_disk()) == {"m", solo}
    live = ["m", solo]
    assert stale_checkpoint_groups(s.catalog, live) == []  # remembered: directories as they were
    assert stale_checkpoint_groups(s.catalog, live) == []
    elsewhere = s.catalog.warehouse.checkpoint_dir("other_db.gone")  # a new database directory
    elsewhere.mkdir(parents=True)
    assert stale_checkpoint_groups(s.catalog, live) == ["other_db.gone"]
    shutil.rmtree(elsewhere)
    assert stale_checkpoint_groups(s.catalog, live) == []
    s.catalog.warehouse.checkpoint_dir("late").mkdir()  # one more in a known directory
    assert stale_checkpoint_groups(s.catalog, live) == ["late"]
