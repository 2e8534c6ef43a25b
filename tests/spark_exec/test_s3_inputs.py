"""A Session maintains views over an input table on S3 (moto's server on 127.0.0.1): after
every refresh of random inserts, deletes and updates the view equals a plain-Python
recomputation from the input's rows."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
from s3_fixture import PER_K_VIEW, Churn, per_k_follows_its_input, s3_bucket, s3_server  # noqa: F401

from catalog import delta
from spark_exec.session import Session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int64()), ("v", pa.int64())])


def test_views_over_an_s3_input_equal_recomputation(
    spark: SparkSession,
    tmp_path: Path,
    s3_bucket: str,  # noqa: F811
) -> None:
    src = f"{s3_bucket}/data/facts"
    delta.create_table(src, SCHEMA)
    churn = Churn(src, seed=7, keys=5)
    churn.insert(20)
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql(f"CREATE TABLE facts USING DELTA LOCATION '{src}'")
    assert s.catalog.table("facts").path == src
    s.sql("CREATE MATERIALIZED VIEW per_k AS " + PER_K_VIEW.format(table="facts"))
    per_k_follows_its_input(s, churn, src, steps=5, deletes=3)
