"""One ``local-cluster[2,1,1024]`` serving workload runs: a test module shares its start.

Run as a script (its own process: one SparkContext per process) by
``test_cluster_workloads.py``.  It starts the cluster once, prints ``READY``, then answers
one JSON request per stdin line with one ``RESULT <json>`` stdout line:
``{"workload": name, "scale": "tiny", "steps": 3, "idle": {"1": 70}}`` runs that workload of
:mod:`bench.shard_workloads` through a new ``SparkShardedExecutor`` (2 shards) and in-process,
comparing every epoch's changes (``idle``: seconds to wait before an epoch).  The result is
``{"ok": true, "epochs": [...]}`` or ``{"ok": false, "error": ...}``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.shard_workloads import make, run_epochs  # noqa: E402
from spark_exec.sharded import SparkShardedExecutor, shard_spark  # noqa: E402


def serve() -> int:
    t0 = time.perf_counter()
    # failures are not retried by Spark (a barrier stage never is): the executor's own
    # attempts are what a test sees
    spark = shard_spark(app="ivm-cluster-workloads", conf={"spark.task.maxFailures": "1"})
    spark.sparkContext.parallelize(range(2), 2).count()  # both executors registered
    print(f"READY {time.perf_counter() - t0:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for k, line in enumerate(sys.stdin):
            req = json.loads(line)
            try:
                w = make(req["workload"], req.get("scale", "tiny"), req.get("steps", 3))
                ex = SparkShardedExecutor(spark, w.build, 2, Path(tmp) / f"{k}-{w.name}")
                idle = {int(i): float(s) for i, s in req.get("idle", {}).items()}
                out = {"ok": True, "epochs": list(run_epochs(w, ex, idle=idle))}
            except Exception as exc:  # reported to the test, which fails with it
                out = {"ok": False, "error": f"{exc!r}\n{traceback.format_exc()[-3000:]}"}
            print("RESULT " + json.dumps(out), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(serve())
