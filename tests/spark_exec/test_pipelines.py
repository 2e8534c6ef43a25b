"""Spark Declarative Pipelines projects run by our runner (issue 18, item 1): the example project's
materialized views (SQL and Python, one temporary view, datasets that read each other across
files) equal Spark's full recomputation after the first run and after every later run, and later
runs process only the changes."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from spark_exec.pipelines import PipelineError, load_spec, run_pipeline
from spark_exec.session import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "pipelines" / "sales"
#: what spark-pipelines would compute in full for each materialized view of the example
FULL = {
    "orders_clean": "SELECT order_id, customer_id, amount FROM orders WHERE status <> 'cancelled'",
    "region_revenue": "SELECT region, SUM(amount) AS revenue, COUNT(*) AS orders "
    "FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
    "WHERE status <> 'cancelled' GROUP BY region",
    "top_regions": "SELECT region, SUM(amount) AS revenue FROM orders o JOIN customers c "
    "ON o.customer_id = c.customer_id WHERE status <> 'cancelled' GROUP BY region "
    "ORDER BY revenue DESC, region LIMIT 2",
    "big_order_customers": "SELECT customer_id, COUNT(*) AS big_orders, SUM(amount) AS big_amount "
    "FROM orders WHERE status <> 'cancelled' AND amount >= 100 GROUP BY customer_id",
}


def bag(rows: Any) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in rows)


def make_sources(s: Session, rng: random.Random) -> None:
    s.sql(
        "CREATE TABLE customers (customer_id INT, region STRING) USING delta;"
        "CREATE TABLE orders (order_id INT, customer_id INT, amount INT, status STRING) USING delta;"
        "INSERT INTO customers VALUES (1, 'north'), (2, 'south'), (3, 'east'), (4, 'north')"
    )
    rows = ", ".join(
        f"({i}, {rng.randint(1, 4)}, {rng.randint(10, 200)}, "
        f"'{rng.choice(['open', 'shipped', 'cancelled'])}')"
        for i in range(40)
    )
    s.sql(f"INSERT INTO orders VALUES {rows}")


def assert_full_equal(s: Session, spark: SparkSession) -> None:
    for view, query in FULL.items():
        got = s.read(view)
        rows = zip(*(got.column(c).to_pylist() for c in got.column_names), strict=True)
        assert bag(rows) == bag(spark.sql(query).collect()), view


def test_example_pipeline_is_maintained_incrementally(spark: SparkSession, tmp_path: Path) -> None:
    rng = random.Random(7)
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    make_sources(s, rng)
    first = run_pipeline(s, EXAMPLE)
    assert set(first.created) == {*FULL, "big_orders"}  # the temporary view is maintained too
    assert_full_equal(s, spark)
    for step in range(4):
        s.sql(f"INSERT INTO orders VALUES ({100 + step}, {rng.randint(1, 4)}, 150, 'open')")
        s.sql(f"UPDATE orders SET status = 'cancelled' WHERE order_id = {rng.randint(0, 39)}")
        s.sql(f"DELETE FROM orders WHERE order_id = {rng.randint(0, 39)}")
        if step == 2:
            s.sql("UPDATE customers SET region = 'west' WHERE customer_id = 2")
        again = run_pipeline(s, EXAMPLE)
        assert again.created == [] and again.replaced == []
        assert set(again.refreshed) == {*FULL, "big_orders"}
        assert_full_equal(s, spark)
        # only the changes: a handful of input rows, not the 40-row table
        assert all(r.rows_in <= 6 for r in again.reports), [str(r) for r in again.reports]


def test_changed_definition_is_replaced(spark: SparkSession, tmp_path: Path) -> None:
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    make_sources(s, random.Random(3))
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    run_pipeline(s, project)
    sql = project / "transformations" / "orders_clean.sql"
    sql.write_text(sql.read_text().replace("<> 'cancelled'", "= 'open'"))
    run = run_pipeline(s, project / "spark-pipeline.yml")
    # the changed view and every view that reads it are built again; nothing else
    assert set(run.replaced) == {*FULL, "big_orders"} and run.created == []
    got = s.read("orders_clean")
    want = spark.sql("SELECT order_id, customer_id, amount FROM orders WHERE status = 'open'")
    assert bag(zip(*(got.column(c).to_pylist() for c in got.column_names), strict=True)) == bag(
        want.collect()
    )


def test_streaming_tables_and_bad_specs_are_refused(tmp_path: Path) -> None:
    spec = tmp_path / "spark-pipeline.yml"
    spec.write_text("name: p\nstorage: s\nlibraries:\n  - glob:\n      include: t/**\nextra: 1\n")
    with pytest.raises(PipelineError, match="unexpected field 'extra'"):
        load_spec(spec)
    spec.write_text("name: p\nstorage: s\nlibraries:\n  - glob:\n      include: t/*.sql\n")
    with pytest.raises(PipelineError, match="dir/\\*\\*"):
        load_spec(spec).source_files()
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "s.sql").write_text("CREATE STREAMING TABLE s AS SELECT * FROM STREAM src")
    spec.write_text("name: p\nstorage: s\nlibraries:\n  - glob:\n      include: t/**\n")
    s = Session(warehouse=tmp_path / "wh")
    with pytest.raises(PipelineError, match="spark-pipelines run --refresh"):
        run_pipeline(s, tmp_path)
    assert s.catalog.views() == ()


def test_cli_runs_a_pipeline(spark: SparkSession, tmp_path: Path) -> None:
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    make_sources(s, random.Random(5))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [
            str(Path(sys.executable).parent / "ivm"),
            "--warehouse",
            str(tmp_path / "wh"),
            "pipelines",
            "run",
            str(EXAMPLE),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert "pipeline sales" in run.stdout and "created:" in run.stdout
    s2 = Session(spark=spark, warehouse=tmp_path / "wh")
    assert_full_equal(s2, spark)


LAYOUT_SQL = """-- partitioned by region, in SQL
CREATE MATERIALIZED VIEW revenue_by_region
PARTITIONED BY (region)
TBLPROPERTIES ('team' = 'sales')
AS SELECT c.region, o.customer_id, SUM(o.amount) AS revenue
FROM orders o JOIN customers c ON o.customer_id = c.customer_id
GROUP BY c.region, o.customer_id;
"""
LAYOUT_PY = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F

spark = globals()["spark"]


@dp.materialized_view(
    cluster_by=["customer_id"], comment="per customer", table_properties={"owner": "ana"}
)
def per_customer():
    return spark.table("orders").groupBy("customer_id").agg(F.sum("amount").alias("total"))
"""


