"""One storage layer under the catalog: local directories, S3-compatible object stores and
Azure Blob Storage.

A location is a local path (or ``file://`` URI), an object URI ``s3://bucket/key``
(``s3a://`` is read as ``s3://``), or an Azure URI in either of delta-rs's spellings,
``abfss://container@account.dfs.core.windows.net/key`` (``abfs://`` is read as ``abfss://``)
or ``az://container/key`` (the account from the environment).  :func:`backend` picks the implementation of the
:class:`Storage` protocol for a location; callers keep passing location strings and use
:func:`join` (never ``os.path``) to build them, so one code path serves both.

Object-store settings come from the environment, the variables delta-rs and the AWS SDKs read
themselves: ``AWS_ENDPOINT_URL`` (e.g. a local S3-compatible server), ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION`` (default ``us-east-1``), ``AWS_ALLOW_HTTP``.
:func:`delta_storage_options` turns them into deltalake's ``storage_options``, with
``conditional_put=etag`` so that delta-rs commits with put-if-absent too.

Put-if-absent (Delta PROTOCOL.md, "Delta Log Entries": a log entry must be created
atomically and only once) is :meth:`Storage.put_if_absent`: a hard link of a finished file
locally; ``PutObject`` with ``If-None-Match: *`` on S3 (conditional writes: AWS since
2024-08, MinIO, moto).  Both return ``False`` when the object already exists.

Azure settings are the ones delta-rs reads: ``AZURE_STORAGE_CONNECTION_STRING``, or
``AZURE_STORAGE_ACCOUNT_NAME`` and ``AZURE_STORAGE_ACCOUNT_KEY``, or
``AZURE_STORAGE_USE_EMULATOR=true`` (Azurite's well-known account, its blob endpoint from
``AZURITE_BLOB_STORAGE_URL``, default ``http://127.0.0.1:10000``).  Put-if-absent is a blob
upload with ``If-None-Match: *``; compare-and-swap an upload with ``If-Match: <etag>``.

A lock on an object store is a lease built on put-if-absent (catalog.leases).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

import pyarrow.fs as pfs

from catalog.durable import fsync_all, fsync_path
from catalog.errors import CatalogError

__all__ = [
    "AzureStorage",
    "LocalStorage",
    "S3Storage",
    "Storage",
    "StorageError",
    "backend",
    "delta_storage_options",
    "is_object_store",
    "join",
    "normalize",
]

S3_SCHEMES = ("s3", "s3a")
AZURE_SCHEMES = ("abfss", "abfs", "az")
OBJECT_SCHEMES = S3_SCHEMES + AZURE_SCHEMES
_WASB = (
    "the legacy Azure WASB driver (wasbs://) is not supported; name the same container as "
    "abfss://<container>@<account>.dfs.core.windows.net/<path> or az://<container>/<path>"
)
UNSUPPORTED_STORES = {
    "wasbs": _WASB,
    "wasb": _WASB,
    "gs": "Google Cloud Storage (gs://) is not supported; use a local path or s3://",
}
"""Object stores refused by name, with what to use instead (docs/configuration.md)."""


class StorageError(CatalogError):
    """A location the storage layer cannot serve (unknown scheme, missing client library)."""

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"storage location {location!r}: {reason}")
        self.location = location
        self.reason = reason


def is_object_store(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names an object (``s3://...``, Azure) rather than a local path."""
    text = os.fspath(location)
    return "://" in text and urlparse(text).scheme in OBJECT_SCHEMES


