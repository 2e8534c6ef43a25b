"""``CLUSTER BY`` on CREATE MATERIALIZED VIEW (issue 18, item 4): the view's Delta table is a
clustered table (Delta PROTOCOL.md, "Clustered Table": writer features ``clustering`` and
``domainMetadata``, the ``delta.clustering`` domain naming the columns), every file a refresh
writes is sorted by the clustering columns, and refreshes stay exact under random changes
(copy-on-write and deletion vectors).  delta-spark reads the table, shows the clustering
(``DESCRIBE DETAIL``), clusters it (``OPTIMIZE``), and our refreshes go on exactly after it
rewrote the files.  ``ALTER MATERIALIZED VIEW ... CLUSTER BY`` changes the columns."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from layout_checks import assert_create_refused, describe_extended, show_create

from catalog import delta_commit, view_clustering, view_table
from catalog.view_clustering import ClusterColumnError
from catalog.view_partitions import file_path
from spark_exec.session import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

COLS = ["k", "r", "s", "n"]
QUERY = "SELECT k, r, sum(v) AS s, count(*) AS n FROM t GROUP BY k, r"


def bag(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r[c] for c in COLS) for r in rows)


def expected(base: dict[int, tuple[int, str, int]]) -> Counter[tuple[Any, ...]]:
    """The view in plain Python: per (k, r), the sum of v and the count."""
    acc: dict[tuple[int, str], list[int]] = {}
    for k, r, v in base.values():
        a = acc.setdefault((k, r), [0, 0])
        a[0] += v
        a[1] += 1
    return Counter((k, r, s, n) for (k, r), (s, n) in acc.items())


def check_clustered(path: str, columns: list[str], older: frozenset[str] = frozenset()) -> None:
    """The protocol's clustered table: features, the domain, stats for the clustering columns,
    and the rows of each of our files (but the ``older`` ones, written before the clustering
    changed) sorted by the first clustering column."""
    dt = DeltaTable(path)
    p = dt.protocol()
    assert p.min_writer_version == 7
    assert {"clustering", "domainMetadata"} <= set(p.writer_features or [])
    config = delta_commit.domain_configuration(path, view_clustering.DOMAIN)
    assert config is not None
    assert json.loads(config)["clusteringColumns"] == [[c] for c in columns]
    assert dt.metadata().partition_columns == []
    _, files = delta_commit.snapshot_files(path)
    for f in files.values():
        for c in columns:
            assert c in f.stats["nullCount"]
        if columns and not f.action.get("clusteringProvider") and f.path not in older:
            keys = pq.read_table(file_path(path, f), columns=[columns[0]]).column(0).to_pylist()
            assert keys == sorted(keys)


class Input:
    """Table ``t (id, k, r, v)`` and its rows in Python, changed at random through SQL."""

    def __init__(self, s: Session, seed: int) -> None:
        self.s = s
        self.rng = random.Random(seed)
        self.base: dict[int, tuple[int, str, int]] = {}
        self.next_id = 0
        s.sql("CREATE TABLE t (id BIGINT, k BIGINT, r STRING, v BIGINT)")

    def insert(self, n: int) -> None:
        values = []
        for _ in range(n):
            row = (self.rng.randrange(40), self.rng.choice("abc"), self.rng.randrange(100))
            self.base[self.next_id] = row
            values.append(f"({self.next_id}, {row[0]}, '{row[1]}', {row[2]})")
            self.next_id += 1
        self.s.sql(f"INSERT INTO t VALUES {', '.join(values)}")

    def change(self) -> None:
        self.insert(self.rng.randrange(1, 12))
        gone = self.rng.sample(sorted(self.base), k=min(len(self.base), self.rng.randrange(1, 6)))
        for i in gone:
            del self.base[i]
        self.s.sql(f"DELETE FROM t WHERE id IN ({', '.join(map(str, gone))})")
        moved = self.rng.choice(sorted(self.base))
        k, r, v = self.base[moved]
        self.base[moved] = (k, r, v + 7)
        self.s.sql(f"UPDATE t SET v = v + 7 WHERE id = {moved}")


def test_clustered_view_stays_exact_under_random_changes(
    tmp_path: Path, deletion_vectors: bool
) -> None:
    s = Session(warehouse=tmp_path / "wh")
    t = Input(s, 18 + deletion_vectors)
    t.insert(80)
    s.sql(f"-- clustered by key\nCREATE MATERIALIZED VIEW m CLUSTER BY (k) AS {QUERY}")
    s.sql("CREATE MATERIALIZED VIEW big AS SELECT k, s FROM m WHERE s > 120")
    path = s.table_path("m")
    check_clustered(path, ["k"])
    for _ in range(6):
        t.change()
        s.refresh()
        want = expected(t.base)
        assert bag(s.read("m").to_pylist()) == want  # the oracle: recomputation
        assert Counter((r["k"], r["s"]) for r in s.read("big").to_pylist()) == Counter(
            (k, sv) for (k, _r, sv, _n), c in want.items() if sv > 120 for _ in range(c)
        )
        check_clustered(path, ["k"])
    assert view_table.uses_deletion_vectors(path) == deletion_vectors
    # compaction by us (delta-rs refuses a clustered table): rows and clustering kept
    view_table.compact_view(path)
    assert bag(s.read("m").to_pylist()) == expected(t.base)
    check_clustered(path, ["k"])


def test_cluster_by_is_shown_recreated_and_altered(tmp_path: Path) -> None:
    s = Session(warehouse=tmp_path / "wh")
    t = Input(s, 7)
    t.insert(30)
    s.sql(
        f"CREATE MATERIALIZED VIEW m /* inside */ CLUSTER BY (k, r) COMMENT 'c' "
        f"TBLPROPERTIES ('owner' = 'me') AS {QUERY}"
    )
    text = show_create(s, "m")
    assert "CLUSTER BY (`k`, `r`)" in text
    detail = describe_extended(s, "m")
    assert detail["Clustering Columns"] == "k, r"
    assert DeltaTable(s.table_path("m")).metadata().configuration["owner"] == "me"
    check_clustered(s.table_path("m"), ["k", "r"])
    s.sql("DROP MATERIALIZED VIEW m")
    s.sql(text)  # SHOW CREATE's text creates the same view again
    check_clustered(s.table_path("m"), ["k", "r"])
    assert bag(s.read("m").to_pylist()) == expected(t.base)

    path = s.table_path("m")
    older = frozenset(delta_commit.snapshot_files(path)[1])
    s.sql("-- new columns\nALTER MATERIALIZED VIEW m CLUSTER BY (r)")
    assert view_clustering.clustering_columns(path) == ("r",)
    t.change()
    s.refresh()
    check_clustered(path, ["r"], older)  # the refresh's new file is sorted by r
    assert bag(s.read("m").to_pylist()) == expected(t.base)
    assert "CLUSTER BY (`r`)" in show_create(s, "m")
    s.sql("ALTER MATERIALIZED VIEW m CLUSTER BY NONE")
    assert view_clustering.clustering_columns(path) == ()
    assert view_clustering.is_clustered(path)  # the feature stays, as in delta-spark
    t.change()
    s.refresh()
    assert bag(s.read("m").to_pylist()) == expected(t.base)
    assert "CLUSTER BY" not in show_create(s, "m")


@pytest.mark.parametrize(
    ("clause", "message"),
    [
        ("CLUSTER BY (nope)", "'nope' is not a column of the view"),
        ("CLUSTER BY (k, k)", "'k' is named twice"),
        ("CLUSTER BY (b)", "has type bool; cluster by a number, string or date"),
        ("CLUSTER BY (k) PARTITIONED BY (r)", "either clustered or partitioned, not both"),
    ],
)
def test_bad_clustering_columns_are_refused_before_anything_is_written(
    tmp_path: Path, clause: str, message: str
) -> None:
    assert_create_refused(
        tmp_path,
        "CREATE TABLE t (k BIGINT, r STRING, v BIGINT)",
        f"CREATE MATERIALIZED VIEW m {clause} AS SELECT k, r, v > 1 AS b FROM t",
        ClusterColumnError,
        message,
    )


@pytest.mark.spark
def test_delta_spark_reads_describes_and_optimizes_the_clustered_view(
    spark: SparkSession, tmp_path: Path, deletion_vectors: bool
) -> None:
    s = Session(warehouse=tmp_path / "wh")
    t = Input(s, 40 + deletion_vectors)
    t.insert(60)
    s.sql(f"CREATE MATERIALIZED VIEW m CLUSTER BY (k) AS {QUERY}")
    path = s.table_path("m")

    def spark_recompute() -> Counter[tuple[Any, ...]]:
        spark.read.format("delta").load(s.table_path("t")).createOrReplaceTempView("t_in")
        rows = spark.sql(QUERY.replace("FROM t ", "FROM t_in ")).collect()
        return Counter(tuple(r[c] for c in COLS) for r in rows)

    def spark_view() -> Counter[tuple[Any, ...]]:
        rows = spark.read.format("delta").load(path).collect()
        return Counter(tuple(r[c] for c in COLS) for r in rows)

    for _ in range(2):  # a few of our files first
        t.change()
        s.refresh()
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["k"]
    assert {"clustering", "domainMetadata"} <= set(detail["tableFeatures"])
    assert spark_view() == spark_recompute() == bag(s.read("m").to_pylist())

    spark.sql(f"OPTIMIZE delta.`{path}`")  # delta-spark clusters the files we wrote
    _, files = delta_commit.snapshot_files(path)
    assert any(f.action.get("clusteringProvider") == "liquid" for f in files.values())
    for _ in range(3):  # our refreshes go on over delta-spark's files
        t.change()
        s.refresh()
        want = spark_recompute()
        assert bag(s.read("m").to_pylist()) == want == expected(t.base)
        assert spark_view() == want
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["k"]
    assert view_table.uses_deletion_vectors(path) == deletion_vectors
    if deletion_vectors:
        assert "deletionVectors" in set(detail["tableFeatures"])
    spark.sql(f"OPTIMIZE delta.`{path}`")  # again, over our deletion vectors and files
    t.change()
    s.refresh()
    assert bag(s.read("m").to_pylist()) == spark_recompute() == spark_view()
