"""Views created and refreshed through a Session, sharded on ``local-cluster[2,1,1024]``,
equal the same views maintained in-process, after random insert/delete/update steps.

Run as a script (its own process: one SparkContext per process) by
``test_session_sharded.py``.  Two Sessions get the same statements.  The first runs its
epochs on the cluster: a SQL group of two views with ``ivm.executor = 'spark'``, and a
recursive connected-components view with ``'auto'`` (its initial load and bulk inserts
sharded, small changes in-process).  The second runs every epoch in-process.  After every
refresh, every view of the first equals the second's, each view gained exactly one Delta
version when it changed and none otherwise, and the group checkpoints moved one epoch.
Prints one JSON line of figures and exits non-zero on a mismatch.  ``--steps N``: random
steps after the initial load (default 2).  ``--kill``: at the first bulk step, shard 1
SIGKILLs its executor JVM in round 5 of the recursive view's epoch, and the refresh must
still succeed.  ``--session-master M``: the sharded Session starts its own SparkSession on
master ``M`` (no ``shard_spark``), and its sharded epochs run there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from spark_cluster_check import SCC as SCC_PROGRAM  # noqa: E402

from spark_exec import Session  # noqa: E402
from spark_exec.sharded import ExecutorPolicy, shard_spark  # noqa: E402

VIEWS = {
    "deg": (
        "spark",
        "SELECT src, count(*) AS n, min(dst) AS first_dst FROM e GROUP BY src",
    ),
    "deg_hist": ("spark", "SELECT n, count(*) AS nodes FROM deg GROUP BY n"),
    "wcc": (
        "auto",
        "WITH RECURSIVE cc(n, l) AS (SELECT src, src FROM e UNION SELECT dst, dst FROM e "
        "UNION SELECT e.dst, cc.l FROM cc JOIN e ON cc.n = e.src UNION "
        "SELECT e.src, cc.l FROM cc JOIN e ON cc.n = e.dst) SELECT n, min(l) AS label FROM cc "
        "GROUP BY n",
    ),
}
NODES = 100
BULK = 100  # rows a bulk step inserts
SHARDED_FROM = 80  # an 'auto' epoch of this many changed rows runs sharded (the policy;
# below BULK: equal random edges of one insert reach the engine as one row)


def rows(t: Any) -> Counter:
    return Counter(tuple(map(repr, r.values())) for r in t.to_pylist())


def log_files(s: Session, view: str) -> dict[int, Path]:
    log = Path(s.catalog.view(view).path) / "_delta_log"
    return {int(p.name.split(".")[0]): p for p in log.glob("*.json")}


def refresh_commits(s: Session, view: str, since: int) -> int:
    """Delta versions after ``since`` written by a refresh (they carry its ``txn``; a
    compaction by the maintenance policy does not)."""
    return sum(
        any("txn" in json.loads(line) for line in p.read_text().splitlines() if line.strip())
        for v, p in log_files(s, view).items()
        if v > since
    )


def checkpoint(s: Session, group: str) -> tuple[str, int]:
    m = s.catalog.checkpoints.manifest(group)
    assert m is not None
    current = (s.catalog.checkpoints.directory(group) / "CURRENT").read_text()
    return current, m.epoch


def values(edges: list[tuple[int, int]]) -> str:
    return ", ".join(f"({a}, {b})" for a, b in edges)


def step_statements(rng: random.Random, edges: list[tuple[int, int]], bulk: bool) -> list[str]:
    """A random step: inserts, deletes of existing edges, an update (also keeps ``edges``)."""
    out = []
    new = [(rng.randrange(NODES), rng.randrange(NODES)) for _ in range(BULK if bulk else 1)]
    out.append(f"INSERT INTO e VALUES {values(new)}")
    edges.extend(new)
    if not bulk:
        a, b = edges.pop(rng.randrange(len(edges)))
        out.append(f"DELETE FROM e WHERE src = {a} AND dst = {b}")
        edges[:] = [x for x in edges if x != (a, b)]
        a, b = rng.choice(edges)
        c = rng.randrange(NODES)
        out.append(f"UPDATE e SET dst = {c} WHERE src = {a} AND dst = {b}")
        edges[:] = [(a, c) if x == (a, b) else x for x in edges]
    return out


def crashing_driver(warehouse: str) -> int:
    """A second driver process: it refreshes the SQL group sharded, and dies (``os._exit``)
    after the shards wrote and published their epoch, before the catalog commit."""

    def die(step: str) -> None:
        if step == "stepped":
            os._exit(9)

    spark = shard_spark(app="ivm-crashing-driver", conf={"spark.task.maxFailures": "1"})
    Session(warehouse=warehouse, shard_spark=spark, refresh_hook=die).refresh("deg")
    return 0  # not reached


def driver_crash(sharded: Session, local: Session, warehouse: Path) -> dict[str, Any]:
    """A driver process dies between the sharded epoch and its commit; then this (long-lived)
    Session refreshes: the views are exact, with one refresh Delta version each."""
    for s in (sharded, local):
        s.sql("INSERT INTO e VALUES (7, 8), (8, 9)")
    before = {v: max(log_files(sharded, v)) for v in ("deg", "deg_hist")}
    ck = checkpoint(sharded, "deg")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.run(
        [sys.executable, __file__, "--child-refresh", str(warehouse)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    shard_roots = list((warehouse / "_ivm" / "shards" / "deg").glob("*/CURRENT"))
    out: dict[str, Any] = {
        "child_exit": child.returncode,
        "catalog_unchanged_by_child": checkpoint(sharded, "deg") == ck,
        "shards_current_after_crash": [p.read_text() for p in shard_roots],
    }
    local.refresh()
    reports = sharded.refresh("deg")
    out["equal"] = all(rows(sharded.read(v)) == rows(local.read(v)) for v in VIEWS)
    out["commits"] = {v: refresh_commits(sharded, v, before[v]) for v in before}
    out["epoch_moved"] = checkpoint(sharded, "deg")[1] - ck[1]
    out["placement"] = reports[0].placement.to_json()
    out["ok"] = (
        out["child_exit"] == 9
        and out["catalog_unchanged_by_child"]
        and out["equal"]
        and out["commits"] == {"deg": 1, "deg_hist": 1}
        and out["epoch_moved"] == 1
    )
    if child.returncode != 9:
        out["child_stderr"] = child.stderr[-2000:]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--kill", action="store_true")
    ap.add_argument("--driver-crash", action="store_true")
    ap.add_argument("--datalog", action="store_true", help="also an SCC program ('auto')")
    ap.add_argument(
        "--session-master",
        help="no separate shard_spark: the sharded Session's own Spark master (e.g. "
        "local-cluster[2,1,1024] or local[2]) runs its sharded epochs",
    )
    ap.add_argument("--child-refresh", help="(internal) refresh this warehouse, die unpublished")
    args = ap.parse_args()
    if args.child_refresh:
        return crashing_driver(args.child_refresh)
    t0 = time.perf_counter()
    own: dict[str, Any] = {"spark_master": args.session_master} if args.session_master else {}
    if not own:
        own["shard_spark"] = shard_spark(
            app="ivm-session-sharded-check", conf={"spark.task.maxFailures": "1"}
        )
    figures: dict[str, Any] = {"steps": []}
    rng = random.Random(17)
    with tempfile.TemporaryDirectory() as tmp:
        policy = ExecutorPolicy(large_change_rows=SHARDED_FROM)
        sharded = Session(
            warehouse=Path(tmp) / "sharded",
            executor_policy=policy,
            executor="auto",  # for the Datalog program (the SQL views say where they run)
            **own,
        )
        # the Session's own SparkSession starts first: it is the process's one SparkContext
        spark = sharded.spark if args.session_master else own["shard_spark"]
        figures["master"] = spark.sparkContext.master
        figures["start_seconds"] = round(time.perf_counter() - t0, 1)
        local = Session(warehouse=Path(tmp) / "local")
        chain = [(i, i + 1) for i in range(30)]
        edges = chain + [(rng.randrange(NODES), rng.randrange(NODES)) for _ in range(90)]
        statements = [
            "CREATE TABLE e (src BIGINT, dst BIGINT)",
            f"INSERT INTO e VALUES {values(edges)}",
        ]
        statements += [
            f"CREATE MATERIALIZED VIEW {v} TBLPROPERTIES ('ivm.executor' = '{ex}') AS {q}"
            for v, (ex, q) in VIEWS.items()
        ]
        for st in statements:
            local.sql(st)
            sharded.sql(st)
        names = [*VIEWS]
        if args.datalog:
            local.datalog(SCC_PROGRAM.text)
            sharded.datalog(SCC_PROGRAM.text)
            names.append("scc")
        figures["created"] = {g: p.to_json() for g, p in sharded.executors.last.items()}
        plan = [i % 3 == 2 for i in range(args.steps)]  # every third step is a bulk insert
        killed = False
        for i, bulk in enumerate(plan):
            for st in step_statements(rng, edges, bulk):
                local.sql(st)
                sharded.sql(st)
            before = {v: max(log_files(sharded, v)) for v in names}
            ck_before = {g: checkpoint(sharded, g) for g in ("deg", "wcc", *names[3:])}
            if args.kill and bulk and not killed:
                killed = True  # the recursive view's epoch has dozens of exchange rounds
                sharded.executors.faults["wcc"] = "kill:1"
            local.refresh()
            reports = sharded.refresh()
            for v in names:
                if rows(sharded.read(v)) != rows(local.read(v)):
                    print(f"MISMATCH {v} after step {i + 1}", file=sys.stderr)
                    return 1
            for r in reports:
                grown = refresh_commits(sharded, r.view, before[r.view])
                if grown != (1 if r.committed else 0):
                    print(f"{r.view}: {grown} Delta versions in one epoch", file=sys.stderr)
                    return 1
            ck_after = {g: checkpoint(sharded, g) for g in ck_before}
            for g, (cur, epoch) in ck_after.items():
                if epoch != ck_before[g][1] + 1 or cur == ck_before[g][0]:
                    print(f"group {g}: checkpoint {ck_before[g]} -> {cur}", file=sys.stderr)
                    return 1
            figures["steps"].append(
                {
                    "bulk": bulk,
                    "placements": {r.view: r.placement.to_json() for r in reports},
                    "seconds": {r.view: round(r.seconds, 2) for r in reports},
                }
            )
        if args.driver_crash:
            figures["crash"] = driver_crash(sharded, local, Path(tmp) / "sharded")
            if not figures["crash"]["ok"]:
                print(f"driver crash: {figures['crash']}", file=sys.stderr)
                return 1
        figures["explain"] = sharded.explain("wcc")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
