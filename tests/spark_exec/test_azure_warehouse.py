"""A whole warehouse on Azure Blob Storage (Azurite on 127.0.0.1): catalog, checkpoints, leases,
status, event log and every table under one ``abfss://`` URI, views equal to a plain-Python
recomputation (and to a plain ``deltalake`` reader) after every refresh of random inserts,
deletes and updates, also from a second Session that only knows the URI; Spark SQL refuses
the tables by name with a typed error (no hadoop-azure jars)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from azure_fixture import azure_container, azurite_server  # noqa: F401
from deltalake import DeltaTable
from s3_fixture import PER_K_VIEW, Churn, per_k_follows_its_input, per_k_oracle

from catalog import delta, storage
from catalog.object_path import ObjectPath
from spark_exec.errors import SparkSetupError
from spark_exec.registry import register
from spark_exec.session import Session

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
    s = Session(spark=spark, warehouse=uri)
    assert s.warehouse.as_posix() == uri
    s.sql("CREATE TABLE facts (id BIGINT NOT NULL, k BIGINT, v BIGINT)")
    src = s.table_path("facts")
    assert src == f"{uri}/tables/default/facts"
    churn = Churn(src, seed=12, keys=4)
    churn.insert(15)
    s.sql("CREATE MATERIALIZED VIEW per_k AS " + PER_K_VIEW.format(table="facts"))
    per_k_follows_its_input(s, churn, src, steps=2, deletes=2)

    # a plain deltalake reader, given only the storage options, sees exactly the view's rows
    view = s.catalog.view("per_k").path
    opts = storage.delta_storage_options(view)
    assert opts == {"azure_storage_use_emulator": "true", "azure_storage_allow_http": "true"}
    rows = pa.table(DeltaTable(view, storage_options=opts).scan())  # deletion vectors applied
    plain = Counter(tuple(r.values()) for r in rows.to_pylist())
    assert plain == per_k_oracle(delta.read_snapshot(src))

    blobs = _blobs(azure_container)
    assert "wh/_ivm/catalog.json" in blobs
    assert any(b.startswith("wh/_ivm/checkpoints/default/per_k/epoch-") for b in blobs)
    assert any(b.startswith("wh/views/default/per_k/_delta_log/") for b in blobs)
    assert not any("/locks/" in b for b in blobs)  # every lease was given up
    doc = storage.backend(uri).read_bytes(f"{uri}/_ivm/catalog.json").decode()
    assert '"path": "views/default/per_k"' in doc and "abfss://" not in doc

    # a second Session that knows only the URI finds everything and refreshes on
    again = Session(spark=spark, warehouse=uri)
    assert {v.name for v in again.catalog.views()} == {"per_k"}
    churn.insert(3)
    again.refresh()
    got = Counter(tuple(r.values()) for r in again.read("per_k").to_pylist())
    assert got == per_k_oracle(delta.read_snapshot(src))

    # Spark SQL by name needs hadoop-azure: a typed error naming the table, not a JVM trace
    with pytest.raises(SparkSetupError, match=r"per_k .*hadoop-azure"):
        register(spark, "per_k", view)


@pytest.mark.slow
def test_the_demo_runs_on_an_azure_warehouse(
    spark: SparkSession,
    azure_container: str,  # noqa: F811
    tmp_path,
    monkeypatch,
    capsys,
) -> None:
    """``ivm --warehouse abfss://… demo`` (its code path, in this process and smaller): every
    view equals its oracle after every batch, and everything lives under the URI."""
    import contextlib

    from spark_exec import demo

    monkeypatch.setenv("IVM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(demo, "N_ORDERS", 2_000)
    monkeypatch.setattr(demo, "N_NODES", 60)
    assert (
        demo.run_demo(
            ObjectPath(f"{azure_container}/wh/demo"),  # type: ignore[arg-type]
            progress=lambda _label: contextlib.nullcontext(),
        )
        == 0
    )
    assert "every view matched its oracle" in capsys.readouterr().out
    blobs = _blobs(azure_container)
    assert "wh/demo/_ivm/catalog.json" in blobs
    assert any(b.startswith("wh/demo/views/default/revenue_by_region/_delta_log/") for b in blobs)
