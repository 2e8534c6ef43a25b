"""Differential harness: views compiled to the engine vs Spark SQL's recomputation.

Base tables hold random rows with NULLs and duplicates; random batches of inserts, deletes
and updates are applied to both; after every step each view's contents must equal what Spark
SQL computes over the same tables, as a multiset. The seed is in every failure message.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import ivm
from sql_frontend.compile import compile_view
from sql_frontend.sql_types import SqlType, parse_type

TABLES: dict[str, list[tuple[str, str]]] = {
    "t": [
        ("k", "bigint"),
        ("v", "bigint"),
        ("s", "string"),
        ("x", "double"),
        ("d", "date"),
        ("m", "decimal(10,2)"),
    ],
    "u": [("k", "bigint"), ("w", "bigint"), ("s", "string")],
    "e": [("src", "bigint"), ("dst", "bigint")],
    "ev": [
        ("id", "bigint"),
        ("ts", "timestamp"),
        ("cat", "string"),
        ("amt", "decimal(12,2)"),
        ("qty", "int"),
        ("ok", "boolean"),
    ],
    "nt": [
        ("id", "bigint"),
        ("arr", "array<int>"),
        ("tags", "array<string>"),
        ("m", "map<string, int>"),
        ("st", "struct<x: int, y: string>"),
    ],
}

CHUNK = 25
"""Views per combined Spark query (see :func:`spark_results`)."""

_STRINGS = ["a", "b", "ab", "Abc", " x ", "", "zz", None]


def edge_view(
    sql: str, catalog: dict, schema: list[tuple[str, str]], **options: Any
) -> tuple[ivm.Dataflow, ivm.InputCollection, ivm.Output, Any]:
    """``sql`` compiled (with ``options``) over one input ``e`` of engine ``schema``, its SQL
    columns in ``catalog``: the dataflow, the input, the view's output and the compiled view."""
    g = ivm.Dataflow()
    e = g.input("e", schema)
    cv = compile_view(sql, catalog, g, {"e": e}, **options)
    return g, e, g.output(cv.collection, "view"), cv


def random_row(rng: random.Random, table: str) -> tuple:
    def maybe(v: Any, p: float = 0.15) -> Any:
        return None if rng.random() < p else v

    if table == "t":
        return (
            maybe(rng.randint(0, 5)),
            maybe(rng.randint(-3, 9)),
            rng.choice(_STRINGS),
            maybe(rng.choice([0.5, 1.5, -2.0, 3.25, 10.0])),
            maybe(dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 400))),
            maybe(Decimal(rng.randint(-500, 5000)) / 100),
        )
    if table == "u":
        return (maybe(rng.randint(0, 6)), maybe(rng.randint(0, 4)), rng.choice(_STRINGS))
    if table == "ev":
        return (
            maybe(rng.randint(0, 7)),
            maybe(dt.datetime(2024, 1, 1) + dt.timedelta(seconds=rng.randint(0, 60 * 86400))),
            rng.choice(["x", "y", "z", None]),
            maybe(Decimal(rng.randint(-5000, 50000)) / 100),
            maybe(rng.randint(-5, 20)),
            maybe(rng.random() < 0.5),
        )
    if table == "nt":
        return _nested_row(rng, maybe)
    return (rng.randint(0, 7), rng.randint(0, 7))


def _nested_row(rng: random.Random, maybe: Any) -> tuple:
    """A row of ``nt``: arrays as tuples, maps as tuples of (key, value) pairs (distinct keys),
    structs as tuples, NULL at every level."""
    n = rng.randint(0, 4)
    keys = rng.sample(["a", "b", "c", "d"], rng.randint(0, 3))
    return (
        maybe(rng.randint(0, 7)),
        maybe(tuple(maybe(rng.randint(-3, 6), 0.1) for _ in range(n))),
        maybe(tuple(rng.choice(_STRINGS) for _ in range(rng.randint(0, 3)))),
        maybe(tuple((k, maybe(rng.randint(-2, 5))) for k in keys)),
        maybe((maybe(rng.randint(-2, 5)), rng.choice(_STRINGS))),
    )


def spark_type(t: SqlType) -> str:
    """The Spark type of a column as handed to ``createDataFrame``: a map as the array of its
    entries (see :meth:`Harness.register_spark_tables`; maps inside other values are not)."""
    if t.name == "MAP":
        return f"ARRAY<STRUCT<key: {t.key}, value: {t.value}>>"
    return str(t)


