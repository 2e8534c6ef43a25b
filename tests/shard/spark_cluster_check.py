"""Sharded epochs on ``local-cluster[2,1,1024]`` equal the in-process executor.

Run as a script (its own process: one SparkContext per process) by
``test_spark_sharded.py``.  Prints one JSON line of figures; exits non-zero on a mismatch.
``--kill`` also makes shard 1 SIGKILL its executor JVM in round 5 of one epoch.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ivm.shard import ShardGroup  # noqa: E402
from spark_exec.sharded import (  # noqa: E402
    DatalogProgram,
    SimulatedDriverCrash,
    SparkShardedExecutor,
    SqlViews,
    shard_spark,
)

EDGES = {"e": [("src", "bigint"), ("dst", "bigint")]}
SQL = SqlViews.of(
    EDGES,
    {
        "wcc": (
            "WITH RECURSIVE cc(n, l) AS (SELECT src, src FROM e UNION SELECT dst, dst FROM e "
            "UNION SELECT e.dst, cc.l FROM cc JOIN e ON cc.n = e.src UNION "
            "SELECT e.src, cc.l FROM cc JOIN e ON cc.n = e.dst) SELECT n, min(l) FROM cc "
            "GROUP BY n"
        ),
        "depth20": (
            "WITH RECURSIVE d(n, k) AS (SELECT 0, 0 FROM e WHERE src = 0 UNION "
            "SELECT e.dst, d.k + 1 FROM d JOIN e ON d.n = e.src WHERE d.k < 20) "
            "SELECT n, min(k) FROM d GROUP BY n"
        ),
    },
)
SCC = DatalogProgram(
    """
    .decl e(x: number, y: number)  .input e
    .decl path(x: number, y: number)
    .decl scc(x: number, y: number) .output scc
    path(x, y) :- e(x, y).
    path(x, z) :- path(x, y), e(y, z).
    scc(x, y) :- path(x, y), path(y, x).
    """
)


def rows(t: pa.Table) -> Counter:
    return Counter(tuple(map(repr, r.values())) for r in t.to_pylist())


def main() -> int:
    kill = "--kill" in sys.argv
    t0 = time.perf_counter()
    spark = shard_spark(app="ivm-sharded-check", conf={"spark.task.maxFailures": "1"})
    figures: dict = {"start_seconds": round(time.perf_counter() - t0, 1)}
    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as tmp:
        runs = {
            "sql": (SQL, SparkShardedExecutor(spark, SQL, 2, Path(tmp) / "sql")),
            "datalog": (SCC, SparkShardedExecutor(spark, SCC, 2, Path(tmp) / "dl")),
        }
        refs = {k: ShardGroup(build, 1) for k, (build, _) in runs.items()}
        chain = [(i, i + 1) for i in range(22)]
        big = [(rng.randrange(400), rng.randrange(400)) for _ in range(600)]
        epochs = [
            (chain + big, []),
            ([(21, 0), (5, 900)], [big[0], big[1]]),
            ([(rng.randrange(400), rng.randrange(400))], [chain[10]]),
        ]
        figures["epochs"] = []
        for i, (ins, dels) in enumerate(epochs):
            for k, (_, ex) in runs.items():
                graph_edges = ins if k == "sql" else [r for r in ins if r[0] < 60 and r[1] < 60]
                graph_dels = dels if k == "sql" else [r for r in dels if r[0] < 60 and r[1] < 60]
                ex.insert("e", graph_edges)
                refs[k].input("e").insert(graph_edges)
                if graph_dels:
                    ex.delete("e", graph_dels)
                    refs[k].input("e").delete(graph_dels)
                ex.fault = "kill:1" if (kill and k == "sql" and i == 1) else None
                if kill and k == "datalog" and i == 1:
                    # the driver dies after the shards wrote epoch 2, before CURRENT moved;
                    # a new driver (executor object) re-reads the changes and recovers
                    ex.fault = "crash-before-commit"
                    try:
                        ex.step()
                        print("the simulated crash did not happen", file=sys.stderr)
                        return 1
                    except SimulatedDriverCrash:
                        pass
                    figures["crash_left_current"] = (ex.root / "CURRENT").read_text()
                    ex = SparkShardedExecutor(spark, SCC, 2, ex.root)
                    runs[k] = (SCC, ex)
                    ex.insert("e", graph_edges)
                    if graph_dels:
                        ex.delete("e", graph_dels)
                res = ex.step()
                refs[k].step()
                for name, got in res.changes.items():
                    want = refs[k].output(name).changes()
                    if rows(got) != rows(want):
                        print(f"MISMATCH {k}/{name} epoch {i + 1}", file=sys.stderr)
                        return 1
                total = sum(res.balance) or 1
                figures["epochs"].append(
                    {
                        "run": k,
                        "epoch": res.epoch,
                        "attempt": res.attempt,
                        "failed": res.attempts_failed,
                        "seconds": round(res.seconds, 2),
                        "rounds": res.rounds,
                        "bytes": res.bytes_exchanged,
                        "balance": res.balance,
                        "shares": [round(r / total, 3) for r in res.balance],
                        "pids": [s.pid for s in res.shards],
                        "cache_hits": [s.cache_hit for s in res.shards],
                        "wait_seconds": [round(s.wait_seconds, 2) for s in res.shards],
                        "rss_kb_start_max": [(s.start_rss_kb, s.max_rss_kb) for s in res.shards],
                        "explain": res.explain(),
                    }
                )
            currents = {
                k: (Path(tmp) / d / "CURRENT").read_text()
                for k, d in (("sql", "sql"), ("datalog", "dl"))
            }
        figures["current"] = currents
    spark.stop()
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
