"""A Session maintains views over an input table on S3 (moto's server on 127.0.0.1): after
every refresh of random inserts, deletes and updates the view equals a plain-Python
recomputation from the input's rows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from s3_fixture import s3_bucket, s3_server  # noqa: F401 (fixtures)

from catalog import delta
from spark_exec.session import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int64()), ("v", pa.int64())])


def _oracle(rows: pa.Table) -> Counter[tuple[object, ...]]:
    n: Counter[int] = Counter()
    total: Counter[int] = Counter()
    for r in rows.to_pylist():
        n[r["k"]] += 1
        total[r["k"]] += r["v"]
    return Counter((k, n[k], total[k]) for k in n)


def test_views_over_an_s3_input_equal_recomputation(
    spark: SparkSession,
    tmp_path: Path,
    s3_bucket: str,  # noqa: F811
) -> None:
    src = f"{s3_bucket}/data/facts"
    delta.create_table(src, SCHEMA)
    rng = np.random.default_rng(7)
    next_id = 0

    def insert(n: int) -> None:
        nonlocal next_id
        ids = np.arange(next_id, next_id + n)
        next_id += n
        delta.insert(
            src, pa.table({"id": ids, "k": rng.integers(0, 5, n), "v": rng.integers(0, 100, n)})
        )

    insert(20)
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql(f"CREATE TABLE facts USING DELTA LOCATION '{src}'")
    assert s.catalog.table("facts").path == src
    s.sql(
        "CREATE MATERIALIZED VIEW per_k AS "
        "SELECT k, count(*) AS n, sum(v) AS total FROM facts GROUP BY k"
    )
    for step in range(5):
        insert(int(rng.integers(1, 6)))
        victims = rng.choice(next_id, 3, replace=False)
        delta.delete(src, f"id IN ({', '.join(str(int(v)) for v in victims)})")
        if step % 2:
            delta.update(src, {"v": "v + 1"}, predicate=f"k = {int(rng.integers(0, 5))}")
        s.refresh()
        got = Counter(tuple(r.values()) for r in s.read("per_k").to_pylist())
        assert got == _oracle(delta.read_snapshot(src)), f"step {step}"
