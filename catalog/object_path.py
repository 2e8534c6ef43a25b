"""A path inside an object-store warehouse: the part of ``pathlib.Path`` the catalog uses,
served by the storage layer (catalog.storage).

A warehouse on ``s3://bucket/prefix`` (or Azure, ``abfss://container@account.../prefix``) (catalog.paths.Warehouse) hands out
:class:`ObjectPath` objects where a local warehouse hands out ``Path`` objects, so the code
that builds locations (``/``, ``name``, ``parent``, ``relative_to``) and reads or replaces
whole small files (``read_text``, ``write_text``, ``exists``, ``iterdir``, ``unlink``) serves
both.  What has no object-store meaning is explicit: directories are key prefixes
(``mkdir`` does nothing, ``is_dir`` is "some key lies under it"), a rename does not exist
(writers that need one branch on :func:`is_object_path`, e.g. catalog.checkpoint), and
``os.fspath`` gives the URI, so a local-only call (``open``, ``os.replace``) fails loudly
instead of writing somewhere local.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from catalog import storage

__all__ = ["ObjectPath", "is_object_path", "remove_tree"]


class ObjectPath:
    """``s3://bucket/key`` (or an Azure URI) with the ``pathlib`` surface the warehouse layout uses."""

    __slots__ = ("_uri",)

    def __init__(self, uri: str | os.PathLike[str]) -> None:
        self._uri = storage.normalize(uri)
        if not storage.is_object_store(self._uri):
            raise storage.StorageError(self._uri, "not an object-store URI")

    # -- names ------------------------------------------------------------------------------
    def __fspath__(self) -> str:
        return self._uri

    def __str__(self) -> str:
        return self._uri

    def __repr__(self) -> str:
        return f"ObjectPath({self._uri!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectPath) and other._uri == self._uri

    def __hash__(self) -> int:
        return hash(self._uri)

    def __lt__(self, other: ObjectPath) -> bool:
        return self._uri < other._uri

    def __truediv__(self, part: str | os.PathLike[str]) -> ObjectPath:
        text = os.fspath(part)
        if ".." in text.split("/"):
            raise storage.StorageError(f"{self._uri}/{text}", "'..' in an object key")
        return ObjectPath(storage.join(self._uri, text))

    def as_posix(self) -> str:
        return self._uri

    @property
    def name(self) -> str:
        key = self._uri[len(storage.root(self._uri)) :]
        return key.rsplit("/", 1)[1] if key else ""

    @property
    def parent(self) -> ObjectPath:
        top = storage.root(self._uri)
        key = self._uri[len(top) :]
        return ObjectPath(top + key.rsplit("/", 1)[0]) if key else self

    @property
    def parents(self) -> list[ObjectPath]:
        out: list[ObjectPath] = []
        p = self
        while p.parent != p:
            p = p.parent
            out.append(p)
        return out

    def with_name(self, name: str) -> ObjectPath:
        return self.parent / name

    def relative_to(self, other: ObjectPath) -> _Relative:
        if self == other:
            return _Relative("")
        prefix = other._uri + "/"
        if not self._uri.startswith(prefix):
            raise ValueError(f"{self._uri} is not inside {other._uri}")
        return _Relative(self._uri[len(prefix) :])

    def resolve(self) -> ObjectPath:
        return self

    expanduser = resolve

    # -- contents ---------------------------------------------------------------------------
    def _store(self) -> storage.Storage:
        return storage.backend(self._uri)

    def exists(self) -> bool:
        return self.is_file() or self.is_dir()

    def is_file(self) -> bool:
        return self._store().exists(self._uri)

    def is_dir(self) -> bool:
        return bool(self._store().listdir(self._uri))

    def mkdir(self, mode: int = 0o777, parents: bool = False, exist_ok: bool = False) -> None:
        """Nothing to do: a prefix exists once a key lies under it."""

    def iterdir(self) -> Iterator[ObjectPath]:
        for name in sorted(self._store().listdir(self._uri)):
            yield self / name

    def glob(self, pattern: str) -> Iterator[ObjectPath]:
        import fnmatch

        for child in self.iterdir():
            if fnmatch.fnmatch(child.name, pattern):
                yield child

    def read_bytes(self) -> bytes:
        return self._store().read_bytes(self._uri)

    def read_text(self, encoding: str | None = "utf-8", errors: str | None = None) -> str:
        return self.read_bytes().decode(encoding or "utf-8", errors or "strict")

    def write_bytes(self, data: bytes) -> int:
        """Create or replace the whole object (atomic: readers see old or new)."""
        self._store().write_bytes(self._uri, data)
        return len(data)

    def write_text(self, data: str, encoding: str | None = "utf-8", **_: Any) -> int:
        return self.write_bytes(data.encode(encoding or "utf-8"))

    def unlink(self, missing_ok: bool = False) -> None:
        self._store().delete(self._uri)


class _Relative(str):
    """A key relative to a prefix (what ``relative_to`` gives), with ``as_posix``."""

    def as_posix(self) -> str:
        return str(self)


def is_object_path(path: object) -> bool:
    return isinstance(path, ObjectPath)


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Delete a directory tree (locally) or every object under a prefix; missing is fine."""
    if not isinstance(path, ObjectPath):
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        return
    storage.backend(path).delete_tree(os.fspath(path))