def test_pipeline_layout_is_applied_to_the_view_tables(spark: SparkSession, tmp_path: Path) -> None:
    """``PARTITIONED BY`` of a SQL dataset and ``cluster_by`` of ``@dp.materialized_view``
    shape the view tables; the views stay equal to Spark's recomputation, and a changed layout
    replaces the view."""
    from deltalake import DeltaTable

    from catalog import view_clustering

    rng = random.Random(11)
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    make_sources(s, rng)
    project = tmp_path / "project"
    (project / "t").mkdir(parents=True)
    (project / "spark-pipeline.yml").write_text(
        "name: layout\nstorage: st\nlibraries:\n  - glob:\n      include: t/**\n"
    )
    (project / "t" / "by_region.sql").write_text(LAYOUT_SQL)
    (project / "t" / "per_customer.py").write_text(LAYOUT_PY)
    full = {
        "revenue_by_region": "SELECT c.region, o.customer_id, SUM(o.amount) AS revenue "
        "FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
        "GROUP BY c.region, o.customer_id",
        "per_customer": "SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id",
    }

    def check() -> None:
        for view, query in full.items():
            got = s.read(view)
            rows = zip(*(got.column(c).to_pylist() for c in got.column_names), strict=True)
            assert bag(rows) == bag(spark.sql(query).collect()), view

    run = run_pipeline(s, project)
    assert set(run.created) == set(full)
    by_region = s.table_path("revenue_by_region")
    per_customer = s.table_path("per_customer")
    assert DeltaTable(by_region).metadata().partition_columns == ["region"]
    assert view_clustering.clustering_columns(per_customer) == ("customer_id",)
    assert s.catalog.view("per_customer").options.comment == "per customer"
    assert DeltaTable(by_region).metadata().configuration.get("team") == "sales"
    assert DeltaTable(per_customer).metadata().configuration.get("owner") == "ana"
    check()
    s.sql("INSERT INTO orders VALUES (500, 2, 77, 'open'); DELETE FROM orders WHERE order_id = 3")
    run = run_pipeline(s, project)
    assert set(run.refreshed) == set(full) and run.replaced == []
    check()
    (project / "t" / "per_customer.py").write_text(LAYOUT_PY.replace('["customer_id"]', "None"))
    run = run_pipeline(s, project)
    assert run.replaced == ["per_customer"]
    assert view_clustering.clustering_columns(s.table_path("per_customer")) == ()
    check()
