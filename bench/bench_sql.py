"""SQL join + aggregate views over 1,000,000 facts: incremental refresh vs Spark recomputation.

``python -m bench sql [--facts N] [--parts P] [--batch B] [--refreshes R] [--spark-runs S]``

Two views of ``lineitem ⋈ part`` with GROUP BY and COUNT/SUM/AVG (see :data:`VIEWS`), each
compiled by ``sql_frontend`` into its own ``ivm`` dataflow: ``per_part`` (one group per part)
and ``per_brand_type`` (750 large groups, plus MIN/MAX). Each is loaded with N facts and P parts,
then refreshed R times with the same batches of B changed facts (40% inserts, 40% deletes, 20%
updates = a delete and an insert each). Spark SQL recomputes the same views over the same data
in the same run (tables are cached Spark DataFrames, each query timed to ``.collect()``), S
times; medians of both are reported, with CPU time (this process for the engine; the Spark JVM
and its Python workers for Spark). At the end each maintained view is compared with Spark's
result on the final data (multiset; doubles to a relative 1e-9). Results:
``bench/results/sql.json`` and a printed markdown table.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import statistics
import sys
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import ivm
from bench.cli import bench_arguments
from sql_frontend.compile import compile_view

RESULTS = Path(__file__).parent / "results" / "sql.json"
VIEWS = {
    # one group per part (20,000 groups of ~50 facts): the usual shape of a summary view
    "per_part": """
SELECT l_partkey, p_brand, count(*) AS n, sum(l_quantity) AS qty,
       avg(l_extendedprice * (1 - l_discount)) AS avg_net
FROM lineitem JOIN part ON l_partkey = p_partkey
WHERE l_discount < 0.09
GROUP BY l_partkey, p_brand
""",
    # few large groups (750 groups of ~1,300 facts) and MIN/MAX too: a batch of 1,000 changes
    # touches most groups, and the engine's reduce re-reads each touched group
    "per_brand_type": """
SELECT p_brand, p_type, count(*) AS n, sum(l_quantity) AS qty,
       avg(l_extendedprice * (1 - l_discount)) AS avg_net, min(l_shipdate) AS first_ship,
       max(l_quantity) AS max_qty
FROM lineitem JOIN part ON l_partkey = p_partkey
WHERE l_discount < 0.09
GROUP BY p_brand, p_type
""",
}
CATALOG = {
    "lineitem": [
        ("l_orderkey", "bigint"),
        ("l_partkey", "bigint"),
        ("l_quantity", "bigint"),
        ("l_extendedprice", "double"),
        ("l_discount", "double"),
        ("l_shipdate", "date"),
    ],
    "part": [("p_partkey", "bigint"), ("p_brand", "string"), ("p_type", "string")],
}
EPOCH = dt.date(1992, 1, 1)


def make_facts(n: int, n_parts: int, rng: np.random.Generator, start_key: int) -> dict:
    days = rng.integers(0, 2400, n)
    return {
        "l_orderkey": np.arange(start_key, start_key + n, dtype=np.int64),
        "l_partkey": rng.integers(1, n_parts + 1, n),
        "l_quantity": rng.integers(1, 51, n),
        "l_extendedprice": np.round(rng.uniform(900.0, 100_000.0, n), 2),
        "l_discount": rng.integers(0, 11, n) / 100.0,
        "l_shipdate": np.array([EPOCH + dt.timedelta(days=int(d)) for d in days], dtype=object),
    }


def make_parts(n: int, rng: np.random.Generator) -> dict:
    return {
        "p_partkey": np.arange(1, n + 1, dtype=np.int64),
        "p_brand": np.array(
            [
                f"Brand#{a}{b}"
                for a, b in zip(rng.integers(1, 6, n), rng.integers(1, 6, n), strict=True)
            ],
            dtype=object,
        ),
        "p_type": np.array([f"T{t}" for t in rng.integers(0, 30, n)], dtype=object),
    }


def to_rows(cols: dict, idx: np.ndarray | None = None) -> list[tuple]:
    arrays = [v if idx is None else v[idx] for v in cols.values()]
    return list(zip(*(a.tolist() for a in arrays), strict=True))


def spark_cpu_seconds() -> float:
    """CPU seconds of this process's children (the Spark JVM and any Python workers)."""
    import psutil

    total = 0.0
    for c in psutil.Process().children(recursive=True):
        try:
            t = c.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def normalize(v: Any) -> Any:
    if isinstance(v, Decimal):
        return float(v)
    if hasattr(v, "item"):
        return normalize(v.item())
    return v


