"""Sharded epochs on ``local-cluster[2,1,1024]`` against in-process, per epoch (issue 17).

``PYTHONHASHSEED=0 python -m bench shard-peers [--only wcc,depth20,w1,w2,w3] [--scale small]
[--wcc-scale 200k] [--steps N]``: each workload of :mod:`bench.shard_workloads` runs its
epochs twice in this run, through a ``SparkShardedExecutor`` of 2 shards (one barrier stage
per epoch) and in one in-process ``Dataflow``, and every epoch's changes are compared.

* ``wcc``: the design note's WCC epoch, 200,000 nodes and 300,000 random undirected edges
  (the initial load), then small changes (10 edges in, 10 out);
* ``depth20``: a 20-iteration ``WITH RECURSIVE`` under epochs of one edge in and one out;
* ``w1`` / ``w2`` / ``w3``: the peers' workloads at ``--scale``.

A warm-up runs every workload at the ``tiny`` scale first (numba compiles in the driver and in
both workers).  For each epoch: seconds sharded (driver to commit) and in-process, rounds,
bytes exchanged, the seconds each shard waited at barriers, and each shard's task seconds.
Prints and writes ``bench/results/shard_peers.json``; the cluster start is not timed.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def timed(obj: Any, methods: tuple[str, ...]) -> dict[str, float]:
    """Wrap ``obj``'s methods (those it has) to add their seconds to the returned dict."""
    spent: dict[str, float] = {}
    for name in methods:
        inner = getattr(obj, name, None)
        if inner is None:
            continue

        def wrapper(*a: Any, _inner: Any = inner, _name: str = name, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return _inner(*a, **kw)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.perf_counter() - t

        setattr(obj, name, wrapper)
    return spent


def summary(epochs: list[dict[str, Any]]) -> dict[str, Any]:
    """The initial epoch and the median later epoch, sharded against in-process."""
    first, rest = epochs[0], epochs[1:]

    def med(key: str) -> float:
        return round(statistics.median(e[key] for e in rest), 3) if rest else 0.0

    def barrier(e: dict[str, Any]) -> float:
        return max(e["wait_s"])

    out: dict[str, Any] = {
        "initial": {
            k: first[k] for k in ("sharded_s", "local_s", "rounds", "bytes", "shares", "wait_s")
        },
        "initial_sharded_over_local": round(first["sharded_s"] / max(first["local_s"], 1e-9), 2),
    }
    if rest:
        out["step"] = {
            "sharded_median_s": med("sharded_s"),
            "local_median_s": med("local_s"),
            "rounds_median": statistics.median(e["rounds"] for e in rest),
            "bytes_median": statistics.median(e["bytes"] for e in rest),
            "barrier_wait_median_s": round(statistics.median(barrier(e) for e in rest), 3),
            "driver_overhead_median_s": round(
                statistics.median(e["sharded_s"] - max(e["shard_s"]) for e in rest), 3
            ),
            **{
                f"{k}_median": round(statistics.median(e["driver"][k] or 0.0 for e in rest), 3)
                for k in ("write_inputs_s", "job_beyond_tasks_s", "commit_s")
                if "driver" in rest[0]
            },
        }
        out["step_sharded_over_local"] = round(
            out["step"]["sharded_median_s"] / max(out["step"]["local_median_s"], 1e-9), 1
        )
    out["epochs"] = epochs
    return out


def main(argv: list[str]) -> int:
    def arg(name: str, default: str) -> str:
        return argv[argv.index(name) + 1] if name in argv else default

    only = arg("--only", "wcc,depth20,w1,w2,w3").split(",")
    scale, steps = arg("--scale", "small"), int(arg("--steps", "5"))
    wcc_scale = arg("--wcc-scale", "200k")
    if os.environ.get("PYTHONHASHSEED") != "0":
        print("run with PYTHONHASHSEED=0 (the shard workers' seed)", file=sys.stderr)
        return 2
    from bench.shard_workloads import make, run_epochs
    from spark_exec.sharded import SparkShardedExecutor, shard_spark

    t0 = time.perf_counter()
    spark = shard_spark(app="ivm-bench-shard-peers", conf={"spark.task.maxFailures": "1"})
    spark.sparkContext.parallelize(range(2), 2).count()
    out: dict[str, Any] = {"cluster_start_s": round(time.perf_counter() - t0, 1), "scale": scale}
    with tempfile.TemporaryDirectory() as tmp:

        def run(name: str, sc: str, n: int) -> list[dict[str, Any]]:
            w = make(name, sc, n)
            ex = SparkShardedExecutor(spark, w.build, 2, Path(tmp) / f"{name}-{sc}")
            spent = timed(ex, ("_write_inputs", "_run_stage", "_commit"))
            epochs = []
            for e in run_epochs(w, ex):
                parts = {k: round(v, 3) for k, v in spent.items()}
                spent.clear()
                job = parts.get("_run_stage", 0.0) - parts.get("_write_inputs", 0.0)
                # the driver's parts of an epoch; the job's own cost beyond the slowest task
                e["driver"] = {
                    "write_inputs_s": parts.get("_write_inputs"),
                    "job_s": round(job, 3),
                    "job_beyond_tasks_s": round(job - max(e["shard_s"]), 3),
                    "commit_s": parts.get("_commit"),
                }
                epochs.append(e)
            return epochs

        for name in only:
            run(name, "tiny", 1)  # warm-up: compiles in the driver and the workers
        path = ROOT / "bench" / "results" / "shard_peers.json"
        if set(only) != {"wcc", "depth20", "w1", "w2", "w3"}:
            path = path.with_name(f"shard_peers_{'_'.join(only)}.json")
        for name in only:
            sc = wcc_scale if name == "wcc" else scale
            t = time.perf_counter()
            out[name] = {"scale": sc, **summary(run(name, sc, 2 if name == "wcc" else steps))}
            out[name]["wall_s"] = round(time.perf_counter() - t, 1)
            out["load_average"] = os.getloadavg()[0]
            print(name, json.dumps({k: v for k, v in out[name].items() if k != "epochs"}))
            path.write_text(json.dumps(out, indent=1) + "\n")  # after each workload
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
