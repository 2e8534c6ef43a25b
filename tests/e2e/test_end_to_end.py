"""The whole spine on a real local Spark and real Delta tables.

Tables are created and changed through ``Session.sql`` (INSERT / DELETE / UPDATE / MERGE) and
by a second writer (delta-rs directly); after every refresh each view, read by name in Spark
SQL and by ``spark.read.format("delta").load(path)``, equals Spark SQL recomputing the view's
query over the same tables (as multisets).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake
from e2e_helpers import bag, spark_bag
from references import transitive_closure

from catalog import delta, view_table
from spark_exec import Session
from spark_exec.registry import read_delta

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

VIEWS = {
    "revenue": """SELECT c.region, count(*) AS n, sum(o.amount) AS total
                  FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.region""",
    "per_customer": """SELECT c.id, c.name, count(o.id) AS n
                       FROM customers c LEFT JOIN orders o ON o.cust = c.id
                       GROUP BY c.id, c.name""",
    "idle": "SELECT id, name FROM customers WHERE id NOT IN (SELECT cust FROM orders)",
    "big_regions": "SELECT region, total FROM revenue WHERE n >= 3",
}


def check_all(s: Session, spark: SparkSession, by_path: str = "revenue") -> None:
    """Each view by name (and one by path) equals Spark SQL recomputing its query."""
    for name, query in VIEWS.items():
        want = spark_bag(spark, query)
        assert spark_bag(spark, f"SELECT * FROM {name}") == want, name
        assert bag(s.read(name).to_pylist()) == want, name
        if name == by_path:
            rows = read_delta(spark, s.table_path(name), view=True).collect()
            assert bag(tuple(r) for r in rows) == want, name


def test_sql_views_follow_every_kind_of_change(spark: SparkSession, tmp_path: Path) -> None:
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql("""
        CREATE TABLE customers (id BIGINT NOT NULL, name STRING, region STRING);
        CREATE TABLE orders (id BIGINT, cust BIGINT, amount DECIMAL(10,2));
        INSERT INTO customers VALUES (1, 'ann', 'north'), (2, 'bob', 'south'),
                                     (3, 'cy', 'north'), (4, NULL, NULL);
        INSERT INTO orders VALUES (10, 1, 5.00), (11, 1, 7.50), (12, 2, 1.25),
                                  (13, 3, 2.00), (14, NULL, 3.00), (15, 1, 5.00)""")
    for name, query in VIEWS.items():
        s.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
    check_all(s, spark)

    s.sql("INSERT INTO orders VALUES (16, 4, 9.99), (17, 2, 0.01)")
    s.sql("DELETE FROM orders WHERE id = 11 OR cust IS NULL")
    reports = s.refresh()
    assert {r.view for r in reports} == set(VIEWS)
    assert all(not r.recomputed for r in reports)
    check_all(s, spark, by_path="per_customer")

    s.sql("UPDATE orders SET amount = amount * 2, cust = 3 WHERE id = 10")
    s.sql("UPDATE customers SET region = 'south' WHERE id = 3")
    s.sql("REFRESH MATERIALIZED VIEW revenue")  # its group: revenue and big_regions
    assert {r.view for r in s.last_reports} == {"revenue", "big_regions"}
    s.refresh()
    check_all(s, spark)

    s.sql("""MERGE INTO customers AS t
             USING (VALUES (2, 'bobby', 'east'), (5, 'eve', 'west')) AS u(id, name, region)
             ON t.id = u.id
             WHEN MATCHED THEN UPDATE SET name = u.name, region = u.region
             WHEN NOT MATCHED THEN INSERT *""")
    # a second writer commits twice with delta-rs directly
    orders = s.table_path("orders")
    write_deltalake(
        orders,
        pa.table(
            {
                "id": pa.array([20, 21], pa.int64()),
                "cust": pa.array([5, 5], pa.int64()),
                "amount": pa.array([Decimal("1.00"), Decimal("2.00")], pa.decimal128(10, 2)),
            }
        ),
        mode="append",
    )
    delta.delete(orders, "id = 13")
    s.refresh()
    check_all(s, spark)
    # every refresh wrote one version per changed view, recording its input versions
    rec = view_table.last_refresh(s.table_path("revenue"))
    assert rec is not None and rec.input_versions["orders"] == delta.current_version(orders)


def test_recursive_sql_and_datalog_views(spark: SparkSession, tmp_path: Path) -> None:
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE edges (src BIGINT NOT NULL, dst BIGINT NOT NULL)")
    s.sql("INSERT INTO edges VALUES (1, 2), (2, 3), (3, 1), (3, 4), (7, 8)")
    s.sql("""CREATE MATERIALIZED VIEW tc AS
             WITH RECURSIVE tc(src, dst) AS (
                SELECT src, dst FROM edges
                UNION SELECT tc.src, e.dst FROM tc JOIN edges e ON tc.dst = e.src)
             SELECT * FROM tc""")
    s.datalog("""
        .decl edges(a: number, b: number)  .input edges
        .decl path(a: number, b: number)   .output path
        .decl loops(a: number)             .output loops
        path(a, b) :- edges(a, b).
        path(a, c) :- path(a, b), edges(b, c).
        loops(a) :- path(a, a).""")
    s.sql("CREATE MATERIALIZED VIEW loop_count AS SELECT count(*) AS n FROM loops")

    def closure() -> set[tuple[int, int]]:
        return transitive_closure(
            {(r.src, r.dst) for r in spark.sql("SELECT * FROM edges").collect()}
        )

    for change in (
        "DELETE FROM edges WHERE src = 3 AND dst = 1",
        "INSERT INTO edges VALUES (4, 1), (8, 7)",
        "UPDATE edges SET dst = 9 WHERE src = 7",
    ):
        s.sql(change)
        s.refresh()
        want = closure()
        assert set(bag(tuple(r) for r in spark.sql("SELECT * FROM tc").collect())) == want
        assert spark_bag(spark, "SELECT * FROM path") == bag(want)
        loops = {a for a, b in want if a == b}
        assert spark_bag(spark, "SELECT * FROM loops") == bag((a,) for a in loops)
        assert spark_bag(spark, "SELECT * FROM loop_count") == bag([(len(loops),)])

    shown = s.sql("SHOW MATERIALIZED VIEWS").to_arrow().to_pylist()
    assert {r["name"] for r in shown} == {"tc", "path", "loops", "loop_count"}
    groups = {r["name"]: r["group"] for r in shown}
    assert groups["path"] == groups["loops"] == groups["loop_count"] != groups["tc"]
    assert "Dataflow" in s.explain("loops") and "stratum" in s.explain("loops")
    s.sql("DROP MATERIALIZED VIEW loop_count")
    s.sql("INSERT INTO edges VALUES (9, 7)")
    s.refresh()
    assert spark_bag(spark, "SELECT * FROM path") == bag(closure())


def test_external_table_and_embedded_default(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ext = tmp_path / "ext"
    write_deltalake(
        ext,
        pa.table({"k": np.arange(6, dtype=np.int64) % 3, "v": np.arange(6, dtype=np.int64)}),
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    monkeypatch.chdir(tmp_path)
    s = Session(spark=spark)  # the embedded default: ./warehouse
    assert s.warehouse == (tmp_path / "warehouse").resolve()
    s.sql(f"CREATE TABLE ext USING DELTA LOCATION '{ext}'")
    s.sql("CREATE MATERIALIZED VIEW sums AS SELECT k, sum(v) AS s FROM ext GROUP BY k")
    write_deltalake(
        ext,
        pa.table({"k": pa.array([0, 5], pa.int64()), "v": pa.array([100, 1], pa.int64())}),
        mode="append",
    )
    s.refresh()
    assert spark_bag(spark, "SELECT * FROM sums") == spark_bag(
        spark, "SELECT k, sum(v) FROM ext GROUP BY k"
    )
    # a second Session (another process would do the same) sees the catalog
    s2 = Session(spark=spark)
    assert [v["name"] for v in s2.show_views().to_pylist()] == ["sums"]
