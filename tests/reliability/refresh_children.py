"""Refresh child processes driven by the tests, for the concurrency and crash tests on a
local or an S3 warehouse (docs/reliability.md, "Concurrency").

:class:`Child` is a long-lived process with a Session on one warehouse: each line sent to it
runs a refresh (pausing at a named step of the protocol until told to go on) or a SQL
statement; every step it passes and every error it gets is appended to ``events.log`` in a
local control directory, which the test reads to interleave processes.
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
from e2e_helpers import REPO

from catalog import delta
from spark_exec import Session

AGG = "SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k"
TOP = "SELECT k, s FROM agg WHERE n >= 2"

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
    order = json.loads(line)
    pause["at"] = order.get("pause")
    event("start")
    try:
        if order.get("sql"):
            s.sql(order["sql"])
        else:
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
    """A refresh process on the warehouse ``wh`` (a path or an ``s3://`` URI)."""

    def __init__(self, role: str, wh: Path | str, ctl: Path) -> None:
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

    def _send(self, order: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(order) + "\n")
        self.proc.stdin.flush()

    def refresh(self, pause: str | None = None) -> None:
        self._send({"pause": pause})

    def sql(self, statement: str) -> None:
        self._send({"sql": statement})

    def finished(self) -> None:
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ok", f"{self.role} died"

    def paused(self) -> bool:
        return (self.ctl / f"{self.role}-paused").exists()

    def go(self) -> None:
        (self.ctl / f"{self.role}-paused").unlink()
        (self.ctl / f"{self.role}-go").touch()

    def freeze(self) -> None:
        """Stop the whole process (every thread: its lease renewals too), as a long pause."""
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

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


def check_views(wh: Path | str) -> None:
    s = Session(warehouse=wh)
    agg, top = expected(s)
    assert Counter(tuple(r.values()) for r in s.read("agg").to_pylist()) == agg
    assert Counter(tuple(r.values()) for r in s.read("top").to_pylist()) == top


def setup(wh: Path | str) -> str:
    """Table ``t`` and views ``agg`` and ``top`` over it in a new warehouse ``wh``; the path
    of ``t``."""
    s = Session(warehouse=wh)
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT)")
    s.sql("INSERT INTO t VALUES (1, 1), (1, 2), (2, 5)")
    s.sql(f"CREATE MATERIALIZED VIEW agg AS {AGG}")
    s.sql(f"CREATE MATERIALIZED VIEW top AS {TOP}")
    return s.table_path("t")


def change(path: str, i: int) -> None:
    """A change that moves both views (a new key with two rows)."""
    delta.insert(path, pa.table({"k": [100 + i, 100 + i], "v": [i, 1]}))


def interleave(wh: Path | str, ctl: Path, points: list[str]) -> None:
    """At each of ``points``: A pauses there, B refreshes meanwhile; B must wait for A, both
    finish without error, and the views equal their recomputation."""
    path = Session(warehouse=wh).table_path("t")
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
