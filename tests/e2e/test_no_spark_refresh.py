"""A refresh needs no Spark: it runs in a process where importing pyspark fails.

The child blocks ``pyspark`` and ``py4j`` with a meta-path finder before anything is imported,
then creates a table, a SQL view and a Datalog view, changes the table and refreshes, in one
Session and again in a new Session (which loads the checkpoints: the path of a cold
``ivm refresh``), and checks the views against a plain-Python recomputation.
"""

from __future__ import annotations

from e2e_helpers import child_json, run_child

CHILD = r"""
import json, sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j"):
            raise ImportError(f"{name} is blocked in this test")
        return None

sys.meta_path.insert(0, Blocker())

import tempfile
from collections import Counter
from spark_exec.session import Session

wh = tempfile.mkdtemp()
s = Session(warehouse=wh)
s.sql("CREATE TABLE t (k BIGINT, v BIGINT)")
s.sql("INSERT INTO t VALUES (1, 2), (2, 3)")
s.sql("CREATE MATERIALIZED VIEW agg AS SELECT k, sum(v) AS s FROM t GROUP BY k")
s.datalog(
    ".decl t(a: number, b: number)\n.input t\n.decl reach(a: number, b: number)\n"
    ".output reach\nreach(a, b) :- t(a, b).\nreach(a, c) :- reach(a, b), t(b, c).\n"
)
s.sql("INSERT INTO t VALUES (3, 1)")
warm = s.refresh()
cold = Session(warehouse=wh)
cold.sql("DELETE FROM t WHERE k = 2")
cold.sql("INSERT INTO t VALUES (2, 4)")
reports = cold.refresh()
print(json.dumps({
    "warm": [[r.view, r.recomputed] for r in warm],
    "cold": [[r.view, r.recomputed, r.committed] for r in reports],
    "agg": sorted(tuple(r.values()) for r in cold.read("agg").to_pylist()),
    "reach": sorted(tuple(r.values()) for r in cold.read("reach").to_pylist()),
    "spark_loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j")),
}))
"""


def test_sql_and_datalog_views_refresh_with_pyspark_unimportable() -> None:
    out = child_json(run_child(CHILD))
    assert out["spark_loaded"] == []
    assert sorted(out["warm"]) == [["agg", False], ["reach", False]]
    assert sorted(out["cold"]) == [["agg", False, True], ["reach", False, True]]
    rows = [(1, 2), (3, 1), (2, 4)]
    assert out["agg"] == [[1, 2], [2, 4], [3, 1]]
    reach = set(rows)
    while more := {(a, c) for a, b in reach for b2, c in rows if b == b2} - reach:
        reach |= more
    assert out["reach"] == sorted([list(p) for p in reach])
