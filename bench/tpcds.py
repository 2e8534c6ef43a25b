"""``python -m bench tpcds``: how many TPC-DS queries the SQL front end maintains, equal to Spark.

Compiles Spark's 103 TPC-DS query texts (99 numbers; q14, q23, q24, q39 in two parts) as views
over a small generated database (tests/sql_frontend/tpcds_data.py), loads it, applies change
steps (new sales and returns, deletes, updates) and compares every accepted view with Spark SQL
after each step. Prints accepted / refused by cause / mismatches and writes
``bench/results/tpcds.json``.

    python -m bench tpcds [--seed 7] [--steps 2] [--queries q1,q2,...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "tpcds.json"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench tpcds")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--queries", default="", help="comma-separated names (default: all)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--steps", type=int, default=2, help="change steps after the load (0-2)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests" / "sql_frontend"))
    from tpcds_data import QUERIES
    from tpcds_harness import STEPS, run_tpcds

    from spark_exec.spark_session import local_spark

    names = args.queries.split(",") if args.queries else list(QUERIES)
    spark = local_spark(
        master="local[2]",
        app_name="bench-tpcds",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.session.timeZone": "UTC",
            "spark.driver.memory": "4g",  # 103 plans, one at a time, over a long run
        },
    )
    run = run_tpcds(spark, names, args.seed, STEPS[: args.steps])
    numbers = {q.rstrip("ab") for q in names}
    refused_numbers = {q.rstrip("ab") for q in run.refused}
    print(
        f"TPC-DS, seed {args.seed}, {args.steps} change steps: {len(run.accepted)} of {len(names)} query texts accepted"
    )
    print(f"  by query number: {len(numbers - refused_numbers)} of {len(numbers)} fully accepted")
    print("refused, by cause:")
    for c, qs in run.refusal_causes().items():
        print(f"  {len(qs):3d}  {c}: {', '.join(qs)}")
    empty = [q for q, n in run.rows.items() if n == 0]
    print(f"accepted views with no rows after the initial load: {len(empty)} {empty}")
    print(f"queries Spark failed on: {run.spark_errors or 'none'}")
    print(f"views whose refresh raised: {run.engine_errors or 'none'}")
    print(f"mismatches with Spark: {len(run.mismatched())} {run.mismatched()}")
    for f in run.failures:
        print(f)
    Path(args.out).write_text(
        json.dumps(
            {
                "seed": args.seed,
                "steps": args.steps,
                "queries": len(names),
                "accepted": run.accepted,
                "accepted_numbers": len(numbers - refused_numbers),
                "numbers": len(numbers),
                "refused": run.refused,
                "refused_by_cause": run.refusal_causes(),
                "rows_after_load": run.rows,
                "spark_errors": run.spark_errors,
                "engine_errors": run.engine_errors,
                "mismatched": run.mismatched(),
                "failures": run.failures,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {args.out}")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
