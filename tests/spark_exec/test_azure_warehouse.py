"""A whole warehouse on Azure Blob Storage (Azurite on 127.0.0.1): catalog, checkpoints, leases,
status, event log and every table under one ``abfss://`` URI, views equal to a plain-Python
recomputation (and to a plain ``deltalake`` reader) after every refresh of random inserts,
deletes and updates, also from a second Session that only knows the URI; Spark SQL refuses
the tables by name with a typed error (no hadoop-azure jars).  The demo is not run on Azure:
it reads its views by name in Spark SQL, which needs hadoop-azure (README, Object stores)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from azure_fixture import azure_container, azurite_server  # noqa: F401
from deltalake import DeltaTable
from s3_fixture import (
    per_k_follows_its_input,
    per_k_layout_and_reopen,
    per_k_oracle,
    per_k_warehouse,
)

from catalog import delta, storage
from spark_exec.errors import SparkSetupError
from spark_exec.registry import register

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _blobs(container: str) -> list[str]:
    store = storage.backend(container)
    assert isinstance(store, storage.AzureStorage)
    name = container.removeprefix("abfss://").split("@", 1)[0]
    return [b.name for b in store._service.get_container_client(name).list_blobs()]


def test_a_warehouse_on_azure_maintains_views_and_reopens(
    spark: SparkSession,
    azure_container: str,  # noqa: F811
    tmp_path,
    monkeypatch,
) -> None:
    monkeypatch.setenv("IVM_CACHE_DIR", str(tmp_path / "cache"))
    uri = f"{azure_container}/wh"
    s, churn, src = per_k_warehouse(spark, uri, seed=12)
    per_k_follows_its_input(s, churn, src, steps=2, deletes=2)

    # a plain deltalake reader, given only the storage options, sees exactly the view's rows
    view = s.catalog.view("per_k").path
    opts = storage.delta_storage_options(view)
    assert opts == {"azure_storage_use_emulator": "true", "azure_storage_allow_http": "true"}
    rows = pa.table(DeltaTable(view, storage_options=opts).scan())  # deletion vectors applied
    plain = Counter(tuple(r.values()) for r in rows.to_pylist())
    assert plain == per_k_oracle(delta.read_snapshot(src))

    per_k_layout_and_reopen(spark, uri, _blobs(azure_container), churn, src)

    # Spark SQL by name needs hadoop-azure: a typed error naming the table, not a JVM trace
    with pytest.raises(SparkSetupError, match=r"per_k .*hadoop-azure"):
        register(spark, "per_k", view)
