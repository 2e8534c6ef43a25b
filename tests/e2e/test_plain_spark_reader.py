"""A separate, plain PySpark application with delta-spark — which does not import this
project — attaches a warehouse's catalog (its ``spark_attach.sql``) and reads the views by
name: exactly the views' rows, time travel to the previous refresh, and each refresh's change
data feed equal to its change (a keyed view's changed rows as update pre/post-images).  One
view is small (copy-on-write), one uses deletion vectors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from feed_oracle import expected_feed

from catalog import delta, view_table
from spark_exec import Session

pytestmark = pytest.mark.spark

APP = r"""
import glob, json, os, sys
from pyspark.sql import SparkSession

spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.jars", ",".join(sorted(glob.glob(os.environ["JARS"] + "/*.jar"))))
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    .config("spark.sql.warehouse.dir", os.environ["SCRATCH"])
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.databricks.delta.snapshotPartitions", "1")
    .getOrCreate()
)
W = os.environ["WAREHOUSE"]  # attach the warehouse's catalog (docs/spark_attach.md)
spark.conf.set("spark_ivm.warehouse", W)
for ddl in open(os.path.join(W, "spark_attach.sql")).read().split(";\n")[:-1]:
    spark.sql(ddl)
out = {}
for name, (path, latest) in json.loads(os.environ["VIEWS"]).items():
    feed = (
        spark.read.format("delta").option("readChangeFeed", "true")
        .option("startingVersion", latest).option("endingVersion", latest).load(path)
    )
    out[name] = {
        "columns": spark.table(name).columns,
        "rows": [list(r) for r in spark.sql(f"SELECT * FROM {name}").collect()],
        "refreshed": [list(r) for r in spark.sql(f"SELECT * FROM {name} VERSION AS OF {latest}").collect()],
        "before": [list(r) for r in spark.sql(f"SELECT * FROM {name} VERSION AS OF {latest - 1}").collect()],
        "feed": [list(r)[:-2] for r in feed.collect()],
    }
out["imported"] = sorted(m for m in ("ivm", "catalog", "spark_exec") if m in sys.modules)
print(json.dumps(out, default=str))
"""


KEYS = {"per_k": [0], "wide": None}  # key positions (catalog.view_key)


def bag(rows: Any) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(str(v) for v in r) for r in rows)


def test_plain_delta_spark_application_reads_the_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spark_exec.delta_jars import cache_dir, delta_jars

    delta_jars()  # a missing jar fails the test with the fix in the message
    wh = tmp_path / "wh"
    s = Session(warehouse=wh)
    s.sql("CREATE TABLE t (k BIGINT NOT NULL, v BIGINT NOT NULL)")
    n = 20_000
    delta.insert(s.table_path("t"), pa.table({"k": np.arange(n) % 50, "v": np.arange(n)}))
    s.sql(
        "CREATE MATERIALIZED VIEW per_k AS SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k"
    )
    s.sql("CREATE MATERIALIZED VIEW wide AS SELECT k, v FROM t WHERE v % 3 <> 0")
    monkeypatch.setattr(view_table, "COW_MAX_BYTES", 0)  # deletion vectors for `wide`
    s.sql("DELETE FROM t WHERE v < 40")
    s.sql("INSERT INTO t VALUES (1, 100001), (2, 100002), (7, 100004)")
    s.refresh()
    assert view_table.uses_deletion_vectors(s.table_path("wide"))
    views = {"per_k": s.table_path("per_k"), "wide": s.table_path("wide")}
    refreshed = {}
    for name, path in views.items():
        rec = view_table.last_refresh(path)
        assert rec is not None
        refreshed[name] = [path, rec.version]

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_IVM_JARS")}
    env.update(
        JARS=str(cache_dir()),
        VIEWS=json.dumps(refreshed),
        SCRATCH=str(tmp_path / "sw"),
        WAREHOUSE=str(wh),
    )
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(APP)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    assert got["imported"] == []
    for name, path in views.items():
        g = got[name]
        now = s.read(name)
        assert g["columns"] == now.column_names
        assert bag(g["rows"]) == bag(tuple(r.values()) for r in now.to_pylist())
        assert g["refreshed"] == g["rows"] or bag(g["refreshed"]) == bag(g["rows"])
        before = view_table.read_view(path, refreshed[name][1] - 1)
        assert bag(g["before"]) == bag(tuple(r.values()) for r in before.to_pylist())
        # the feed of the refresh's commit is the change: new rows minus old rows, a keyed
        # view's changed rows as update pre/post-images (per_k's key: k)
        new, old = bag(g["refreshed"]), bag(g["before"])
        feed = Counter((tuple(str(v) for v in r[:-1]), r[-1]) for r in g["feed"])
        assert feed == expected_feed(old, new, KEYS[name])
    assert any(kind == "update_postimage" for *_, kind in got["per_k"]["feed"])
