"""Issue 16: aggregates, window functions and scalar functions as Spark computes them, kept
equal to Spark SQL's recomputation under random inserts, deletes and updates."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from coverage_views import AGGREGATE_VIEWS, GENERATOR_VIEWS, WINDOW_VIEWS
from function_cases import EV_CASES, SCALAR_VIEWS, T_CASES
from sql_harness import TABLES, Harness

import ivm
from sql_frontend.compile import compile_view
from sql_frontend.errors import SqlError
from sql_frontend.expressions import registry

SEED = int(os.environ.get("IVM_SQL_SEED", "1616"))
VIEWS = {**AGGREGATE_VIEWS, **WINDOW_VIEWS, **GENERATOR_VIEWS, **SCALAR_VIEWS}


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


def _compile(sql: str):
    g = ivm.Dataflow()
    inputs = {n: g.input(n, [(c, "any") for c, _ in cols]) for n, cols in TABLES.items()}
    return compile_view(sql, dict(TABLES), g, inputs)


def test_support_table_is_generated_from_the_code() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "sql-support.md"
    assert doc.read_text() == registry.support_table(), (
        "regenerate: python -m sql_frontend.expressions.registry > docs/sql-support.md"
    )


def test_every_registry_function_has_a_differential_case() -> None:
    assert set(registry.registry_names()) == set(T_CASES) | set(EV_CASES)


AGG_SQL = {
    "count": "count(v)",
    "count(*)": "count(*)",
    "sum": "sum(v)",
    "avg": "avg(m)",
    "min": "min(s)",
    "max": "max(d)",
    "count(DISTINCT x)": "count(DISTINCT v)",
    "agg(...) FILTER (WHERE ...)": "sum(v) FILTER (WHERE x > 0)",
    "count_if": "count_if(v > 0)",
    "bool_and": "bool_and(v > 0)",
    "bool_or": "bool_or(v > 0)",
    "every": "every(v > 0)",
    "some": "some(v > 0)",
    "stddev": "stddev(x)",
    "stddev_samp": "stddev_samp(x)",
    "stddev_pop": "stddev_pop(x)",
    "std": "std(x)",
    "variance": "variance(x)",
    "var_samp": "var_samp(x)",
    "var_pop": "var_pop(x)",
    "sum(DISTINCT x)": "sum(DISTINCT v)",
    "avg(DISTINCT x)": "avg(DISTINCT v)",
    "count(DISTINCT a, b)": "count(DISTINCT v, s)",
    "max_by": "max_by(s, v)",
    "min_by": "min_by(s, v)",
    "percentile": "percentile(v, 0.5)",
    "median": "median(v)",
    "percentile_cont": "percentile_cont(0.5) WITHIN GROUP (ORDER BY v)",
    "first": "first(v)",
    "last": "last(v)",
    "any_value": "any_value(v)",
    "collect_list": "collect_list(v)",
    "collect_set": "collect_set(v)",
    "percentile_approx": "percentile_approx(v, 0.5)",
    "approx_count_distinct": "approx_count_distinct(v)",
    "corr": "corr(v, x)",
    "covar_pop": "covar_pop(v, x)",
    "covar_samp": "covar_samp(v, x)",
    "kurtosis": "kurtosis(x)",
    "skewness": "skewness(x)",
    "mode": "mode(v)",
    "listagg": "listagg(s)",
}


@pytest.mark.parametrize("name", list(registry.AGGREGATES))
def test_aggregate_support_table_tells_the_truth(name: str) -> None:
    sql = f"SELECT k, {AGG_SQL[name]} AS a FROM t GROUP BY k"
    how = registry.AGGREGATES[name]
    if how == registry.REFUSED:
        with pytest.raises(SqlError):
            _compile(sql)
        return
    explain = _compile(sql).explain
    assert ("recomputed per group" in explain) == (how == registry.PER_GROUP), explain


REFUSED = [
    ("SELECT k, first(v) FROM t GROUP BY k", "first", "min(x) or max(x)"),
    ("SELECT k,\n  any_value(v) FROM t GROUP BY k", "any_value", "line 2"),
    ("SELECT k, collect_set(map('v', v)) FROM t GROUP BY k", "collect_set", "not comparable"),
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


def test_readme_cites_the_measured_function_coverage() -> None:
    """The README's figure is what ``function_coverage.py`` measures against Spark's list."""
    from function_coverage import measure, spark_functions

    have, total, missing = measure()
    assert total == sum(len(v) for v in missing.values()) + have
    assert {"abs", "xxhash64", "format_string"} <= {f["name"] for f in spark_functions()}
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    figure = f"{have} of {total} deterministic scalar functions"
    assert " ".join(readme.split()).count(figure) == 2, figure
