"""The always-on refresher behind ``ivm serve``: warm dataflows, refreshed when inputs commit.

One process keeps a :class:`~spark_exec.session.Session` (and so every group's dataflow) in
memory and polls the Delta logs of the views' input tables.  Polling is cheap: a table's next
version exists once ``_delta_log/<version + 1>.json`` does (Delta's commit protocol writes each
version's log file exactly once), so a poll is one ``stat`` per input table; every
:data:`RESYNC_SECONDS` the versions are re-read from the tables themselves, which also catches a
table dropped and recreated at the same path.  A group is refreshed when it has never been
refreshed, when an input has a version its views do not reflect yet and a view of the group
refreshes on update (no schedule, or ``TRIGGER ON UPDATE``) or its ``SCHEDULE EVERY n`` has
passed since the group's last refresh, or — with ``every`` — every that many seconds.  A group whose refresh fails is retried after 1, 2,
4, ... seconds (at most :data:`MAX_BACKOFF_SECONDS`); the others go on.  Refreshes run one at a time under each group's
writer lock, so ``ivm refresh`` or another server on the same warehouse stays safe.

Each refresh writes one JSON line to the event stream (stdout for the CLI)::

    {"event": "refresh", "group": "default.v", "views": ["v"], "outcome": "ok", "epoch": 4,
     "input_changes": 1, "differences": 3, "rows_written": 2, "seconds": 0.041, ...}

Metrics in Prometheus' text format are served on ``http://127.0.0.1:<port>/metrics``
(``/status``: every view's status as JSON; ``/healthz``: ``ok``).  SIGTERM and SIGINT stop the
loop after the refresh in progress, if any, has committed — a refresh is atomic anyway (see
docs/refresh-protocol.md), so stopping never leaves anything half-written.
"""

from __future__ import annotations

import calendar
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO

from catalog import delta
from catalog.pipeline import GroupSpec, plan_groups
from spark_exec import status as status_file

log = logging.getLogger("ivm.serve")

#: every this many seconds the watcher re-reads every table's version from the table itself
RESYNC_SECONDS = 60.0
#: a failing group is retried after 1, 2, 4, ... seconds, at most this long apart
MAX_BACKOFF_SECONDS = 300.0


def _log_file(table_path: str, version: int) -> Path:
    return Path(table_path) / "_delta_log" / f"{version:020d}.json"


class CommitWatcher:
    """The latest committed version of each watched Delta table, polled by ``stat``."""

    def __init__(self, resync_seconds: float = RESYNC_SECONDS) -> None:
        self.resync_seconds = resync_seconds
        self._known: dict[str, int] = {}
        self._synced = float("-inf")

    def latest(self, paths: list[str]) -> dict[str, int]:
        """``{path: latest version}`` (-1 for a table that cannot be read)."""
        if time.monotonic() - self._synced >= self.resync_seconds:
            self._known.clear()
            self._synced = time.monotonic()
        out = {}
        for p in paths:
            v = self._known.get(p)
            if v is None:
                v = self._read(p)
            while v >= 0 and _log_file(p, v + 1).exists():
                v += 1
            self._known[p] = out[p] = v
        return out

    @staticmethod
    def _read(path: str) -> int:
        try:
            return delta.current_version(path)
        except Exception:  # a dropped input: the group's refresh reports it
            return -1


@dataclass
class GroupMetrics:
    """Counters of one group since the server started."""

    refreshes_ok: int = 0
    refreshes_failed: int = 0
    seconds_total: float = 0.0
    input_changes: int = 0
    differences: int = 0
    rows_written: int = 0
    last_success: float | None = None
    behind: int = 0


@dataclass
class ServerMetrics:
    """Everything ``/metrics`` shows, guarded by one lock."""

    started: float = field(default_factory=time.time)
    polls: int = 0
    groups: dict[str, GroupMetrics] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def group(self, name: str) -> GroupMetrics:
        return self.groups.setdefault(name, GroupMetrics())

    def render(self) -> str:
        """The metrics in Prometheus' text exposition format (version 0.0.4)."""
        with self.lock:
            lines = [
                "# HELP ivm_up Whether the refresher is running.",
                "# TYPE ivm_up gauge",
                "ivm_up 1",
                "# HELP ivm_start_time_seconds When the refresher started (Unix time).",
                "# TYPE ivm_start_time_seconds gauge",
                f"ivm_start_time_seconds {self.started:.3f}",
                "# HELP ivm_polls_total Polls of the input tables' Delta logs.",
                "# TYPE ivm_polls_total counter",
                f"ivm_polls_total {self.polls}",
            ]
            lines += self._per_group()
        return "\n".join(lines) + "\n"

    def _per_group(self) -> list[str]:
        out = []
        for name, kind, text, series in _GROUP_SERIES:
            out += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
            for group, m in sorted(self.groups.items()):
                for labels, attr, fmt in series:
                    value = getattr(m, attr)
                    if value is not None:  # no last success yet: no sample
                        out.append(f'{name}{{group="{_label(group)}"{labels}}} {value:{fmt}}')
        return out


