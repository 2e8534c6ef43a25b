"""An input dropped and recreated at the same location (another Delta table id) is detected:
the refresh retracts what the view held from the old table and computes it from the new one —
whether the new table has fewer, as many or more versions than the pinned one."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from spark_exec import Session

AGG = "SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k"
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def recreate(path: str, versions: int) -> None:
    """Drop the table at ``path`` and create a new one there with ``versions`` commits."""
    shutil.rmtree(path)
    DeltaTable.create(path, SCHEMA, configuration={"delta.enableChangeDataFeed": "true"})
    for i in range(versions):
        write_deltalake(
            path, pa.table({"k": [7, i % 2], "v": [i, 1]}, schema=SCHEMA), mode="append"
        )


@pytest.mark.parametrize("versions", [1, 4, 9], ids=["fewer", "as-many", "more"])
def test_recreated_input_is_read_in_full(tmp_path: Path, versions: int) -> None:
    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT)")
    for i in range(3):
        s.sql(f"INSERT INTO t VALUES ({i}, {i}), (1, 2)")
    s.sql(f"CREATE MATERIALIZED VIEW agg AS {AGG}")  # pinned at version 3
    s.sql("INSERT INTO t VALUES (5, 5)")  # version 4, pinned by this refresh
    s.refresh()
    recreate(s.table_path("t"), versions)
    reports = s.refresh()
    assert reports[0].recomputed
    groups: dict[int, list[int]] = {}
    for r in s.read("t").to_pylist():
        groups.setdefault(r["k"], []).append(r["v"])
    want = Counter((k, len(vs), sum(vs)) for k, vs in groups.items())
    assert Counter(tuple(r.values()) for r in s.read("agg").to_pylist()) == want
    s.sql("INSERT INTO t VALUES (7, 100)")  # and it goes on incrementally from there
    assert not s.refresh()[0].recomputed
    groups.setdefault(7, []).append(100)
    want = Counter((k, len(vs), sum(vs)) for k, vs in groups.items())
    assert (
        Counter(
            tuple(r.values()) for r in Session(warehouse=tmp_path / "wh").read("agg").to_pylist()
        )
        == want
    )
