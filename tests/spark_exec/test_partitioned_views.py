"""``PARTITIONED BY`` on CREATE MATERIALIZED VIEW (issue 18, item 4): the view's Delta table is
partitioned (metadata, one directory per partition, partition values in the log only), and
refreshes stay exact: after every refresh of random changes the view equals its recomputation,
each commit's change data feed equals the change of the view, and a view reading the
partitioned view is exact too.  (``CLUSTER BY``: tests/spark_exec/test_clustered_views.py.)"""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder
from layout_checks import assert_create_refused, describe_extended, show_create

from catalog import delta_commit, view_table
from catalog.view_partitions import PartitionColumnError
from spark_exec.session import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REGIONS = ["north", "south", "a b/c", "x=y%", None]


def bag(rows: list[dict[str, Any]], cols: list[str]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r[c] for c in cols) for r in rows)


def expected_totals(base: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    """The view ``SELECT region, day, k, sum(v) AS s, count(*) AS n ... GROUP BY`` in Python."""
    sums: dict[tuple[Any, ...], list[int]] = {}
    for r in base:
        acc = sums.setdefault((r["region"], r["day"], r["k"]), [0, 0])
        acc[0] += r["v"]
        acc[1] += 1
    return Counter((*key, s, n) for key, (s, n) in sums.items())


def check_layout(path: str, parts: list[str]) -> None:
    """Partition columns in the metadata; every file under its partition's directory, holding
    only the data columns, its partition values in the log."""
    dt = DeltaTable(path)
    assert dt.metadata().partition_columns == parts
    _, files = delta_commit.snapshot_files(path)
    assert files
    for f in files.values():
        assert sorted(f.action["partitionValues"]) == sorted(parts)  # a map: any order
        stored = pq.read_schema(os.path.join(path, pq_path(f.path))).names
        assert not set(parts) & set(stored)
        assert [d.split("=")[0] for d in f.path.split("/")[:-1]] == parts


def pq_path(uri: str) -> str:
    from urllib.parse import unquote

    return unquote(uri)


COLS = ["region", "day", "k", "s", "n"]


def plain_rows(dt: DeltaTable) -> list[dict[str, Any]]:
    """The table's rows read by deltalake alone (its DataFusion scan applies deletion vectors,
    which its Arrow reader refuses)."""
    out = QueryBuilder().register("v", dt).execute("SELECT * FROM v").read_all()
    return list(pa.table(out).to_pylist())


def test_partitioned_view_stays_exact_under_random_changes(
    tmp_path: Path, deletion_vectors: bool
) -> None:
    rng = random.Random(18 + deletion_vectors)
    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (id BIGINT, region STRING, day INT, k BIGINT, v BIGINT)")
    base: list[dict[str, Any]] = []
    next_id = 0

    def insert(n: int) -> None:
        nonlocal next_id
        rows = []
        for _ in range(n):
            r = {
                "id": next_id,
                "region": rng.choice(REGIONS),
                "day": rng.randrange(3),
                "k": rng.randrange(4),
                "v": rng.randrange(100),
            }
            next_id += 1
            rows.append(r)
        base.extend(rows)
        values = ", ".join(
            f"({r['id']}, {'NULL' if r['region'] is None else repr(r['region'])}, "
            f"{r['day']}, {r['k']}, {r['v']})"
            for r in rows
        )
        s.sql(f"INSERT INTO t VALUES {values}")

    insert(60)
    s.sql(
        "-- totals per region and day\n"
        "CREATE MATERIALIZED VIEW totals PARTITIONED BY (region, day) AS "
        "SELECT region, day, k, sum(v) AS s, count(*) AS n FROM t GROUP BY region, day, k"
    )
    s.sql("CREATE MATERIALIZED VIEW big AS SELECT region, k, s FROM totals WHERE s > 150")
    path = s.table_path("totals")
    check_layout(path, ["region", "day"])
    for _ in range(6):
        before = Counter(bag(s.read("totals").to_pylist(), COLS))
        insert(rng.randrange(1, 8))
        gone = rng.sample(base, k=min(len(base), rng.randrange(1, 6)))
        for r in gone:
            base.remove(r)
        s.sql(f"DELETE FROM t WHERE id IN ({', '.join(str(r['id']) for r in gone)})")
        moved = rng.choice(base)
        moved["v"] += 7
        s.sql(f"UPDATE t SET v = v + 7 WHERE id = {moved['id']}")
        (report, *_) = s.refresh()
        want = expected_totals(base)
        got = bag(s.read("totals").to_pylist(), COLS)
        assert got == want  # the oracle: recomputation
        dt = DeltaTable(path)
        assert bag(plain_rows(dt), COLS) == want  # a plain deltalake reader
        # this commit's change data feed is exactly the view's change
        v = report.version
        assert v is not None
        feed = pa.RecordBatchReader.from_stream(
            dt.load_cdf(starting_version=v, ending_version=v)
        ).read_all()
        change: Counter[tuple[Any, ...]] = Counter()
        for r in feed.to_pylist():
            added = r["_change_type"] in ("insert", "update_postimage")
            change[tuple(r[c] for c in COLS)] += 1 if added else -1
        assert +change == +(want - before) and -change == +(before - want)
        big = bag(s.read("big").to_pylist(), ["region", "k", "s"])
        assert big == Counter(
            (r, k, sv) for (r, _, k, sv, _n), c in want.items() if sv > 150 for _ in range(c)
        )
        check_layout(path, ["region", "day"])
    assert view_table.uses_deletion_vectors(path) == deletion_vectors
    # compaction (deletion vectors purged, small files packed) keeps rows and partitions
    view_table.compact_view(path)
    assert bag(s.read("totals").to_pylist(), COLS) == expected_totals(base)
    check_layout(path, ["region", "day"])


def test_partitioned_by_is_shown_and_recreated(tmp_path: Path) -> None:
    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (r STRING, v BIGINT); INSERT INTO t VALUES ('a', 1), ('b', 2)")
    s.sql(
        "CREATE MATERIALIZED VIEW m (region COMMENT 'where', total) "
        "/* inside */ PARTITIONED BY (region) COMMENT 'c' "
        "AS SELECT r, sum(v) AS s FROM t GROUP BY r"
    )
    text = show_create(s, "m")
    assert "PARTITIONED BY (`region`)" in text
    detail = describe_extended(s, "m")
    assert detail["Partition Columns"] == "region"
    assert DeltaTable(s.table_path("m")).metadata().partition_columns == ["region"]
    s.sql("DROP MATERIALIZED VIEW m")
    s.sql(text)  # SHOW CREATE's text creates the same view again
    assert DeltaTable(s.table_path("m")).metadata().partition_columns == ["region"]
    assert sorted(r["total"] for r in s.read("m").to_pylist()) == [1, 2]


@pytest.mark.parametrize(
    ("clause", "message"),
    [
        ("PARTITIONED BY (nope)", "'nope' is not a column of the view"),
        ("PARTITIONED BY (r, s)", "every column would be a partition column"),
        ("PARTITIONED BY (r, r)", "'r' is named twice"),
        ("PARTITIONED BY (f)", "has type double; partition by an integer, string, date"),
    ],
)
def test_bad_partition_columns_are_refused_before_anything_is_written(
    tmp_path: Path, clause: str, message: str
) -> None:
    query = "SELECT r, sum(v) AS s FROM t GROUP BY r"
    if "(f)" in clause:
        query = "SELECT r, f, sum(v) AS s FROM t GROUP BY r, f"
    assert_create_refused(
        tmp_path,
        "CREATE TABLE t (r STRING, v BIGINT, f DOUBLE)",
        f"CREATE MATERIALIZED VIEW m {clause} AS {query}",
        PartitionColumnError,
        message.replace("(", r"\("),
    )


@pytest.mark.spark
def test_delta_spark_reads_the_partitions(spark: SparkSession, tmp_path: Path) -> None:
    s = Session(warehouse=tmp_path / "wh")
    s.sql(
        "CREATE TABLE t (r STRING, k BIGINT, v BIGINT);"
        "INSERT INTO t VALUES ('n', 1, 10), ('s', 2, 5), ('a b', 3, 1), (NULL, 4, 4), ('n', 5, 1);"
        "CREATE MATERIALIZED VIEW m PARTITIONED BY (r) AS SELECT r, k, sum(v) AS s FROM t GROUP BY r, k;"
        "UPDATE t SET v = 100 WHERE r = 'n'; DELETE FROM t WHERE k = 2"
    )
    (report,) = s.refresh()
    path = s.table_path("m")
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert list(detail["partitionColumns"]) == ["r"]
    rows = spark.read.format("delta").load(path)
    assert Counter(tuple(r) for r in rows.collect()) == bag(
        s.read("m").to_pylist(), ["r", "k", "s"]
    )
    assert rows.where("r = 'n'").count() == 2  # a partition filter
    feed = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", report.version)
        .option("endingVersion", report.version)
        .load(path)
        .collect()
    )
    assert Counter((r["r"], r["k"], r["s"], r["_change_type"]) for r in feed) == Counter(
        {
            # (r, k) is the view's key: a changed sum is an update, pre- and post-image
            ("n", 1, 10, "update_preimage"): 1,
            ("n", 5, 1, "update_preimage"): 1,
            ("n", 1, 100, "update_postimage"): 1,
            ("n", 5, 100, "update_postimage"): 1,
            ("s", 2, 5, "delete"): 1,
        }
    )
