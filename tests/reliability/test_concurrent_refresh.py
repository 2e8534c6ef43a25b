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

import signal
from pathlib import Path

import pyarrow as pa
import pytest
from refresh_children import Child, change, check_views, events, interleave, setup, wait_until

from catalog import delta
from catalog.errors import RefreshBusyError
from spark_exec import Session

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


def local(tmp_path: Path) -> tuple[Path, Path, str]:
    """A local warehouse set up for the children, its control directory and input path."""
    wh, ctl = tmp_path / "wh", tmp_path / "ctl"
    ctl.mkdir()
    return wh, ctl, setup(wh)


def test_second_refresh_waits_at_every_step(tmp_path: Path) -> None:
    wh, ctl, _ = local(tmp_path)
    interleave(wh, ctl, POINTS)


def test_lock_holder_killed_while_another_waits(tmp_path: Path) -> None:
    wh, ctl, path = local(tmp_path)
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
    wh, ctl, path = local(tmp_path)
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
