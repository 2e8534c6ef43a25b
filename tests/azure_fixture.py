"""A local Azure Blob server for the Azure tests: Azurite on 127.0.0.1.

``azurite_server`` starts Azurite's blob service (installed by ``./run env`` into
``build/node/``, in-memory, on a free port) once per test session; ``azure_container`` points
the variables catalog.storage and delta-rs read (``AZURE_STORAGE_USE_EMULATOR``,
``AZURITE_BLOB_STORAGE_URL``) at it for the test and gives each test a fresh container, as
``abfss://<container>@devstoreaccount1.dfs.core.windows.net``.  ``object_store`` runs a test
once on S3 (moto) and once on Azure.  Import as
``from azure_fixture import azure_container, azurite_server`` (tests/ is on ``sys.path``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from s3_fixture import free_port, local_server

AZURITE = Path(__file__).resolve().parents[1] / "build" / "node" / "node_modules" / ".bin"
ACCOUNT = "devstoreaccount1"


def azurite_executable(where: Path = AZURITE) -> Path:
    """Azurite's blob server under ``where``; fails the test (never skips) when it is missing."""
    exe = where / "azurite-blob"
    if not exe.exists():
        pytest.fail(
            f"Azurite (the Azure tests' local blob server) is not installed at {exe}: run "
            "`./run env` (needs Node.js >= 10 and npm)",
            pytrace=False,
        )
    return exe


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The blob endpoint URL of an Azurite server running for the whole test session."""
    exe = azurite_executable()
    port = free_port()
    argv = [
        *(str(exe), "--blobHost", "127.0.0.1", "--blobPort", str(port)),
        *("--inMemoryPersistence", "--skipApiVersionCheck", "--loose", "--silent"),
        "--disableTelemetry",
    ]  # in memory: no --location (Azurite refuses both); its debug files, if any, in cwd
    with local_server(argv, port, "Azurite", cwd=tmp_path_factory.mktemp("azurite")) as url:
        yield url


@pytest.fixture
def azure_container(azurite_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new, empty container on the local Azurite, the environment pointing at it."""
    monkeypatch.setenv("AZURE_STORAGE_USE_EMULATOR", "true")
    monkeypatch.setenv("AZURITE_BLOB_STORAGE_URL", azurite_server)
    for var in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME"):
        monkeypatch.delenv(var, raising=False)
    from catalog import storage

    name = f"ivm-{uuid.uuid4().hex[:12]}"
    uri = f"abfss://{name}@{ACCOUNT}.dfs.core.windows.net"
    store = storage.backend(uri)
    assert isinstance(store, storage.AzureStorage)
    store._service.create_container(name)
    return uri


@pytest.fixture(params=["s3", "azure"])
def object_store(request: pytest.FixtureRequest) -> str:
    """A fresh bucket on S3 (moto) or container on Azure (Azurite), as its root URI; the
    test module imports both stores' fixtures."""
    name = "s3_bucket" if request.param == "s3" else "azure_container"
    return str(request.getfixturevalue(name))
