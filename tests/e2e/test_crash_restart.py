"""Crashes and restarts: a real child process is SIGKILLed inside a refresh; a new Session on
the same warehouse recovers, refreshes, and the views equal Spark SQL's recomputation —
nothing lost, nothing counted twice.  A fresh process resumes a view from its checkpoint
without recomputing it (the engine's work counters show it)."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from e2e_helpers import CRASH_CHILD, bag, child_json, run_child, spark_bag

from catalog import delta
from spark_exec import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

AGG = "SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k"
TOP = "SELECT k, s FROM agg WHERE n >= 2"
DUP = "SELECT v FROM t WHERE v >= 0"  # keeps duplicates: a double count would show


# Every side of the protocol's commit point: before the checkpoint (engine already stepped;
# checkpoint files written but not renamed / renamed but not current), after it (no view
# published; between the two views of one group).
POINTS = [
    "stepped",
    "files_written",
    "renamed",
    "checkpointed",
    "files_written:agg",
    "committed:agg",
    "files_written:top",
    "committed:top",
]


def epochs_committed(path: str) -> Counter[int]:
    return Counter(
        int(c.metadata["ivm.epoch"])
        for c in delta.history(path)
        if c.metadata.get("ivm.operation") == "refresh"
    )


def test_sigkill_at_every_refresh_step(spark: SparkSession, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    s = Session(spark=spark, warehouse=wh)
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT)")
    s.sql("INSERT INTO t VALUES (1, 1), (1, 2), (2, 5), (3, 5), (3, 5)")
    s.sql(f"CREATE MATERIALIZED VIEW agg AS {AGG}")
    s.sql(f"CREATE MATERIALIZED VIEW top AS {TOP}")
    s.sql(f"CREATE MATERIALIZED VIEW dup AS {DUP}")
    path = s.table_path("t")
    rng = np.random.default_rng(1)
    for i, point in enumerate(POINTS):
        # a change by another writer, then a refresh that dies at `point`
        delta.insert(path, pa.table({"k": rng.integers(0, 5, 4), "v": rng.integers(0, 9, 4)}))
        if i % 2:
            delta.delete(path, f"v = {i % 9}")
        proc = run_child(CRASH_CHILD, env={"IVM_CRASH_AT": point, "IVM_WAREHOUSE": str(wh)})
        assert proc.returncode == -signal.SIGKILL, (point, proc.stdout, proc.stderr[-2000:])
        # a new Session (as a new process would) recovers and refreshes
        s2 = Session(warehouse=wh)
        s2.refresh()
        rows = s2.read("t").to_pylist()
        groups: dict[int, list[int]] = {}
        for r in rows:
            groups.setdefault(r["k"], []).append(r["v"])
        agg = {(k, len(vs), sum(vs)) for k, vs in groups.items()}
        assert bag(s2.read("agg").to_pylist()) == bag(agg), point
        assert bag(s2.read("top").to_pylist()) == bag((k, t) for k, n, t in agg if n >= 2)
        assert bag(s2.read("dup").to_pylist()) == bag((r["v"],) for r in rows), point
        for view in ("agg", "top", "dup"):
            plain = DeltaTable(s2.table_path(view)).to_pyarrow_table()
            assert bag(plain.to_pylist()) == bag(s2.read(view).to_pylist()), (point, view)
            twice = [e for e, n in epochs_committed(s2.table_path(view)).items() if n > 1]
            assert not twice, (point, view, twice)
    # and a run without a crash completes; Spark SQL agrees with the recomputation
    proc = run_child(CRASH_CHILD, env={"IVM_CRASH_AT": "never", "IVM_WAREHOUSE": str(wh)})
    assert child_json(proc)["completed"]
    assert spark_bag(spark, "SELECT * FROM agg") == spark_bag(spark, AGG)
    assert spark_bag(spark, "SELECT * FROM dup") == spark_bag(spark, DUP)


SETUP = """
import json, os
import numpy as np, pyarrow as pa
from spark_exec import Session
from catalog import delta
s = Session(warehouse=os.environ["IVM_WAREHOUSE"])
s.sql("CREATE TABLE facts (id BIGINT NOT NULL, k BIGINT NOT NULL, v BIGINT NOT NULL)")
n = int(os.environ["ROWS"])
delta.insert(s.table_path("facts"), pa.table({"id": np.arange(n), "k": np.arange(n) % 997,
                                              "v": np.arange(n) % 13}))
c = s.sql("CREATE MATERIALIZED VIEW by_k AS SELECT k, count(*) AS n, sum(v) AS s FROM facts GROUP BY k")
s.sql("CREATE MATERIALIZED VIEW joined AS SELECT a.k, b.n FROM facts a JOIN by_k b ON a.k = b.k "
      "WHERE a.id < 50")
s.sql("INSERT INTO facts VALUES (-1, 1, 1), (-2, 2, 2)")
r = s.refresh()
print(json.dumps({"recomputed": [x.recomputed for x in r],
                  "created": c.reports[0].differences}))
"""

RESUME = """
import json, os
from spark_exec import Session
s = Session(warehouse=os.environ["IVM_WAREHOUSE"])
s.sql("INSERT INTO facts VALUES (-3, 3, 3), (-4, 4, 4), (-5, 5, 5)")
s.sql("DELETE FROM facts WHERE id = 7")
reports = s.refresh()
g = s._runtime.built[reports[0].group].g
print(json.dumps({"recomputed": [r.recomputed for r in reports],
                  "differences": reports[0].differences,
                  "replayed": reports[0].replayed_epochs,
                  "all_work": g.metrics.total(),
                  "rows_in": reports[0].rows_in}))
"""


def test_fresh_process_resumes_without_recomputing(spark: SparkSession, tmp_path: Path) -> None:
    wh, rows = tmp_path / "wh", 50_000
    env = {"IVM_WAREHOUSE": str(wh), "ROWS": str(rows)}
    first = child_json(run_child(SETUP, env=env))
    assert first["recomputed"] == [False, False]
    out = child_json(run_child(RESUME, env=env))
    assert out["recomputed"] == [False, False]
    assert out["rows_in"] == 4
    assert out["replayed"] == 1  # the setup's second refresh, from the checkpoint's log
    # work follows the change (4 rows, ~50 per key of k), not the 50,000-row table
    assert first["created"] > rows  # building by_k from scratch
    assert out["differences"] < rows // 20, out
    assert out["all_work"] < rows // 10, out
    s = Session(spark=spark, warehouse=wh)
    assert spark_bag(spark, "SELECT * FROM by_k") == spark_bag(
        spark, "SELECT k, count(*), sum(v) FROM facts GROUP BY k"
    )
    assert json.dumps(s.show_views().column("epoch").to_pylist()) == "[4, 4]"
