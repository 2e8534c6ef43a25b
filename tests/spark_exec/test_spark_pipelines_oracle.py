"""The example Declarative Pipelines project run twice, side by side (issue 18, item 1): by our
runner, which maintains its materialized views from the changes, and by Spark's own
``spark-pipelines run``, which recomputes them in full.  After the first run and after a round
of inserts, updates and deletes (of both sources), every materialized view holds the same rows
in both; our second run processed only the changes."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from test_pipelines import make_sources

from bench import spark_pipelines
from spark_exec.pipelines import run_pipeline
from spark_exec.session import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipelines" / "sales"
VIEWS = ["orders_clean", "region_revenue", "top_regions", "big_order_customers"]


def bag(t: pa.Table, columns: list[str]) -> Counter[tuple[Any, ...]]:
    return Counter(zip(*(t.column(c).to_pylist() for c in columns), strict=True))


def assert_same(s: Session, theirs: dict[str, pa.Table], when: str) -> None:
    for view in VIEWS:
        ours = s.read(view)
        assert sorted(theirs[view].column_names) == sorted(ours.column_names), (view, when)
        cols = ours.column_names
        assert bag(ours, cols) == bag(theirs[view], cols), f"{view} after {when}"
        assert ours.num_rows > 0, view  # a real comparison, not two empty tables


def test_views_equal_a_spark_pipelines_run(spark: SparkSession, tmp_path: Path) -> None:
    rng = random.Random(11)
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    make_sources(s, rng)  # 40 orders of 4 customers
    work = tmp_path / "sdp"
    tables = {t: s.table_path(t) for t in ("orders", "customers")}
    spec = spark_pipelines.prepare(
        EXAMPLE, work, spark_pipelines.export_sources(spark, tables, work)
    )

    run_pipeline(s, EXAMPLE)
    assert_same(s, spark_pipelines.run(spec, work, VIEWS).views, "the first run")

    for i in range(3):
        s.sql(f"INSERT INTO orders VALUES ({100 + i}, {rng.randint(1, 4)}, 150, 'open')")
        s.sql(f"UPDATE orders SET status = 'cancelled' WHERE order_id = {rng.randint(0, 39)}")
        s.sql(f"DELETE FROM orders WHERE order_id = {rng.randint(0, 39)}")
    s.sql("UPDATE customers SET region = 'east' WHERE customer_id = 2")
    again = run_pipeline(s, EXAMPLE)
    assert again.created == [] and again.replaced == []
    # only the changes: per round an insert, an update (two rows) and a delete, plus the
    # customer's update (two rows) — at most 14 input rows, not the 40 + 4 of the tables
    assert all(r.rows_in <= 14 for r in again.reports), [str(r) for r in again.reports]
    spark_pipelines.export_sources(spark, tables, work)  # the sources' new rows
    assert_same(s, spark_pipelines.run(spec, work, VIEWS).views, "the changes")
