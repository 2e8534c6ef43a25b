"""The catalog store: which tables and views exist, persisted in the warehouse.

One JSON document, ``<warehouse>/_ivm/catalog.json``, holds every entry.  Each change takes an
exclusive lock (``fcntl.flock`` on ``_ivm/catalog.lock``), re-reads the document, applies the
change, and writes it back atomically (temp file, fsync, ``os.replace``), so concurrent
processes never lose each other's changes and a crash leaves the old or the new document,
never a torn one.  On an object store the lock is a lease (catalog.leases) and the document
is replaced with ``If-Match`` on the version read under it (compare-and-swap): a writer whose
lease expired during a stall and was taken over gets :class:`CatalogError` instead of
overwriting its successor's change.  Readers re-read the document when it changed on disk, so
a new process (or another one) sees every committed change.

Tables and views share one namespace, as in Spark.

Paths are stored **relative to the warehouse** (format 2) for everything inside it — managed
tables and every view — so a warehouse copied or moved elsewhere refreshes on its own and
never writes into the original.  External tables (registered by location, outside the
warehouse) keep their absolute location: that is the user's choice.  A view or managed table
whose stored location escapes the warehouse is refused (:class:`InvalidPathError`).  Format-1
catalogs (absolute paths everywhere) are read too: a managed table's or view's location is
re-derived from its name in *this* warehouse's layout, so an old copied warehouse is migrated
on load (and written in format 2 by the next change).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, get_args

import pyarrow as pa

from catalog import leases, storage
from catalog.checkpoint import write_json_atomic
from catalog.dtypes import describe_schema, schema_from_text, schema_to_text
from catalog.errors import (
    CatalogError,
    DependencyError,
    InvalidPathError,
    NameClashError,
    UnknownTableError,
    UnknownViewError,
)
from catalog.locks import timeout_from_env
from catalog.names import Identifier, parse_identifier
from catalog.paths import Warehouse
from catalog.view_options import ViewOptions

FORMAT = 2
READABLE_FORMATS = (1, 2)
ViewKind = Literal["sql", "datalog"]
"""The names of the view languages (catalog.pipeline.languages holds one object per name)."""


@dataclass(frozen=True)
class TableEntry:
    """A base table: managed (created in the warehouse) or external (registered location)."""

    ident: Identifier
    path: str
    managed: bool
    schema: pa.Schema
    created_ms: int = 0

    kind = "table"

    @property
    def name(self) -> str:
        return str(self.ident)


@dataclass(frozen=True)
class ViewEntry:
    """A materialized view: its definition, inputs, table, and checkpoint group."""

    ident: Identifier
    definition: str
    language: ViewKind
    dependencies: tuple[Identifier, ...]
    path: str
    schema: pa.Schema
    group: str
    created_ms: int = 0
    options: ViewOptions = dataclasses.field(default_factory=ViewOptions)

    kind = "materialized view"

    def __post_init__(self) -> None:
        if self.language not in get_args(ViewKind):
            known = " or ".join(map(repr, get_args(ViewKind)))
            raise CatalogError(f"view {self.ident}: language must be {known}")
        if self.ident in self.dependencies:
            raise CatalogError(f"view {self.ident} cannot depend on itself")

    @property
    def name(self) -> str:
        return str(self.ident)


Entry = TableEntry | ViewEntry


def _encode(e: Entry, wh: Warehouse) -> dict[str, Any]:
    base = {
        "path": wh.relative(e.path) if wh.contains(e.path) else e.path,
        "schema": schema_to_text(e.schema),
        "columns": describe_schema(e.schema),
        "created_ms": e.created_ms,
    }
    if isinstance(e, TableEntry):
        return {**base, "managed": e.managed}
    return {
        **base,
        "definition": e.definition,
        "language": e.language,
        "dependencies": [str(d) for d in e.dependencies],
        "group": e.group,
        **({"options": e.options.to_json()} if e.options.to_json() else {}),
    }


def _location(
    wh: Warehouse, ident: Identifier, stored: str, fmt: int, *, kind: str, inside: bool
) -> str:
    """The absolute location of an entry stored as ``stored`` (see the module docstring)."""
    if fmt == 1 and inside:
        layout = wh.view_path(ident) if kind == "materialized view" else wh.table_path(ident)
        return layout.as_posix()
    if storage.is_object_store(stored) and not wh.remote:  # an external table there
        return stored
    if wh.remote:
        path = stored if "://" in stored or stored.startswith("/") else wh.join(stored)
    else:
        path = stored if os.path.isabs(stored) else (wh.root / stored).as_posix()
    if inside and not wh.contains(path):
        raise InvalidPathError(
            stored,
            f"the {kind} {ident} must live inside the warehouse {wh.root.as_posix()}; "
            f"fix its entry in {wh.catalog_file.as_posix()} or drop and recreate it",
        )
    return path if wh.remote else os.path.normpath(path)


def _decode_table(name: str, d: dict[str, Any], wh: Warehouse, fmt: int) -> TableEntry:
    ident = parse_identifier(name)
    managed = bool(d["managed"])
    return TableEntry(
        ident,
        _location(wh, ident, d["path"], fmt, kind="managed table", inside=managed),
        managed,
        schema_from_text(d["schema"]),
        int(d.get("created_ms", 0)),
    )


def _decode_view(name: str, d: dict[str, Any], wh: Warehouse, fmt: int) -> ViewEntry:
    ident = parse_identifier(name)
    return ViewEntry(
        ident,
        d["definition"],
        d["language"],
        tuple(parse_identifier(x) for x in d["dependencies"]),
        _location(wh, ident, d["path"], fmt, kind="materialized view", inside=True),
        schema_from_text(d["schema"]),
        d["group"],
        int(d.get("created_ms", 0)),
        ViewOptions.from_json(d.get("options")),
    )


class CatalogStore:
    """Tables and views of one warehouse."""

    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse = warehouse
        self._stamp: tuple[int, ...] | None = None
        self._tables: dict[str, TableEntry] = {}
        self._views: dict[str, ViewEntry] = {}

    # -- reading --------------------------------------------------------------------------
    def _load(self) -> None:
        f = self.warehouse.catalog_file
        seen = storage.backend(f).stamp(f.as_posix())
        if seen is None:
            self._stamp, self._tables, self._views = None, {}, {}
            return
        stamp = seen[:2] if not self.warehouse.remote else seen
        if stamp == self._stamp:
            return
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CatalogError(f"catalog {f} is unreadable: {exc}") from exc
        fmt = doc.get("format")
        if fmt not in READABLE_FORMATS:
            raise CatalogError(f"catalog {f} has unknown format {fmt!r}")
        wh = self.warehouse
        self._tables = {k: _decode_table(k, v, wh, fmt) for k, v in doc["tables"].items()}
        self._views = {k: _decode_view(k, v, wh, fmt) for k, v in doc["views"].items()}
        self._stamp = stamp

    def tables(self) -> tuple[TableEntry, ...]:
        self._load()
        return tuple(self._tables[k] for k in sorted(self._tables))

    def views(self) -> tuple[ViewEntry, ...]:
        self._load()
        return tuple(self._views[k] for k in sorted(self._views))

    def names(self) -> tuple[str, ...]:
        self._load()
        return tuple(sorted([*self._tables, *self._views]))

    def find(self, name: str | Identifier) -> Entry | None:
        key = str(parse_identifier(name))
        self._load()
        return self._tables.get(key) or self._views.get(key)

    def lookup(self, name: str | Identifier) -> Entry:
        """The table or view called ``name``; :class:`UnknownTableError` if none."""
        e = self.find(name)
        if e is None:
            raise UnknownTableError(str(name), known=self.names())
        return e

    def table(self, name: str | Identifier) -> TableEntry:
        e = self.find(name)
        if not isinstance(e, TableEntry):
            raise UnknownTableError(
                str(name), known=tuple(t.name for t in self.tables()), kind="table"
            )
        return e

    def view(self, name: str | Identifier) -> ViewEntry:
        e = self.find(name)
        if not isinstance(e, ViewEntry):
            raise UnknownViewError(str(name), known=tuple(v.name for v in self.views()))
        return e

    def dependents(self, name: str | Identifier) -> tuple[str, ...]:
        """Views that read ``name`` directly."""
        ident = parse_identifier(name)
        return tuple(v.name for v in self.views() if ident in v.dependencies)

    # -- writing --------------------------------------------------------------------------
    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """The catalog's lock: ``flock`` locally, a lease on an object store."""
        self.warehouse.ensure()
        lock = self.warehouse.catalog_lock_file
        if self.warehouse.remote:

            def busy(info: dict[str, Any]) -> BaseException:
                return CatalogError(
                    f"the catalog {self.warehouse.catalog_file} is locked by another process "
                    f"({info.get('owner')}); retry, or wait for its lease to expire"
                )

            with leases.hold_lease(lock.as_posix(), timeout=timeout_from_env(), on_timeout=busy):
                yield
            return
        with open(lock, "a+", encoding="utf-8") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        with self._exclusive():
            self._stamp = None
            f = self.warehouse.catalog_file
            seen = storage.backend(f).version_tag(f.as_posix()) if self.warehouse.remote else None
            self._load()
            tables = {k: _encode(v, self.warehouse) for k, v in self._tables.items()}
            views = {k: _encode(v, self.warehouse) for k, v in self._views.items()}
            yield tables, views
            doc = {"format": FORMAT, "tables": tables, "views": views}
            self._stamp = None
            if self.warehouse.remote:
                self._swap(doc, seen)
            else:
                write_json_atomic(f, doc)

    def _swap(self, doc: dict[str, Any], seen: str | None) -> None:
        """Replace the catalog object only if it is still the version read under the lease."""
        f = self.warehouse.catalog_file
        data = json.dumps(doc, indent=1, sort_keys=True).encode()
        if not storage.backend(f).replace_if(f.as_posix(), data, seen):
            raise CatalogError(
                f"the catalog {f.as_posix()} was changed by another process while this one "
                "held its lease (the lease expired during a stall and was taken over); this "
                "change was not written: run the statement again"
            )

    def add(self, entry: Entry) -> Entry:
        """Add a table or view; :class:`NameClashError` if the name is taken."""
        key = str(entry.ident)
        if not entry.created_ms:
            entry = dataclasses.replace(entry, created_ms=int(time.time() * 1000))
        inside = isinstance(entry, ViewEntry) or entry.managed
        if inside and not self.warehouse.contains(entry.path):
            raise InvalidPathError(
                entry.path,
                f"the {entry.kind} {key} must live inside the warehouse "
                f"{self.warehouse.root.as_posix()}",
            )
        with self._locked() as (tables, views):
            if key in tables:
                raise NameClashError(key, "table")
            if key in views:
                raise NameClashError(key, "materialized view")
            if isinstance(entry, ViewEntry):
                missing = [
                    str(d)
                    for d in entry.dependencies
                    if str(d) not in tables and str(d) not in views
                ]
                if missing:
                    raise UnknownTableError(missing[0], known=tuple(sorted([*tables, *views])))
                views[key] = _encode(entry, self.warehouse)
            else:
                tables[key] = _encode(entry, self.warehouse)
        return entry

    def remove(
        self, name: str | Identifier, *, kind: Literal["table", "view"] | None = None
    ) -> Entry:
        """Remove an entry; :class:`DependencyError` if a view still reads it."""
        ident = parse_identifier(name)
        key = str(ident)
        with self._locked() as (tables, views):
            entry: Entry | None = self._tables.get(key) if kind != "view" else None
            if entry is None and kind != "table":
                entry = self._views.get(key)
            if entry is None:
                if kind == "view":
                    raise UnknownViewError(key, known=tuple(sorted(views)))
                raise UnknownTableError(key, known=tuple(sorted([*tables, *views])))
            deps = tuple(sorted(v.name for v in self._views.values() if ident in v.dependencies))
            if deps:
                raise DependencyError(key, deps)
            tables.pop(key, None) if isinstance(entry, TableEntry) else views.pop(key, None)
        return entry

    def set_view_options(self, name: str | Identifier, options: ViewOptions) -> ViewEntry:
        """Record new DDL options (e.g. a schedule) for an existing view."""
        key = str(parse_identifier(name))
        with self._locked() as (_, views):
            if key not in views:
                raise UnknownViewError(key, known=tuple(sorted(views)))
            views[key]["options"] = options.to_json()
        return self.view(key)

    def replace_schema(self, name: str | Identifier, schema: pa.Schema) -> Entry:
        """Record a new schema for an existing entry (e.g. after a compatible evolution)."""
        key = str(parse_identifier(name))
        with self._locked() as (tables, views):
            slot = tables if key in tables else views if key in views else None
            if slot is None:
                raise UnknownTableError(key, known=tuple(sorted([*tables, *views])))
            slot[key]["schema"] = schema_to_text(schema)
            slot[key]["columns"] = describe_schema(schema)
        return self.lookup(key)


def default_group(view: Identifier) -> str:
    """The checkpoint group of a view computed by its own dataflow."""
    return str(view)


def entry_path(entry: Entry) -> str:
    return os.fspath(entry.path)
