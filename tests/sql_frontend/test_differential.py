"""Every view of the catalogue equals Spark SQL after every random change (multiset)."""

from __future__ import annotations

import os

import pytest
from sql_harness import Harness
from sql_views import MATERIALIZED, VIEWS

SEED = int(os.environ.get("IVM_SQL_SEED", "1234"))


@pytest.mark.spark
def test_views_equal_spark_after_every_step(spark: object) -> None:
    h = Harness(spark, VIEWS, SEED, MATERIALIZED)
    failures: list[str] = []
    for step, (ins, dels) in enumerate([(25, 0), (6, 8)]):
        h.random_changes(ins, dels)
        h.g.step()
        failures += h.check(step)
        if len(failures) > 20:
            break
    assert not failures, f"seed {SEED}:\n" + "\n".join(failures)


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("seed", [SEED + 1, SEED + 2])
def test_views_equal_spark_longer_runs(spark: object, seed: int) -> None:
    h = Harness(spark, VIEWS, seed, MATERIALIZED)
    failures: list[str] = []
    for step, (ins, dels) in enumerate([(30, 0), (10, 5), (5, 12), (12, 4), (3, 8), (8, 8)]):
        h.random_changes(ins, dels)
        h.g.step()
        failures += h.check(step)
    assert not failures, f"seed {seed}:\n" + "\n".join(failures)
