"""Progress of loads and refreshes (issue 18, item 6): ``progress`` events with phases and a
fraction counted from real work (rows read of the rows the inputs hold, operators started of
the dataflow's operators, views committed), monotone and ending at 1.0; the ``ivm`` command
shows them as a ``rich`` bar on a terminal or with ``--progress``, never in CI logs."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from catalog import delta, view_table
from spark_exec.cli import main
from spark_exec.progress_bar import wanted
from spark_exec.session import Session

ROWS_PER_FILE = 20_000
FILES = 3


def warehouse(path: Path) -> Session:
    s = Session(warehouse=path)
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT); CREATE TABLE u (k BIGINT, w BIGINT)")
    for i in range(FILES):  # three commits: three files the log counts rows of
        ks = (np.arange(ROWS_PER_FILE) + i) % 300
        delta.insert(s.table_path("t"), pa.table({"k": ks, "v": np.arange(ROWS_PER_FILE)}))
    delta.insert(s.table_path("u"), pa.table({"k": np.arange(300), "w": np.arange(300) % 7}))
    return s


def progress_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "progress"]


def check_sequence(p: list[dict[str, Any]]) -> None:
    fractions = [e["fraction"] for e in p]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert all(0.0 <= f <= 1.0 for f in fractions)
    phases = [e["phase"] for e in p]
    order = {"read": 0, "engine": 1, "commit": 2}
    assert [order[x] for x in phases] == sorted(order[x] for x in phases)  # in phase order
    assert all(0 <= e["done"] <= e["total"] for e in p)
    for kind in {(e["phase"], e["unit"]) for e in p}:  # the counts of each phase only grow
        done = [e["done"] for e in p if (e["phase"], e["unit"]) == kind]
        assert done == sorted(done)


def test_first_load_reports_rows_read_operators_and_rows_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view_table, "FILE_ROWS", 64)  # the view's 300 rows: 5 files
    s = warehouse(tmp_path / "wh")
    events: list[dict[str, Any]] = []
    s.on_event = events.append
    s.sql(
        "CREATE MATERIALIZED VIEW m AS SELECT t.k, count(*) AS c, sum(w) AS s "
        "FROM t JOIN u ON t.k = u.k GROUP BY t.k"
    )
    p = progress_of(events)
    check_sequence(p)
    assert {e["group"] for e in p} == {"m"}
    rows = [e for e in p if e["phase"] == "read" and e["unit"] == "rows"]
    total = FILES * ROWS_PER_FILE + 300
    assert rows[0]["done"] == 0 and {e["total"] for e in rows} == {total}  # from the Delta logs
    assert rows[-1]["done"] == total
    inside = [e["done"] for e in rows if 0 < e["done"] < total]
    assert len(inside) >= FILES  # counted as the scan reads t's files, not per input
    engine = [e for e in p if e["phase"] == "engine"]
    ops = len(s._runtime.built["m"].g.ops)
    assert {e["total"] for e in engine} == {ops} and engine[-1]["done"] == ops
    assert len({e["done"] for e in engine if 0 < e["done"] < ops}) >= ops // 2  # as it runs
    written = [e for e in p if e["phase"] == "commit"]
    assert {e["unit"] for e in written} == {"rows"} and {e["total"] for e in written} == {300}
    assert [e["done"] for e in written] == [0, 64, 128, 192, 256, 300]  # file by file
    assert p[-1] == {
        "event": "progress",
        "group": "m",
        "phase": "commit",
        "done": 300,
        "total": 300,
        "unit": "rows",
        "fraction": 1.0,
    }


def test_refresh_reports_progress_per_group(tmp_path: Path) -> None:
    s = warehouse(tmp_path / "wh")
    s.sql("CREATE MATERIALIZED VIEW a AS SELECT k, sum(v) AS s FROM t GROUP BY k")
    s.sql("CREATE MATERIALIZED VIEW b AS SELECT k, w FROM u WHERE w > 2")
    events: list[dict[str, Any]] = []
    s.on_event = events.append
    s.sql("INSERT INTO t VALUES (1, 1); INSERT INTO u VALUES (1000, 5)")
    s.refresh()
    for group in ("a", "b"):
        p = [e for e in progress_of(events) if e["group"] == group]
        check_sequence(p)
        assert p[0] == {**p[0], "phase": "read", "done": 0, "unit": "inputs", "fraction": 0.0}
    events.clear()
    s.refresh()  # nothing new: straight to 1.0
    for group in ("a", "b"):
        (only,) = [e for e in progress_of(events) if e["group"] == group and e["phase"] != "read"]
        assert only["fraction"] == 1.0


def sql_file(tmp_path: Path) -> str:
    f = tmp_path / "create.sql"
    f.write_text(
        "CREATE TABLE t (k BIGINT, v BIGINT);\n"
        "INSERT INTO t VALUES (1, 2), (2, 3), (2, 4);\n"
        "CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k;\n"
    )
    return str(f)


def test_cli_progress_flag_shows_a_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")  # --progress asks for it even in CI
    code = main(["--warehouse", str(tmp_path / "wh"), "--progress", "sql", sql_file(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "refresh m" in out and "100%" in out and "commit 2/2 rows" in out
    assert "━" in out  # rich's bar


@pytest.mark.parametrize("flag", [[], ["--no-progress"]])
def test_cli_without_a_terminal_shows_no_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: list[str]
) -> None:
    code = main(["--warehouse", str(tmp_path / "wh"), *flag, "sql", sql_file(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "created materialized view m" in out
    assert "━" not in out and "operators" not in out


def test_bar_only_on_a_terminal_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    leader, follower = os.openpty()
    with os.fdopen(follower, "w") as tty:
        monkeypatch.delenv("CI", raising=False)
        assert wanted(None, tty) is True
        assert wanted(False, tty) is False
        monkeypatch.setenv("CI", "true")
        assert wanted(None, tty) is False  # never in CI logs
        assert wanted(True, tty) is True
    os.close(leader)
    assert wanted(None, io.StringIO()) is False


def run_demo_command(tmp_path: Path, *, terminal: bool) -> str:
    """``python -m ivm demo`` in a child process, its standard output a pseudo-terminal (or a
    pipe); returns what it printed."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "CI"}
    cmd = [sys.executable, "-m", "ivm", "--warehouse", str(tmp_path / "wh"), "demo"]
    if not terminal:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout
    leader, follower = os.openpty()
    proc = subprocess.Popen(cmd, env=env, stdout=follower, stderr=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=1200) == 0
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("terminal", [True, False])
def test_demo_shows_the_bar_on_a_terminal_only(tmp_path: Path, terminal: bool) -> None:
    out = run_demo_command(tmp_path, terminal=terminal)
    assert "every view matched its oracle" in out
    if terminal:
        assert "━" in out and "refresh revenue_by_region" in out  # rich's bar, per group
        assert "commit " in out and " rows" in out
    else:
        assert "━" not in out and "operators" not in out
