"""catalog.storage: one contract for local directories, S3 (moto's server) and Azure Blob
Storage (Azurite), both on 127.0.0.1, and view tables kept on either object store equal to a
plain-Python oracle after every refresh."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from azure_fixture import azure_container, azurite_server, object_store  # noqa: F401
from deltalake import DeltaTable
from s3_fixture import s3_bucket, s3_server  # noqa: F401 (fixtures)

from catalog import delta, delta_commit, leases, storage, view_table
from catalog.changes import DIFF
from catalog.delta_commit import ConcurrentCommitError
from catalog.names import parse_identifier

ROWS = pa.schema([("k", pa.int64()), ("s", pa.string())])


@pytest.fixture(params=["local", "s3", "azure"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "local":
        return str(tmp_path)
    name = "s3_bucket" if request.param == "s3" else "azure_container"
    return str(request.getfixturevalue(name)) + "/wh"


def test_put_if_absent_creates_once_and_objects_read_back(root: str) -> None:
    store = storage.backend(root)
    f = storage.join(root, "_delta_log", "00000000000000000000.json")
    assert not store.exists(f) and store.stamp(f) is None
    assert store.put_if_absent(f, b"first")
    assert not store.put_if_absent(f, b"second")
    assert store.read_bytes(f) == b"first"
    other = storage.join(root, "_delta_log", "_last_checkpoint")
    store.write_bytes(other, b"a")
    store.write_bytes(other, b"bb")
    assert store.read_bytes(other) == b"bb"
    assert sorted(store.listdir(storage.join(root, "_delta_log"))) == [
        "00000000000000000000.json",
        "_last_checkpoint",
    ]
    assert store.listdir(storage.join(root, "nothing")) == []
    store.delete(other)
    store.delete(other)  # gone already: no error
    with pytest.raises(FileNotFoundError):
        store.read_bytes(other)


def test_a_lease_has_one_holder_until_released_or_expired(root: str) -> None:
    lease = storage.join(root, "_ivm", "locks", "g.lock")
    assert leases.try_lease(lease, "a", 60)
    assert not leases.try_lease(lease, "b", 60)
    assert leases.try_lease(lease, "a", 60)  # renewal by the holder
    leases.release_lease(lease, "b")  # not the holder: nothing happens
    assert not leases.try_lease(lease, "b", 60)
    leases.release_lease(lease, "a")
    assert leases.try_lease(lease, "b", -1)  # taken, already expired
    assert leases.try_lease(lease, "c", 60)  # an expired lease is broken
    assert json.loads(storage.backend(lease).read_bytes(lease))["owner"] == "c"


def test_locations_are_normalized() -> None:
    assert storage.normalize("s3a://b/x/") == "s3://b/x"
    assert storage.join("s3://b/x", "views/default", "v") == "s3://b/x/views/default/v"
    with pytest.raises(storage.StorageError, match="unsupported scheme"):
        storage.normalize("ftp://b/x")

    with pytest.raises(storage.StorageError, match="bucket"):
        storage.normalize("s3:///x")
    # Azure, in delta-rs's two spellings; abfs:// is read as abfss://
    az = "abfss://c@acct.dfs.core.windows.net"
    assert storage.normalize("abfs://c@acct.dfs.core.windows.net/x/") == f"{az}/x"
    assert storage.normalize("az://c/x/") == "az://c/x"
    assert storage.is_azure(f"{az}/x") and storage.is_object_store("az://c/x")
    assert storage.root(f"{az}/x/y") == az
    with pytest.raises(storage.StorageError, match="account"):
        storage.normalize("abfss://c/x")


def _bag(t: pa.Table) -> Counter[tuple[object, ...]]:
    return Counter(tuple(r.values()) for r in t.to_pylist())


def _plain(path: str, version: int | None = None) -> pa.Table:
    """A user's deltalake reader, given the storage options and nothing else of ours."""
    dt = DeltaTable(path, version=version, storage_options=storage.delta_storage_options(path))
    return pa.table(dt.scan())  # reads deletion vectors (to_pyarrow_table refuses them)


