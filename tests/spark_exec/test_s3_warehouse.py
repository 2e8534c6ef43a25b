"""A whole warehouse on S3 (moto's server on 127.0.0.1): catalog, checkpoints, locks (leases),
status, event log and every table under one ``s3://`` URI, views equal to a plain-Python
recomputation after every refresh of random inserts, deletes and updates, also from a second
Session that only knows the URI."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import boto3
import pytest
from s3_fixture import (  # noqa: F401
    per_k_follows_its_input,
    per_k_layout_and_reopen,
    per_k_oracle,
    per_k_warehouse,
    s3_bucket,
    s3_server,
)

from catalog import delta
from catalog.object_path import ObjectPath
from spark_exec.events import EVENT_LOG_TABLE

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _keys(bucket: str, s3_server: str) -> list[str]:  # noqa: F811
    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket.removeprefix("s3://"))
    return [o["Key"] for p in pages for o in p.get("Contents", [])]


def test_a_warehouse_on_s3_maintains_views_and_reopens(
    spark: SparkSession,
    s3_bucket: str,  # noqa: F811
    s3_server: str,  # noqa: F811
    tmp_path,
    monkeypatch,
) -> None:
    monkeypatch.setenv("IVM_CACHE_DIR", str(tmp_path / "cache"))
    uri = f"{s3_bucket}/wh"
    s, churn, src = per_k_warehouse(spark, uri, seed=11)
    per_k_follows_its_input(s, churn, src, steps=4, deletes=2)

    keys = _keys(s3_bucket, s3_server)
    assert any(k.startswith("wh/_ivm/status/default/") for k in keys)
    assert any(k.startswith("wh/_ivm/event_log/events-") for k in keys)
    again, got = per_k_layout_and_reopen(spark, uri, keys, churn, src)
    assert again.event_log().num_rows >= 1

    # Spark SQL reads the view by name, through delta-spark over S3A (s3:// mapped to S3A)
    by_name = Counter(tuple(r) for r in spark.sql("SELECT k, n, total FROM per_k").collect())
    assert by_name == got
    assert (
        spark.sql("SELECT count(*) FROM facts").collect()[0][0] == delta.read_snapshot(src).num_rows
    )
    # and the event log, a JSON table on S3
    logged = spark.sql(f"SELECT count(*) FROM {EVENT_LOG_TABLE}").collect()[0][0]
    assert logged == again.event_log().num_rows


@pytest.mark.slow  # 5 min at load average 25 on 2 cores (the Spark SQL oracle of each batch)
def test_the_demo_runs_on_an_s3_warehouse(
    spark: SparkSession,
    s3_bucket: str,  # noqa: F811
    s3_server: str,  # noqa: F811
    tmp_path,
    monkeypatch,
    capsys,
) -> None:
    """``ivm --warehouse s3://… demo`` (its code path, in this process and smaller): every view
    equals its oracle after every batch, and everything lives under the URI."""
    import contextlib

    from spark_exec import demo

    monkeypatch.setenv("IVM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(demo, "N_ORDERS", 2_000)
    monkeypatch.setattr(demo, "N_NODES", 60)
    assert (
        demo.run_demo(
            ObjectPath(f"{s3_bucket}/wh/demo"),  # type: ignore[arg-type]
            progress=lambda _label: contextlib.nullcontext(),
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "every view matched its oracle" in out
    keys = _keys(s3_bucket, s3_server)
    assert "wh/demo/_ivm/catalog.json" in keys
    assert any(k.startswith("wh/demo/views/default/revenue_by_region/_delta_log/") for k in keys)
