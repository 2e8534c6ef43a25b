"""Golden cases of the front end's rewrite rules, one fixture file a rule in
``tests/fixtures/rules/<rule>.sql`` (sqlglot's ``tests/fixtures/optimizer/<rule>.sql`` is the
model): in each case the first SQL line is the rule's input, the second what the rule makes
of it (Spark dialect, one line each); ``-- catalog:`` names the tables it reads
(:data:`CATALOGS`), and ``-- spark: no (...)`` marks a case Spark cannot run both sides of.

Each input is a view of the test catalogues as :func:`sql_frontend.analyze.analyze` hands it
to the rule: as written for the rules that run before names are resolved
(:data:`BEFORE_QUALIFY`), else resolved and rewritten by the rules before it.  A view becomes
a case of every rule that changes it.  Regenerate after a deliberate change of a rule::

    PYTHONPATH=. python tests/sql_frontend/rule_cases.py          # the golden outputs
    PYTHONPATH=. python tests/sql_frontend/rule_cases.py --spark  # and the spark marks
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from sql_frontend.analyze import DIALECT, catalog_schema, parse, pushdown_predicates, resolve
from sql_frontend.analyze import RULES as ANALYZE_RULES
from sql_frontend.errors import SqlError
from sql_frontend.rules.aggregate_before_subquery import aggregate_before_subquery
from sql_frontend.rules.expand_join_stars import expand_join_stars
from sql_frontend.rules.factor_disjunctions import factor_disjunctions
from sql_frontend.rules.push_not import push_not
from sql_frontend.rules.quantified_to_exists import quantified_to_exists
from sql_frontend.rules.subquery_to_mark_join import subquery_to_mark_join
from sql_frontend.rules.subquery_to_semijoin import subquery_to_semijoin
from sql_frontend.rules.unnest_correlated import unnest_correlated

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import sql_harness  # noqa: E402
import test_spark_translation as translation  # noqa: E402
from fixture_cases import FIXTURES, named_queries, read_cases  # noqa: E402

RULE_DIR = FIXTURES / "rules"

#: the tables a case's queries read, by the name its ``-- catalog:`` line gives
CATALOGS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "harness": sql_harness.TABLES,
    "translation": {name: cols for name, (cols, _) in translation.TABLES.items()},
}


def _view_sources() -> dict[str, dict[str, str]]:
    """The views cases are made from, by the catalog they read."""
    views = FIXTURES / "sql_views"
    return {
        "harness": {
            **named_queries(views / "views.sql"),
            **named_queries(views / "unnest_correlated.sql"),
        },
        "translation": dict(translation.VIEWS),
    }


#: the rules that rewrite the query as written, before :func:`resolve` qualifies its names
BEFORE_QUALIFY = ("expand_join_stars", "quantified_to_exists")
#: our rules among :data:`sql_frontend.analyze.RULES`, which take the resolved query
RULES: dict[str, Callable[..., exp.Expr]] = {
    "expand_join_stars": expand_join_stars,
    "quantified_to_exists": quantified_to_exists,
    "push_not": push_not,
    "unnest_correlated": unnest_correlated,
    "aggregate_before_subquery": aggregate_before_subquery,
    "subquery_to_semijoin": subquery_to_semijoin,
    "subquery_to_mark_join": subquery_to_mark_join,
    "factor_disjunctions": factor_disjunctions,
}


@dataclass(frozen=True)
class RuleCase:
    rule: str
    name: str
    catalog: str
    given: str
    expected: str
    spark: str = ""  # why Spark cannot run it, or "" when it can


def apply_rule(rule: str, sql: str, catalog: str) -> str:
    """What ``rule`` makes of the query ``sql`` over ``catalog``, as one line of Spark SQL."""
    tree = sqlglot.parse_one(sql, read=DIALECT)
    if rule == "expand_join_stars":
        columns = {
            t: {c: str(ty) for c, ty in cols.items()}
            for t, cols in catalog_schema(CATALOGS[catalog]).items()
        }
        return expand_join_stars(tree, columns).sql(dialect=DIALECT)
    return RULES[rule](tree).sql(dialect=DIALECT)


def rule_cases(rule: str) -> list[RuleCase]:
    """The cases of ``rule``'s fixture file."""
    return [
        RuleCase(
            rule,
            c.name,
            c.meta.get("catalog", "harness"),
            c.sql[0],
            c.sql[1],
            c.meta.get("spark", ""),
        )
        for c in read_cases(RULE_DIR / f"{rule}.sql")
    ]


