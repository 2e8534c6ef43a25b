"""TPC-DS queries as maintained views, checked against Spark SQL after every change step.

Each query is compiled as a view (:func:`sql_frontend.compile.compile_view`); a refusal is
recorded with its typed error's class and first line. The accepted views share one dataflow;
after the initial load and after each batch of fact-table inserts, deletes and updates
(:meth:`tpcds_data.TpcdsGen.changes`) every view must equal Spark's result over the same
tables, as a multiset (``sql_harness.compare``). ORDER BY … LIMIT views hold their top rows,
as for TPC-H.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sql_harness import compare, spark_results
from tpcds_data import FACTS, QUERIES, SCHEMAS, TpcdsGen

import ivm
from sql_frontend.compile import compile_view

STEPS = [(20, 10, 10), (5, 30, 5)]
"""(new sales, deleted rows, updated rows) per fact table at each change step."""


@dataclass
class TpcdsRun:
    """What one run found: refusals, mismatches, and how many rows each view held."""

    accepted: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # query -> "ErrorClass: message"
    failures: list[str] = field(default_factory=list)
    spark_errors: dict[str, str] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)  # query -> rows after the initial load

    def mismatched(self) -> list[str]:
        return sorted({f.split()[1] for f in self.failures}, key=_order)

    def refusal_causes(self) -> dict[str, list[str]]:
        """Refused queries grouped by their error message with names and numbers blanked."""
        groups: dict[str, list[str]] = defaultdict(list)
        for q, msg in self.refused.items():
            groups[cause(msg)].append(q)
        return dict(sorted(groups.items(), key=lambda kv: -len(kv[1])))


def _order(q: str) -> tuple[int, str]:
    return int(re.sub(r"\D", "", q)), q


def cause(message: str) -> str:
    """A refusal's message reduced to its kind: quoted words and numbers blanked."""
    first = message.splitlines()[0]
    first = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "…", first)
    return re.sub(r"\d+", "N", first)[:160]


def _register(spark: Any, gen: TpcdsGen, tables: list[str] | tuple[str, ...]) -> None:
    for t in tables:
        schema = ", ".join(f"{c} {ty.upper()}" for c, ty in SCHEMAS[t])
        spark.createDataFrame(gen.tables[t], schema=schema).createOrReplaceTempView(t)


def compile_all(names: list[str]) -> tuple[ivm.Dataflow, dict[str, Any], dict[str, Any], TpcdsRun]:
    """Compile ``names`` into one dataflow: (dataflow, inputs, outputs, run with refusals)."""
    g = ivm.Dataflow()
    inputs = {
        t: g.input(t, [(c, "str" if ty == "string" else "any") for c, ty in cols])
        for t, cols in SCHEMAS.items()
    }
    outputs: dict[str, Any] = {}
    run = TpcdsRun()
    for q in names:
        try:
            cv = compile_view(QUERIES[q], SCHEMAS, g, inputs)
        except Exception as e:  # noqa: BLE001 - every refusal is recorded with its class
            run.refused[q] = f"{type(e).__name__}: {e}"
            continue
        outputs[q] = g.output(cv.collection, q)
        run.accepted.append(q)
    return g, inputs, outputs, run


def run_tpcds(
    spark: Any, names: list[str], seed: int, steps: list[tuple[int, int, int]] = STEPS
) -> TpcdsRun:
    """Compile ``names``, load a seeded database, apply ``steps``; compare after each."""
    g, inputs, outputs, run = compile_all(names)
    gen = TpcdsGen(seed)
    for t, rows in gen.tables.items():
        inputs[t].insert(rows)
    g.step()
    _register(spark, gen, list(SCHEMAS))
    queries = {q: QUERIES[q] for q in run.accepted}
    expected = _spark(spark, queries, run)
    run.rows = {q: len(rows) for q, rows in expected.items()}
    run.failures += _compare(outputs, queries, expected, f"seed {seed}, initial load")
    for i, (n_new, n_del, n_upd) in enumerate(steps):
        for t, (ins, dels) in gen.changes(n_new, n_del, n_upd).items():
            inputs[t].insert(ins)
            inputs[t].delete(dels)
        g.step()
        _register(spark, gen, FACTS)
        where = f"seed {seed}, step {i}: +{n_new} sales, -{n_del}, ~{n_upd} per fact table"
        run.failures += _compare(outputs, queries, _spark(spark, queries, run), where)
    return run


def _spark(spark: Any, queries: dict[str, str], run: TpcdsRun) -> dict[str, list[tuple]]:
    """Spark's rows per query; a query Spark itself fails on is recorded and left out."""
    live = {q: sql for q, sql in queries.items() if q not in run.spark_errors}
    try:
        return spark_results(spark, live, chunk=8)
    except Exception:  # noqa: BLE001 - find the query Spark fails on, one by one
        out: dict[str, list[tuple]] = {}
        for q, sql in live.items():
            try:
                out.update(spark_results(spark, {q: sql}, chunk=1, threads=1))
            except Exception as e:  # noqa: BLE001
                run.spark_errors[q] = str(e).splitlines()[0]
        return out


def _compare(
    outputs: dict[str, Any], queries: dict[str, str], expected: dict[str, list[tuple]], where: str
) -> list[str]:
    live = {q: sql for q, sql in queries.items() if q in expected}
    return compare(outputs, live, expected, where)
