"""SQL views and Datalog programs run sharded in-process equal one process, every epoch.

The SQL views are every view of the front end's Spark-checked catalogues (the fixture files
of ``tests/fixtures/sql_views/`` over ``sql_harness.TABLES`` with NULLs, duplicates,
strings, dates, decimals and nested values; issue 19's findings over their own tables; the
recursive views checked against Python references; the 22 TPC-H queries); the one-process
run is the oracle here (it is itself checked against Spark SQL or the reference there).
Every catalogue runs by default with one seed, and with two more under ``-m slow``.  The
Datalog oracle tests (``tests/datalog/test_programs.py``) run sharded themselves on their
first seed (``datalog_harness.Maintained(sharded=True)``).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from coverage_views import AGGREGATE_VIEWS, GENERATOR_VIEWS, NESTED_VIEWS, WINDOW_VIEWS
from function_cases import SCALAR_VIEWS
from shard_harness import Twins, drive
from sql_harness import TABLES, random_row
from sql_views import MATERIALIZED, RECURSIVE_VIEWS, VIEWS
from test_spark_translation import CHANGES as TRANSLATION_CHANGES
from test_spark_translation import TABLES as TRANSLATION_TABLES
from test_spark_translation import VIEWS as TRANSLATION_VIEWS
from test_unnest_correlated import VIEWS as UNNEST_VIEWS
from tpch_data import QUERIES as TPCH_QUERIES
from tpch_data import SCHEMAS as TPCH_SCHEMAS
from tpch_data import TpchGen

import ivm
from datalog import compile_program
from sql_frontend.compile import compile_view

REPRESENTATIVE = [
    "where_and_or",
    "distinct2",
    "join_inner",
    "join_two_keys",
    "join_left",
    "join_full",
    "join_three",
    "join_semi",
    "not_exists_residual",
    "scalar_correlated_max",
    "agg_count_distinct",
    "agg_min_max",
    "agg_global",
    "agg_having_expr",
    "union",
    "topk",
    "topk_agg",
    "win_row_number",
    "win_running_sum",
    "vov_join",
    "vov_anti",
]

SEEDS = [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)]

RECURSIVE = {
    "reach": (
        "WITH RECURSIVE r(a, b) AS (SELECT src, dst FROM e UNION "
        "SELECT r.a, e.dst FROM r JOIN e ON r.b = e.src) SELECT a, b FROM r"
    ),
    "cc": (
        "WITH RECURSIVE cc(n, l) AS (SELECT src, src FROM e UNION SELECT dst, dst FROM e UNION "
        "SELECT e.dst, cc.l FROM cc JOIN e ON cc.n = e.src UNION "
        "SELECT e.src, cc.l FROM cc JOIN e ON cc.n = e.dst) SELECT n, min(l) FROM cc GROUP BY n"
    ),
    "depth20": (
        "WITH RECURSIVE d(n, k) AS (SELECT 0, 0 FROM e WHERE src = 0 UNION "
        "SELECT e.dst, d.k + 1 FROM d JOIN e ON d.n = e.src WHERE d.k < 20) "
        "SELECT n, min(k) FROM d GROUP BY n"
    ),
}


def _engine_schema(cols: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A table's engine input schema, as the front end's oracle tests declare it."""
    return [(c, "str" if t == "string" else "any") for c, t in cols]


def sql_build(views: dict[str, str]) -> Any:
    def build(g: ivm.Dataflow) -> None:
        inputs: dict[str, Any] = {
            name: g.input(name, _engine_schema(cols)) for name, cols in TABLES.items()
        }
        catalog: dict[str, list[tuple[str, Any]]] = dict(TABLES)
        used = "\n".join(views.values())
        for name, sql in MATERIALIZED.items():
            if name not in used:
                continue
            cv = compile_view(sql, catalog, g, inputs)
            inputs[name] = cv.collection
            catalog[name] = [
                (c, t) for c, (_, t) in zip(cv.collection.schema.names, cv.schema, strict=True)
            ]
        for name, sql in views.items():
            g.output(compile_view(sql, catalog, g, inputs).collection, name)

    return build


def drive_tables(tw: Twins, seed: int, epochs: int, tables: list[str], n: int = 10) -> None:
    """:func:`drive` with the SQL harness's random rows of each table."""
    gens = {t: (lambda rng, t=t: random_row(rng, t)) for t in tables}
    drive(tw, random.Random(seed), gens, epochs=epochs, batch=n)


@pytest.mark.parametrize("seed", SEEDS)
def test_representative_sql_views(seed: int) -> None:
    tw = Twins(sql_build({v: VIEWS[v] for v in REPRESENTATIVE}))
    drive_tables(tw, seed, 4, list(TABLES))


CATALOGUES: dict[str, dict[str, str]] = {  # every view checked against Spark over TABLES
    "views_and_scalar_functions": VIEWS,
    "aggregates_and_windows": {**AGGREGATE_VIEWS, **WINDOW_VIEWS},
    "generators_and_lambdas": GENERATOR_VIEWS,
    "nested_types": NESTED_VIEWS,
    "unnested_subqueries": UNNEST_VIEWS,
    "function_cases": SCALAR_VIEWS,
}


