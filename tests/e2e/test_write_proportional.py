"""A refresh writes work proportional to the change: a 10-row change to a 200,000-row input
writes one small file and deletion vectors to each large view table (commit metrics), and a refresh with no
input change commits nothing (no view version, no checkpoint)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from catalog import delta, view_table
from spark_exec import Session

ROWS = 200_000


def test_small_change_to_a_large_input(tmp_path: Path) -> None:
    s = Session(warehouse=tmp_path / "wh")  # no Spark needed
    s.sql("CREATE TABLE big (id BIGINT NOT NULL, k BIGINT NOT NULL, v BIGINT NOT NULL)")
    ids = np.arange(ROWS)
    delta.insert(s.table_path("big"), pa.table({"id": ids, "k": ids % 1000, "v": ids % 7}))
    s.sql("CREATE MATERIALIZED VIEW wide AS SELECT id, k, v * 2 AS w FROM big WHERE v <> 3")
    s.sql(
        "CREATE MATERIALIZED VIEW per_k AS SELECT k, count(*) AS n, sum(v) AS s FROM big GROUP BY k"
    )
    wide, per_k = s.table_path("wide"), s.table_path("per_k")
    assert view_table.table_rows(wide) > ROWS * 0.8

    s.sql("UPDATE big SET v = v + 1 WHERE id < 5")
    s.sql("DELETE FROM big WHERE id >= 1000 AND id < 1003")
    s.sql("INSERT INTO big VALUES (-1, 1, 1), (-2, 2, 2)")
    before = {p: delta.current_version(p) for p in (wide, per_k)}
    reports = {r.view: r for r in s.refresh()}
    assert reports["wide"].rows_in == 2 * 5 + 3 + 2
    for name, path in (("wide", wide), ("per_k", per_k)):
        r = reports[name]
        assert r.committed and r.version is not None and r.version > before[path]
        last = delta.commit_at(path, r.version)
        assert last.metadata["ivm.epoch"] == str(r.epoch)
        assert 1 <= last.metrics["num_added_files"] <= 2, last.metrics  # + a rewritten file
        assert 0 < last.metrics["num_added_rows"] <= 20, last.metrics
        assert r.rows_written == last.metrics["num_added_rows"]
        assert r.differences < 2_000  # the engine's work, too, follows the change
        # bytes written: the change only (deletion vectors), or a small table rewritten
        table_bytes = view_table.layout(path).bytes
        assert last.metrics["num_bytes_written"] <= max(
            0.01 * table_bytes, view_table.COW_MAX_BYTES
        )
    # the 200,000-row view removes rows with deletion vectors: no data file rewritten
    last = delta.commit_at(wide, reports["wide"].version)
    assert last.metrics["num_removed_files"] == 0 and last.metrics["num_deletion_vectors"] >= 1
    # a deletion vector, a file of the new rows and a change-data file: a few KB of
    # footers and headers, plus 1% of the table (its integers are delta-encoded: 30 KB)
    assert last.metrics["num_bytes_written"] < 4096 + 0.01 * view_table.layout(wide).bytes

    want = {}
    snap = delta.read_snapshot(s.table_path("big")).to_pylist()
    for row in snap:
        n, t = want.get(row["k"], (0, 0))
        want[row["k"]] = (n + 1, t + row["v"])
    got = {r["k"]: (r["n"], r["s"]) for r in s.read("per_k").to_pylist()}
    assert got == want
    assert s.read("wide").num_rows == sum(1 for r in snap if r["v"] != 3)

    # no input change: nothing is committed anywhere
    ckpt = s.catalog.checkpoints.current_epoch("per_k")
    versions = {p: delta.current_version(p) for p in (wide, per_k)}
    again = s.refresh()
    assert all(not r.committed and r.rows_in == 0 and r.differences == 0 for r in again)
    assert {p: delta.current_version(p) for p in (wide, per_k)} == versions
    assert s.catalog.checkpoints.current_epoch("per_k") == ckpt