def is_azure(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` is on Azure Blob Storage (``abfss://``, ``abfs://``, ``az://``)."""
    text = os.fspath(location)
    return "://" in text and urlparse(text).scheme in AZURE_SCHEMES


def root(location: str) -> str:
    """The store-and-container part of a normalized object URI (``scheme://netloc``).

    >>> root("abfss://c@acct.dfs.core.windows.net/wh/v")
    'abfss://c@acct.dfs.core.windows.net'
    """
    parsed = urlparse(location)
    return f"{parsed.scheme}://{parsed.netloc}"


def normalize(location: str | os.PathLike[str]) -> str:
    """A location in canonical form: an absolute local path, or ``s3://bucket/key`` without
    a trailing slash.

    >>> normalize("s3a://b/wh/")
    's3://b/wh'
    >>> normalize("file:///tmp/wh")
    '/tmp/wh'
    """
    text = os.fspath(location).strip()
    if is_object_store(text):
        parsed = urlparse(text)
        if not parsed.netloc:
            raise StorageError(
                text,
                "an object URI names a bucket or container: s3://<bucket>/<prefix>, "
                "abfss://<container>@<account>.dfs.core.windows.net/<prefix>, "
                "az://<container>/<prefix>",
            )
        scheme = "s3" if parsed.scheme in S3_SCHEMES else parsed.scheme
        scheme = "abfss" if scheme == "abfs" else scheme
        if scheme == "abfss" and "@" not in parsed.netloc:
            raise StorageError(
                text, "an abfss:// URI names its account: abfss://<container>@<account>.dfs..."
            )
        return f"{scheme}://{parsed.netloc}{parsed.path.rstrip('/')}"
    if "://" in text or text.startswith("file:"):
        parsed = urlparse(text)
        if parsed.scheme in UNSUPPORTED_STORES:
            raise StorageError(text, UNSUPPORTED_STORES[parsed.scheme])
        if parsed.scheme != "file":
            raise StorageError(
                text,
                f"unsupported scheme {parsed.scheme!r}; use a local path, s3:// or abfss://",
            )
        text = unquote(parsed.path)
    return os.path.abspath(os.path.expanduser(text))


def join(location: str, *parts: str) -> str:
    """``location`` / ``parts`` (``/``-separated on object stores, ``os.path`` locally).

    >>> join("s3://b/wh", "views", "default/v")
    's3://b/wh/views/default/v'
    """
    if is_object_store(location):
        return "/".join([location.rstrip("/"), *(p.strip("/") for p in parts if p)])
    return os.path.join(location, *parts)


class Storage(Protocol):
    """What the catalog needs from where its files live."""

    def read_bytes(self, location: str) -> bytes: ...

    def write_bytes(self, location: str, data: bytes) -> None:
        """Create or replace a whole object (readers see the old or the new one)."""

    def write_pending(self, location: str, data: bytes) -> None:
        """Create an object that a later :meth:`put_if_absent` makes durable (its ``durable``
        argument): locally no ``fsync`` here, so one barrier covers a commit's files."""

    def put_if_absent(
        self, location: str, data: bytes, durable: Sequence[str] = (), *, sync_entry: bool = True
    ) -> bool:
        """Create the object only if none exists; ``False`` (nothing written) if one does.

        ``durable``: objects written with :meth:`write_pending` for this one, durable before
        it appears (object stores: every completed write already is).  ``sync_entry=False``:
        locally, the new entry's name is left for the caller to make durable (an ``fsync``
        of its directory, e.g. joined with a later barrier)."""

    def exists(self, location: str) -> bool: ...

    def listdir(self, location: str) -> list[str]:
        """Names directly under ``location`` (empty when there is nothing)."""

    def delete(self, location: str) -> None:
        """Remove an object (no error if it is gone)."""

    def delete_tree(self, location: str) -> None:
        """Remove a directory tree / every object under a prefix (no error if none)."""

    def version_tag(self, location: str) -> str | None:
        """An opaque tag of the object's current version (``None`` if absent), for
        :meth:`replace_if`."""

    def replace_if(self, location: str, data: bytes, tag: str | None) -> bool:
        """Replace the object only if its version is still ``tag`` (``None``: only if it
        does not exist); ``False`` (nothing written) otherwise.  Object stores only: a local
        writer holds ``flock`` instead (:class:`LocalStorage` raises)."""

    def stamp(self, location: str) -> tuple[int, int, int] | None:
        """(modification time ns, size, identity) of an object, ``None`` if absent: a cheap
        check that it is still the same object (identity: the inode locally, a checksum of the
        ETag on S3, whose modification times have whole seconds)."""

    def arrow(self, location: str) -> tuple[pfs.FileSystem, str]:
        """A pyarrow filesystem and the path in it, for Parquet reads and writes."""


class LocalStorage:
    """A local file system; writes are made durable with ``fsync``."""

    def read_bytes(self, location: str) -> bytes:
        with open(location, "rb") as f:
            return f.read()

    def _write_tmp(self, location: str, data: bytes) -> str:
        """Write ``data`` to a temp file beside ``location`` (not yet durable)."""
        tmp = os.path.join(
            os.path.dirname(location), f".{os.path.basename(location)}.{uuid.uuid4().hex}.tmp"
        )
        self.write_pending(tmp, data)
        return tmp

    def write_pending(self, location: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(location) or ".", exist_ok=True)
        with open(location, "wb") as f:
            f.write(data)

    def _sync_dir(self, location: str) -> None:
        fsync_path(os.path.dirname(location) or ".")

    def write_bytes(self, location: str, data: bytes) -> None:
        tmp = self._write_tmp(location, data)
        fsync_path(tmp)
        os.replace(tmp, location)
        self._sync_dir(location)

    def put_if_absent(
        self, location: str, data: bytes, durable: Sequence[str] = (), *, sync_entry: bool = True
    ) -> bool:
        tmp = self._write_tmp(location, data)
        # one barrier (catalog.durable): the entry's temp file, the files it names and their
        # directories' entries, before the entry appears
        fsync_all([tmp, *durable, *{os.path.dirname(d) for d in durable}])
        try:
            os.link(tmp, location)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        if sync_entry:
            self._sync_dir(location)
        return True

    def exists(self, location: str) -> bool:
        return os.path.exists(location)

    def listdir(self, location: str) -> list[str]:
        try:
            return os.listdir(location)
        except FileNotFoundError:
            return []

    def delete(self, location: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(location)

    def delete_tree(self, location: str) -> None:
        shutil.rmtree(location, ignore_errors=True)

    def version_tag(self, location: str) -> str | None:
        st = self.stamp(location)
        return None if st is None else ":".join(map(str, st))

    def replace_if(self, location: str, data: bytes, tag: str | None) -> bool:
        raise StorageError(location, "a conditional replace needs an object store")

    def stamp(self, location: str) -> tuple[int, int, int] | None:
        try:
            st = os.stat(location)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def arrow(self, location: str) -> tuple[pfs.FileSystem, str]:
        return pfs.LocalFileSystem(), location


@dataclass(frozen=True)
class S3Settings:
    """Where and as whom to reach an S3-compatible store (from the environment)."""

    endpoint: str | None
    access_key: str | None
    secret_key: str | None
    region: str
    allow_http: bool

    @classmethod
    def from_env(cls) -> S3Settings:
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        allow = os.environ.get("AWS_ALLOW_HTTP", "").lower() in ("1", "true", "yes")
        return cls(
            endpoint=endpoint or None,
            access_key=os.environ.get("AWS_ACCESS_KEY_ID"),
            secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY"),
            region=os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1",
            allow_http=allow or bool(endpoint and endpoint.startswith("http://")),
        )


def _split(location: str) -> tuple[str, str]:
    """(bucket or container, key) of an object URI."""
    parsed = urlparse(location)
    return parsed.netloc.split("@", 1)[0], parsed.path.lstrip("/")


class S3Storage:
    """An S3-compatible object store: pyarrow's S3 filesystem for data, boto3 for the
    conditional writes pyarrow lacks."""

    def __init__(self, settings: S3Settings) -> None:
        self.settings = settings
        try:
            import boto3
        except ImportError as exc:  # pragma: no cover - boto3 comes with the s3 extra
            raise StorageError(
                "s3://", "boto3 is not installed; `pip install spark-ivm[s3]`"
            ) from exc
        self._client = boto3.client(
            "s3",
            endpoint_url=settings.endpoint,
            aws_access_key_id=settings.access_key,
            aws_secret_access_key=settings.secret_key,
            region_name=settings.region,
        )
        parsed = urlparse(settings.endpoint) if settings.endpoint else None
        self._fs = pfs.S3FileSystem(
            access_key=settings.access_key,
            secret_key=settings.secret_key,
            region=settings.region,
            endpoint_override=parsed.netloc if parsed else None,
            scheme=parsed.scheme if parsed else "https",
        )

    def _missing(self, exc: Exception) -> bool:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
        return str(code) in ("404", "NoSuchKey", "NotFound")

    def read_bytes(self, location: str) -> bytes:
        bucket, key = _split(location)
        try:
            body = self._client.get_object(Bucket=bucket, Key=key)["Body"]
        except Exception as exc:
            if self._missing(exc):
                raise FileNotFoundError(location) from None
            raise
        return bytes(body.read())

    def write_bytes(self, location: str, data: bytes) -> None:
        bucket, key = _split(location)
        self._client.put_object(Bucket=bucket, Key=key, Body=data)

    write_pending = write_bytes

    def put_if_absent(
        self, location: str, data: bytes, durable: Sequence[str] = (), *, sync_entry: bool = True
    ) -> bool:
        bucket, key = _split(location)
        try:
            self._client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        except Exception as exc:
            status = getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status in (409, 412):  # 412: exists; 409: a concurrent conditional write won
                return False
            raise
        return True

    def exists(self, location: str) -> bool:
        return self.stamp(location) is not None

    def version_tag(self, location: str) -> str | None:
        bucket, key = _split(location)
        try:
            return str(self._client.head_object(Bucket=bucket, Key=key)["ETag"])
        except Exception as exc:
            if self._missing(exc):
                return None
            raise

    def replace_if(self, location: str, data: bytes, tag: str | None) -> bool:
        if tag is None:
            return self.put_if_absent(location, data)
        bucket, key = _split(location)
        try:  # conditional writes: If-Match (AWS since 2024-11, MinIO, moto)
            self._client.put_object(Bucket=bucket, Key=key, Body=data, IfMatch=tag)
        except Exception as exc:
            status = getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status in (404, 409, 412):  # changed, gone, or a concurrent write won
                return False
            raise
        return True

    def listdir(self, location: str) -> list[str]:
        bucket, key = _split(location)
        prefix = f"{key.rstrip('/')}/" if key else ""
        names: list[str] = []
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix, Delimiter="/"
        )
        for page in pages:
            names += [o["Key"][len(prefix) :] for o in page.get("Contents", [])]
            names += [
                p["Prefix"][len(prefix) :].rstrip("/") for p in page.get("CommonPrefixes", [])
            ]
        return names

    def delete(self, location: str) -> None:
        bucket, key = _split(location)
        self._client.delete_object(Bucket=bucket, Key=key)

    def delete_tree(self, location: str) -> None:
        bucket, key = _split(location)
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=f"{key.rstrip('/')}/"
        )
        for page in pages:
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                self._client.delete_objects(Bucket=bucket, Delete={"Objects": keys})

    def stamp(self, location: str) -> tuple[int, int, int] | None:
        bucket, key = _split(location)
        try:
            head = self._client.head_object(Bucket=bucket, Key=key)
        except Exception as exc:
            if self._missing(exc):
                return None
            raise
        return (
            int(head["LastModified"].timestamp() * 1e9),
            int(head["ContentLength"]),
            zlib.crc32(str(head.get("ETag", "")).encode()),
        )

    def arrow(self, location: str) -> tuple[pfs.FileSystem, str]:
        bucket, key = _split(location)
        return self._fs, f"{bucket}/{key}"


_EMULATOR_ACCOUNT = "devstoreaccount1"
_EMULATOR_KEY = (  # Azurite's published development key, not a secret
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


@dataclass(frozen=True)
class AzureSettings:
    """Where and as whom to reach Azure Blob Storage (from the environment)."""

    account: str | None
    key: str | None
    connection_string: str | None
    emulator_url: str | None

    @classmethod
    def from_env(cls) -> AzureSettings:
        env = os.environ.get
        emulator = env("AZURE_STORAGE_USE_EMULATOR", "").lower() in ("1", "true", "yes")
        return cls(
            account=_EMULATOR_ACCOUNT if emulator else env("AZURE_STORAGE_ACCOUNT_NAME"),
            key=_EMULATOR_KEY if emulator else env("AZURE_STORAGE_ACCOUNT_KEY"),
            connection_string=None if emulator else env("AZURE_STORAGE_CONNECTION_STRING"),
            emulator_url=(env("AZURITE_BLOB_STORAGE_URL") or "http://127.0.0.1:10000").rstrip("/")
            if emulator
            else None,
        )

    def blob_url(self) -> str:
        if self.emulator_url:
            return f"{self.emulator_url}/{self.account}"
        return f"https://{self.account}.blob.core.windows.net"


class AzureStorage:
    """Azure Blob Storage: the ``azure-storage-blob`` SDK for every object operation (its
    conditional uploads give put-if-absent and compare-and-swap), pyarrow's Azure file
    system for Parquet data."""

    def __init__(self, settings: AzureSettings) -> None:
        self.settings = settings
        try:
            from azure.storage.blob import BlobServiceClient
        except ImportError as exc:  # pragma: no cover - the SDK comes with the azure extra
            raise StorageError(
                "abfss://", "azure-storage-blob is not installed; `pip install spark-ivm[azure]`"
            ) from exc
        if settings.connection_string:
            self._service = BlobServiceClient.from_connection_string(settings.connection_string)
        elif settings.account:
            self._service = BlobServiceClient(
                settings.blob_url(),
                credential={"account_name": settings.account, "account_key": settings.key}
                if settings.key
                else None,
            )
        else:
            raise StorageError(
                "abfss://",
                "no Azure account: set AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY, "
                "AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_USE_EMULATOR=true",
            )
        account = str(self._service.account_name)
        url = urlparse(settings.blob_url()) if settings.emulator_url else None
        self._fs = pfs.AzureFileSystem(
            account_name=account,
            account_key=settings.key
            or _connection_parts(settings.connection_string).get("AccountKey"),
            blob_storage_authority=url.netloc if url else None,
            dfs_storage_authority=url.netloc if url else None,
            blob_storage_scheme=url.scheme if url else None,
            dfs_storage_scheme=url.scheme if url else None,
        )

    def _blob(self, location: str) -> Any:
        container, key = _split(location)
        return self._service.get_blob_client(container, key)

    def read_bytes(self, location: str) -> bytes:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            return bytes(self._blob(location).download_blob().readall())
        except ResourceNotFoundError:
            raise FileNotFoundError(location) from None

    def write_bytes(self, location: str, data: bytes) -> None:
        self._blob(location).upload_blob(data, overwrite=True)

    write_pending = write_bytes

    def _conditional(self, location: str, data: bytes, **condition: Any) -> bool:
        """Upload ``data`` under ``condition``; ``False`` if the condition failed."""
        from azure.core.exceptions import HttpResponseError

        try:
            self._blob(location).upload_blob(data, overwrite=True, **condition)
        except HttpResponseError as exc:
            if exc.status_code in (404, 409, 412):  # changed, gone, or a concurrent write won
                return False
            raise
        return True

    def put_if_absent(
        self, location: str, data: bytes, durable: Sequence[str] = (), *, sync_entry: bool = True
    ) -> bool:
        from azure.core import MatchConditions  # If-None-Match: *

        return self._conditional(location, data, match_condition=MatchConditions.IfMissing)

    def exists(self, location: str) -> bool:
        return self.stamp(location) is not None

    def _properties(self, location: str) -> Any:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            return self._blob(location).get_blob_properties()
        except ResourceNotFoundError:
            return None

    def version_tag(self, location: str) -> str | None:
        props = self._properties(location)
        return None if props is None else str(props.etag)

    def replace_if(self, location: str, data: bytes, tag: str | None) -> bool:
        if tag is None:
            return self.put_if_absent(location, data)
        from azure.core import MatchConditions  # If-Match: <etag>

        return self._conditional(
            location, data, etag=tag, match_condition=MatchConditions.IfNotModified
        )

    def listdir(self, location: str) -> list[str]:
        container, key = _split(location)
        prefix = f"{key.rstrip('/')}/" if key else ""
        client = self._service.get_container_client(container)
        return [
            str(item.name)[len(prefix) :].rstrip("/")
            for item in client.walk_blobs(name_starts_with=prefix, delimiter="/")
        ]

    def delete(self, location: str) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        with contextlib.suppress(ResourceNotFoundError):
            self._blob(location).delete_blob()

    def delete_tree(self, location: str) -> None:
        container, key = _split(location)
        client = self._service.get_container_client(container)
        names = [b.name for b in client.list_blobs(name_starts_with=f"{key.rstrip('/')}/")]
        for i in range(0, len(names), 256):  # a batch request takes at most 256 deletes
            client.delete_blobs(*names[i : i + 256])

    def stamp(self, location: str) -> tuple[int, int, int] | None:
        props = self._properties(location)
        if props is None:
            return None
        return (
            int(props.last_modified.timestamp() * 1e9),
            int(props.size),
            zlib.crc32(str(props.etag).encode()),
        )

    def arrow(self, location: str) -> tuple[pfs.FileSystem, str]:
        container, key = _split(location)
        return self._fs, f"{container}/{key}"


def _connection_parts(connection_string: str | None) -> dict[str, str]:
    """The ``Name=value`` fields of an Azure connection string (``AccountName``, ...)."""
    fields = (p.partition("=") for p in (connection_string or "").split(";"))
    return {name.strip(): value.strip() for name, _, value in fields if name.strip()}


_LOCAL = LocalStorage()
_s3: dict[S3Settings, S3Storage] = {}
_azure: dict[AzureSettings, AzureStorage] = {}


def backend(location: str | os.PathLike[str]) -> Storage:
    """The storage that serves ``location``."""
    if not is_object_store(location):
        return _LOCAL
    if is_azure(location):
        az = AzureSettings.from_env()
        if az not in _azure:
            _azure[az] = AzureStorage(az)
        return _azure[az]
    settings = S3Settings.from_env()
    if settings not in _s3:
        _s3[settings] = S3Storage(settings)
    return _s3[settings]


def delta_storage_options(location: str | os.PathLike[str]) -> dict[str, str] | None:
    """deltalake's ``storage_options`` for ``location`` (``None`` for local paths)."""
    if not is_object_store(location):
        return None
    if is_azure(location):
        return _azure_options(AzureSettings.from_env())
    s = S3Settings.from_env()
    opts = {"AWS_REGION": s.region, "conditional_put": "etag"}
    if s.endpoint:
        opts["AWS_ENDPOINT_URL"] = s.endpoint
    if s.access_key and s.secret_key:
        opts.update(AWS_ACCESS_KEY_ID=s.access_key, AWS_SECRET_ACCESS_KEY=s.secret_key)
    if s.allow_http:
        opts["AWS_ALLOW_HTTP"] = "true"
    return opts


def _azure_options(s: AzureSettings) -> dict[str, str]:
    """deltalake's ``storage_options`` for Azure (its commits are put-if-absent natively)."""
    if s.emulator_url:
        return {"azure_storage_use_emulator": "true", "azure_storage_allow_http": "true"}
    opts: dict[str, str] = {}
    parts = _connection_parts(s.connection_string)
    if "AccountName" in parts:
        opts["azure_storage_account_name"] = parts["AccountName"]
    if "AccountKey" in parts:
        opts["azure_storage_account_key"] = parts["AccountKey"]
    if s.account:
        opts["azure_storage_account_name"] = s.account
    if s.key:
        opts["azure_storage_account_key"] = s.key
    return opts
