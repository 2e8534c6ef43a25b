"""One storage layer under the catalog: local directories and S3-compatible object stores.

A location is a local path (or ``file://`` URI) or an object URI ``s3://bucket/key``
(``s3a://`` is read as ``s3://``).  :func:`backend` picks the implementation of the
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
from typing import Protocol
from urllib.parse import unquote, urlparse

import pyarrow.fs as pfs

from catalog.durable import fsync_all, fsync_path
from catalog.errors import CatalogError

__all__ = [
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

OBJECT_SCHEMES = ("s3", "s3a")
_AZURE = (
    "Azure storage (abfss://, abfs://, wasbs://) is not supported: the storage layer has no "
    "Azure backend (its put-if-absent commits could not be tested without a local Azure "
    "server); use a local path or an S3-compatible object store (s3://)"
)
UNSUPPORTED_STORES = {
    "abfss": _AZURE,
    "abfs": _AZURE,
    "wasbs": _AZURE,
    "wasb": _AZURE,
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
    """Whether ``location`` names an object (``s3://...``) rather than a local path."""
    text = os.fspath(location)
    return "://" in text and urlparse(text).scheme in OBJECT_SCHEMES


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
            raise StorageError(text, "an object URI names a bucket: s3://<bucket>/<prefix>")
        return f"s3://{parsed.netloc}{parsed.path.rstrip('/')}"
    if "://" in text or text.startswith("file:"):
        parsed = urlparse(text)
        if parsed.scheme in UNSUPPORTED_STORES:
            raise StorageError(text, UNSUPPORTED_STORES[parsed.scheme])
        if parsed.scheme != "file":
            raise StorageError(
                text, f"unsupported scheme {parsed.scheme!r}; use a local path or s3://"
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
    parsed = urlparse(location)
    return parsed.netloc, parsed.path.lstrip("/")


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


_LOCAL = LocalStorage()
_s3: dict[S3Settings, S3Storage] = {}


def backend(location: str | os.PathLike[str]) -> Storage:
    """The storage that serves ``location``."""
    if not is_object_store(location):
        return _LOCAL
    settings = S3Settings.from_env()
    if settings not in _s3:
        _s3[settings] = S3Storage(settings)
    return _s3[settings]


def delta_storage_options(location: str | os.PathLike[str]) -> dict[str, str] | None:
    """deltalake's ``storage_options`` for ``location`` (``None`` for local paths)."""
    if not is_object_store(location):
        return None
    s = S3Settings.from_env()
    opts = {"AWS_REGION": s.region, "conditional_put": "etag"}
    if s.endpoint:
        opts["AWS_ENDPOINT_URL"] = s.endpoint
    if s.access_key and s.secret_key:
        opts.update(AWS_ACCESS_KEY_ID=s.access_key, AWS_SECRET_ACCESS_KEY=s.secret_key)
    if s.allow_http:
        opts["AWS_ALLOW_HTTP"] = "true"
    return opts