def same_rows(expected: list[tuple], actual: list[tuple]) -> bool:
    """Equal as multisets, floats to a relative 1e-9 (a maintained double SUM accumulates its
    rounding differently from a recomputed one)."""

    def key(r: tuple) -> tuple:
        return tuple(v for v in r if not isinstance(v, float))

    def floats(r: tuple) -> list[float]:
        return [v for v in r if isinstance(v, float)]

    if Counter(map(key, expected)) != Counter(map(key, actual)):
        return False
    by_key: dict[tuple, list[list[float]]] = {}
    for r in actual:
        by_key.setdefault(key(r), []).append(floats(r))
    for r in expected:
        cands = by_key[key(r)]
        hit = next(
            (
                c
                for c in cands
                if all(
                    math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
                    for a, b in zip(floats(r), c, strict=True)
                )
            ),
            None,
        )
        if hit is None:
            return False
        cands.remove(hit)
    return True


def run_view(sql: str, facts: dict, parts: dict, batches: list) -> dict:
    """Load the view in its own dataflow, apply every batch; wall and CPU times."""
    g = ivm.Dataflow("bench_sql")
    inputs = {
        name: g.input(name, [(c, "str" if ty == "string" else "any") for c, ty in cols])
        for name, cols in CATALOG.items()
    }
    out = g.output(compile_view(sql, CATALOG, g, inputs).collection, "view")
    inputs["part"].insert(pa.table(parts))
    inputs["lineitem"].insert(
        pa.table({k: pa.array(v.tolist()) if v.dtype == object else v for k, v in facts.items()})
    )
    t, c = time.perf_counter(), time.process_time()
    g.step()
    load = (time.perf_counter() - t, time.process_time() - c)
    walls, cpus = [], []
    for old_rows, new_rows in batches:
        t, c = time.perf_counter(), time.process_time()
        inputs["lineitem"].delete(old_rows)
        inputs["lineitem"].insert(new_rows)
        g.step()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return {"out": out, "load": load, "walls": walls, "cpus": cpus}


