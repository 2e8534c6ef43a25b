"""The ``ivm`` command: SQL scripts, Datalog programs, refreshes and the demo on a warehouse.

::

    ivm [--warehouse DIR] sql FILE.sql        run ;-separated statements, print results
    ivm [--warehouse DIR] datalog FILE.dl     one materialized view per .output relation
    ivm [--warehouse DIR] refresh [VIEW]      refresh every view (or VIEW's group)
    ivm [--warehouse DIR] explain VIEW        plan, refresh group and dataflow of a view
    ivm [--warehouse DIR] demo                the tour: tables, views, changes, refreshes

The warehouse defaults to ``./warehouse``.  This module is the command line only; it imports
the Session (and so Spark and Delta) when a command runs, never at engine import time.
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
from typing import Any

EXIT_USER_ERROR = 2


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


def _session(args: argparse.Namespace) -> Any:
    from spark_exec.session import Session

    return Session(warehouse=args.warehouse)


def _print_result(r: Any) -> None:
    if r is None:
        return
    if hasattr(r, "show") and hasattr(r, "collect"):  # a Spark DataFrame
        r.show(50, truncate=False)
    else:
        print(r)


def cmd_sql(args: argparse.Namespace) -> int:
    from spark_exec.statements import split_statements

    s = _session(args)
    text = Path(args.file).read_text(encoding="utf-8")
    for st in split_statements(text):
        first = st.body.splitlines()[0][:70]
        with progress(f"line {st.line}: {first}"):
            r = s._run(st)
        _print_result(r)
    return 0


def cmd_datalog(args: argparse.Namespace) -> int:
    s = _session(args)
    with progress(f"datalog {args.file}"):
        reports = s.datalog(Path(args.file).read_text(encoding="utf-8"))
    for r in reports:
        print(r)
    return 0


def cmd_refresh(args: argparse.Namespace) -> int:
    s = _session(args)
    with progress("refresh"):
        reports = s.refresh(args.view)
    for r in reports:
        print(r)
    if not reports:
        print("no materialized views")
    return 0


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
    p.add_argument("-v", "--verbose", action="store_true", help="log what refreshes do")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sql", help="run the ;-separated statements of a SQL file")
    s.add_argument("file")
    s.set_defaults(fn=cmd_sql)
    d = sub.add_parser("datalog", help="create views from a Datalog program's .output relations")
    d.add_argument("file")
    d.set_defaults(fn=cmd_datalog)
    r = sub.add_parser("refresh", help="refresh every materialized view, or one view's group")
    r.add_argument("view", nargs="?")
    r.set_defaults(fn=cmd_refresh)
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
    except IvmError as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
