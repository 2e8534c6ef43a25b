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
    """What one run found: refusals, mismatches, errors, and how many rows each view held."""

    accepted: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # query -> "ErrorClass: message"
    failures: list[str] = field(default_factory=list)
    spark_errors: dict[str, str] = field(default_factory=dict)
    engine_errors: dict[str, str] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)  # query -> rows after the initial load

    def mismatched(self) -> list[str]:
        return sorted({f.split()[1] for f in self.failures}, key=_order)

    def refusal_causes(self) -> dict[str, list[str]]:
        """Refused queries grouped by their error message with names and numbers blanked."""
        groups: dict[str, list[str]] = defaultdict(list)
        for q, msg in self.refused.items():
            groups[cause(msg)].append(q)
        return dict(sorted(groups.items(), key=lambda kv: -len(kv[1])))


@dataclass
class View:
    """One accepted query in a dataflow of its own (a runtime error stops only this view)."""

    g: ivm.Dataflow
    inputs: dict[str, Any]
    output: Any


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


def compile_all(names: list[str]) -> tuple[dict[str, View], TpcdsRun]:
    """Compile each of ``names`` into a dataflow of its own: (views, run with refusals)."""
    views: dict[str, View] = {}
    run = TpcdsRun()
    for q in names:
        g = ivm.Dataflow()
        inputs = {
            t: g.input(t, [(c, "str" if ty == "string" else "any") for c, ty in cols])
            for t, cols in SCHEMAS.items()
        }
        try:
            cv = compile_view(QUERIES[q], SCHEMAS, g, inputs)
        except Exception as e:  # every refusal is recorded with its class
            run.refused[q] = f"{type(e).__name__}: {e}"
            continue
        views[q] = View(g, inputs, g.output(cv.collection, q))
        run.accepted.append(q)
    return views, run


def _step(views: dict[str, View], batch: dict[str, tuple[list, list]], run: TpcdsRun) -> None:
    """Apply ``batch`` (table -> inserted, deleted rows) to every view still running."""
    for q, v in views.items():
        if q in run.engine_errors:
            continue
        try:
            for t, (ins, dels) in batch.items():
                v.inputs[t].insert(ins)
                v.inputs[t].delete(dels)
            v.g.step()
        except Exception as e:  # recorded, compared with Spark's outcome
            run.engine_errors[q] = f"{type(e).__name__}: {str(e).splitlines()[0]}"


def run_tpcds(
    spark: Any, names: list[str], seed: int, steps: list[tuple[int, int, int]] = STEPS
) -> TpcdsRun:
    """Compile ``names``, load a seeded database, apply ``steps``; compare after each.

    A view whose refresh raises and whose query Spark also fails on is an agreement (ANSI
    errors such as a division by zero); an error on one side only is a mismatch.
    """
    views, run = compile_all(names)
    gen = TpcdsGen(seed)
    _step(views, {t: (rows, []) for t, rows in gen.tables.items()}, run)
    _register(spark, gen, list(SCHEMAS))
    expected = _spark(spark, run)
    run.rows = {q: len(rows) for q, rows in expected.items()}
    _compare(views, expected, run, f"seed {seed}, initial load")
    for i, (n_new, n_del, n_upd) in enumerate(steps):
        _step(views, gen.changes(n_new, n_del, n_upd), run)
        _register(spark, gen, FACTS)
        where = f"seed {seed}, step {i}: +{n_new} sales, -{n_del}, ~{n_upd} per fact table"
        _compare(views, _spark(spark, run), run, where)
    return run


def _spark(spark: Any, run: TpcdsRun) -> dict[str, list[tuple]]:
    """Spark's rows per accepted query; a query Spark fails on is recorded and left out."""
    live = {q: QUERIES[q] for q in run.accepted if q not in run.spark_errors}
    try:
        return spark_results(spark, live, chunk=1)  # TPC-DS plans are big: one at a time
    except Exception:  # find the query Spark fails on, one by one
        out: dict[str, list[tuple]] = {}
        for q, sql in live.items():
            try:
                out.update(spark_results(spark, {q: sql}, chunk=1, threads=1))
            except Exception as e:
                run.spark_errors[q] = str(e).strip().splitlines()[0][:200]
        return out


def _compare(
    views: dict[str, View], expected: dict[str, list[tuple]], run: TpcdsRun, where: str
) -> None:
    for q in run.accepted:
        engine_err, spark_err = run.engine_errors.get(q), run.spark_errors.get(q)
        if engine_err and not spark_err:
            run.failures.append(f"view {q} ({where}): the engine raised {engine_err}")
        elif spark_err and not engine_err:
            run.failures.append(f"view {q} ({where}): Spark raised {spark_err}")
        elif not engine_err:
            run.failures += compare({q: views[q].output}, {q: QUERIES[q]}, expected, where)
