"""SQL views and Datalog programs run sharded in-process equal one process, every epoch.

The SQL views come from the front end's Spark-checked catalogue (``sql_views.VIEWS``, over
``sql_harness.TABLES`` with NULLs, duplicates, strings, dates and decimals); the
one-process run is the oracle here (it is itself checked against Spark SQL there).  A
representative set runs by default; the whole catalogue under ``-m slow``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from shard_harness import Twins, drive
from sql_harness import TABLES, random_row
from sql_views import MATERIALIZED, VIEWS

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


def sql_build(views: dict[str, str]) -> Any:
    def build(g: ivm.Dataflow) -> None:
        inputs: dict[str, Any] = {
            name: g.input(name, [(c, "str" if t == "string" else "any") for c, t in cols])
            for name, cols in TABLES.items()
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


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_sql_view(seed: int) -> None:
    tw = Twins(sql_build(dict(VIEWS)))
    drive_tables(tw, seed, 4, list(TABLES))


@pytest.mark.parametrize("seed", SEEDS)
def test_with_recursive(seed: int) -> None:
    cat = {"e": [("src", "bigint"), ("dst", "bigint")]}

    def build(g: ivm.Dataflow) -> None:
        e = g.input("e", [("src", "any"), ("dst", "any")])
        for name, sql in RECURSIVE.items():
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
