"""Per-view isolation: a failing refresh group is marked failed (error and time), the other
groups still refresh and commit, and the refresh call raises one typed error naming the
failures.  ``SHOW MATERIALIZED VIEWS`` and ``ivm status`` show each view's status
(fresh / stale / failed), last refresh, reflected input versions, versions behind and last
error.  On main the first failing group stopped the refresh of every later group, and SHOW
had no status at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from diverging import counter_program

from ivm.limits import IterationLimitError
from spark_exec import Session
from spark_exec.cli import EXIT_USER_ERROR, main
from spark_exec.errors import RefreshFailedError

COUNTER = counter_program("a_counter")


def rows(s: Session) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in s.sql("SHOW MATERIALIZED VIEWS").to_arrow().to_pylist()}


@pytest.fixture
def s(tmp_path: Path) -> Session:
    s = Session(warehouse=tmp_path / "wh", max_iterations=30)
    s.sql("CREATE TABLE start (x BIGINT NOT NULL)")
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT); INSERT INTO t VALUES (1, 1)")
    s.datalog(COUNTER)  # group a_counter, sorted before z_sum: it refreshes first
    s.sql("CREATE MATERIALIZED VIEW z_sum AS SELECT k, sum(v) AS s FROM t GROUP BY k")
    return s


def test_failing_group_does_not_block_the_others(s: Session) -> None:
    shown = rows(s)
    assert {n: r["status"] for n, r in shown.items()} == {"a_counter": "fresh", "z_sum": "fresh"}
    assert shown["z_sum"]["last_refresh"] and shown["z_sum"]["behind"] == 0
    assert shown["z_sum"]["input_versions"] == "t@1"

    s.sql("INSERT INTO start VALUES (1)")  # makes a_counter diverge
    s.sql("INSERT INTO t VALUES (1, 10)")
    shown = rows(s)
    assert shown["z_sum"]["status"] == "stale" and shown["z_sum"]["behind"] == 1
    assert shown["a_counter"]["status"] == "stale" and shown["a_counter"]["behind"] == 1

    with pytest.raises(RefreshFailedError) as err:
        s.refresh()
    assert set(err.value.failures) == {"a_counter"}
    assert isinstance(err.value.failures["a_counter"], IterationLimitError)
    assert [r.view for r in err.value.reports] == ["z_sum"]
    assert "a_counter" in str(err.value)
    # the healthy group committed
    assert s.read("z_sum").to_pylist() == [{"k": 1, "s": 11}]
    shown = rows(s)
    assert shown["z_sum"]["status"] == "fresh" and shown["z_sum"]["input_versions"] == "t@2"
    assert shown["a_counter"]["status"] == "failed"
    assert "IterationLimitError" in shown["a_counter"]["last_error"]
    assert "max_iterations" in shown["a_counter"]["last_error"]
    assert shown["a_counter"]["behind"] == 1

    # a refresh of the failed view alone raises its own error
    with pytest.raises(IterationLimitError):
        s.refresh("a_counter")

    # the fix: remove the offending row; the next refresh clears the failure
    s.sql("DELETE FROM start WHERE x = 1")
    s.refresh()
    shown = rows(s)
    assert {n: r["status"] for n, r in shown.items()} == {"a_counter": "fresh", "z_sum": "fresh"}
    assert shown["a_counter"]["last_error"] is None
    assert s.read("a_counter").num_rows == 0


def test_cli_status_shows_failures(s: Session, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(s.warehouse)
    assert main(["--warehouse", wh, "status"]) == 0
    out = capsys.readouterr().out
    assert "fresh" in out and "z_sum" in out
    s.sql("INSERT INTO start VALUES (1)")
    s.sql("INSERT INTO t VALUES (2, 2)")
    code = main(["--warehouse", wh, "--max-iterations", "30", "refresh"])
    out, err = capsys.readouterr()
    assert code == EXIT_USER_ERROR and "Traceback" not in out + err
    assert "z_sum: epoch" in out  # the healthy group's report
    assert "RefreshFailedError" in err and "a_counter" in err and "max_iterations" in err
    assert main(["--warehouse", wh, "status"]) == EXIT_USER_ERROR
    out = capsys.readouterr().out
    assert "failed" in out and "IterationLimitError" in out and "fresh" in out
    assert sorted((r["k"], r["s"]) for r in s.read("z_sum").to_pylist()) == [(1, 1), (2, 2)]
