"""The ``ivm`` command: SQL scripts, Datalog programs, refreshes and the demo on a warehouse.

::

    ivm [--warehouse DIR] sql FILE.sql        run ;-separated statements, print results
    ivm [--warehouse DIR] datalog FILE.dl     one materialized view per .output relation
    ivm [--warehouse DIR] refresh [VIEW]      refresh every view (or VIEW's group)
    ivm [--warehouse DIR] explain VIEW        plan, refresh group and dataflow of a view
    ivm [--warehouse DIR] status              every view: fresh/stale/failed, last refresh,
                                              input versions, versions behind, last error
    ivm [--warehouse DIR] demo                the tour: tables, views, changes, refreshes
    ivm --version                             the installed version
    ivm --progress / --no-progress ...        a progress bar for view loads and refreshes
                                              (default: when stdout is a terminal, not in CI)

The warehouse defaults to ``./warehouse``.  This module is the command line only; it imports
the Session (and so Spark and Delta) when a command runs.  It lives in the facade package
(``spark_exec``) because it drives the whole product; the engine (``ivm``) never imports it.
``python -m ivm`` reaches it through ``ivm/__main__.py``, an entry point nothing imports (see
docs/architecture.md, "Layering").

Exit codes: ``0`` success; ``1`` an error in what was asked (bad SQL or Datalog, an unknown
view, an unreadable input file, a warehouse that is not a directory, a failed refresh group:
every :class:`ivm.errors.IvmError`); ``2`` bad command-line usage; ``3`` an internal error
(a bug: please report it with the output of ``--debug``); ``130`` interrupted.  Errors are
one line on stderr, ``error: <type>: <message>``; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ivm import __version__

if TYPE_CHECKING:
    from spark_exec.result import SqlResult
    from spark_exec.session import Session

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


class InputFileError(Exception):
    """A command-line input file that cannot be used (missing, a directory, not text)."""


class WarehouseArgumentError(Exception):
    """``--warehouse`` that names something other than a directory."""


@contextmanager
def progress(label: str, stream: Any = None) -> Iterator[list[str]]:
    """A spinner on stderr while a step runs (a plain line when stderr is not a terminal;
    nothing under ``CI=true``).  It yields a one-item list: what the caller writes there
    (e.g. the current refresh step) is shown beside the label."""
    stream = stream or sys.stderr
    detail = [""]
    if os.environ.get("CI", "").lower() == "true":
        yield detail
        return
    started = time.perf_counter()
    if not stream.isatty():
        print(f"... {label}", file=stream, flush=True)
        yield detail
        print(f"    done in {time.perf_counter() - started:.1f}s", file=stream, flush=True)
        return
    stop = threading.Event()

    def spin() -> None:
        frames = "|/-\\"
        i = 0
        while not stop.wait(0.1):
            text = f"{label} {time.perf_counter() - started:5.1f}s {detail[0]}"[:100]
            stream.write(f"\r{frames[i % 4]} {text:<100}")
            stream.flush()
            i += 1

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    try:
        yield detail
    finally:
        stop.set()
        t.join()
        stream.write(f"\r  {f'{label} {time.perf_counter() - started:5.1f}s':<100}\n")
        stream.flush()


@contextmanager
def refresh_display(args: argparse.Namespace, label: str, session: Session) -> Iterator[None]:
    """While a step that may refresh runs: the progress bar (spark_exec.progress_bar) when it
    is wanted (``--progress``, or a terminal outside CI), else :func:`progress`'s spinner
    showing the current refresh step."""
    from spark_exec.progress_bar import RefreshProgressBar, wanted

    before = session.on_event
    try:
        if wanted(args.progress, sys.stdout):
            with RefreshProgressBar(sys.stdout, force=bool(args.progress), then=before) as bar:
                session.on_event = bar.on_event
                yield
        else:
            with progress(label) as detail:

                def show(event: dict[str, Any]) -> None:
                    if event["event"] != "progress":
                        detail[0] = f"{event.get('group', '')}: {event.get('step', event['event'])}"
                    if before is not None:
                        before(event)

                session.on_event = show
                yield
    finally:
        session.on_event = before


def _limit_flag(value: int | None) -> int | str | None:
    """A CLI limit: absent (``None``) leaves it to the other sources, 0 lifts it."""
    return None if value is None else ("none" if value == 0 else value)


def _settings(args: argparse.Namespace) -> Any:
    """The settings of this run: flags, then ``IVM_*`` variables, then the config file."""
    from spark_exec.config import UNSET, load_settings

    conf = dict(kv.partition("=")[::2] for kv in args.spark_conf or ())
    limits = {
        k: UNSET if v is None else v
        for k, v in (
            ("max_iterations", _limit_flag(args.max_iterations)),
            ("max_state_rows", _limit_flag(args.max_state_rows)),
            ("memory_budget", _limit_flag(args.memory_budget)),
        )
    }
    return load_settings(
        {
            "warehouse": args.warehouse,
            "spark_master": args.spark_master,
            "spark_conf": conf or None,
            "shuffle_partitions": args.shuffle_partitions,
            "lock_timeout": args.lock_timeout,
            "executor": args.executor,
            "shards": args.shards,
            "executor_memory_budget": args.executor_memory_budget,
            "executor_bytes_per_row": args.executor_bytes_per_row,
            "executor_large_change_rows": args.executor_large_change_rows,
            **limits,
        },
        config_file=args.config,
    )


def _session(args: argparse.Namespace, *, warm_up: bool = False) -> Session:
    """The Session of a command.  ``warm_up``: load the engine on a thread while the command
    runs (spark_exec.warmup): only for ``serve``; a one-shot command needs the same modules
    at once, and loading them on two threads at once only contends (a cold ``ivm refresh``
    took 1.86 s with it, 1.59 s without)."""
    from catalog.paths import Warehouse
    from spark_exec.session import Session
    from spark_exec.sharded import ExecutorPolicy

    settings = _settings(args)
    wh = Warehouse(settings.warehouse)
    if not wh.remote and wh.root.exists() and not wh.root.is_dir():
        raise WarehouseArgumentError(
            f"warehouse {settings.warehouse} ({settings.sources.get('warehouse', 'default')}): "
            "not a directory (give the warehouse directory; it is created when missing)"
        )
    return Session(
        warehouse=settings.warehouse,
        max_iterations=settings.max_iterations,
        max_state_rows=settings.max_state_rows,
        memory_budget=settings.memory_budget,
        spark_master=settings.spark_master,
        spark_conf=settings.spark_conf,
        shuffle_partitions=settings.shuffle_partitions,
        lock_timeout=settings.lock_timeout,
        config=args.config,
        executor=settings.executor,
        shards=settings.shards,
        executor_policy=ExecutorPolicy.of(settings),
        warm_up=warm_up,
    )


def read_text_file(path: str, what: str) -> str:
    """The UTF-8 text of an input file, or :class:`InputFileError` saying what is wrong."""
    p = Path(path)
    try:
        exists = p.exists()
    except OSError:  # e.g. a name longer than the file system allows
        exists = False
    if not exists:
        hint = ""
        if what == "SQL" and (" " in path or ";" in path):
            hint = " (to run SQL text rather than a file: ivm sql -e '...')"
        short = path if len(path) <= 80 else path[:77] + "..."
        raise InputFileError(f"{short}: no such {what} file{hint}")
    if p.is_dir():
        raise InputFileError(f"{path}: is a directory, not a {what} file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
    if b"\0" in data:
        raise InputFileError(f"{path}: a binary file, not {what} text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"{path}: not UTF-8 text (byte {exc.start} cannot be decoded); save it as UTF-8"
        ) from exc


def _print_result(r: SqlResult) -> None:
    """A statement's result: its message, and its rows for queries, SHOW and DESCRIBE."""
    text = str(r)
    if text:
        print(text)


