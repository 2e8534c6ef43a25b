"""Issue 16: aggregates, window functions and scalar functions as Spark computes them, kept
equal to Spark SQL's recomputation under random inserts, deletes and updates."""

from __future__ import annotations

import os

import pytest
from coverage_views import AGGREGATE_VIEWS, WINDOW_VIEWS
from sql_harness import TABLES, Harness

import ivm
from sql_frontend.compile import compile_view
from sql_frontend.errors import SqlError

SEED = int(os.environ.get("IVM_SQL_SEED", "1616"))
VIEWS = {**AGGREGATE_VIEWS, **WINDOW_VIEWS}


def _run(spark: object, views: dict[str, str], seed: int, steps: list[tuple[int, int]]) -> None:
    h = Harness(spark, views, seed)
    failures: list[str] = []
    for step, (ins, dels) in enumerate(steps):
        h.random_changes(ins, dels)
        h.g.step()
        failures += h.check(step)
    assert not failures, f"seed {seed}:\n" + "\n".join(failures)


@pytest.mark.spark
def test_coverage_views_equal_spark_after_every_step(spark: object) -> None:
    _run(spark, VIEWS, SEED, [(25, 0), (6, 10), (4, 15)])


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("seed", [SEED + 1, SEED + 2])
def test_coverage_views_longer_runs(spark: object, seed: int) -> None:
    _run(spark, VIEWS, seed, [(30, 0), (10, 5), (5, 12), (12, 4), (3, 8), (8, 8), (0, 20)])


def _compile(sql: str) -> None:
    g = ivm.Dataflow()
    inputs = {n: g.input(n, [(c, "any") for c, _ in cols]) for n, cols in TABLES.items()}
    compile_view(sql, dict(TABLES), g, inputs)


REFUSED = [
    ("SELECT k, first(v) FROM t GROUP BY k", "first", "min(x) or max(x)"),
    ("SELECT k,\n  any_value(v) FROM t GROUP BY k", "any_value", "line 2"),
    ("SELECT k, collect_list(v) FROM t GROUP BY k", "collect_list", "array"),
    ("SELECT k, percentile(v, 1.5) FROM t GROUP BY k", "percentile", "between 0.0 and 1.0"),
    ("SELECT lag(v) OVER (PARTITION BY k) FROM t", "LAG without ORDER BY", ""),
    (
        "SELECT sum(v) OVER (ORDER BY v RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t",
        "RANGE BETWEEN with an offset",
        "ROWS BETWEEN",
    ),
]


@pytest.mark.parametrize(("sql", "name", "hint"), REFUSED)
def test_refusals_name_the_function_and_what_to_write(sql: str, name: str, hint: str) -> None:
    with pytest.raises(SqlError) as e:
        _compile(sql)
    assert name in str(e.value) and hint in str(e.value)
