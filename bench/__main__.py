"""``python -m bench <command>`` (``./run bench <command>``).

Commands:
  engine    W1/W2/W3 on the ivm engine with a recompute baseline (see bench/engine_bench.py)
  instructions  instructions per engine step under callgrind (bench/instructions.py)
  report    print the markdown table of stored results (bench/results/engine_<scale>.json)
  describe  generate the workloads of a scale and print their sizes
  datalog   transitive closure and points-to: initial and per-change vs re-evaluation
  triangles binary-join vs delta-query state on a skewed graph (see bench/bench_triangles.py)
  view-table  1M-row view under 10-row changes; 500 one-row refreshes (bench/bench_view_table.py)
  shard     WCC single-process vs 2 shards (lockstep; file transport): rounds, balance
  session-shard  1-row refreshes of a 20-iteration recursive view sharded on local-cluster
            vs in-process, and where the hybrid policy runs them (PYTHONHASHSEED=0)
  shard-memory  peak RSS of a 2M-edge initial load: in-process vs the largest of 2 shards on
            local-cluster, and the driver's (PYTHONHASHSEED=0; bench/bench_shard_memory.py;
            --phases: where each shard's peak happens)
  shard-peers  WCC (200k nodes), 20-iteration recursion, W1-W3: each epoch sharded on
            local-cluster vs in-process, rounds, bytes, barrier waits (PYTHONHASHSEED=0)
  sql       SQL join + aggregate view over 1M facts: refresh vs Spark SQL (bench/bench_sql.py)
  cold-refresh  a cold `ivm refresh` of a 1-row change in a new process (bench/bench_cold_refresh.py)
  pipelines the example Declarative Pipelines project: incremental run vs Spark's full recompute
  clustering  files / row groups a reader of `k = x` opens: CLUSTER BY (k) vs plain (counts)
  groupby   a GROUP BY view over 2M rows: creation time, peak memory, checkpoint size
  refresh-counts  a 10-row refresh counted: fsync waits, deltalake calls, Python calls
  refresh-cpu  CPU time per refresh of `refresh`'s workload, without Spark (bench/bench_refresh_cpu.py)
  publish-cpu  CPU of a refresh's view commit (10k-row view) and of an input's change read alone
  step-counts  a small engine step counted: Python calls, compiled-kernel calls (bench/bench_step_counts.py)
  lookup    a trace's probe search on runs evicted from the caches: batched vs one by one
  tpcds     TPC-DS's 99 (103 texts) as views: accepted, refused by cause, equal to Spark (bench/tpcds.py)
"""

from __future__ import annotations

import importlib
import json
import sys
import time


def _report(argv: list[str]) -> int:
    from bench.engine_bench import RESULTS_DIR, markdown

    scales = argv or ["small", "medium"]
    for scale in scales:
        p = RESULTS_DIR / f"engine_{scale}.json"
        if not p.exists():
            print(f"(no {p})")
            continue
        print(markdown(json.loads(p.read_text())["workloads"], scale))
        print()
    return 0


def _describe(argv: list[str]) -> int:
    from bench import workloads as W

    for scale in argv or ["small"]:
        t = time.perf_counter()
        w1 = W.make_wcc(scale)
        w2 = W.make_reach(scale)
        w3 = W.make_join(scale)
        print(
            f"{scale}: W1 {w1.n_nodes:,} nodes, window {w1.window:,}, {w1.n_steps} slides of "
            f"{W.SLIDE}; W2 {w2.n_nodes:,} nodes, {len(w2.initial_edges):,} edges, roots "
            f"{w2.roots}; W3 {len(w3.orders['id']):,} orders, {len(w3.customers['id']):,} "
            f"customers; generated in {time.perf_counter() - t:.2f}s"
        )
    return 0


# command -> the bench module whose ``main(argv)`` runs it (imported only when asked for)
MODULES = {
    "engine": "bench.engine_bench",
    "view-table": "bench.bench_view_table",
    "refresh": "bench.bench_refresh",
    "instructions": "bench.instructions",
    "datalog": "bench.bench_datalog",
    "triangles": "bench.bench_triangles",
    "sql": "bench.bench_sql",
    "shard": "bench.bench_shard",
    "session-shard": "bench.bench_session_shard",
    "shard-memory": "bench.bench_shard_memory",
    "shard-peers": "bench.bench_shard_peers",
    "cold-refresh": "bench.bench_cold_refresh",
    "pipelines": "bench.bench_pipelines",
    "clustering": "bench.bench_clustering",
    "groupby": "bench.bench_groupby",
    "refresh-counts": "bench.bench_refresh_counts",
    "refresh-cpu": "bench.bench_refresh_cpu",
    "publish-cpu": "bench.bench_publish_cpu",
    "step-counts": "bench.bench_step_counts",
    "lookup": "bench.bench_lookup",
    "tpcds": "bench.tpcds",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd in MODULES:
        return int(importlib.import_module(MODULES[cmd]).main(rest))
    if cmd == "report":
        return _report(rest)
    if cmd == "describe":
        return _describe(rest)
    print(f"unknown command {cmd!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
