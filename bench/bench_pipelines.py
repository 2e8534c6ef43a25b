"""The example Declarative Pipelines project, maintained incrementally vs recomputed in full.

``python -m bench pipelines [--orders N] [--changes C] [--rounds R]``

Loads ``orders`` (N rows) and ``customers`` (1,000 rows) into a warehouse, runs
``examples/pipelines/sales`` once with :func:`spark_exec.pipelines.run_pipeline` (the initial
load), then R rounds of: change C orders (inserts, deletes, updates), run the pipeline again
(timed end to end: spec, SQL and Python sources, DataFrame analysis, refresh, Delta commits).
In the same run and Spark session, the baseline is what ``spark-pipelines run`` does on every
run: each materialized view's query recomputed by Spark SQL and written as a Delta table
(overwrite); with ``--spark-pipelines``, also a real ``spark-pipelines run`` of the project
(bench/spark_pipelines.py; it includes that command's own start-up).  Reports medians, the ratio, and the differences each operator processed in the
last round (machine-independent work counts).  Results: ``bench/results/pipelines.json``.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.cli import bench_arguments
from catalog import delta

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "pipelines" / "sales"
RESULTS = Path(__file__).parent / "results" / "pipelines.json"
FULL = {
    "orders_clean": "SELECT order_id, customer_id, amount FROM orders WHERE status <> 'cancelled'",
    "region_revenue": "SELECT region, SUM(amount) AS revenue, COUNT(*) AS orders FROM orders o "
    "JOIN customers c ON o.customer_id = c.customer_id WHERE status <> 'cancelled' "
    "GROUP BY region",
    "top_regions": "SELECT region, SUM(amount) AS revenue FROM orders o JOIN customers c "
    "ON o.customer_id = c.customer_id WHERE status <> 'cancelled' GROUP BY region "
    "ORDER BY revenue DESC, region LIMIT 2",
    "big_orders": "SELECT order_id, customer_id, amount FROM orders "
    "WHERE status <> 'cancelled' AND amount >= 100",
    "big_order_customers": "SELECT customer_id, COUNT(*) AS big_orders, SUM(amount) AS "
    "big_amount FROM orders WHERE status <> 'cancelled' AND amount >= 100 GROUP BY customer_id",
}
STATUSES = ["open", "shipped", "cancelled"]


def load_sources(s: Any, n: int, rng: random.Random) -> None:
    s.sql(
        "CREATE TABLE customers (customer_id INT, region STRING) USING delta;"
        "CREATE TABLE orders (order_id INT, customer_id INT, amount INT, status STRING) "
        "USING delta"
    )
    regions = ["north", "south", "east", "west", "centre"]
    customers = pa.table(
        {
            "customer_id": pa.array(range(1000), pa.int32()),
            "region": [regions[i % 5] for i in range(1000)],
        }
    )
    delta.insert(s.table_path("customers"), customers)
    orders = pa.table(
        {
            "order_id": pa.array(range(n), pa.int32()),
            "customer_id": pa.array([rng.randrange(1000) for _ in range(n)], pa.int32()),
            "amount": pa.array([rng.randint(1, 300) for _ in range(n)], pa.int32()),
            "status": [STATUSES[rng.randrange(3)] for _ in range(n)],
        }
    )
    delta.insert(s.table_path("orders"), orders)


def change(s: Any, n: int, count: int, rng: random.Random, next_id: list[int]) -> None:
    inserts = ", ".join(
        f"({next_id[0] + i}, {rng.randrange(1000)}, {rng.randint(1, 300)}, 'open')"
        for i in range(count // 2)
    )
    next_id[0] += count // 2
    s.sql(f"INSERT INTO orders VALUES {inserts}")
    victims = ", ".join(str(rng.randrange(n)) for _ in range(count - count // 2))
    s.sql(
        f"UPDATE orders SET status = 'cancelled', amount = amount + 1 WHERE order_id IN ({victims})"
    )


def spark_full_run(spark: Any, out: Path) -> float:
    """What ``spark-pipelines run`` does: every view recomputed and rewritten."""
    started = time.perf_counter()
    for name, query in FULL.items():
        spark.sql(query).write.format("delta").mode("overwrite").save(str(out / name))
    return time.perf_counter() - started


def real_spark_pipelines_run(spark: Any, tables: dict[str, str], work: Path) -> float:
    """Wall time of Spark's own ``spark-pipelines run`` of the project (a new Spark Connect
    server, every view recomputed), its sources' rows exported beforehand (not timed)."""
    from bench import spark_pipelines

    spec = spark_pipelines.prepare(
        EXAMPLE, work, spark_pipelines.export_sources(spark, tables, work)
    )
    return spark_pipelines.run(spec, work, list(FULL)[:1]).seconds


def operator_work(s: Any) -> dict[str, dict[str, int]]:
    """Differences processed per operator in each group's last epoch."""
    from catalog.pipeline import plan_groups

    live = {spec.name for spec in plan_groups(s.catalog)}
    out: dict[str, dict[str, int]] = {}
    for group, built in s._runtime.built.items():
        if group not in live:
            continue
        counts: dict[str, int] = defaultdict(int)
        for d in built.g.metrics.differences(epoch=built.g.epoch):
            counts[f"{d.kind}:{d.operator}"] += d.rows
        out[group] = dict(sorted(counts.items()))
    return out


def main(argv: list[str]) -> int:
    p = bench_arguments(
        "python -m bench pipelines",
        flags={
            "spark_pipelines": "also time Spark's own `spark-pipelines run` of the project "
            "after each round"
        },
        orders=200_000,
        changes=10,
        rounds=5,
    )
    args = p.parse_args(argv)
    from spark_exec import Session
    from spark_exec.pipelines import run_pipeline

    rng = random.Random(15)
    root = Path(tempfile.mkdtemp(prefix="bench-pipelines-"))
    s = Session(warehouse=root / "wh")
    load_sources(s, args.orders, rng)
    started = time.perf_counter()
    first = run_pipeline(s, EXAMPLE)
    initial = time.perf_counter() - started
    spark = s.spark
    ours, theirs, real = [], [], []
    next_id = [args.orders]
    tables = {t: s.table_path(t) for t in ("orders", "customers")}
    for r in range(args.rounds):
        change(s, args.orders, args.changes, rng, next_id)
        started = time.perf_counter()
        run = run_pipeline(s, EXAMPLE)
        ours.append(time.perf_counter() - started)
        assert not run.created and not run.replaced, run
        theirs.append(spark_full_run(spark, root / f"full-{r}"))
        if args.spark_pipelines:
            real.append(real_spark_pipelines_run(spark, tables, root / "sdp"))
    for name, query in FULL.items():  # the maintained views equal the recomputation
        got = sorted(tuple(r.values()) for r in s.read(name).to_pylist())
        want = sorted(tuple(r) for r in spark.sql(query).collect())
        assert got == want, name
    result = {
        "orders": args.orders,
        "changes_per_round": args.changes,
        "rounds": args.rounds,
        "initial_run_s": round(initial, 3),
        "views_created": first.created,
        "incremental_run_median_s": round(statistics.median(ours), 3),
        "spark_full_run_median_s": round(statistics.median(theirs), 3),
        "ratio": round(statistics.median(theirs) / statistics.median(ours), 2),
        **(
            {
                "spark_pipelines_run_median_s": round(statistics.median(real), 3),
                "spark_pipelines_ratio": round(
                    statistics.median(real) / statistics.median(ours), 2
                ),
            }
            if real
            else {}
        ),
        "operator_differences_last_round": operator_work(s),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "operator_differences_last_round"}))
    return 0
