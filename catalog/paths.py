"""The warehouse layout, and the rule that nothing is written outside it.

::

    <warehouse>/
      tables/<db>/<name>/        managed base tables (Delta)
      views/<db>/<name>/         view tables (Delta, see catalog.view_table)
      _ivm/catalog.json          the catalog store (catalog.store); _ivm/catalog.lock its lock
      _ivm/checkpoints/<db>/<group>/  state checkpoints (catalog.checkpoint)
      _ivm/locks/<db>/<group>.lock    a refresh group's writer lock (catalog.locks)
      _ivm/status/<db>/<group>.json   a group's last refresh outcome (spark_exec.status)
      _ivm/spark-warehouse/      the local SparkSession's own warehouse (spark_exec.session)

The warehouse may be a local directory (a path or ``file://`` URI) or an object-store prefix
(``s3://bucket/prefix``, catalog.storage).  On an object store every layout location is an
:class:`~catalog.object_path.ObjectPath` (the ``pathlib`` surface the catalog uses, served by
the storage layer); what must stay local (the SparkSession's scratch warehouse) goes under
:meth:`Warehouse.local_cache_dir`.

Every path the catalog creates comes from :class:`Warehouse` and passes
:meth:`Warehouse.check_inside`, which resolves symlinks and ``..`` before comparing, so a
crafted name or a symlink cannot direct a write elsewhere (a local location is resolved once
per :class:`Warehouse`, i.e. per Session: a symlink planted later is seen by the next one).  External tables (registered by
location) live wherever the user put them; the catalog never creates or deletes them.

>>> wh = Warehouse("/tmp/wh")
>>> wh.table_path(parse_identifier("sales.orders")).as_posix()
'/tmp/wh/tables/sales/orders'
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from catalog import storage
from catalog.errors import InvalidPathError
from catalog.names import Identifier, parse_identifier
from catalog.object_path import ObjectPath

CACHE_ENV = "IVM_CACHE_DIR"
"""Local scratch root for object-store warehouses (default ``~/.cache/spark-ivm``)."""

KEEP_RESOLVED = 1024
"""Local paths :meth:`Warehouse.check_inside` remembers (resolved once per Session)."""

__all__ = ["Warehouse", "parse_identifier", "resolve_location"]


class Warehouse:
    """Paths inside one warehouse directory (created on demand)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        text = os.fspath(root).strip()
        if not text or "\x00" in text:
            raise InvalidPathError(text, "empty or contains NUL")
        try:
            location = storage.normalize(text)
        except storage.StorageError as exc:
            raise InvalidPathError(text, exc.reason) from None
        #: the warehouse is an object-store prefix (no ``flock``, no rename: see catalog.leases)
        self.remote = storage.is_object_store(location)
        # typed as Path: an ObjectPath offers the part of its surface the catalog uses
        self.root: Path = (
            ObjectPath(location)  # type: ignore[assignment]
            if self.remote
            else Path(location).resolve()
        )
        #: the engine's own files (catalog, locks, checkpoints), beside the tables
        self.internal_dir = self.root / "_ivm"
        self.catalog_file = self.internal_dir / "catalog.json"
        self.catalog_lock_file = self.internal_dir / "catalog.lock"
        #: the directory a local SparkSession keeps its own (unused) warehouse in (local
        #: scratch, :meth:`local_cache_dir`, for a warehouse on an object store)
        self.spark_warehouse_dir = self.local_cache_dir() / "spark-warehouse"
        self._checked: dict[str, Path] = {}  # check_inside's local results, by path text
        self._groups: dict[tuple[str, str], Path] = {}  # _group_path's, by kind and group

    def __repr__(self) -> str:
        return f"Warehouse({self.root.as_posix()!r})"

    def local_cache_dir(self) -> Path:
        """Local scratch space of this warehouse: the warehouse's ``_ivm`` itself when local;
        ``$IVM_CACHE_DIR`` (default ``~/.cache/spark-ivm``) ``/<hash of the URI>`` when it is
        on an object store."""
        if not self.remote:
            return self.internal_dir
        base = os.environ.get(CACHE_ENV) or os.path.join("~", ".cache", "spark-ivm")
        digest = hashlib.sha256(self.root.as_posix().encode()).hexdigest()[:16]
        return Path(base).expanduser().resolve() / digest

    # -- layout ---------------------------------------------------------------------------
    def table_path(self, ident: Identifier) -> Path:
        """Location of a managed base table."""
        return self.check_inside(self.root / "tables" / ident.database / ident.name)

    def view_path(self, ident: Identifier) -> Path:
        """Location of a view's table."""
        return self.check_inside(self.root / "views" / ident.database / ident.name)

    def group_lock_file(self, group: str) -> Path:
        """The writer lock file of a refresh group (``group`` is an identifier)."""
        return self._group_path("locks", group, ".lock")

    def group_status_file(self, group: str) -> Path:
        """The status record of a refresh group (``group`` is an identifier)."""
        return self._group_path("status", group, ".json")

    def checkpoint_dir(self, group: str) -> Path:
        """Directory of the state checkpoints of one dataflow (``group`` is an identifier)."""
        return self._group_path("checkpoints", group, "")

    def _group_path(self, kind: str, group: str, suffix: str) -> Path:
        """``_ivm/<kind>/<db>/<name><suffix>`` of ``group``, checked once (a refresh asks
        for its group's checkpoint directory seven times)."""
        key = (kind, group)
        kept = self._groups.get(key)
        if kept is None:
            ident = parse_identifier(group)
            kept = self.check_inside(
                self.internal_dir / kind / ident.database / f"{ident.name}{suffix}"
            )
            if len(self._groups) >= KEEP_RESOLVED:
                self._groups.clear()
            self._groups[key] = kept
        return kept

    def checkpoint_groups(self) -> list[str]:
        """The groups that have a checkpoint directory (names as :meth:`checkpoint_dir` takes)."""
        root = self.internal_dir / "checkpoints"
        if not root.exists():
            return []
        out = []
        for db in sorted(root.iterdir()):
            if db.is_dir():
                for d in sorted(db.iterdir()):
                    if d.is_dir():
                        out.append(d.name if db.name == "default" else f"{db.name}.{d.name}")
        return out

    # -- safety ---------------------------------------------------------------------------
    def contains(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` (after resolving symlinks and ``..``) lies inside the warehouse."""
        if storage.is_object_store(path) != self.remote:
            return False
        return self._inside(self._resolve(path))

    def _inside(self, resolved: Path) -> bool:
        return resolved == self.root or self.root in resolved.parents

    def _resolve(self, path: str | os.PathLike[str]) -> Path:
        if self.remote:
            text = os.fspath(path)
            if ".." in text.split("/"):
                raise InvalidPathError(text, "'..' in an object key")
            return ObjectPath(text)  # type: ignore[return-value]
        return Path(os.fspath(path)).expanduser().resolve()

    def relative(self, path: str | os.PathLike[str]) -> str:
        """``path`` (inside the warehouse) relative to its root, as stored in the catalog.

        >>> Warehouse("/tmp/wh").relative("/tmp/wh/views/default/v")
        'views/default/v'
        """
        return self.check_inside(path).relative_to(self.root).as_posix()

    def check_inside(self, path: str | os.PathLike[str]) -> Path:
        """Return ``path`` resolved, or raise :class:`InvalidPathError` if it escapes.

        A local path found inside is remembered by its text (:data:`KEEP_RESOLVED` of them):
        a refresh checks the same dozen layout locations each time, and resolving one costs
        an ``lstat`` per component.  A symlink planted inside the warehouse after this
        object resolved a location is therefore seen by a new :class:`Warehouse` (a new
        Session) only; names are checked every time."""
        text = os.fspath(path)
        kept = self._checked.get(text)
        if kept is not None:
            return kept
        if "\x00" in text:
            raise InvalidPathError(text, "contains NUL")
        resolved = (
            self._resolve(text) if storage.is_object_store(text) == self.remote else None
        )  # resolved once: symlinks are followed a component at a time (an lstat each)
        if resolved is None or not self._inside(resolved):
            raise InvalidPathError(text, f"outside the warehouse {self.root.as_posix()}")
        if not self.remote:
            if len(self._checked) >= KEEP_RESOLVED:
                self._checked.clear()
            self._checked[text] = resolved
        return resolved

    def ensure(self) -> None:
        """Create the warehouse's top-level directories (nothing to do on an object store)."""
        self.internal_dir.mkdir(parents=True, exist_ok=True)

    def join(self, stored: str) -> str:
        """The location of ``stored``, a path relative to the warehouse (as the catalog keeps
        them).

        >>> Warehouse("s3://b/wh").join("views/default/v")
        's3://b/wh/views/default/v'
        """
        return storage.join(self.root.as_posix(), stored)


def resolve_location(location: str | os.PathLike[str]) -> str:
    """Normalize a user-given table location to an absolute local path or an object URI.

    Accepts an absolute or relative path (relative to the current directory), a ``file:``
    URI, or an ``s3://`` (``s3a://``) URI, reached through catalog.storage with the
    ``AWS_*`` settings of the environment.

    >>> resolve_location("file:///data/t")
    '/data/t'
    >>> resolve_location("s3a://bucket/data/t/")
    's3://bucket/data/t'
    """
    text = os.fspath(location).strip()
    if not text or "\x00" in text:
        raise InvalidPathError(text, "empty or contains NUL")
    if storage.is_object_store(text):
        try:
            return storage.normalize(text)
        except storage.StorageError as exc:
            raise InvalidPathError(text, exc.reason) from None
    if "://" in text or text.startswith("file:"):
        parsed = urlparse(text)
        if parsed.scheme in storage.UNSUPPORTED_STORES:
            raise InvalidPathError(text, storage.UNSUPPORTED_STORES[parsed.scheme])
        if parsed.scheme != "file":
            raise InvalidPathError(
                text, f"unsupported scheme {parsed.scheme!r}; use a local path or s3://"
            )
        if parsed.netloc not in ("", "localhost"):
            raise InvalidPathError(text, "file URIs must not name a host")
        text = unquote(parsed.path)
    return Path(text).expanduser().resolve().as_posix()
