"""Sharded refreshes through a Session on ``local-cluster[2,1,1024]``, against in-process.

``PYTHONHASHSEED=0 python -m bench session-shard [--changes N] [--edges M]``: a 20-iteration
recursive view (``WITH RECURSIVE`` depth from node 0, at most 20 steps), created over M
random edges plus a 25-edge chain.  Then N refreshes of a 1-row change each (an insert or a
delete, alternating), run in two Sessions in this process:

* ``sharded``: the view has ``TBLPROPERTIES ('ivm.executor' = 'spark')``, so every epoch is
  one Spark barrier stage of 2 shard engines;
* ``auto``: the Session's default policy (``executor='auto'``), which is also the
  in-process baseline.

It checks that both views are equal after every refresh.  It prints one JSON object: the
median refresh seconds of each Session, their ratio, the sharded epochs' barrier-stage
seconds, rounds and bytes exchanged, and where the policy ran each ``auto`` epoch.  It writes
the same object to ``bench/results/session_shard.json``.  The Spark cluster start is not
timed.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEPTH20 = (
    "WITH RECURSIVE d(n, k) AS (SELECT 0, 0 FROM e WHERE src = 0 UNION "
    "SELECT e.dst, d.k + 1 FROM d JOIN e ON d.n = e.src WHERE d.k < 20) "
    "SELECT n, min(k) AS depth FROM d GROUP BY n"
)


def main(argv: list[str]) -> int:
    changes = int(argv[argv.index("--changes") + 1]) if "--changes" in argv else 6
    m = int(argv[argv.index("--edges") + 1]) if "--edges" in argv else 400
    if os.environ.get("PYTHONHASHSEED") != "0":
        print("run with PYTHONHASHSEED=0 (the shard workers' seed)", file=sys.stderr)
        return 2
    from spark_exec import Session
    from spark_exec.sharded import shard_spark

    t0 = time.perf_counter()
    spark = shard_spark(app="ivm-bench-session-shard")
    spark.sparkContext.parallelize(range(2), 2).count()  # executors registered
    out: dict = {"cluster_start_s": round(time.perf_counter() - t0, 1), "edges": m + 25}
    rng = random.Random(3)
    nodes = 300
    edges = [(i, i + 1) for i in range(25)]
    edges += [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(m)]
    with tempfile.TemporaryDirectory() as tmp:
        sessions = {
            "sharded": Session(warehouse=Path(tmp) / "a", shard_spark=spark),
            "auto": Session(warehouse=Path(tmp) / "b", executor="auto"),
        }
        values = ", ".join(f"({a}, {b})" for a, b in edges)
        for name, s in sessions.items():
            prop = " TBLPROPERTIES ('ivm.executor' = 'spark')" if name == "sharded" else ""
            s.sql("CREATE TABLE e (src BIGINT, dst BIGINT)")
            s.sql(f"INSERT INTO e VALUES {values}")
            t = time.perf_counter()
            s.sql(f"CREATE MATERIALIZED VIEW depth20{prop} AS {DEPTH20}")
            out[f"{name}_create_s"] = round(time.perf_counter() - t, 2)
        seconds: dict[str, list[float]] = {k: [] for k in sessions}
        stage, rounds, sent, placed = [], [], [], []
        for i in range(changes):
            if i % 2 == 0:
                a, b = rng.randrange(nodes), rng.randrange(nodes)
                stmt = f"INSERT INTO e VALUES ({a}, {b})"
            else:
                a, b = edges[rng.randrange(len(edges))]
                stmt = f"DELETE FROM e WHERE src = {a} AND dst = {b}"
            for name, s in sessions.items():
                s.sql(stmt)
                t = time.perf_counter()
                [r] = s.refresh()
                seconds[name].append(time.perf_counter() - t)
                if name == "sharded":
                    stage.append(r.placement.seconds)
                    rounds.append(r.placement.rounds)
                    sent.append(r.placement.bytes_exchanged)
                else:
                    placed.append(r.placement.executor)
            got = [Counter(map(str, s.read("depth20").to_pylist())) for s in sessions.values()]
            if got[0] != got[1]:
                print(f"MISMATCH after change {i + 1}", file=sys.stderr)
                return 1
        med = {k: statistics.median(v) for k, v in seconds.items()}
        out.update(
            {
                "one_row_refresh_median_s": {k: round(v, 3) for k, v in med.items()},
                "sharded_over_in_process": round(med["sharded"] / med["auto"], 1),
                "sharded_stage_median_s": round(statistics.median(stage), 3),
                "sharded_rounds_median": statistics.median(rounds),
                "sharded_bytes_median": statistics.median(sent),
                "auto_policy_ran_on": sorted(set(placed)),
                "load_average": os.getloadavg()[0],
            }
        )
    text = json.dumps(out, indent=1)
    print(text)
    (ROOT / "bench" / "results" / "session_shard.json").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