def cmd_sql(args: argparse.Namespace) -> int:
    from spark_exec.statements import split_statements

    if (args.file is None) == (args.execute is None):
        raise InputFileError("ivm sql: give a SQL file or -e 'statements', one of the two")
    text = args.execute if args.execute is not None else read_text_file(args.file, "SQL")
    s = _session(args)
    for st in split_statements(text):
        first = st.body.splitlines()[0][:70]
        with refresh_display(args, f"line {st.line}: {first}", s):
            r = s._run(st)
        _print_result(r)
    return 0


def cmd_datalog(args: argparse.Namespace) -> int:
    text = read_text_file(args.file, "Datalog")
    s = _session(args)
    with refresh_display(args, f"datalog {args.file}", s):
        reports = s.datalog(text)
    for r in reports:
        print(r)
    return 0


def cmd_refresh(args: argparse.Namespace) -> int:
    from spark_exec.errors import RefreshFailedError

    s = _session(args)
    try:
        with refresh_display(args, "refresh", s):
            reports = s.refresh(args.view, full=args.full)
    except RefreshFailedError as exc:
        for r in exc.reports:  # the groups that did refresh
            print(r)
        raise
    for r in reports:
        print(r)
    if not reports:
        print("no materialized views")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from spark_exec.result import format_table

    rows = _session(args).show_views()
    print(format_table(rows) if rows.num_rows else "no materialized views")
    return 1 if "failed" in rows.column("status").to_pylist() else 0


