"""Two processes refresh one warehouse at once (docs/reliability.md, "Concurrency").

Real child processes, coordinated through the refresh's step hooks: process A refreshes and
pauses at one step of the protocol while holding the group's writer lock; process B then
refreshes the same warehouse.  B must wait (it reports "waiting" and runs no step until A has
published), both finish, nothing is stuck, and the views equal their recomputation.  This is
repeated at every step of the refresh.  A lock holder SIGKILLed while paused releases the lock
with its death; the waiting process recovers the group and finishes.  A waiter past its time
limit gets a typed :class:`RefreshBusyError` and writes nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from e2e_helpers import REPO

from catalog import delta
from catalog.errors import RefreshBusyError
from spark_exec import Session

AGG = "SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k"
TOP = "SELECT k, s FROM agg WHERE n >= 2"
POINTS = [
    "locked",
    "restored",
    "stepped",
    "before_checkpoint",
    "files_written",
    "renamed",
    "checkpointed",
    "committed:agg",
    "committed:top",
    "published",
]
WAIT = 180.0

CHILD = """
import json, os, sys, time
from spark_exec import Session
ctl, role = os.environ["CTL"], os.environ["ROLE"]
pause = {"at": None}
def event(what):
    with open(os.path.join(ctl, "events.log"), "a") as f:
        f.write(f"{role} {what}\\n")
def hook(step):
    event(step)
    if step == pause["at"]:
        open(os.path.join(ctl, f"{role}-paused"), "w").close()
        go = os.path.join(ctl, f"{role}-go")
        while not os.path.exists(go):
            time.sleep(0.02)
        os.remove(go)
s = Session(warehouse=os.environ["IVM_WAREHOUSE"], refresh_hook=hook)
for line in sys.stdin:
    pause["at"] = json.loads(line).get("pause")
    event("start")
    try:
        s.refresh()
        event("done")
    except Exception as exc:
        event(f"error {type(exc).__name__}: {exc}")
    print("ok", flush=True)
