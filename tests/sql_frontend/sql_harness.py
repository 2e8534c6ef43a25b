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

TABLES: dict[str, list[tuple[str, str]]] = {
    "t": [("k", "bigint"), ("v", "bigint"), ("s", "string"), ("x", "double"),
          ("d", "date"), ("m", "decimal(10,2)")],
    "u": [("k", "bigint"), ("w", "bigint"), ("s", "string")],
    "e": [("src", "bigint"), ("dst", "bigint")],
}

_STRINGS = ["a", "b", "ab", "Abc", " x ", "", "zz", None]


def random_row(rng: random.Random, table: str) -> tuple:
    def maybe(v: Any, p: float = 0.15) -> Any:
        return None if rng.random() < p else v
    if table == "t":
        return (maybe(rng.randint(0, 5)), maybe(rng.randint(-3, 9)),
                rng.choice(_STRINGS),
                maybe(rng.choice([0.5, 1.5, -2.0, 3.25, 10.0])),
                maybe(dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 400))),
                maybe(Decimal(rng.randint(-500, 5000)) / 100))
    if table == "u":
        return (maybe(rng.randint(0, 6)), maybe(rng.randint(0, 4)), rng.choice(_STRINGS))
    return (rng.randint(0, 7), rng.randint(0, 7))


def spark_type(t: str) -> str:
    return t.upper()


def normalize(v: Any) -> Any:
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

    def __init__(self, spark: Any, views: dict[str, str], seed: int) -> None:
        self.spark = spark
        self.seed = seed
        self.rng = random.Random(seed)
        self.g = ivm.Dataflow()
        self.inputs = {name: self.g.input(name, [(c, "str" if t == "string" else "any")
                                                 for c, t in cols])
                       for name, cols in TABLES.items()}
        self.rows: dict[str, list[tuple]] = {name: [] for name in TABLES}
        self.views = views
        self.outputs: dict[str, Any] = {}
        for name, sql in views.items():
            cv = compile_view(sql, TABLES, self.g, self.inputs)
            self.outputs[name] = self.g.output(cv.collection, name)

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
            schema = ", ".join(f"{c} {spark_type(t)}" for c, t in cols)
            df = self.spark.createDataFrame(self.rows[table], schema=schema)
            df.createOrReplaceTempView(table)

    def check(self, step: int) -> list[str]:
        failures = []
        self.register_spark_tables()
        # Spark jobs from several threads overlap their fixed costs (~4x faster here).
        with ThreadPoolExecutor(4) as pool:
            results = dict(zip(self.views, pool.map(
                lambda q: [tuple(r) for r in self.spark.sql(q).collect()],
                self.views.values()), strict=True))
        for name, sql in self.views.items():
            expected = multiset(results[name])
            actual = Counter()
            for row, count in self.outputs[name].counts().items():
                actual[tuple(normalize(v) for v in row)] += count
            if expected != actual:
                missing = expected - actual
                extra = actual - expected
                failures.append(
                    f"view {name} (seed {self.seed}, step {step}): {sql}\n"
                    f"  missing {dict(list(missing.items())[:5])}\n"
                    f"  extra   {dict(list(extra.items())[:5])}")
        return failures
