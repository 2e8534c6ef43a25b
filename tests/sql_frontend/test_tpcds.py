"""TPC-DS queries (Spark's 103 texts of the 99) as maintained views over a small database.

Accepted queries are loaded, then changed by batches of new sales and returns, deletes and
updates on the fact tables; after every step each view must equal Spark SQL's result on the
same tables, as a multiset. The default run covers a representative subset (joins of the
three channels, correlated and EXISTS subqueries, windows, ROLLUP, UNION ALL, ORDER BY …
LIMIT top rows); the slow test runs all of them. ``IVM_TPCDS_SEED`` replays a run; the
full report is ``python -m bench tpcds``.
"""

from __future__ import annotations

import os
import re

import pytest
from tpcds_data import QUERIES
from tpcds_harness import compile_all, run_tpcds

SEED = int(os.environ.get("IVM_TPCDS_SEED", "7"))

REFUSED: set[str] = set()
"""The texts the front end refuses: none since q32, q36, q51, q69, q70 and q86 were accepted."""

SUBSET = [
    "q1",
    "q3",
    "q7",
    "q12",
    "q36",
    "q51",
    "q28",
    "q42",
    "q47",
    "q77",
    "q94",
    "q96",
    "q97",
    "q98",
]


def test_all_103_texts_compile_or_are_known_refusals() -> None:
    assert len(QUERIES) == 103
    _, run = compile_all(list(QUERIES))
    assert set(run.refused) <= REFUSED, run.refused
    assert len(run.accepted) >= 103 - len(REFUSED)


@pytest.mark.spark
def test_tpcds_subset_equals_spark(spark: object) -> None:
    run = run_tpcds(spark, SUBSET, SEED)
    assert run.accepted == SUBSET, run.refused
    assert not run.spark_errors
    assert not run.failures, "\n".join(run.failures)
    empty = [q for q, n in run.rows.items() if n == 0]
    assert len(empty) <= 2, f"the data selects nothing for {empty}"  # q19, q25 at seed 7


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(3600)
def test_tpcds_all_accepted_equal_spark(spark: object) -> None:
    run = run_tpcds(spark, list(QUERIES), SEED + 1)
    # q32's text casts '2000-01-27]' and q90 divides by zero on this data: Spark raises, and so
    # must the view, with the same error class
    assert {q: _error_class(e) for q, e in run.spark_errors.items()} == {
        q: _error_class(run.engine_errors.get(q, "")) for q in run.spark_errors
    }
    assert set(run.engine_errors) <= set(run.spark_errors), run.engine_errors
    assert not run.failures, "\n".join(run.failures)
    nonempty = [q for q, n in run.rows.items() if n > 0]
    # measured: 61 of 103 at seed 7 (README, TPC-DS: the generator needs tuning for the rest)
    assert len(nonempty) >= 0.55 * len(run.accepted), "the data selects too little"


def _error_class(message: str) -> str | None:
    m = re.search(r"\[([A-Z_]+)\]", message)
    return m.group(1) if m else None
