"""Resource limits: a recursion that never converges (a counter that keeps growing) or state
past its budget stops with a typed error naming the view and the setting, the epoch is rolled
back, the warehouse is left as it was, and a later refresh (after the offending rows are
gone) works.  On main the counter below ran until the machine ran out of memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from diverging import counter_program

import ivm
from ivm.limits import (
    IterationLimitError,
    Limits,
    MemoryLimitError,
    ResourceLimitError,
)
from spark_exec import Session

COUNTER = counter_program("c")

COUNTER_SQL = """CREATE MATERIALIZED VIEW c AS
WITH RECURSIVE r(n) AS (SELECT x FROM start UNION SELECT n + 1 FROM r)
SELECT n FROM r"""


def snapshot(root: Path) -> dict[str, int]:
    """Every file with its size, except the records a failed refresh writes (its status and
    its event-log line)."""
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in root.rglob("*")
        if p.is_file() and not {"status", "event_log"} & set(p.relative_to(root).parts)
    }


def session(tmp_path: Path, **limits: int | None) -> Session:
    s = Session(warehouse=tmp_path / "wh", **limits)  # type: ignore[arg-type]
    s.sql("CREATE TABLE start (x BIGINT NOT NULL)")
    return s


@pytest.mark.parametrize("language", ["datalog", "sql"])
def test_iteration_limit_rolls_back_and_recovers(tmp_path: Path, language: str) -> None:
    s = session(tmp_path, max_iterations=40)
    if language == "datalog":
        s.datalog(COUNTER)
    else:
        s.sql(COUNTER_SQL)
    assert s.read("c").num_rows == 0
    s.sql("INSERT INTO start VALUES (1)")
    before = snapshot(s.warehouse)
    with pytest.raises(IterationLimitError) as err:
        s.refresh()
    assert err.value.view == "c" and err.value.limit == "max_iterations"
    assert "view c" in str(err.value) and "max_iterations" in str(err.value)
    assert "rolled back" in str(err.value)
    assert snapshot(s.warehouse) == before  # view table and checkpoint untouched
    assert s.read("c").num_rows == 0
    # remove the offending row: the next refresh works (in this process and a new one)
    s.sql("DELETE FROM start WHERE x = 1")
    s.refresh()
    assert s.read("c").num_rows == 0
    s.sql("INSERT INTO start VALUES (-5)")  # a row that comes and goes between refreshes
    s.sql("DELETE FROM start WHERE x = -5")
    s.close()  # a new process resumes from the checkpoint
    s.refresh()
    assert s.read("c").num_rows == 0


def test_bounded_recursion_within_the_limit_is_exact(tmp_path: Path) -> None:
    s = session(tmp_path, max_iterations=40)
    s.datalog(COUNTER.replace("y = x + 1.", "y = x + 1, y < 30."))
    s.sql("INSERT INTO start VALUES (1)")
    s.refresh()
    assert sorted(r["x"] for r in s.read("c").to_pylist()) == list(range(1, 30))


def test_state_rows_budget(tmp_path: Path) -> None:
    s = session(tmp_path, max_state_rows=500, max_iterations=None)
    s.datalog(COUNTER)
    s.sql("INSERT INTO start VALUES (1)")
    before = snapshot(s.warehouse)
    with pytest.raises(MemoryLimitError) as err:
        s.refresh()
    assert err.value.limit == "max_state_rows" and err.value.view == "c"
    assert isinstance(err.value, MemoryError) and isinstance(err.value, ivm.IvmError)
    assert snapshot(s.warehouse) == before


def test_memory_budget(tmp_path: Path) -> None:
    s = session(tmp_path, memory_budget=1024, max_iterations=None)  # below any process's RSS
    s.datalog(COUNTER)
    s.sql("INSERT INTO start VALUES (1)")
    with pytest.raises(MemoryLimitError, match="memory_budget"):
        s.refresh()
    assert s.read("c").num_rows == 0


def test_limit_at_create_drops_the_view(tmp_path: Path) -> None:
    s = session(tmp_path, max_iterations=25)
    s.sql("INSERT INTO start VALUES (1)")
    with pytest.raises(ResourceLimitError):
        s.datalog(COUNTER)
    assert s.catalog.views() == ()


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_iterations"):
        Limits(max_iterations=0)
    with pytest.raises(ValueError, match="memory_budget"):
        Limits(memory_budget=-1)
    assert Limits(None, None, None).max_iterations is None


@pytest.mark.parametrize("module", ["ivm.limits", "sql_frontend.limits", "catalog.dtypes"])
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