def _pipeline_cases(name: str, sql: str, catalog: str) -> list[RuleCase]:
    """A case for every rule of ours that changes ``sql`` on its way through ``analyze``
    (its first change: ``unnest_correlated`` runs twice)."""
    out: dict[str, RuleCase] = {}

    def step(rule: str, tree: exp.Expr) -> exp.Expr:
        given = tree.sql(dialect=DIALECT)
        got = apply_rule(rule, given, catalog)
        if got != given and rule not in out:
            out[rule] = RuleCase(rule, name, catalog, given, got)
        return sqlglot.parse_one(got, read=DIALECT) if rule in BEFORE_QUALIFY else tree

    tree: exp.Expr = parse(sql)
    for rule in BEFORE_QUALIFY:
        tree = step(rule, tree)
    tree, _ = resolve(sql, CATALOGS[catalog])
    asof = any(j.text("method").upper() == "ASOF" for j in tree.find_all(exp.Join))
    for fn in ANALYZE_RULES:
        if fn.__name__ in RULES:
            given = tree.sql(dialect=DIALECT)
            tree = fn(tree)
            # a case only where the text alone decides the output (the file keeps the text)
            got = tree.sql(dialect=DIALECT)
            fresh = got != given and fn.__name__ not in out
            if fresh and apply_rule(fn.__name__, given, catalog) == got:
                out[fn.__name__] = RuleCase(fn.__name__, name, catalog, given, got)
        elif not (asof and fn is pushdown_predicates):
            tree = fn(tree)
    return list(out.values())


def generate() -> dict[str, list[RuleCase]]:
    """Every rule's cases, from every view of :func:`_view_sources`."""
    out: dict[str, list[RuleCase]] = {rule: [] for rule in RULES}
    for catalog, views in _view_sources().items():
        for name, sql in views.items():
            try:
                found = _pipeline_cases(name, sql, catalog)
            except SqlError:
                continue  # refused, or over views the catalog lacks: no rule case
            for case in found:
                out[case.rule].append(case)
    return out


def spark_verdict(spark: Any, case: RuleCase) -> str:
    """Why Spark cannot run both sides of ``case`` over its tables, or ""."""
    for sql in (case.given, case.expected):
        try:
            spark.sql(sql)  # parsed and analysed: the errors that make a case not run
        except Exception as e:  # Spark's own errors (parse, analysis) are the verdict
            return f"no ({type(e).__name__})"
    return ""


def write(cases: dict[str, list[RuleCase]]) -> None:
    RULE_DIR.mkdir(parents=True, exist_ok=True)
    for rule, items in cases.items():
        lines = [
            f"-- Golden cases of sql_frontend/rules/{rule}.py: the input, then the rule's output.",
            "-- Written by tests/sql_frontend/rule_cases.py from the views of the test catalogues.",
        ]
        for c in items:
            lines += ["", f"-- name: {c.name}"]
            lines += [f"-- catalog: {c.catalog}"] if c.catalog != "harness" else []
            lines += [f"-- spark: {c.spark}"] if c.spark else []
            lines += [c.given, c.expected]
        (RULE_DIR / f"{rule}.sql").write_text("\n".join(lines) + "\n", encoding="utf-8")


def register_tables(spark: Any, seed: int) -> None:
    """Every catalog's tables as Spark temp views: the harness's with random rows, the
    translation findings' with their rows."""
    h = sql_harness.Harness(spark, {}, seed)
    h.random_changes(25, 0)
    h.register_spark_tables()
    for name, (cols, rows) in translation.TABLES.items():
        schema = ", ".join(f"`{c}` {t}" for c, t in cols)
        spark.createDataFrame(rows, schema=schema).createOrReplaceTempView(name)


if __name__ == "__main__":  # pragma: no cover - regenerates the fixture files
    generated = generate()
    if "--spark" in sys.argv:
        from dataclasses import replace

        from pyspark.sql import SparkSession

        spark = SparkSession.builder.master("local[2]").getOrCreate()
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        register_tables(spark, 1234)
        generated = {
            r: [replace(c, spark=spark_verdict(spark, c)) for c in items]
            for r, items in generated.items()
        }
    write(generated)
    for rule, items in generated.items():
        print(f"{rule}: {len(items)} cases, {sum(bool(c.spark) for c in items)} not for Spark")
