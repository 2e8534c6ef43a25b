"""delta-spark reads each refresh's change data feed of a view table
(``readChangeFeed``) as exactly the diff of the view's rows before and after (read by
delta-spark too, ``versionAsOf``), with a keyed view's changed rows as ``update_preimage`` /
``update_postimage`` pairs; randomized inserts, updates and deletes, copy-on-write and
deletion vectors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pytest
from feed_oracle import Row, expected_feed

from catalog import delta, view_table
from spark_exec import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

VIEWS = {
    # name: (query, key positions in the output, or None)
    "per_k": ("SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k", [0]),
    "total": ("SELECT count(*) AS n, max(v) AS m FROM t", []),
    "evens": ("SELECT k, v FROM t WHERE v % 2 = 0", None),
}
WRITES = [
    "UPDATE t SET v = v + 1 WHERE k = 3",
    "INSERT INTO t VALUES (40, 2), (41, 4), (3, 8)",
    "DELETE FROM t WHERE k = 5",
    "UPDATE t SET v = v * 2 WHERE k IN (1, 2, 40)",
    "DELETE FROM t WHERE k = 41 OR v = 8",
]


def spark_rows(spark: SparkSession, path: str, version: int) -> Counter[Row]:
    df = spark.read.format("delta").option("versionAsOf", version).load(path)
    return Counter(tuple(r) for r in df.collect())


def spark_feed(spark: SparkSession, path: str, version: int) -> Counter[tuple[Row, str]]:
    df = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", version)
        .option("endingVersion", version)
        .load(path)
    )
    out: Counter[tuple[Row, str]] = Counter()
    for r in df.collect():
        d = r.asDict()
        assert d.pop("_commit_version") == version
        d.pop("_commit_timestamp")
        kind = d.pop("_change_type")
        out[(tuple(d.values()), kind)] += 1
    return out


@pytest.mark.parametrize("storage", ["copy_on_write", "deletion_vectors"])
def test_delta_spark_change_feed_is_the_diff_with_updates(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    if storage == "deletion_vectors":
        monkeypatch.setattr(view_table, "COW_MAX_BYTES", 0)
    rng = np.random.default_rng(5)
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (k BIGINT NOT NULL, v BIGINT NOT NULL)")
    delta.insert(
        s.table_path("t"), pa.table({"k": np.arange(30) % 10, "v": rng.integers(0, 20, 30)})
    )
    for name, (query, _) in VIEWS.items():
        s.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
    kinds: dict[str, Counter[str]] = {name: Counter() for name in VIEWS}
    last = {name: view_table.last_refresh(s.table_path(name)) for name in VIEWS}
    for write in WRITES:
        s.sql(write)
        s.refresh()
        for name, (_, key) in VIEWS.items():
            path = s.table_path(name)
            rec = view_table.last_refresh(path)
            assert rec is not None
            if rec == last[name]:
                continue  # the write did not change this view
            last[name] = rec
            old = spark_rows(spark, path, rec.version - 1)
            new = spark_rows(spark, path, rec.version)
            feed = spark_feed(spark, path, rec.version)
            assert feed == expected_feed(old, new, key), f"{name} after {write}"
            kinds[name].update(k for (_, k), n in feed.items() for _ in range(n))
    assert kinds["per_k"]["update_preimage"] >= 4 and kinds["per_k"]["delete"] >= 1
    assert kinds["total"]["update_postimage"] >= 3
    assert "update_preimage" not in kinds["evens"] and kinds["evens"]["delete"] >= 1
    if storage == "deletion_vectors":
        assert view_table.uses_deletion_vectors(s.table_path("evens"))
