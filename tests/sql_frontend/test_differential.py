"""Every view of the catalogue equals Spark SQL after every random change (multiset)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from delta_mirror import DeltaMirror
from sql_harness import Harness, normalize
from sql_views import MATERIALIZED, VIEWS

from catalog.sql_types import view_schema
from catalog.view_key import view_key

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


def _delta_run(tmp_path: Path, every: int, cow_max_bytes: int | None) -> None:
    """Every ``every``-th view (and each materialized one) kept as a Delta view table."""
    h = Harness(None, VIEWS, SEED, MATERIALIZED)

    def storable(n: str) -> bool:  # Delta (like Spark) refuses columns equal but for case
        cols = [c.lower() for c, _ in h.schemas[n]]
        return len(set(cols)) == len(cols)

    names = [n for n in [*MATERIALIZED, *list(VIEWS)[::every]] if storable(n)]
    schemas = {n: view_schema(h.schemas[n]) for n in names}
    keys = {n: view_key({**VIEWS, **MATERIALIZED}[n], schemas[n].names) for n in names}
    assert any(k is not None for k in keys.values())  # the update pre/post-images are tested
    mirror = DeltaMirror(
        tmp_path,
        {n: (h.outputs[n], schemas[n]) for n in names},
        normalize,
        cow_max_bytes,
        keys,
    )
    failures: list[str] = []
    for ins, dels in [(25, 0), (6, 8), (4, 12)]:
        h.random_changes(ins, dels)
        h.g.step()
        failures += mirror.publish_and_check()
    assert not failures, f"seed {SEED}:\n" + "\n".join(failures[:20])


@pytest.mark.parametrize("cow_max_bytes", [None, 0], ids=["copy-on-write", "deletion-vectors"])
def test_view_tables_hold_exactly_the_views(tmp_path: Path, cow_max_bytes: int | None) -> None:
    """A plain Delta reader sees each view after every step; time travel; CDF = the diff."""
    _delta_run(tmp_path, 8, cow_max_bytes)


@pytest.mark.slow
@pytest.mark.parametrize("cow_max_bytes", [None, 0], ids=["copy-on-write", "deletion-vectors"])
def test_view_tables_hold_exactly_every_view(tmp_path: Path, cow_max_bytes: int | None) -> None:
    _delta_run(tmp_path, 1, cow_max_bytes)
