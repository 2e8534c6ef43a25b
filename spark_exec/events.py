"""What refreshes do, as events: a callback for the API and a log that Spark queries as a table.

``Session(on_event=callback)`` calls ``callback(event)`` with a dict per step of a refresh:

* ``{"event": "group", "group": g, "views": [...]}`` when a group's refresh starts;
* ``{"event": "phase", "group": g, "step": name}`` at each step of it (the names of
  docs/refresh-protocol.md: ``locked``, ``checkpointed``, ``committed``, ...);
* ``{"event": "progress", "group": g, "phase": p, "done": n, "total": m, "unit": u,
  "fraction": f}`` as it advances (:mod:`catalog.pipeline.progress`: ``read`` rows or inputs,
  ``engine`` operators, ``commit`` changed rows written; ``f`` is the whole refresh's share done, never
  decreasing, 1.0 in its last progress event) — also for the first load of a new view;
* ``{"event": "refresh", ...}`` per view once its group committed (the fields of its
  :class:`~catalog.pipeline.RefreshReport`), or ``{"event": "failed", "error": ...}``.

Every ``refresh`` and ``failed`` event is also appended to the warehouse's event log,
``<warehouse>/_ivm/event_log/``: JSON lines, one file per process and day, written with one
``write`` per refresh (no fsync: it is a record, not state).  Spark reads it as the table
``ivm_event_log`` (:data:`EVENT_LOG_DDL`; registered by the Session and in the attach script),
and :func:`read_event_log` reads it without Spark.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from catalog.object_path import is_object_path
from catalog.pipeline.progress import Progress
from catalog.small_files import open_making_directory
from catalog.sql_types import arrow_to_sql, columns_schema

#: one field of an event: text, a count, a time, a flag, a list of names (views), or NULL
EventValue = str | int | float | bool | list[str] | None
#: one refresh event (the fields of each kind are listed above)
Event = dict[str, EventValue]
#: what ``Session(on_event=...)`` calls with each event
EventCallback = Callable[[Event], None]

EVENT_LOG_TABLE = "ivm_event_log"
#: the event log's columns (a refresh event per view; a failure per group)
EVENT_LOG_SCHEMA = columns_schema(
    "time STRING, event STRING, view STRING, group STRING, epoch BIGINT, committed BOOLEAN, "
    "version BIGINT, input_changes BIGINT, differences BIGINT, rows_written BIGINT, "
    "seconds DOUBLE, recomputed BOOLEAN, input_versions STRING, executor STRING, "
    "error STRING, pid BIGINT"
)


def event_log_dir(internal_dir: Path) -> Path:
    return internal_dir / "event_log"


def event_log_ddl(location: str) -> str:
    """``CREATE TABLE`` of the event log over its JSON files (``location``: a SQL literal)."""
    cols = ", ".join(f"`{f.name}` {arrow_to_sql(f.type)}" for f in EVENT_LOG_SCHEMA)
    return f"CREATE TABLE IF NOT EXISTS {EVENT_LOG_TABLE} ({cols}) USING json LOCATION {location}"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def report_event(report: Any) -> Event:
    """The ``refresh`` event of one view's refresh report."""
    return {
        "time": _now(),
        "event": "refresh",
        "view": report.view,
        "group": report.group,
        "epoch": report.epoch,
        "committed": report.committed,
        "version": report.version,
        "input_changes": report.rows_in,
        "differences": report.differences,
        "rows_written": report.rows_written,
        "seconds": round(float(report.seconds), 6),
        "recomputed": report.recomputed,
        "input_versions": json.dumps(dict(report.input_versions), sort_keys=True),
        # where the epoch ran, its shard balance, rounds and bytes exchanged (JSON)
        "executor": json.dumps(report.placement.to_json(), sort_keys=True),
        "pid": os.getpid(),
    }


def progress_event(p: Progress) -> Event:
    """The ``progress`` event of a refresh's progress report (not logged: a display's feed)."""
    return {
        "event": "progress",
        "group": p.group,
        "phase": p.phase,
        "done": p.done,
        "total": p.total,
        "unit": p.unit,
        "fraction": p.fraction,
    }


def failure_event(group: str, views: list[str], error: BaseException) -> Event:
    return {
        "time": _now(),
        "event": "failed",
        "group": group,
        "view": ", ".join(views),
        "error": f"{type(error).__name__}: {error}"[:4000],
        "pid": os.getpid(),
    }


class EventLog:
    """Appends refresh events to the warehouse's event log (see the module docstring)."""

    def __init__(self, internal_dir: Path) -> None:
        self.directory = event_log_dir(internal_dir)

    def append(self, events: Sequence[Mapping[str, Any]]) -> None:
        if not events:
            return
        day = time.strftime("%Y%m%d", time.gmtime())
        data = "".join(json.dumps(dict(e), sort_keys=True, default=str) + "\n" for e in events)
        if is_object_path(self.directory):  # no appends on an object store: one object each
            name = f"events-{day}-{os.getpid()}-{time.time_ns()}.json"
            with contextlib.suppress(OSError):
                (self.directory / name).write_text(data)
            return
        path = self.directory / f"events-{day}-{os.getpid()}.json"
        try:  # one append by one write; the directory is made when the first finds none
            fd = open_making_directory(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                os.write(fd, data.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError:  # a read-only warehouse: the refresh itself reports the real problem
            pass


def read_event_log(internal_dir: Path) -> pa.Table:
    """Every logged event, oldest file first, as Arrow (no Spark)."""
    rows: list[dict[str, Any]] = []
    directory = event_log_dir(internal_dir)
    for path in sorted(directory.glob("events-*.json")) if directory.is_dir() else []:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    names = set(EVENT_LOG_SCHEMA.names)
    rows = [{k: v for k, v in r.items() if k in names} for r in rows]
    return pa.Table.from_pylist(rows, schema=EVENT_LOG_SCHEMA)
