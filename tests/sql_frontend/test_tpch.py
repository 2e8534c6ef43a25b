"""The 22 TPC-H queries as maintained views over a small generated database.

All 22 compile (Spark runs all of them too); each is refreshed through RF1/RF2-style batches
(new orders with their lineitems, deleted orders with theirs) and must equal Spark SQL's
result on the same tables, as a multiset, after the initial load and after every refresh.
The seed is in every failure message (``IVM_TPCH_SEED`` replays a run).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from sql_harness import compare, spark_results
from tpch_data import QUERIES, SCHEMAS, TpchGen

import ivm
from sql_frontend.compile import compile_view

SEED = int(os.environ.get("IVM_TPCH_SEED", "7"))
SF = 0.002


def _register(spark: Any, gen: TpchGen, tables: list[str]) -> None:
    for t in tables:
        schema = ", ".join(f"{c} {ty.upper()}" for c, ty in SCHEMAS[t])
        spark.createDataFrame(gen.tables[t], schema=schema).createOrReplaceTempView(t)


def run_tpch(spark: Any, seed: int, steps: list[tuple[int, int]]) -> list[str]:
    gen = TpchGen(SF, seed)
    g = ivm.Dataflow()
    inputs = {
        t: g.input(t, [(c, "str" if ty == "string" else "any") for c, ty in cols])
        for t, cols in SCHEMAS.items()
    }
    outputs = {
        q: g.output(compile_view(sql, SCHEMAS, g, inputs).collection, q)
        for q, sql in QUERIES.items()
    }
    for t, rows in gen.tables.items():
        inputs[t].insert(rows)
    g.step()
    _register(spark, gen, list(SCHEMAS))
    failures = compare(
        outputs, QUERIES, spark_results(spark, QUERIES, chunk=11), f"seed {seed}, initial load"
    )
    for step, (n_new, n_del) in enumerate(steps):
        new, gone = gen.rf1(n_new), gen.rf2(n_del)
        for t in ("orders", "lineitem"):
            inputs[t].insert(new[t])
            inputs[t].delete(gone[t])
        g.step()
        _register(spark, gen, ["orders", "lineitem"])
        failures += compare(
            outputs,
            QUERIES,
            spark_results(spark, QUERIES, chunk=11),
            f"seed {seed}, refresh {step}: +{n_new} / -{n_del} orders",
        )
    return failures


def test_all_22_queries_compile() -> None:
    g = ivm.Dataflow()
    inputs = {
        t: g.input(t, [(c, "str" if ty == "string" else "any") for c, ty in cols])
        for t, cols in SCHEMAS.items()
    }
    for sql in QUERIES.values():
        compile_view(sql, SCHEMAS, g, inputs)
    assert len(QUERIES) == 22


@pytest.mark.spark
def test_tpch_views_equal_spark(spark: object) -> None:
    failures = run_tpch(spark, SEED, [(20, 20), (5, 40)])
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.spark
def test_tpch_views_equal_spark_longer(spark: object) -> None:
    failures = run_tpch(spark, SEED + 1, [(30, 10), (10, 30), (50, 0), (0, 50), (15, 15), (1, 1)])
    assert not failures, "\n".join(failures)
