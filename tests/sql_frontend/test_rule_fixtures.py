"""The rewrite rules' golden files (``tests/fixtures/rules/<rule>.sql``, see :mod:`rule_cases`):
each rule turns every input into its expected output, and, run by Spark SQL over random
tables, the input and the output give the same rows (the rewrite keeps the query's meaning).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from rule_cases import RULES, apply_rule, register_tables, rule_cases
from sql_harness import multiset, spark_results

SEED = int(os.environ.get("IVM_SQL_SEED", "1234"))

CASES = [c for rule in RULES for c in rule_cases(rule)]


def test_every_rule_has_golden_cases() -> None:
    counts = {rule: len(rule_cases(rule)) for rule in RULES}
    assert all(n >= 3 for n in counts.values()), counts


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rule}-{c.name}" for c in CASES])
def test_rule_gives_its_golden_output(case: Any) -> None:
    assert apply_rule(case.rule, case.given, case.catalog) == case.expected


@pytest.mark.spark
def test_rewrites_keep_the_rows_spark_computes(spark: Any) -> None:
    register_tables(spark, SEED)
    runnable = [c for c in CASES if not c.spark]
    assert len(runnable) >= 0.9 * len(CASES)
    queries: dict[str, str] = {}
    for c in runnable:
        queries[f"{c.rule}/{c.name}/in"] = c.given
        queries[f"{c.rule}/{c.name}/out"] = c.expected
    rows = spark_results(spark, queries)
    failures = [
        f"{c.rule} {c.name} (seed {SEED}):\n  {c.given}\n  {c.expected}"
        for c in runnable
        if multiset(rows[f"{c.rule}/{c.name}/in"]) != multiset(rows[f"{c.rule}/{c.name}/out"])
    ]
    assert not failures, "\n".join(failures)
