"""Spark's implicit type coercion, pair by pair: every pair of SQL types under comparison,
arithmetic, UNION, CASE, COALESCE and IN (the generated matrix of :mod:`.coercion_matrix`).

For each case our engine and Spark both accept with equal result type and values, or both
refuse (ours with a typed :class:`~sql_frontend.errors.SqlError`). The default run compares
with Spark 4.3's recorded answers (``data/coercion_matrix.json``); the ``spark`` test asks a
live Spark, so the recorded answers cannot go stale.
"""

from __future__ import annotations

from typing import Any

import coercion_matrix as cm
import pytest


@pytest.fixture(scope="module")
def engine() -> dict[str, dict[str, Any]]:
    return cm.engine_outcomes()


def test_matrix_covers_every_pair_and_operator(engine: dict[str, dict[str, Any]]) -> None:
    golden = cm.load_golden()
    assert len(golden) == len(cm.OPS) * len(cm.TYPES) ** 2
    assert set(engine) == set(golden)
    # the matrix is not trivially one-sided
    refused = sum("error" in v for v in golden.values())
    assert 0.2 < refused / len(golden) < 0.6


def test_engine_matches_spark_recorded(engine: dict[str, dict[str, Any]]) -> None:
    diffs = cm.differences(cm.load_golden(), engine)
    assert not diffs, f"{len(diffs)} cases differ from Spark:\n" + "\n".join(diffs[:40])


@pytest.mark.spark
def test_engine_matches_live_spark(spark: Any, engine: dict[str, dict[str, Any]]) -> None:
    accepted = {k for k, v in engine.items() if "error" not in v}
    live = cm.spark_outcomes(spark, accepted)
    diffs = cm.differences(live, engine)
    assert not diffs, f"{len(diffs)} cases differ from Spark:\n" + "\n".join(diffs[:40])
    stale = cm.differences(live, cm.load_golden())
    assert not stale, "data/coercion_matrix.json is stale; regenerate it:\n" + "\n".join(stale[:20])