def cmd_explain(args: argparse.Namespace) -> int:
    print(_session(args).explain(args.view))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from catalog.paths import Warehouse
    from spark_exec.demo import run_demo

    return run_demo(
        Warehouse(_settings(args).warehouse).root / "demo",
        progress=progress,
        # the progress bar on a terminal (or with --progress), the spinner otherwise
        refreshing=lambda label, session: refresh_display(args, label, session),
    )


def cmd_serve(args: argparse.Namespace) -> int:
    """Keep the dataflows warm and refresh views as their inputs commit (spark_exec.serve)."""
    from spark_exec.serve import ServeOptions, json_lines, serve

    options = ServeOptions(
        interval=args.interval,
        every=args.every,
        host=args.host,
        port=None if args.no_http else args.port,
    )
    return serve(_session(args, warm_up=True), options, json_lines(sys.stdout))


def cmd_pipelines_run(args: argparse.Namespace) -> int:
    """Run a Spark Declarative Pipelines project, its materialized views maintained here."""
    from spark_exec.pipelines import run_pipeline

    s = _session(args)
    with refresh_display(args, f"pipeline {args.spec}", s):
        run = run_pipeline(s, args.spec)
    print(run)
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    """Print every setting, its value and where it came from."""
    settings = _settings(args)
    rows = settings.describe()
    width = max(len(name) for name, _, _ in rows)
    print(f"config file: {settings.config_file or '(none)'}")
    for name, value, source in rows:
        print(f"{name.ljust(width)}  {value}  [{source}]")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``ivm`` command line: the global options, then one subcommand."""
    p = argparse.ArgumentParser(
        prog="ivm",
        description="Incrementally maintained views for Apache Spark on differential dataflow.",
    )
    _add_global_options(p)
    _add_commands(p.add_subparsers(dest="command", required=True))
    return p


def _add_global_options(p: argparse.ArgumentParser) -> None:
    """The options of every subcommand: the warehouse, output, Spark and limits."""
    # kept whole: a flat list of option declarations, one per setting (docs/configuration.md)
    p.add_argument(
        "--warehouse",
        default=None,
        help="warehouse directory (default: $IVM_WAREHOUSE, the config file, or ./warehouse)",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s (spark-ivm) {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log what refreshes do")
    p.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar for loads and refreshes (default: on a terminal outside CI)",
    )
    p.add_argument("--config", default=None, help="TOML settings file (default: ./ivm.toml)")
    p.add_argument("--spark-master", default=None, help="Spark master (default local[*])")
    p.add_argument(
        "--spark-conf",
        action="append",
        metavar="KEY=VALUE",
        help="a Spark setting for the session this run starts (repeatable)",
    )
    p.add_argument(
        "--shuffle-partitions", type=int, default=None, help="default: the number of cores"
    )
    p.add_argument(
        "--lock-timeout",
        type=float,
        default=None,
        help="seconds to wait for a view group's writer lock (default 300)",
    )
    p.add_argument(
        "--max-iterations",
        type=int,
        default=None,
        help="rounds of one loop per refresh, 0: no limit (default 10000)",
    )
    p.add_argument(
        "--max-state-rows",
        type=int,
        default=None,
        help="rows held by a group's state, 0: no limit (default 200000000)",
    )
    p.add_argument(
        "--memory-budget",
        type=int,
        default=None,
        help="resident bytes of this process, 0: no limit (default: 80%% of the memory)",
    )
    p.add_argument(
        "--executor",
        choices=("local", "spark", "auto"),
        default=None,
        help="where epochs of views without 'ivm.executor' run (default local)",
    )
    p.add_argument("--shards", type=int, default=None, help="shards of a sharded epoch (2)")
    p.add_argument(
        "--executor-memory-budget",
        default=None,
        metavar="SIZE",
        help="'auto' runs an epoch sharded when its state needs more (default 4GiB)",
    )
    p.add_argument(
        "--executor-bytes-per-row",
        type=int,
        default=None,
        help="bytes 'auto' counts per state row (default 1024)",
    )
    p.add_argument(
        "--executor-large-change-rows",
        type=int,
        default=None,
        help="'auto' runs a change of this many rows sharded (default 1000000)",
    )


def _add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The subcommands, each with its handler as ``fn``."""
    s = sub.add_parser("sql", help="run the ;-separated statements of a SQL file (or of -e TEXT)")
    s.add_argument("file", nargs="?")
    s.add_argument("-e", "--execute", metavar="SQL", help="run these statements instead of a file")
    s.set_defaults(fn=cmd_sql)
    d = sub.add_parser("datalog", help="create views from a Datalog program's .output relations")
    d.add_argument("file")
    d.set_defaults(fn=cmd_datalog)
    r = sub.add_parser("refresh", help="refresh every materialized view, or one view's group")
    r.add_argument("view", nargs="?")
    r.add_argument(
        "--full", action="store_true", help="recompute from the inputs (repairs checkpoints)"
    )
    r.set_defaults(fn=cmd_refresh)
    st = sub.add_parser("status", help="each view: fresh/stale/failed, versions behind, error")
    st.set_defaults(fn=cmd_status)
    e = sub.add_parser("explain", help="show how a view is computed")
    e.add_argument("view")
    e.set_defaults(fn=cmd_explain)
    m = sub.add_parser("demo", help="the tour (on <warehouse>/demo, wiped first)")
    m.set_defaults(fn=cmd_demo)
    sv = sub.add_parser(
        "serve", help="refresh views as their inputs commit; metrics on http://127.0.0.1:PORT"
    )
    sv.add_argument("--interval", type=float, default=2.0, help="seconds between polls (2)")
    sv.add_argument(
        "--every", type=float, default=None, help="also refresh each group every N seconds"
    )
    sv.add_argument("--host", default="127.0.0.1", help="metrics address (127.0.0.1)")
    sv.add_argument("--port", type=int, default=9464, help="metrics port, 0: any free (9464)")
    sv.add_argument("--no-http", action="store_true", help="no metrics endpoint")
    sv.set_defaults(fn=cmd_serve)
    pl = sub.add_parser("pipelines", help="Spark Declarative Pipelines projects")
    pl_sub = pl.add_subparsers(dest="pipelines_command", required=True)
    pr = pl_sub.add_parser(
        "run", help="create or refresh a pipeline's materialized views incrementally"
    )
    pr.add_argument("spec", nargs="?", default=".", help="spark-pipeline.yml or its directory")
    pr.set_defaults(fn=cmd_pipelines_run)
    c = sub.add_parser("config", help="show every setting, its value and where it came from")
    c.set_defaults(fn=cmd_config)


def console_main() -> NoReturn:
    """The ``ivm`` command: :func:`main`, its return value as the exit status."""
    sys.exit(main())


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    from ivm.errors import IvmError

    try:
        return int(args.fn(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (IvmError, InputFileError, WarehouseArgumentError) as exc:
        _report(exc, args.debug)
        return EXIT_USER_ERROR
    except OSError as exc:  # the warehouse or a file the system refused (permissions, space)
        _report(exc, args.debug)
        return EXIT_USER_ERROR
    except Exception as exc:
        _report(exc, args.debug, internal=True)
        return EXIT_INTERNAL


def _report(exc: BaseException, debug: bool, *, internal: bool = False) -> None:
    if debug:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    kind = "internal error" if internal else "error"
    print(f"{kind}: {type(exc).__name__}: {exc}", file=sys.stderr)
    if internal and not debug:
        print("this is a bug; run again with --debug and report the traceback", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
