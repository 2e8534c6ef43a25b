"""Writer matrix: every writer (tests/reliability/reliability_writers.py) × every DML kind,
OPTIMIZE and VACUUM, one refresh after each; the views equal their recomputation each time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from reliability_writers import DeltaSparkWriter, Writer, writers

from catalog import delta
from spark_exec import Session

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
AGG = "SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k"
DUP = "SELECT k, v FROM t WHERE v >= 3"


def rows(*pairs: tuple[int, int]) -> pa.Table:
    return pa.table(
        {"k": [int(k) for k, _ in pairs], "v": [int(v) for _, v in pairs]}, schema=SCHEMA
    )


STATEMENTS: list[tuple[str, Callable[[Writer, str], None]]] = [
    ("insert", lambda w, p: w.insert(p, rows((1, 4), (2, 5), (2, 5), (9, 3)))),
    ("update", lambda w, p: w.update(p, {"v": "v + 1"}, "k = 2")),
    ("update all rows", lambda w, p: w.update(p, {"v": "v * 2"}, "v >= 0")),
    ("delete", lambda w, p: w.delete(p, "k = 1")),
    ("merge", lambda w, p: w.upsert(p, rows((2, 7), (3, 3), (8, 8)), "k", "v")),
    ("optimize", lambda w, p: w.optimize(p)),
    ("overwrite", lambda w, p: w.overwrite(p, rows((5, 5), (5, 6), (6, 6)))),
    ("vacuum", lambda w, p: w.vacuum(p)),
    ("insert after vacuum", lambda w, p: w.insert(p, rows((5, 1)))),
    ("delete all rows", lambda w, p: w.delete(p, None)),
]


def bag(t: pa.Table) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r.values()) for r in t.to_pylist())


@pytest.mark.parametrize("writer", writers(), ids=lambda w: w.name)
def test_each_statement_kind(tmp_path: Path, writer: Writer) -> None:
    run_matrix(tmp_path, writer)


@pytest.mark.spark
@pytest.mark.parametrize("deletion_vectors", [False, True], ids=["rewrites", "deletion-vectors"])
def test_each_statement_kind_by_delta_spark(
    tmp_path: Path, spark: Any, deletion_vectors: bool
) -> None:
    """delta-spark's own DML: files rewritten, or rows marked deleted in deletion vectors."""
    props = "'delta.enableDeletionVectors' = 'true'" if deletion_vectors else None
    run_matrix(tmp_path, DeltaSparkWriter(spark), spark_properties=props)


def run_matrix(tmp_path: Path, writer: Writer, *, spark_properties: str | None = None) -> None:
    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT)")
    if spark_properties:
        assert isinstance(writer, DeltaSparkWriter)
        writer.spark.sql(
            f"ALTER TABLE delta.`{s.table_path('t')}` SET TBLPROPERTIES ({spark_properties})"
        )
    rng = np.random.default_rng(0)  # enough rows that delta-rs's UPDATE feed misses some
    keys, values = rng.integers(0, 10, 300), rng.integers(0, 9, 300)
    delta.insert(s.table_path("t"), rows(*zip(keys, values, strict=True)))
    s.sql(f"CREATE MATERIALIZED VIEW agg AS {AGG}")
    s.sql(f"CREATE MATERIALIZED VIEW dup AS {DUP}")
    path = s.table_path("t")
    for name, statement in STATEMENTS:
        statement(writer, path)
        s.refresh()
        t = delta.read_snapshot(path).to_pylist()
        if isinstance(writer, DeltaSparkWriter):  # the oracle's rows as Spark reads them
            spark_rows = writer.spark.read.format("delta").load(path).collect()
            assert Counter((r["k"], r["v"]) for r in t) == Counter(map(tuple, spark_rows)), name
        groups: dict[int, list[int]] = {}
        for r in t:
            groups.setdefault(r["k"], []).append(r["v"])
        assert bag(s.read("agg")) == Counter((k, len(vs), sum(vs)) for k, vs in groups.items()), (
            name
        )
        assert bag(s.read("dup")) == Counter((r["k"], r["v"]) for r in t if r["v"] >= 3), name
    if spark_properties:  # the DML above did mark rows deleted in deletion vectors
        log = Path(path) / "_delta_log"
        assert any('"deletionVector":{' in f.read_text() for f in log.glob("*.json"))