"""


def wait_until(cond: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class Child:
    def __init__(self, role: str, wh: Path, ctl: Path) -> None:
        self.role, self.ctl = role, ctl
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "IVM_WAREHOUSE": str(wh),
            "CTL": str(ctl),
            "ROLE": role,
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(CHILD)],
            cwd=REPO,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def refresh(self, pause: str | None = None) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"pause": pause}) + "\n")
        self.proc.stdin.flush()

    def finished(self) -> None:
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ok", f"{self.role} died"

    def go(self) -> None:
        (self.ctl / f"{self.role}-paused").unlink()
        (self.ctl / f"{self.role}-go").touch()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def events(ctl: Path) -> list[str]:
    p = ctl / "events.log"
    return p.read_text().splitlines() if p.exists() else []


def expected(s: Session) -> tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]]]:
    groups: dict[int, list[int]] = {}
    for r in s.read("t").to_pylist():
        groups.setdefault(r["k"], []).append(r["v"])
    agg = Counter((k, len(vs), sum(vs)) for k, vs in groups.items())
    return agg, Counter((k, t) for k, n, t in agg if n >= 2)


def check_views(wh: Path) -> None:
    s = Session(warehouse=wh)
    agg, top = expected(s)
    assert Counter(tuple(r.values()) for r in s.read("agg").to_pylist()) == agg
    assert Counter(tuple(r.values()) for r in s.read("top").to_pylist()) == top


def setup(tmp_path: Path) -> tuple[Path, Path, str]:
    wh, ctl = tmp_path / "wh", tmp_path / "ctl"
    ctl.mkdir()
    s = Session(warehouse=wh)
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT)")
    s.sql("INSERT INTO t VALUES (1, 1), (1, 2), (2, 5)")
    s.sql(f"CREATE MATERIALIZED VIEW agg AS {AGG}")
    s.sql(f"CREATE MATERIALIZED VIEW top AS {TOP}")
    return wh, ctl, s.table_path("t")


def change(path: str, i: int) -> None:
    """A change that moves both views (a new key with two rows)."""
    delta.insert(path, pa.table({"k": [100 + i, 100 + i], "v": [i, 1]}))


def interleave(tmp_path: Path, points: list[str]) -> None:
    wh, ctl, path = setup(tmp_path)
    a, b = Child("A", wh, ctl), Child("B", wh, ctl)
    try:
        for i, point in enumerate(points):
            change(path, i)
            start = len(events(ctl))
            a.refresh(pause=point)
            wait_until((ctl / "A-paused").exists, f"A paused at {point}")
            change(path, 50 + i)  # B has something of its own to do
            b.refresh()
            wait_until(
                lambda n=start: any(e.startswith("B ") and e != "B start" for e in events(ctl)[n:]),
                "B to wait or to run",
            )
            a.go()
            a.finished()
            b.finished()
            log = events(ctl)[start:]
            errors = [e for e in log if " error " in e]
            assert not errors, (point, errors)
            b_steps = [j for j, e in enumerate(log) if e.startswith("B ") and e != "B start"]
            assert log[b_steps[0]] == "B waiting", (point, log)
            # "A done" is logged after A's refresh returned, i.e. after it released the lock,
            # so B may log "locked" first: B must start after A's last step inside the lock
            a_last = max(j for j, e in enumerate(log) if e.startswith("A ") and e != "A done")
            assert all(j > a_last for j in b_steps[1:]), (point, log)
            check_views(wh)
        Session(warehouse=wh).refresh()  # nothing stuck
        check_views(wh)
    finally:
        a.stop()
        b.stop()


def test_second_refresh_waits_at_every_step(tmp_path: Path) -> None:
    interleave(tmp_path, POINTS)


def test_lock_holder_killed_while_another_waits(tmp_path: Path) -> None:
    wh, ctl, path = setup(tmp_path)
    b = Child("B", wh, ctl)
    try:
        for i, point in enumerate(["files_written", "renamed", "committed:agg"]):
            a = Child("A", wh, ctl)
            change(path, i)
            start = len(events(ctl))
            a.refresh(pause=point)
            wait_until((ctl / "A-paused").exists, f"A paused at {point}")
            b.refresh()
            wait_until(lambda n=start: "B waiting" in events(ctl)[n:], "B to wait")
            a.proc.send_signal(signal.SIGKILL)  # dies holding the lock
            a.stop()
            (ctl / "A-paused").unlink()
            b.finished()
            log = events(ctl)[start:]
            assert "B done" in log, (point, log)
            check_views(wh)
    finally:
        b.stop()


def test_waiting_past_the_limit_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wh, ctl, path = setup(tmp_path)
    a = Child("A", wh, ctl)
    try:
        change(path, 0)
        a.refresh(pause="stepped")
        wait_until((ctl / "A-paused").exists, "A paused")
        monkeypatch.setenv("IVM_LOCK_TIMEOUT", "0.2")
        before = sorted(p.name for p in (wh / "_ivm" / "checkpoints").rglob("*"))
        with pytest.raises(RefreshBusyError, match=f"pid {a.proc.pid}") as info:
            Session(warehouse=wh).refresh()
        assert isinstance(info.value, TimeoutError)
        assert sorted(p.name for p in (wh / "_ivm" / "checkpoints").rglob("*")) == before
        a.go()
        a.finished()
        check_views(wh)
    finally:
        a.stop()


def test_delta_refuses_a_second_commit_of_one_view_epoch(tmp_path: Path) -> None:
    """What the protocol relies on past the lock: two writers that both read the view table
    before either committed epoch e cannot both commit e (the log entry for the next version
    is created atomically, so the later writer gets ConcurrentCommitError and writes nothing
    visible)."""
    from catalog import view_table
    from catalog.delta_commit import ConcurrentCommitError

    p = str(tmp_path / "v")
    view_table.create_view_table(p, pa.schema([("k", pa.int64())]), view="v")
    rows = pa.table({"k": [1], "__diff__": [1]})

    def other_writer(step: str) -> None:  # B commits epoch 1 while A is between its steps
        if step.startswith("files_written"):
            view_table.commit_view_changes(p, rows, view="v", epoch=1, input_versions={"t": 1})

    with pytest.raises(ConcurrentCommitError, match=r"another writer"):
        view_table.commit_view_changes(
            p, rows, view="v", epoch=1, input_versions={"t": 1}, hook=other_writer
        )
    assert view_table.committed_epoch(p, "v") == 1
    assert delta.current_version(p) == 1
    assert view_table.read_view(p).to_pylist() == [{"k": 1}]  # B's row once, not twice
