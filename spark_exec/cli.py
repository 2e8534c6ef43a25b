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
from typing import TYPE_CHECKING, Any

from ivm import __version__

if TYPE_CHECKING:
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
def progress(label: str, stream: Any = None) -> Iterator[None]:
    """A spinner on stderr while a step runs (a plain line when stderr is not a terminal;
    nothing under ``CI=true``)."""
    stream = stream or sys.stderr
    if os.environ.get("CI", "").lower() == "true":
        yield
        return
    started = time.perf_counter()
    if not stream.isatty():
        print(f"... {label}", file=stream, flush=True)
        yield
        print(f"    done in {time.perf_counter() - started:.1f}s", file=stream, flush=True)
        return
    stop = threading.Event()

    def spin() -> None:
        frames = "|/-\\"
        i = 0
        while not stop.wait(0.1):
            stream.write(f"\r{frames[i % 4]} {label} {time.perf_counter() - started:5.1f}s")
            stream.flush()
            i += 1

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()
        stream.write(f"\r  {label} {time.perf_counter() - started:5.1f}s\n")
        stream.flush()


def _session(args: argparse.Namespace) -> Session:
    from spark_exec.session import Session

    wh = Path(args.warehouse)
    if wh.exists() and not wh.is_dir():
        raise WarehouseArgumentError(
            f"--warehouse {args.warehouse}: not a directory (give the warehouse directory; "
            "it is created when missing)"
        )
    return Session(
        warehouse=args.warehouse,
        max_iterations=args.max_iterations or None,
        max_state_rows=args.max_state_rows or None,
        memory_budget=args.memory_budget or None,
    )


def read_text_file(path: str, what: str) -> str:
    """The UTF-8 text of an input file, or :class:`InputFileError` saying what is wrong."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"{path}: no such {what} file")
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


def _print_result(r: Any) -> None:
    if r is None:
        return
    if hasattr(r, "show") and hasattr(r, "collect"):  # a Spark DataFrame
        r.show(50, truncate=False)
    else:
        print(r)


def cmd_sql(args: argparse.Namespace) -> int:
    from spark_exec.statements import split_statements

    text = read_text_file(args.file, "SQL")
    s = _session(args)
    for st in split_statements(text):
        first = st.body.splitlines()[0][:70]
        with progress(f"line {st.line}: {first}"):
            r = s._run(st)
        _print_result(r)
    return 0


def cmd_datalog(args: argparse.Namespace) -> int:
    text = read_text_file(args.file, "Datalog")
    s = _session(args)
    with progress(f"datalog {args.file}"):
        reports = s.datalog(text)
    for r in reports:
        print(r)
    return 0


def cmd_refresh(args: argparse.Namespace) -> int:
    from spark_exec.errors import RefreshFailedError

    s = _session(args)
    try:
        with progress("refresh"):
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
    from spark_exec.session import _format_table

    rows = _session(args).show_views()
    print(_format_table(rows) if rows.num_rows else "no materialized views")
    return 1 if "failed" in rows.column("status").to_pylist() else 0


def cmd_explain(args: argparse.Namespace) -> int:
    print(_session(args).explain(args.view))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from spark_exec.demo import run_demo

    return run_demo(Path(args.warehouse) / "demo", progress=progress)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ivm",
        description="Incrementally maintained views for Apache Spark on differential dataflow.",
    )
    p.add_argument(
        "--warehouse", default="warehouse", help="warehouse directory (default: ./warehouse)"
    )
    p.add_argument("--version", action="version", version=f"%(prog)s (spark-ivm) {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log what refreshes do")
    p.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    from ivm.limits import DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_STATE_ROWS, default_memory_budget

    p.add_argument(
        "--max-iterations",
        type=int,
        default=DEFAULT_MAX_ITERATIONS,
        help=f"rounds of one loop per refresh, 0: no limit (default {DEFAULT_MAX_ITERATIONS})",
    )
    p.add_argument(
        "--max-state-rows",
        type=int,
        default=DEFAULT_MAX_STATE_ROWS,
        help=f"rows held by a group's state, 0: no limit (default {DEFAULT_MAX_STATE_ROWS})",
    )
    p.add_argument(
        "--memory-budget",
        type=int,
        default=default_memory_budget() or 0,
        help="resident bytes of this process, 0: no limit (default: 80%% of the memory)",
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sql", help="run the ;-separated statements of a SQL file")
    s.add_argument("file")
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
    return p


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
