"""Refresh events (issue 18, item 6): a callback sees each group, step and report; reports and
failures persist in the warehouse's event log, which Spark SQL queries as ``ivm_event_log``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from spark_exec.errors import RefreshFailedError
from spark_exec.session import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def warehouse(path: Path) -> Session:
    s = Session(warehouse=path)
    s.sql(
        "CREATE TABLE t (k INT, v INT) USING delta; INSERT INTO t VALUES (1, 2);"
        "CREATE TABLE u (x INT) USING delta; INSERT INTO u VALUES (1);"
        "CREATE MATERIALIZED VIEW m AS SELECT k, SUM(v) AS s FROM t GROUP BY k;"
        "CREATE MATERIALIZED VIEW w AS SELECT COUNT(*) AS c FROM u"
    )
    return s


def test_callback_sees_groups_steps_and_reports(tmp_path: Path) -> None:
    s = warehouse(tmp_path / "wh")
    events: list[dict[str, Any]] = []
    s.on_event = events.append
    s.sql("INSERT INTO t VALUES (1, 5), (2, 1)")
    s.refresh()
    kinds = [(e["event"], e.get("group")) for e in events]
    assert ("group", "m") in kinds and ("group", "w") in kinds
    steps = [e["step"] for e in events if e["event"] == "phase" and e["group"] == "m"]
    assert "locked" in steps and len(steps) >= 3
    (m,) = [e for e in events if e["event"] == "refresh" and e["view"] == "m"]
    assert m["input_changes"] == 2 and m["committed"] is True and m["rows_written"] > 0
    assert json.loads(m["input_versions"])  # which input versions the view reflects now


def test_event_log_keeps_reports_and_failures(tmp_path: Path) -> None:
    s = warehouse(tmp_path / "wh")
    s.sql("INSERT INTO t VALUES (3, 3)")
    s.refresh()
    shutil.rmtree(s.table_path("u"))
    s.sql("INSERT INTO t VALUES (4, 4)")
    with pytest.raises(RefreshFailedError):
        s.refresh()
    log = Session(warehouse=tmp_path / "wh").event_log().to_pylist()  # another Session reads it
    failed = [e for e in log if e["event"] == "failed"]
    assert [e["group"] for e in failed] == ["w"] and "u" in failed[0]["error"]
    m = [e for e in log if e["event"] == "refresh" and e["view"] == "m"]
    assert [e["input_changes"] for e in m] == [1, 1, 1]  # the first load at CREATE, 2 refreshes


@pytest.mark.spark
def test_spark_sql_queries_the_event_log(spark: SparkSession, tmp_path: Path) -> None:
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (k INT, v INT) USING delta; INSERT INTO t VALUES (1, 2)")
    s.sql("CREATE MATERIALIZED VIEW m AS SELECT k, SUM(v) AS s FROM t GROUP BY k")
    s.sql("INSERT INTO t VALUES (1, 5)")
    s.refresh()
    rows = spark.sql(
        "SELECT view, input_changes, committed FROM ivm_event_log WHERE event = 'refresh'"
    ).collect()
    assert [tuple(r) for r in rows] == [("m", 1, True), ("m", 1, True)]  # CREATE, refresh
    attach = (tmp_path / "wh" / "spark_attach.sql").read_text()
    assert "ivm_event_log" in attach and "${spark_ivm.warehouse}/_ivm/event_log" in attach


def test_event_log_appends_survive_a_removed_directory(tmp_path: Path) -> None:
    """Each append is one write; the directory is made again when it was removed."""
    import shutil

    from spark_exec.events import EventLog, failure_event, read_event_log

    internal = tmp_path / "_ivm"
    log = EventLog(internal)
    first = [failure_event("g", ["v"], ValueError(f"bad {i}")) for i in range(3)]
    log.append(first)
    log.append([])
    shutil.rmtree(log.directory)
    log.append(first[:1])
    log.append(first[1:])
    got = read_event_log(internal).to_pylist()
    assert [r["error"] for r in got] == [f"ValueError: bad {i}" for i in range(3)]