@pytest.mark.parametrize("catalogue", list(CATALOGUES))
@pytest.mark.parametrize("seed", SEEDS)
def test_every_sql_view(catalogue: str, seed: int) -> None:
    tw = Twins(sql_build(dict(CATALOGUES[catalogue])))
    drive_tables(tw, seed, 4, list(TABLES))


@pytest.mark.parametrize("seed", SEEDS)
def test_translation_findings(seed: int) -> None:
    """Issue 19's findings over their own tables: loaded, then each table's changes, then
    random deletes of the current rows."""
    cat = {name: cols for name, (cols, _) in TRANSLATION_TABLES.items()}

    def build(g: ivm.Dataflow) -> None:
        inputs = {n: g.input(n, _engine_schema(cols)) for n, cols in cat.items()}
        for name, sql in TRANSLATION_VIEWS.items():
            g.output(compile_view(sql, cat, g, inputs).collection, name)

    tw = Twins(build)
    rng = random.Random(seed)
    current = {name: list(rows) for name, (_, rows) in TRANSLATION_TABLES.items()}
    for name, rows in current.items():
        tw.insert(name, rows)
    tw.step()
    for name, (gone, new) in TRANSLATION_CHANGES.items():
        tw.delete(name, gone)
        tw.insert(name, new)
        current[name] = [r for r in current[name] if r not in gone] + list(new)
    tw.step()
    for name, rows in current.items():
        tw.delete(name, rng.sample(rows, len(rows) // 2))
    tw.step()


@pytest.mark.parametrize("seed", SEEDS)
def test_tpch_queries(seed: int) -> None:
    """The 22 TPC-H queries through a load and RF1/RF2-style refreshes."""
    gen = TpchGen(0.002, seed)

    def build(g: ivm.Dataflow) -> None:
        inputs = {t: g.input(t, _engine_schema(cols)) for t, cols in TPCH_SCHEMAS.items()}
        for q, sql in TPCH_QUERIES.items():
            g.output(compile_view(sql, TPCH_SCHEMAS, g, inputs).collection, q)

    tw = Twins(build)
    for t, rows in gen.tables.items():
        tw.insert(t, rows)
    tw.step()
    for n_new, n_del in [(6, 4), (3, 8)]:
        new, gone = gen.rf1(n_new), gen.rf2(n_del)
        for t in ("orders", "lineitem"):
            tw.insert(t, new[t])
            tw.delete(t, gone[t])
        tw.step()


@pytest.mark.parametrize("seed", SEEDS)
def test_with_recursive(seed: int) -> None:
    cat = {"e": [("src", "bigint"), ("dst", "bigint")]}

    def build(g: ivm.Dataflow) -> None:
        e = g.input("e", [("src", "any"), ("dst", "any")])
        fixtures = {f"fixture_{name}": sql for name, sql in RECURSIVE_VIEWS.items()}
        for name, sql in {**RECURSIVE, **fixtures}.items():
            g.output(compile_view(sql, cat, g, {"e": e}).collection, name)

    tw = Twins(build)
    rng = random.Random(seed)
    chain = [(i, i + 1) for i in range(22)]  # the depth-20 view iterates 20 times
    tw.insert("e", chain)
    tw.step()
    current = list(chain)
    for _ in range(4):
        ins = [(rng.randrange(25), rng.randrange(25)) for _ in range(6)]
        dels = rng.sample(current, 3)
        for r in dels:
            current.remove(r)
        current.extend(ins)
        tw.insert("e", ins)
        tw.delete("e", dels)
        tw.step()


PROGRAM = """
.decl edge(x: number, y: number)      .input edge
.decl label(x: number, l: symbol)     .input label
.decl path(x: number, y: number)      .output path
.decl cyclic(x: number)               .output cyclic
.decl lonely(x: number, l: symbol)    .output lonely
.decl fanout(x: number, n: number)    .output fanout
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
cyclic(x) :- path(x, x).
lonely(x, l) :- label(x, l), !cyclic(x).
fanout(x, n) :- edge(x, _), n = count : { edge(x, _) }.
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_datalog_program(seed: int) -> None:
    tw = Twins(lambda g: compile_program(PROGRAM, g))
    rng = random.Random(seed)
    cur: dict[str, list[tuple]] = {"edge": [], "label": []}
    for _ in range(5):
        new = {
            "edge": [(rng.randrange(9), rng.randrange(9)) for _ in range(5)],
            "label": [(rng.randrange(9), rng.choice(["a", "b"])) for _ in range(3)],
        }
        for name, ins in new.items():
            dels = rng.sample(cur[name], min(2, len(cur[name])))
            for r in dels:
                cur[name].remove(r)
            cur[name].extend(ins)
            tw.insert(name, ins)
            if dels:
                tw.delete(name, dels)
        tw.step()