def spark_value(v: Any, t: SqlType) -> Any:
    """An engine value as PySpark's ``createDataFrame`` takes it (a map: its entries)."""
    if v is None or not t.is_nested:
        return v
    if t.name == "ARRAY":
        return [spark_value(x, t.element) for x in v]
    if t.name == "MAP":
        return [(spark_value(k, t.key), spark_value(x, t.value)) for k, x in v]
    return tuple(spark_value(x, c) for x, c in zip(v, t.children, strict=True))


def normalize(v: Any) -> Any:
    """A value as compared: floats rounded, and nested values as tuples (Spark's arrays are
    lists, its structs Rows; its maps dicts, which become their sorted entries)."""
    if isinstance(v, list | tuple):
        return tuple(normalize(x) for x in v)
    if isinstance(v, dict):
        return (
            "map",
            tuple(sorted(((normalize(k), normalize(x)) for k, x in v.items()), key=repr)),
        )
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return round(v, 6) + 0.0
    if isinstance(v, Decimal):
        return ("dec", v.normalize()) if v == v else v
    if hasattr(v, "item"):  # numpy scalar
        return normalize(v.item())
    return v


def multiset(rows: Sequence[Sequence[Any]]) -> Counter:
    return Counter(tuple(normalize(v) for v in r) for r in rows)


class Harness:
    """Views over TABLES compiled into one dataflow, checked against Spark after each step."""

    def __init__(
        self,
        spark: Any,
        views: dict[str, str],
        seed: int,
        materialized: dict[str, str] | None = None,
    ) -> None:
        self.spark = spark
        self.seed = seed
        self.rng = random.Random(seed)
        self.g = ivm.Dataflow()
        self.inputs: dict[str, Any] = {
            name: self.g.input(name, [(c, "str" if t == "string" else "any") for c, t in cols])
            for name, cols in TABLES.items()
        }
        self.rows: dict[str, list[tuple]] = {name: [] for name in TABLES}
        self.materialized = dict(materialized or {})
        self.views = {**self.materialized, **views}
        self.outputs: dict[str, Any] = {}
        self.schemas: dict[str, Any] = {}  # view -> the front end's (name, SqlType) columns
        catalog: dict[str, list[tuple[str, Any]]] = dict(TABLES)
        # views over views: a materialized view's collection is an input of later views
        for name, sql in self.materialized.items():
            cv = compile_view(sql, catalog, self.g, self.inputs)
            self.inputs[name] = cv.collection
            catalog[name] = [
                (c, t) for c, (_, t) in zip(cv.collection.schema.names, cv.schema, strict=True)
            ]
            self.outputs[name] = self.g.output(cv.collection, name)
            self.schemas[name] = cv.schema
        for name, sql in views.items():
            cv = compile_view(sql, catalog, self.g, self.inputs)
            self.outputs[name] = self.g.output(cv.collection, name)
            self.schemas[name] = cv.schema

    def random_changes(self, n_insert: int, n_delete: int) -> None:
        for table in TABLES:
            ins = [random_row(self.rng, table) for _ in range(n_insert)]
            cur = self.rows[table]
            dels = self.rng.sample(cur, min(n_delete, len(cur)))
            for r in dels:
                cur.remove(r)
            # an update: delete one row, insert a modified copy
            if cur and self.rng.random() < 0.7:
                old = self.rng.choice(cur)
                cur.remove(old)
                new = random_row(self.rng, table)
                dels.append(old)
                ins.append(new)
            cur.extend(ins)
            if ins:
                self.inputs[table].insert(ins)
            if dels:
                self.inputs[table].delete(dels)

    def register_spark_tables(self) -> None:
        for table, cols in TABLES.items():
            types = [parse_type(t) for _, t in cols]
            rows = [
                tuple(spark_value(v, t) for v, t in zip(r, types, strict=True))
                for r in self.rows[table]
            ]
            # a map handed over as a dict loses its order: its (key, value) entries are handed
            # over instead and the map built in SQL, which keeps them in order
            schema = ", ".join(
                f"{c} {spark_type(t)}" for (c, _), t in zip(cols, types, strict=True)
            )
            df = self.spark.createDataFrame(rows, schema=schema)
            if any(t.name == "MAP" for t in types):
                df = df.selectExpr(
                    *(
                        f"map_from_entries({c}) AS {c}" if t.name == "MAP" else c
                        for (c, _), t in zip(cols, types, strict=True)
                    )
                )
            df.createOrReplaceTempView(table)

    def check(self, step: int) -> list[str]:
        self.register_spark_tables()
        for name, sql in self.materialized.items():
            self.spark.sql(f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}")
        results = spark_results(self.spark, self.views)
        where = f"seed {self.seed}, step {step}"
        return compare(self.outputs, self.views, results, where, self.schemas)


