"""Peak memory of a large initial load: one process against the largest of 2 Spark shards.

``PYTHONHASHSEED=0 python -m bench shard-memory [--edges N] [--master M]`` (default 2M
edges on ``local-cluster[2,1,1024]``).  The workload is three views over ``e(src, dst)``
(int64 columns): the count and the least ``dst`` of each ``src``, and the distinct ``dst``
(:class:`EdgeViews`), whose state grows with the edges.  Each side first runs a 1,000-edge warm-up epoch (imports done, kernels compiled),
takes its baseline, then loads the N edges in one epoch:

* **in-process**: a fresh Python process (``--child-local``): the dataflow's epoch in that
  process; its peak (``VmHWM``) above its baseline (``VmRSS`` after the warm-up);
* **sharded**: :class:`~spark_exec.sharded.SparkShardedExecutor`, 2 shards, one barrier
  stage; each shard reports its worker's peak (``ru_maxrss``) and its resident memory at
  task start (the bare worker, warm when the worker was reused: ``cache_hit``);
* **driver**: this process's peak above its resident memory before the sharded load (it
  generates the edges, writes the shards' input files and merges the view changes).

The issue's target (issue 17): the largest shard's peak above its bare worker is at most
0.6x the in-process peak above its baseline.  Results: ``bench/results/shard_memory.json``.

``--phases``: where each shard's peak happens (:mod:`bench.shard_memory_phases`: the two
shards as plain processes over the file transport, every phase labelled;
``bench/results/shard_memory_phases.json``).

``--budget-mib B``: the executor policy's memory budget.  When the in-process path would
refuse the load under it (``ExecutorBudgetError``: rows x bytes per row > budget), the
in-process side records the refusal instead of running, and the result says whether the
largest shard's peak stayed under the budget
(``bench/results/shard_memory_budget_<N>.json``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.shard_memory_workload import WARM_UP, EdgeViews, edge_batch, status_kb

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "bench" / "results" / "shard_memory.json"


def child_local(n: int) -> dict[str, Any]:
    """The in-process side, in this (fresh) process."""
    import ivm

    g = ivm.Dataflow("in-process")
    EdgeViews()(g)
    g.inputs["e"].pending.append(edge_batch(WARM_UP, 1))
    g.step()
    base = status_kb("VmRSS")
    g.inputs["e"].pending.append(edge_batch(n, 2))
    t = time.perf_counter()
    g.step()
    seconds = time.perf_counter() - t
    peak = status_kb("VmHWM")
    return {
        "baseline_kb": base,
        "peak_kb": peak,
        "above_kb": peak - base,
        "seconds": round(seconds, 1),
        "arranged_rows": int(sum(g.arrangement_rows().values())),
    }


def sharded(n: int, master: str) -> dict[str, Any]:
    from spark_exec.sharded import SparkShardedExecutor, shard_spark

    t0 = time.perf_counter()
    spark = shard_spark(master=master, app="ivm-bench-shard-memory")
    started = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        ex = SparkShardedExecutor(spark, EdgeViews(), 2, tmp)
        ex.pending = {"e": [edge_batch(WARM_UP, 1)]}
        ex.step()
        base = status_kb("VmRSS")
        ex.pending = {"e": [edge_batch(n, 2)]}
        t = time.perf_counter()
        result = ex.step()
        seconds = time.perf_counter() - t
        driver_peak = status_kb("VmHWM")
    spark.stop()
    shards = [
        {
            "shard": s.shard,
            "start_kb": s.start_rss_kb,
            "peak_kb": s.max_rss_kb,
            "above_kb": s.max_rss_kb - s.start_rss_kb,
            "warm_worker": s.cache_hit,
            "arranged_rows": s.arranged_rows,
        }
        for s in result.shards
    ]
    return {
        "cluster_start_s": round(started, 1),
        "seconds": round(seconds, 1),
        "rounds": result.rounds,
        "bytes_exchanged": result.bytes_exchanged,
        "shards": shards,
        "driver": {"baseline_kb": base, "peak_kb": driver_peak, "above_kb": driver_peak - base},
    }


def run_child(n: int) -> dict[str, Any]:
    """The in-process side in a fresh process (its own baseline)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.run(
        [sys.executable, "-m", "bench", "shard-memory", "--child-local", "--edges", str(n)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(child.stdout.strip().splitlines()[-1]))


def in_process_refusal(n: int, budget: int | None) -> dict[str, Any] | None:
    """What the Session's in-process path says of an n-row initial load under ``budget``
    bytes (the executor policy's check): ``None`` if it would run it."""
    from spark_exec.executor_policy import ExecutorBudgetError, check_budget
    from spark_exec.sharded import ExecutorPolicy

    if budget is None:
        return None
    try:
        check_budget(ExecutorPolicy(memory_budget_bytes=budget), 0, n, "e_views")
    except ExecutorBudgetError as exc:
        return {"refused": str(exc)}
    return None


def main(argv: list[str]) -> int:
    n = int(argv[argv.index("--edges") + 1]) if "--edges" in argv else 2_000_000
    if "--child-local" in argv:
        print(json.dumps(child_local(n)))
        return 0
    if "--child-local-phases" in argv:
        from bench.shard_memory_phases import child_local as labelled_local

        print(json.dumps(labelled_local(n)))
        return 0
    if "--child-shard" in argv:
        from bench.shard_memory_phases import child_shard

        def arg(name: str) -> str:
            return argv[argv.index(name) + 1]

        p = int(arg("--child-shard"))
        print(json.dumps(child_shard(arg("--root"), 2, p, 2, arg("--attempt"), arg("--current"))))
        return 0
    if "--phases" in argv:
        from bench.shard_memory_phases import phases

        print(json.dumps(phases(n)))
        return 0
    master = argv[argv.index("--master") + 1] if "--master" in argv else "local-cluster[2,1,1024]"
    if os.environ.get("PYTHONHASHSEED") != "0":
        print("run with PYTHONHASHSEED=0 (the shard workers' seed)", file=sys.stderr)
        return 2
    budget = int(argv[argv.index("--budget-mib") + 1]) << 20 if "--budget-mib" in argv else None
    refused = in_process_refusal(n, budget)
    local = refused or run_child(n)
    shard = sharded(n, master)
    largest = max(s["above_kb"] for s in shard["shards"])
    out: dict[str, Any] = {"edges": n, "master": master, "in_process": local, "sharded": shard}
    if refused is None:
        out["largest_shard_over_in_process"] = round(largest / max(local["above_kb"], 1), 2)
        out["driver_over_in_process"] = round(
            shard["driver"]["above_kb"] / max(local["above_kb"], 1), 2
        )
        out["target"] = 0.6
    if budget is not None:
        out["budget_mib"] = budget >> 20
        peak = max(s["peak_kb"] for s in shard["shards"])
        out["largest_shard_peak_under_budget"] = peak < (budget >> 10)
    name = RESULT if budget is None else RESULT.with_name(f"shard_memory_budget_{n}.json")
    name.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
