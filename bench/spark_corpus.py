"""Run a corpus of Spark SQL files as views and compare each with Spark (issue 19).

``python -m bench.spark_corpus DIR [--glob PATTERN] [--verbose] [--json OUT]``

Every ``*.sql`` file under ``DIR`` is read the way Spark's own SQL test suite reads its
inputs: lines starting with ``--`` are comments, statements end with ``;``. Statements that
are not queries (``CREATE TEMPORARY VIEW``, ``CREATE TABLE``, ``INSERT``, ``DROP``...) run in
Spark, in order; ``SET`` statements are skipped, so both sides use the default (ANSI)
configuration. Every query then

1. runs in Spark (a query Spark rejects is counted apart and not compared);
2. is compiled by :func:`sql_frontend.compile.compile_view` over the relations it reads —
   their Spark schemas and rows, as base tables of one :class:`ivm.Dataflow` — and computed;
3. is compared with Spark's rows as a multiset, and its column names with ``df.columns``.

The verdicts: *accepted* (same rows), *refused* (a typed :class:`ivm.errors.IvmError` at
creation, grouped by reason), *mismatched* (different rows, or a typed runtime error where
Spark answers), *untyped* (any other exception: a bug). A relation whose type the engine
cannot hold (arrays, maps, structs...) makes the query *refused* too.

The corpus is not part of this repository; point ``DIR`` at a copy of Spark's
``sql/core/src/test/resources/sql-tests/inputs`` (or any directory of such files).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import sys
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

QUERY_START = re.compile(r"^\s*\(*\s*(select|with|values|from|table)\b", re.IGNORECASE)
SKIPPED = re.compile(r"^\s*(set|reset|explain|describe|desc|show|cache|uncache|refresh)\b", re.I)


def statements(text: str) -> list[str]:
    """The statements of a file: comment lines dropped, split at ``;`` outside quotes."""
    body = "\n".join(line for line in text.splitlines() if not line.strip().startswith("--"))
    out: list[str] = []
    buf: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(body):
        ch = body[i]
        if quote:
            buf.append(ch)
            if ch == "\\" and quote != "`" and i + 1 < len(body):
                buf.append(body[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
            buf.append(ch)
        elif ch == ";":
            out.append("".join(buf).strip())
            buf = []
        else:
            buf.append(ch)
        i += 1
    out.append("".join(buf).strip())
    return [s for s in out if s]


def normalize(v: Any) -> Any:
    """A value in a form both sides agree on (floats to 6 significant digits, Decimals
    without trailing zeros, bytearrays as bytes, Rows and lists as tuples)."""
    if hasattr(v, "item") and not isinstance(v, list | tuple | dict):  # numpy scalar
        v = v.item()
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return v
        return float(f"{v:.6g}")
    if isinstance(v, Decimal):
        return float(f"{float(v):.6g}") if v == v else "NaN"
    if isinstance(v, bytearray | memoryview):
        return bytes(v)
    if isinstance(v, list | tuple):
        return tuple(normalize(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((normalize(k), normalize(x)) for k, x in v.items()))
    if isinstance(v, int):
        return float(f"{v:.6g}") if abs(v) >= 1e15 else v
    return v


def multiset(rows: Any) -> Counter:
    return Counter(tuple(normalize(x) for x in r) for r in rows)


@dataclass
class Tally:
    queries: int = 0
    spark_errors: int = 0
    accepted: int = 0
    refused: Counter = field(default_factory=Counter)
    mismatched: list[str] = field(default_factory=list)
    untyped: list[str] = field(default_factory=list)
    names_differ: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        compared = self.queries - self.spark_errors
        n_refused = sum(self.refused.values())
        return {
            "queries": self.queries,
            "spark_rejects": self.spark_errors,
            "compared": compared,
            "accepted": self.accepted,
            "accepted_pct": round(100.0 * self.accepted / compared, 1) if compared else 0.0,
            "refused": n_refused,
            "mismatched": len(self.mismatched),
            "untyped_errors": len(self.untyped),
            "column_names_differ": len(self.names_differ),
            "top_refusals": self.refused.most_common(15),
        }


def reason(e: Exception) -> str:
    """A refusal's reason without positions and literal details, for grouping."""
    construct = getattr(e, "construct", None)
    text = str(construct) if construct else str(e).split("\n")[0]
    text = re.sub(r"\s*\(?(at )?line \d+(, column \d+)?\)?", "", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    return f"{type(e).__name__}: {text[:90]}"


class Corpus:
    """One SparkSession; each file's setup runs in it, each query is compared."""

    def __init__(self, spark: Any, verbose: bool = False) -> None:
        self.spark = spark
        self.verbose = verbose
        self.tally = Tally()
        self.relations: dict[str, tuple[list[tuple[str, str]], list[tuple]] | None] = {}

    def run_file(self, path: Path) -> None:
        self.relations.clear()
        try:
            stmts = statements(path.read_text(encoding="utf-8", errors="replace"))
        except OSError as e:  # pragma: no cover - an unreadable file is reported and skipped
            print(f"{path}: cannot read: {e}", file=sys.stderr)
            return
        for stmt in stmts:
            if SKIPPED.match(stmt):
                continue
            if QUERY_START.match(stmt):
                self.run_query(stmt, f"{path.name}: {' '.join(stmt.split())[:160]}")
            else:
                self.relations.clear()  # the setup may change any relation
                # a setup Spark rejects is skipped: the queries that need it fail in Spark
                with contextlib.suppress(Exception):
                    self.spark.sql(stmt).collect()
        self.cleanup()

    def cleanup(self) -> None:
        for t in self.spark.catalog.listTables():
            try:
                if t.isTemporary:
                    self.spark.catalog.dropTempView(t.name)
                else:
                    self.spark.sql(f"DROP TABLE IF EXISTS `{t.name}`")
            except Exception:
                pass
        with contextlib.suppress(Exception):
            self.spark.sql("USE default")

    def relation(self, name: str) -> tuple[list[tuple[str, str]], list[tuple]] | None:
        if name not in self.relations:
            try:
                df = self.spark.table(name)
                cols = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
                self.relations[name] = (cols, [tuple(r) for r in df.collect()])
            except Exception:
                self.relations[name] = None
        return self.relations[name]

    def run_query(self, sql: str, label: str) -> None:
        import ivm
        from ivm.errors import IvmError
        from sql_frontend.analyze import parse
        from sql_frontend.compile import compile_view

        t = self.tally
        t.queries += 1
        try:
            df = self.spark.sql(sql)
            expected = df.collect()
            spark_columns = list(df.columns)
        except Exception:
            t.spark_errors += 1
            return
        try:
            tree = parse(sql)
            ctes = {c.alias_or_name.lower() for c in tree.find_all(_exp().CTE)}
            names = sorted(
                {
                    tb.name
                    for tb in tree.find_all(_exp().Table)
                    if tb.name and tb.name.lower() not in ctes
                }
            )
            catalog: dict[str, list[tuple[str, str]]] = {}
            rows: dict[str, list[tuple]] = {}
            for name in names:
                rel = self.relation(name)
                if rel is not None:
                    catalog[name], rows[name] = rel
            g = ivm.Dataflow()
            inputs = {
                n: g.input(n, [(c, "str" if ty == "string" else "any") for c, ty in cols])
                for n, cols in catalog.items()
            }
            cv = compile_view(sql, catalog, g, inputs)
            out = g.output(cv.collection, "v")
            for n, data in rows.items():
                if data:
                    inputs[n].insert(data)
            g.step()
            actual = Counter()
            for row, count in out.counts().items():
                actual[tuple(normalize(x) for x in row)] += count
        except IvmError as e:
            created = "cv" in locals()
            if created:  # a typed error while computing rows Spark computed
                t.mismatched.append(f"{label}\n    error where Spark answers: {e}")
            else:
                t.refused[reason(e)] += 1
                if self.verbose:
                    print(f"REFUSED {label}\n    {reason(e)}")
            return
        except Exception as e:
            t.untyped.append(f"{label}\n    {type(e).__name__}: {e}")
            if self.verbose:
                traceback.print_exc()
            return
        want = multiset(expected)
        if want != actual:
            missing, extra = want - actual, actual - want
            t.mismatched.append(
                f"{label}\n    missing {dict(list(missing.items())[:4])}"
                f"\n    extra   {dict(list(extra.items())[:4])}"
            )
            return
        t.accepted += 1
        ours = [n for n, _ in cv.schema]
        if ours != spark_columns:
            t.names_differ.append(f"{label}\n    spark {spark_columns}\n    ours  {ours}")


def _exp() -> Any:
    from sqlglot import exp

    return exp


def sql_files(root: Path, pattern: str) -> Iterator[Path]:
    yield from sorted(p for p in root.rglob(pattern) if p.is_file())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", type=Path, help="a directory of .sql files")
    ap.add_argument("--glob", default="*.sql", help="which files under it (default *.sql)")
    ap.add_argument("--verbose", action="store_true", help="print every refusal as it happens")
    ap.add_argument("--json", type=Path, help="write the summary and details here")
    args = ap.parse_args(argv)
    from spark_exec.spark_session import local_spark

    spark = local_spark()
    corpus = Corpus(spark, verbose=args.verbose)
    files = list(sql_files(args.corpus, args.glob))
    for path in files:
        corpus.run_file(path)
    t = corpus.tally
    summary = {"files": len(files), **t.summary()}
    for title, items in (
        ("MISMATCHED", t.mismatched),
        ("UNTYPED ERRORS", t.untyped),
        ("COLUMN NAMES DIFFER", t.names_differ),
    ):
        if items:
            print(f"\n== {title} ({len(items)})")
            for item in items:
                print(item)
    print("\n== SUMMARY")
    for k, v in summary.items():
        if k != "top_refusals":
            print(f"{k:>22}: {v}")
    print("   top refusal reasons:")
    for r, n in summary["top_refusals"]:
        print(f"{n:>8}  {r}")
    if args.json:
        details = {"mismatched": t.mismatched, "untyped": t.untyped, "names": t.names_differ}
        args.json.write_text(json.dumps({**summary, **details}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
