"""Sharded execution in one process: the cost of exchange rounds, and shard balance.

``python -m bench shard [--nodes N] [--edges M]``: weakly connected components (W1's
computation) over a random graph — the initial load, then ten 1-edge changes — run

* single-process (``Dataflow.step``),
* 2 shards in lockstep in this thread (``ShardGroup``): the routing and round overhead,
* 2 shards in 2 threads over the file transport (Arrow IPC files + file barrier in a
  temporary directory): the per-round latency of the transport Spark uses.

Prints one JSON object: seconds, exchange rounds, bytes exchanged, arranged rows per shard.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time

from ivm import Dataflow, Output
from ivm.library.graphs import connected_components
from ivm.shard import ShardGroup

EDGE = [("src", "int64"), ("dst", "int64")]


def build(g: Dataflow) -> Output:
    return g.output(connected_components(g.input("e", EDGE)), "wcc")


def run(grp: ShardGroup, load: list, changes: list) -> dict:
    t = time.perf_counter()
    grp.input("e").insert(load)
    grp.step()
    initial = time.perf_counter() - t
    small = []
    for ins, dele in changes:
        grp.input("e").insert([ins])
        grp.input("e").delete([dele])
        t = time.perf_counter()
        grp.step()
        small.append(time.perf_counter() - t)
    rep = grp.report()
    return {
        "initial_s": round(initial, 3),
        "small_epoch_median_s": round(sorted(small)[len(small) // 2], 4),
        "rounds_total": rep["rounds"],
        "loop_rounds_total": rep["loop_rounds"],
        "bytes_exchanged": rep["bytes_exchanged"],
        "balance": rep["balance"],
        "result_rows": len(grp.output("wcc").counts()),
    }


def main(argv: list[str]) -> int:
    nodes = int(argv[argv.index("--nodes") + 1]) if "--nodes" in argv else 20_000
    m = int(argv[argv.index("--edges") + 1]) if "--edges" in argv else 30_000
    rng = random.Random(1)
    load = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(m)]
    changes = [((rng.randrange(nodes), rng.randrange(nodes)), load[i]) for i in range(10)]
    out = {"nodes": nodes, "edges": m}
    run(ShardGroup(build, 2), load[:200], changes[:1])  # warm-up: numba compiles once
    out["single"] = run(ShardGroup(build, 1), load, changes)
    out["lockstep_2"] = run(ShardGroup(build, 2), load, changes)
    with tempfile.TemporaryDirectory() as tmp:
        out["files_2_threads"] = run(ShardGroup(build, 2, exchange_dir=tmp), load, changes)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