@pytest.mark.parametrize(
    ("store", "seed"),
    [("s3", 1), ("s3", 2), ("azure", 1), pytest.param("azure", 2, marks=pytest.mark.slow)],
)
def test_a_view_table_on_object_stores_equals_the_oracle_after_every_refresh(
    request: pytest.FixtureRequest,
    store: str,
    seed: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Random inserts and deletes (duplicates included) refreshed into an object-store view table,
    with the maintenance policy after each commit (compaction, log checkpoints and trimming,
    as a refresh runs it): after each commit a plain deltalake reader sees exactly the
    oracle's rows, time travel the previous ones, and the commit's change feed the step's
    change."""
    monkeypatch.setattr(view_table, "COW_MAX_BYTES", 0)  # deletion vectors from the start
    rng = np.random.default_rng(seed)
    bucket = request.getfixturevalue("s3_bucket" if store == "s3" else "azure_container")
    path = f"{bucket}/wh/views/default/v"
    view_table.create_view_table(path, ROWS, view="v")
    oracle: Counter[tuple[object, ...]] = Counter()
    maintained: dict[str, object] = {}
    for epoch in range(1, 12):
        change: Counter[tuple[object, ...]] = Counter()
        for _ in range(int(rng.integers(1, 30))):
            row = (int(rng.integers(0, 40)), str(rng.choice(["a", "b", "c"])))
            change[row] += 1
        for row in rng.permutation(list(oracle.elements()))[: int(rng.integers(0, 15))]:
            change[(int(row[0]), str(row[1]))] -= 1
        rows = [r for r, n in change.items() if n]
        batch = pa.table(
            {
                "k": [r[0] for r in rows],
                "s": [r[1] for r in rows],
                DIFF: [change[r] for r in rows],
            }
        )
        before = Counter(oracle)
        oracle.update(change)
        oracle = +oracle
        r = view_table.commit_view_changes(
            path, batch, view="v", epoch=epoch, input_versions={"t": epoch}
        )
        assert r is not None
        assert _bag(_plain(path)) == oracle, f"epoch {epoch}"
        assert _bag(_plain(path, r.version - 1)) == before, f"time travel, epoch {epoch}"
        assert _bag(view_table.read_view(path)) == oracle
        cdf = DeltaTable(path, storage_options=storage.delta_storage_options(path)).load_cdf(
            starting_version=r.version, ending_version=r.version
        )
        sign = {"insert": 1, "delete": -1, "update_postimage": 1, "update_preimage": -1}
        feed: Counter[tuple[object, ...]] = Counter()
        for row in pa.table(cdf).to_pylist():
            feed[(row["k"], row["s"])] += sign[row["_change_type"]]
        assert +feed == +Counter({k: v for k, v in change.items() if v > 0})
        assert -feed == -Counter({k: v for k, v in change.items() if v < 0})
        maintained.update(view_table.maintain(path))
        assert _bag(_plain(path)) == oracle, f"after maintenance, epoch {epoch}"
    assert maintained.get("checkpoint"), maintained
    delta_commit._replayed.clear()  # our own log replay, from the checkpoint on S3
    lay = view_table.layout(path)
    assert lay.records - lay.deleted_records == sum(oracle.values())
    assert _bag(view_table.read_view(path)) == oracle
    assert view_table.uses_deletion_vectors(path)
    assert view_table.last_refresh(path) is not None


def test_a_second_commit_of_one_version_is_refused_on_object_stores(
    object_store: str,  # noqa: F811
) -> None:
    path = f"{object_store}/t"
    view_table.create_view_table(path, ROWS, view="v")
    version, _ = delta_commit.snapshot_files(path)
    info = delta_commit.commit_info("WRITE", {})
    delta_commit.commit(path, version + 1, [info])
    with pytest.raises(ConcurrentCommitError, match="another writer"):
        delta_commit.commit(path, version + 1, [info])


def test_input_tables_on_object_stores_through_delta_rs(object_store: str) -> None:  # noqa: F811
    """Base tables on S3 are written by delta-rs (its own put-if-absent commits) and read by
    the catalog's reader."""
    path = f"{object_store}/wh/tables/default/t"
    delta.create_table(path, ROWS)
    delta.insert(path, pa.table({"k": [1, 2, 3], "s": ["a", "b", "c"]}))
    delta.delete(path, "k = 2")
    assert delta.is_delta_table(path)
    assert _bag(delta.read_snapshot(path)) == Counter({(1, "a"): 1, (3, "c"): 1})
    assert delta.current_version(path) == 2


@pytest.mark.parametrize("uri", ["wasbs://c@acct.blob.core.windows.net/wh", "gs://b/wh"])
def test_unsupported_object_stores_are_refused_by_name(uri: str, tmp_path: Path) -> None:
    from catalog.errors import InvalidPathError
    from catalog.paths import Warehouse, resolve_location

    with pytest.raises(storage.StorageError, match="not supported"):
        storage.normalize(uri)
    with pytest.raises(InvalidPathError, match="not supported"):
        Warehouse(uri)
    with pytest.raises(InvalidPathError, match="not supported"):
        resolve_location(uri)
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere


def test_file_uri_warehouse_is_the_local_directory(tmp_path: Path) -> None:
    from catalog import Catalog

    cat = Catalog(f"file://{tmp_path}/wh")
    assert not cat.warehouse.remote and cat.warehouse.root == tmp_path / "wh"
    cat.create_table("t", ROWS)
    assert (tmp_path / "wh" / "_ivm" / "catalog.json").is_file()


def test_object_paths_stay_inside_their_warehouse(object_store: str) -> None:  # noqa: F811
    from catalog.errors import InvalidPathError
    from catalog.paths import Warehouse

    wh = Warehouse(f"{object_store}/wh/")
    assert wh.remote and wh.root.as_posix() == f"{object_store}/wh"
    assert wh.view_path(parse_identifier("db.v")).as_posix() == f"{object_store}/wh/views/db/v"
    assert wh.relative(f"{object_store}/wh/views/db/v") == "views/db/v"
    assert not wh.contains(f"{object_store}/other/v") and not wh.contains("/tmp/wh/views/v")
    for outside in (f"{object_store}/other/v", f"{object_store}/wh/../x", "/tmp/wh/views/v"):
        with pytest.raises(InvalidPathError):
            wh.check_inside(outside)
    assert wh.spark_warehouse_dir.is_absolute()  # scratch stays local


def test_an_expired_lease_is_broken_by_one_breaker_only_on_s3(s3_bucket: str) -> None:  # noqa: F811
    """Two processes that both read the same expired lease: the second one's break (and a late
    renewal by the old holder) is refused, because each is conditional on the version read."""
    lease = storage.join(s3_bucket, "_ivm", "locks", "g.lock")
    store = storage.backend(lease)
    assert leases.try_lease(lease, "old", -1)  # held, already expired
    stale = store.version_tag(lease)
    assert leases.try_lease(lease, "x", 60)  # x breaks it
    body = json.dumps({"owner": "y", "expires": 1e12}).encode()
    assert not store.replace_if(lease, body, stale)  # y's break, from the version it read
    assert not leases.try_lease(lease, "y", 60) and not leases.try_lease(lease, "old", 60)
    assert json.loads(store.read_bytes(lease))["owner"] == "x"


def test_a_missing_azurite_fails_saying_how_to_install_it(tmp_path: Path) -> None:
    from azure_fixture import azurite_executable

    with pytest.raises(pytest.fail.Exception, match=r"run `\./run env`"):
        azurite_executable(tmp_path)
    assert azurite_executable().name == "azurite-blob"  # this checkout has it