def main(argv: list[str]) -> int:
    ap = bench_arguments(
        "python -m bench sql",
        facts=1_000_000,
        parts=20_000,
        batch=1_000,
        refreshes=15,
        spark_runs=5,
    )
    ap.add_argument("--views", default=",".join(VIEWS))
    ap.add_argument("--json", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(42)
    views = {v: VIEWS[v] for v in args.views.split(",")}

    t = time.perf_counter()
    facts = make_facts(args.facts, args.parts, rng, 1)
    parts = make_parts(args.parts, rng)
    # the change batches: 40% inserts, 40% deletes, 20% updates (a delete and an insert each)
    live = {k: v.tolist() for k, v in facts.items()}  # column lists; row i alive iff alive[i]
    alive = np.ones(args.facts, dtype=bool)
    next_key = args.facts + 1
    n_ins, n_del = int(args.batch * 0.4), int(args.batch * 0.4)
    n_upd = (args.batch - n_ins - n_del) // 2
    batches = []
    for _ in range(args.refreshes):
        new = make_facts(n_ins + n_upd, args.parts, rng, next_key)
        next_key += n_ins + n_upd
        victims = rng.choice(np.flatnonzero(alive), n_del + n_upd, replace=False)
        old_rows = [tuple(live[k][i] for k in live) for i in victims]
        alive[victims] = False
        new_rows = to_rows(new)
        for k in live:
            live[k].extend(new[k].tolist())
        alive = np.concatenate([alive, np.ones(len(new_rows), dtype=bool)])
        batches.append((old_rows, new_rows))
    print(
        f"generated {args.facts:,} facts, {args.parts:,} parts, {args.refreshes} batches in "
        f"{time.perf_counter() - t:.1f}s",
        flush=True,
    )
    runs = {}
    for name, sql in views.items():
        runs[name] = r = run_view(sql, facts, parts, batches)
        print(
            f"{name}: load {r['load'][0]:.1f}s; refresh median "
            f"{statistics.median(r['walls']) * 1e3:.1f} ms wall, "
            f"{statistics.median(r['cpus']) * 1e3:.1f} ms CPU",
            flush=True,
        )

    # ---- Spark SQL recomputation of the same views, same data, same run
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from spark_exec.spark_session import local_spark

    spark = local_spark(conf={"spark.driver.memory": "3g"})
    spark.sparkContext.setLogLevel("ERROR")

    cached: dict[str, Any] = {}

    def register(cols: dict, mask: np.ndarray | None, name: str) -> None:
        if name in cached:
            cached.pop(name).unpersist(blocking=True)
        arrays = {}
        for k, v in cols.items():
            a = np.asarray(v, dtype=object if k in ("l_shipdate", "p_brand", "p_type") else None)
            arrays[k] = pa.array((a if mask is None else a[mask]).tolist())
        schema = ", ".join(f"{c} {ty.upper()}" for c, ty in CATALOG[name])
        df = spark.createDataFrame(pa.table(arrays).to_pandas(), schema=schema).cache()
        df.count()
        df.createOrReplaceTempView(name)
        cached[name] = df

    register(parts, None, "part")
    register(facts, None, "lineitem")
    spark_times = {}
    for name, sql in views.items():
        spark_walls, spark_cpus = [], []
        for _ in range(args.spark_runs):
            c0 = spark_cpu_seconds()
            t = time.perf_counter()
            spark.sql(sql).collect()
            spark_walls.append(time.perf_counter() - t)
            spark_cpus.append(spark_cpu_seconds() - c0)
        spark_times[name] = (spark_walls, spark_cpus)
        print(
            f"{name}: Spark recomputation median {statistics.median(spark_walls):.2f}s wall, "
            f"{statistics.median(spark_cpus):.2f}s CPU (JVM)",
            flush=True,
        )

    # ---- equality on the final data
    register(live, alive, "lineitem")
    results = {}
    ok = True
    for name, sql in views.items():
        r = runs[name]
        expected = [tuple(normalize(v) for v in row) for row in spark.sql(sql).collect()]
        actual = [
            tuple(normalize(v) for v in row)
            for row, n in r["out"].counts().items()
            for _ in range(n)
        ]
        equal = same_rows(expected, actual)
        ok &= equal
        if not equal:
            print(
                f"{name} MISMATCH: missing",
                sorted(set(expected) - set(actual))[:3],
                "extra",
                sorted(set(actual) - set(expected))[:3],
                file=sys.stderr,
            )
        spark_walls, spark_cpus = spark_times[name]
        med, cmed = statistics.median(r["walls"]), statistics.median(r["cpus"])
        smed, scmed = statistics.median(spark_walls), statistics.median(spark_cpus)
        results[name] = {
            "view": " ".join(sql.split()),
            "groups": len(actual),
            "initial_load_s": r["load"][0],
            "initial_load_cpu_s": r["load"][1],
            "refresh_wall_ms": [w * 1e3 for w in r["walls"]],
            "refresh_cpu_ms": [c * 1e3 for c in r["cpus"]],
            "median_refresh_ms": med * 1e3,
            "median_refresh_cpu_ms": cmed * 1e3,
            "spark_wall_s": spark_walls,
            "spark_cpu_s": spark_cpus,
            "median_spark_s": smed,
            "median_spark_cpu_s": scmed,
            "speedup_wall": smed / med,
            "speedup_cpu": scmed / max(cmed, 1e-9),
            "equal_to_spark": equal,
        }
    report = {
        "facts": args.facts,
        "parts": args.parts,
        "batch": args.batch,
        "refreshes": args.refreshes,
        "load_average": os.getloadavg(),
        "cores": os.cpu_count(),
        "views": results,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2, default=str))
    print(markdown(report))
    return 0 if ok else 1


def markdown(rep: dict) -> str:
    lines = [
        f"SQL views over {rep['facts']:,} facts ⋈ {rep['parts']:,} parts; refresh = "
        f"{rep['batch']:,} changed facts (median of {rep['refreshes']}); Spark = full "
        f"recomputation (cached tables, to .collect()); load average {rep['load_average'][0]:.1f}"
        f" on {rep['cores']} cores",
        "",
        "| view | groups | initial load | refresh wall | refresh CPU | Spark wall | Spark CPU "
        "| speed-up wall | speed-up CPU | equal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rep["views"].items():
        lines.append(
            f"| {name} | {r['groups']:,} | {r['initial_load_s']:.1f} s "
            f"| {r['median_refresh_ms']:.1f} ms | {r['median_refresh_cpu_ms']:.1f} ms "
            f"| {r['median_spark_s'] * 1e3:.0f} ms | {r['median_spark_cpu_s'] * 1e3:.0f} ms "
            f"| {r['speedup_wall']:.0f}× | {r['speedup_cpu']:.0f}× | {r['equal_to_spark']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
