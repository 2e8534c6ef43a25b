"""A global aggregate over NOT NULL columns: one row, NULL where Spark gives NULL.

MAX / MIN / SUM of a NOT NULL column have a fixed-width engine type, which holds no NULL;
the row a global aggregate yields over no input rows (Spark: NULL for them, 0 for COUNT) used
to fail the CREATE with an internal ``SchemaError``.  Checked through emptying and refilling
the table, against a plain-Python recomputation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from catalog import delta
from spark_exec.session import Session


def _expected(rows: list[tuple[int, int, float]]) -> dict[str, Any]:
    if not rows:
        return {"m": None, "lo": None, "s": None, "sd": None, "n": 0}
    return {
        "m": max(v for _, v, _ in rows),
        "lo": min(i for i, _, _ in rows),
        "s": sum(v for _, v, _ in rows),
        "sd": sum(d for _, _, d in rows),
        "n": len(rows),
    }


def test_global_aggregates_of_not_null_columns_through_an_empty_table(tmp_path: Path) -> None:
    s = Session(warehouse=tmp_path / "w")
    s.sql("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT NOT NULL, d DOUBLE NOT NULL)")
    rows = [(i, i % 5, i * 0.5) for i in range(20)]
    delta.insert(
        s.table_path("t"),
        pa.table({k: [r[j] for r in rows] for j, k in enumerate(("id", "v", "d"))}),
    )
    s.sql(
        "CREATE MATERIALIZED VIEW g AS "
        "SELECT max(v) AS m, min(id) AS lo, sum(v) AS s, sum(d) AS sd, count(*) AS n FROM t"
    )
    assert s.read("g").to_pylist() == [_expected(rows)]
    s.sql("DELETE FROM t WHERE id >= 0")
    s.refresh()
    assert s.read("g").to_pylist() == [_expected([])]
    s.sql("INSERT INTO t VALUES (7, 3, 1.5), (9, 1, 2.0)")
    s.refresh()
    assert s.read("g").to_pylist() == [_expected([(7, 3, 1.5), (9, 1, 2.0)])]