#: per-group series: (name, type, help, [(extra labels, GroupMetrics field, format)])
_GROUP_SERIES: list[tuple[str, str, str, list[tuple[str, str, str]]]] = [
    (
        "ivm_refreshes_total",
        "counter",
        "Refreshes by outcome.",
        [(',outcome="ok"', "refreshes_ok", "d"), (',outcome="failed"', "refreshes_failed", "d")],
    ),
    (
        "ivm_refresh_seconds_total",
        "counter",
        "Time spent refreshing.",
        [("", "seconds_total", ".6f")],
    ),
    ("ivm_input_changes_total", "counter", "Input rows changed.", [("", "input_changes", "d")]),
    ("ivm_differences_total", "counter", "Differences processed.", [("", "differences", "d")]),
    ("ivm_rows_written_total", "counter", "View rows written.", [("", "rows_written", "d")]),
    (
        "ivm_last_success_time_seconds",
        "gauge",
        "Last successful refresh.",
        [("", "last_success", ".3f")],
    ),
    ("ivm_behind_versions", "gauge", "Input versions not yet reflected.", [("", "behind", "d")]),
]


def _label(group: str) -> str:
    return group.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Refresher:
    """Decides which groups are due and refreshes them through a Session."""

    def __init__(
        self,
        session: Any,
        *,
        every: float | None = None,
        events: Callable[[dict[str, Any]], None] | None = None,
        metrics: ServerMetrics | None = None,
        watcher: CommitWatcher | None = None,
        backoff: float = 1.0,
    ) -> None:
        self.session = session
        self.every = every
        self.events = events or (lambda e: None)
        self.metrics = metrics or ServerMetrics()
        self.watcher = watcher or CommitWatcher()
        self.backoff = backoff
        self._reflected: dict[str, Mapping[str, int]] = {}
        self._last_run: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._retry_at: dict[str, float] = {}

    def due(self) -> list[GroupSpec]:
        """The groups to refresh now (updates each group's ``behind`` gauge)."""
        specs = plan_groups(self.session.catalog)
        paths = sorted({t.path for s in specs for t in s.tables})
        latest = self.watcher.latest(paths)
        out = []
        now = time.monotonic()
        for spec in specs:
            reflected = self._reflected_versions(spec)  # None: never refreshed
            behind = sum(
                max(0, latest[t.path] - (reflected or {}).get(t.name, -1))
                if latest[t.path] >= 0
                else 1  # unreadable input: the refresh names the problem
                for t in spec.tables
            )
            with self.metrics.lock:
                self.metrics.group(spec.name).behind = behind
            waiting = now < self._retry_at.get(spec.name, float("-inf"))
            if not waiting and (reflected is None or self._wanted(spec, behind)):
                out.append(spec)
        return out

    def _wanted(self, spec: GroupSpec, behind: int) -> bool:
        """Whether the group's schedules ask for a refresh now.

        A view without a schedule, or with ``TRIGGER ON UPDATE``, wants one as soon as an input
        commits; a view with ``SCHEDULE EVERY n`` once ``n`` has passed since the group's last
        refresh (and its inputs changed).  ``--every`` refreshes every group on that cadence."""
        elapsed = time.time() - self._last_refresh(spec.name)
        if self.every is not None and elapsed >= self.every:
            return True
        if not behind:
            return False
        schedules = [getattr(v, "options", None) for v in spec.views]
        every = [o.schedule.seconds for o in schedules if o and o.schedule and o.schedule.seconds]
        on_update = any(o is None or o.schedule is None or o.schedule.on_update for o in schedules)
        return on_update or (bool(every) and elapsed >= min(every))

    def _last_refresh(self, group: str) -> float:
        """Wall-clock time of the group's last refresh: this server's, else the status file's
        ``last_success`` (so a restarted server keeps the schedule), else never."""
        if group not in self._last_run:
            stamp = status_file.read(self.session.catalog, group).get("last_success")
            when: float
            try:
                when = calendar.timegm(time.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ"))
            except ValueError:
                when = float("-inf")
            self._last_run[group] = float(when)
        return self._last_run[group]

    def _reflected_versions(self, spec: GroupSpec) -> Mapping[str, int] | None:
        """The input versions the group's checkpoint reflects (``None``: no checkpoint)."""
        known = self._reflected.get(spec.name)
        if known is not None:
            return known
        try:
            manifest = self.session.catalog.checkpoints.manifest(spec.name)
        except Exception:
            manifest = None
        if manifest is None:
            return None
        versions: Mapping[str, int] = {k: int(v) for k, v in manifest.input_versions.items()}
        self._reflected[spec.name] = versions
        return versions

    def refresh(self, spec: GroupSpec) -> dict[str, Any]:
        """Refresh one group; returns (and emits) its event."""
        started = time.perf_counter()
        event: dict[str, Any] = {
            "event": "refresh",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "group": spec.name,
            "views": list(spec.view_names),
        }
        try:
            reports = self.session.refresh(spec.views[0].name)
        except Exception as exc:
            failures = self._failures[spec.name] = self._failures.get(spec.name, 0) + 1
            wait = min(MAX_BACKOFF_SECONDS, self.backoff * 2 ** (failures - 1))
            self._retry_at[spec.name] = time.monotonic() + wait
            event.update(outcome="failed", error=f"{type(exc).__name__}: {exc}", retry_in=wait)
            ok = False
            reports = []
        else:
            ok = True
            self._failures.pop(spec.name, None)
            self._retry_at.pop(spec.name, None)
            event.update(outcome="ok", **_summary(reports))
        self._reflected.pop(spec.name, None)  # re-read from the committed manifest
        seconds = time.perf_counter() - started
        event["seconds"] = round(seconds, 4)
        self._last_run[spec.name] = time.time()
        self._count(spec.name, ok, seconds, reports)
        self.events(event)
        return event

    def _count(self, group: str, ok: bool, seconds: float, reports: list[Any]) -> None:
        with self.metrics.lock:
            m = self.metrics.group(group)
            m.seconds_total += seconds
            if not ok:
                m.refreshes_failed += 1
                return
            m.refreshes_ok += 1
            m.last_success = time.time()
            m.behind = 0
            if reports:
                m.input_changes += reports[0].rows_in
                m.differences += reports[0].differences
                m.rows_written += sum(r.rows_written for r in reports)

    def tick(self) -> list[dict[str, Any]]:
        """One poll: refresh every due group."""
        with self.metrics.lock:
            self.metrics.polls += 1
        return [self.refresh(spec) for spec in self.due()]


def _summary(reports: list[Any]) -> dict[str, Any]:
    if not reports:
        return {"epoch": None, "committed": False}
    first = reports[0]
    return {
        "epoch": first.epoch,
        "committed": any(r.committed for r in reports),
        "input_changes": first.rows_in,
        "differences": first.differences,
        "rows_written": sum(r.rows_written for r in reports),
        "input_versions": dict(first.input_versions),
    }


# -- HTTP ----------------------------------------------------------------------------------


def _handler(metrics: ServerMetrics, status: Callable[[], Any]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] == "/metrics":
                self._send(200, metrics.render(), "text/plain; version=0.0.4")
            elif self.path == "/healthz":
                self._send(200, "ok\n", "text/plain")
            elif self.path == "/status":
                self._send(200, json.dumps(status(), default=str) + "\n", "application/json")
            else:
                self._send(404, "not found: try /metrics, /status or /healthz\n", "text/plain")

        def _send(self, code: int, body: str, kind: str) -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http: " + format, *args)

    return Handler


@contextmanager
def metrics_server(
    metrics: ServerMetrics, status: Callable[[], Any], host: str, port: int
) -> Iterator[ThreadingHTTPServer]:
    """Serve ``/metrics``, ``/status`` and ``/healthz`` on ``host:port`` in a thread."""
    server = ThreadingHTTPServer((host, port), _handler(metrics, status))
    thread = threading.Thread(target=server.serve_forever, name="ivm-metrics", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


# -- the loop ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServeOptions:
    """How ``ivm serve`` runs: poll ``interval`` seconds, optional fixed ``every``, metrics
    on ``host:port`` (``port`` 0: any free port; ``None``: no HTTP)."""

    interval: float = 2.0
    every: float | None = None
    host: str = "127.0.0.1"
    port: int | None = 9464


def json_lines(stream: TextIO) -> Callable[[dict[str, Any]], None]:
    """An event sink writing one JSON object per line, flushed."""
    lock = threading.Lock()

    def emit(event: dict[str, Any]) -> None:
        with lock:
            stream.write(json.dumps(event, default=str, sort_keys=True) + "\n")
            stream.flush()

    return emit


def _status_rows(session: Any) -> list[dict[str, Any]]:
    return list(session.show_views().to_pylist())


def serve(
    session: Any,
    options: ServeOptions,
    emit: Callable[[dict[str, Any]], None],
    stop: threading.Event | None = None,
) -> int:
    """Run the refresher until ``stop`` is set (by SIGTERM/SIGINT when called from the main
    thread); returns the process exit status (0)."""
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    metrics = ServerMetrics()
    refresher = Refresher(session, every=options.every, events=emit, metrics=metrics)
    with _maybe_http(metrics, session, options) as url:
        emit(
            {
                "event": "serving",
                "pid": os.getpid(),
                "warehouse": str(session.warehouse),
                "interval": options.interval,
                "metrics": url,
            }
        )
        while not stop.is_set():
            try:
                refresher.tick()
            except Exception as exc:  # e.g. an unreadable catalog: report, keep serving
                emit({"event": "error", "error": f"{type(exc).__name__}: {exc}"})
            stop.wait(options.interval)
    emit({"event": "stopped", "pid": os.getpid()})
    return 0


@contextmanager
def _maybe_http(
    metrics: ServerMetrics, session: Any, options: ServeOptions
) -> Iterator[str | None]:
    if options.port is None:
        yield None
        return
    with metrics_server(metrics, lambda: _status_rows(session), options.host, options.port) as srv:
        port = srv.server_address[1]
        yield f"http://{options.host}:{port}/metrics"