STEPS = [(20, 0), (6, 6), (3, 9), (10, 2)]
"""(inserts, deletes) per table at each step of :func:`failures_over_steps`."""


def failures_over_steps(
    spark: Any, views: dict[str, str], seed: int, spark_text: dict[str, str]
) -> list[str]:
    """Compile ``views``, apply four steps of random inserts, deletes and updates, and after
    each compare every view with Spark computing ``spark_text[name]`` (default: the view's own
    text) over the same tables."""
    h = Harness(spark, views, seed)
    h.views = {name: spark_text.get(name, sql) for name, sql in views.items()}
    failures: list[str] = []
    for step, (ins, dels) in enumerate(STEPS):
        h.random_changes(ins, dels)
        h.g.step()
        failures += h.check(step)
    return failures


def spark_results(
    spark: Any, queries: dict[str, str], chunk: int = CHUNK, threads: int = 2
) -> dict[str, list[tuple]]:
    """Every query's rows as computed by Spark SQL.

    A Spark query costs far more in fixed overhead (analysis, planning, code generation, job
    scheduling) than in work on these small tables, so queries are run ``chunk`` at a time as
    ONE Spark query: ``SELECT * FROM (SELECT collect_list(struct(*)) FROM (q1)) CROSS JOIN
    ...``, one row whose i-th column holds the i-th query's rows with their Spark types.
    """
    names = list(queries)
    groups = [names[i : i + chunk] for i in range(0, len(names), chunk)]

    def run(group: list[str]) -> dict[str, list[tuple]]:
        parts = [
            f"(SELECT collect_list(struct(*)) AS r{i} FROM ({queries[n]}) AS q{i})"
            for i, n in enumerate(group)
        ]
        try:
            row = spark.sql("SELECT * FROM " + " CROSS JOIN ".join(parts)).collect()[0]
        except Exception:
            if len(group) == 1:
                raise
            # one query of the group failed: run them one by one, so the error names it
            return {k: v for n in group for k, v in run([n]).items()}
        return {n: [tuple(r) for r in row[i]] for i, n in enumerate(group)}

    out: dict[str, list[tuple]] = {}
    with ThreadPoolExecutor(threads) as pool:
        for part in pool.map(run, groups):
            out.update(part)
    return out


def as_spark(v: Any, t: SqlType) -> Any:
    """An engine value as PySpark hands Spark's over: a map is a dict (whose order PySpark
    does not keep, so maps compare as sets of entries)."""
    if v is None or not t.is_nested:
        return v
    if t.name == "MAP":
        return {as_spark(k, t.key): as_spark(x, t.value) for k, x in v}
    if t.name == "ARRAY":
        return [as_spark(x, t.element) for x in v]
    return tuple(as_spark(x, c) for x, c in zip(v, t.children, strict=True))


def compare(
    outputs: dict[str, Any],
    queries: dict[str, str],
    results: dict[str, list[tuple]],
    where: str,
    schemas: dict[str, Any] | None = None,
) -> list[str]:
    """Failure messages for every output whose multiset differs from Spark's rows (``schemas``:
    the views' column types, for maps)."""
    failures = []
    for name, sql in queries.items():
        expected = multiset(results[name])
        actual: Counter = Counter()
        types = [t for _, t in (schemas or {}).get(name, ())]
        for row, count in outputs[name].counts().items():
            if types:
                row = tuple(as_spark(v, t) for v, t in zip(row, types, strict=True))
            actual[tuple(normalize(v) for v in row)] += count
        if expected != actual:
            missing = expected - actual
            extra = actual - expected
            failures.append(
                f"view {name} ({where}): {sql}\n"
                f"  missing {dict(list(missing.items())[:5])}\n"
                f"  extra   {dict(list(extra.items())[:5])}"
            )
    return failures
