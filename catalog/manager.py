"""The catalog facade: named tables and views backed by Delta tables in one warehouse.

It ties the pieces together so that every user-facing operation validates first and writes
last (no partial writes on bad input):

* :meth:`Catalog.create_table` — a managed Delta table under ``<warehouse>/tables``;
* :meth:`Catalog.register_table` — an existing Delta table by location (never modified by the
  catalog itself; only the user's own DML writes to it);
* :meth:`Catalog.create_view` — a view entry plus its (empty) view table under
  ``<warehouse>/views``;
* :meth:`Catalog.check_input` / :meth:`Catalog.pin_versions` / :meth:`Catalog.read_changes` —
  what a refresh needs from its inputs, with :class:`DroppedInputError` and
  :class:`SchemaChangeError` for inputs that vanished or changed incompatibly.

>>> import tempfile, pyarrow as pa
>>> cat = Catalog(tempfile.mkdtemp())
>>> cat.create_table("edges", pa.schema([("src", pa.int64()), ("dst", pa.int64())])).name
'edges'
>>> cat.create_table("Edges", pa.schema([("x", pa.int64())]))
Traceback (most recent call last):
...
catalog.errors.NameClashError: cannot create 'edges': a table with that name exists
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from catalog import delta, table_check, view_table
from catalog.changes import read_changes
from catalog.checkpoint import CheckpointStore
from catalog.dtypes import check_compatible, column_mappings, storage_schema
from catalog.errors import (
    CatalogError,
    ChangesUnavailableError,
    DroppedInputError,
    InvalidPathError,
    NameClashError,
    NotADeltaTableError,
    UnsupportedProtocolError,
)
from catalog.names import Identifier, parse_identifier
from catalog.object_path import remove_tree
from catalog.paths import Warehouse, resolve_location
from catalog.store import CatalogStore, Entry, TableEntry, ViewEntry, ViewKind, default_group
from catalog.view_options import ViewOptions

log = logging.getLogger("ivm.catalog")


def _readable_schema(path: str, name: str, *, view: str | None = None) -> pa.Schema:
    """The schema of the Delta table at ``path``, given as table ``name`` (read by ``view``).

    Refuses, naming the table, a location that is no Delta table (saying what it holds) and
    a table whose protocol delta-rs cannot read (catalog.table_check)."""
    if not delta.is_delta_table(path):
        raise NotADeltaTableError(path, name=name, found=table_check.describe_location(path))
    try:
        return delta.table_schema(path)
    except UnsupportedProtocolError as exc:
        raise exc.named(name, view) from exc


class Catalog:
    """Tables and views of one warehouse directory."""

    def __init__(self, warehouse: str | os.PathLike[str] | Warehouse) -> None:
        self.warehouse = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
        self.warehouse.ensure()
        self.store = CatalogStore(self.warehouse)
        self.checkpoints = CheckpointStore(self.warehouse)
        #: (catalog schema, table schema) pairs :meth:`check_input` found compatible
        self._compatible: set[tuple[pa.Schema, pa.Schema]] = set()
        #: the tables :meth:`pin_inputs` last opened, by input name (read by :meth:`changes_since`)
        self._pinned: dict[str, DeltaTable] = {}

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse.root.as_posix()!r})"

    # -- lookups --------------------------------------------------------------------------
    def lookup(self, name: str | Identifier) -> Entry:
        return self.store.lookup(name)

    def table(self, name: str | Identifier) -> TableEntry:
        return self.store.table(name)

    def view(self, name: str | Identifier) -> ViewEntry:
        return self.store.view(name)

    def tables(self) -> tuple[TableEntry, ...]:
        return self.store.tables()

    def views(self) -> tuple[ViewEntry, ...]:
        return self.store.views()

    def _check_free(self, ident: Identifier) -> None:
        existing = self.store.find(ident)
        if existing is not None:
            raise NameClashError(str(ident), existing.kind)

    def _clear_orphan(self, path: Path) -> None:
        """Remove a managed location that no entry owns (left by a crashed create/drop)."""
        self.warehouse.check_inside(path)
        entries: list[Entry] = [*self.store.tables(), *self.store.views()]
        owned = {os.path.normpath(e.path) for e in entries}
        if path.exists() and os.path.normpath(str(path)) not in owned:
            remove_tree(path)

    # -- tables ---------------------------------------------------------------------------
    def create_table(
        self, name: str | Identifier, schema: pa.Schema, *, if_not_exists: bool = False
    ) -> TableEntry:
        """Create a managed Delta table (change data feed on) called ``name``."""
        ident = parse_identifier(name)
        if if_not_exists:
            existing = self.store.find(ident)
            if isinstance(existing, TableEntry):
                return existing
        self._check_free(ident)
        if len(schema) == 0:
            raise CatalogError(f"table {ident}: a table needs at least one column")
        column_mappings(schema)  # refuses unsupported types before anything is written
        delta.check_storable(storage_schema(schema))  # and types Delta cannot store
        path = self.warehouse.table_path(ident)
        self._clear_orphan(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        delta.create_table(path, schema, auto_compact=True)
        entry = TableEntry(ident, path.as_posix(), True, storage_schema(schema))
        try:
            return self.store.add(entry)  # type: ignore[return-value]
        except BaseException:
            remove_tree(path)
            raise

    def register_table(
        self, name: str | Identifier, location: str | os.PathLike[str]
    ) -> TableEntry:
        """Register the existing Delta table at ``location`` as ``name`` (external)."""
        ident = parse_identifier(name)
        self._check_free(ident)
        path = resolve_location(location)
        if self.warehouse.contains(path):
            raise InvalidPathError(path, "an external table cannot live inside the warehouse")
        schema = _readable_schema(path, str(ident))
        column_mappings(schema)
        return self.store.add(TableEntry(ident, path, False, schema))  # type: ignore[return-value]

    def drop_table(self, name: str | Identifier, *, if_exists: bool = False) -> None:
        """Forget a table; a managed table's data is deleted, an external one is kept."""
        ident = parse_identifier(name)
        if if_exists and not isinstance(self.store.find(ident), TableEntry):
            return
        entry = self.store.remove(ident, kind="table")
        if isinstance(entry, TableEntry) and entry.managed:
            remove_tree(self.warehouse.check_inside(entry.path))

    # -- views ----------------------------------------------------------------------------
    def create_view(
        self,
        name: str | Identifier,
        definition: str,
        language: ViewKind,
        dependencies: Iterable[str | Identifier],
        schema: pa.Schema,
        *,
        group: str | None = None,
        options: ViewOptions | None = None,
    ) -> ViewEntry:
        """Record a view and create its empty view table (see catalog.view_table).

        ``options``: what its DDL says beyond the query (comment, column comments,
        ``TBLPROPERTIES``, schedule, partition or clustering columns; catalog.view_options)."""
        ident = parse_identifier(name)
        self._check_free(ident)
        deps = tuple(dict.fromkeys(parse_identifier(d) for d in dependencies))
        for d in deps:
            self.store.lookup(d)
        column_mappings(schema)
        view_table.view_table_schema(schema)  # refuses reserved column names
        path = self.warehouse.view_path(ident)
        self._clear_orphan(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        opts = options or ViewOptions()
        try:
            view_table.create_view_table(
                path,
                schema,
                view=str(ident),
                partition_by=opts.partitioned_by,
                cluster_by=opts.clustered_by,
                properties=dict(opts.properties),  # TBLPROPERTIES: set on the view's Delta table
            )
        except BaseException:
            remove_tree(path)
            raise
        entry = ViewEntry(
            ident,
            definition,
            language,
            deps,
            path.as_posix(),
            storage_schema(schema),
            group or default_group(ident),
            options=opts,
        )
        try:
            return self.store.add(entry)  # type: ignore[return-value]
        except BaseException:
            remove_tree(path)
            raise

    def drop_view(
        self, name: str | Identifier, *, if_exists: bool = False, group: str | None = None
    ) -> None:
        """Forget a view, delete its table and (if it has its own group) its checkpoints.

        All under the writer lock of ``group`` (the view's refresh group as planned now,
        catalog.pipeline.groups; default: the group recorded when the view was created): a
        refresh of the group in progress (in any process) finishes first, and one that
        starts later finds the view gone (catalog.pipeline.run) instead of writing into a
        table being deleted."""
        ident = parse_identifier(name)
        found = self.store.find(ident)
        if if_exists and not isinstance(found, ViewEntry):
            return
        if group is None:
            group = found.group if isinstance(found, ViewEntry) else self.view(ident).group
        with self.checkpoints.lock(group):
            entry = self.store.remove(ident, kind="view")
            assert isinstance(entry, ViewEntry)
            remove_tree(self.warehouse.check_inside(entry.path))
            if not any(v.group == entry.group for v in self.store.views()):
                self.checkpoints.remove(entry.group)

    def dependency_order(self, names: Iterable[str | Identifier] | None = None) -> list[ViewEntry]:
        """Views (all, or ``names`` and the views they read) with every view after its inputs."""
        views = {v.ident: v for v in self.store.views()}
        wanted = list(views) if names is None else [self.view(n).ident for n in names]
        order: list[ViewEntry] = []
        state: dict[Identifier, int] = {}

        def visit(i: Identifier, path: tuple[Identifier, ...]) -> None:
            if state.get(i) == 2:
                return
            if state.get(i) == 1:
                cycle = " -> ".join(str(x) for x in (*path, i))
                raise CatalogError(f"views depend on each other in a cycle: {cycle}")
            state[i] = 1
            for d in views[i].dependencies:
                if d in views:
                    visit(d, (*path, i))
            state[i] = 2
            order.append(views[i])

        for i in wanted:
            visit(i, ())
        return order

    # -- inputs of a refresh --------------------------------------------------------------
    def check_input(self, name: str | Identifier, *, view: str | None = None) -> Entry:
        """The input ``name`` if its Delta table exists and still carries its schema."""
        return self._checked(name, view=view)[0]

    def _checked(
        self, name: str | Identifier, *, view: str | None = None
    ) -> tuple[Entry, DeltaTable]:
        """:meth:`check_input`, with the latest table it checked (one open of the table)."""
        entry = self.store.lookup(name)
        try:
            dt = delta.open_table(entry.path)
        except NotADeltaTableError:
            found = table_check.describe_location(entry.path)
            raise DroppedInputError(entry.name, entry.path, view, found=found) from None
        except UnsupportedProtocolError as exc:
            raise exc.named(entry.name, view) from exc
        actual = delta.arrow_schema(dt, entry.path)
        if isinstance(entry, ViewEntry):
            actual = view_table.row_schema_of(actual)
        if (entry.schema, actual) not in self._compatible:  # checked once per schema pair
            check_compatible(entry.schema, actual, name=entry.name)
            if len(self._compatible) >= 256:
                self._compatible.clear()
            self._compatible.add((entry.schema, actual))
        return entry, dt

    def pin_inputs(
        self, names: Sequence[str | Identifier], *, view: str | None = None
    ) -> dict[str, tuple[int, str]]:
        """Each input's current Delta version and table id (read together, from the table
        whose schema :meth:`check_input` checked).  The id tells a table from one recreated
        at the same location."""
        out: dict[str, tuple[int, str]] = {}
        pinned: dict[str, DeltaTable] = {}
        for n in names:
            e, dt = self._checked(n, view=view)
            out[e.name] = (int(dt.version()), str(dt.metadata().id))
            pinned[e.name] = dt
        self._pinned = pinned
        return out

    def pin_versions(
        self, names: Sequence[str | Identifier], *, view: str | None = None
    ) -> dict[str, int]:
        """The current Delta version of each input (checked with :meth:`check_input`)."""
        return {k: v for k, (v, _) in self.pin_inputs(names, view=view).items()}

    def read_changes(
        self,
        name: str | Identifier,
        after: int | None,
        upto: int,
        *,
        table_id: str | None = None,
        on_rows: Callable[[int], None] | None = None,
        consolidated: bool = True,
        checked: bool = False,
        opened: DeltaTable | None = None,
    ) -> pa.Table:
        """Changes of a table or view in Delta versions ``(after, upto]``: rows + ``__diff__``.

        Typed by the catalog's schema of ``name`` (extra columns added since are dropped).
        ``table_id``: the id the input had at ``after``; a replaced table raises
        :class:`TableReplacedError`, changes that cannot be read (vacuumed files)
        :class:`ChangesUnavailableError` — both mean "recompute from the snapshot".
        ``on_rows(n)``: told the rows of a table's snapshot as they are read (``after=None``;
        a view's rows at once).  ``consolidated=False``: a base table's rows as read, equal
        rows not summed (the engine's input sums them anyway).  ``checked``: ``name`` was
        checked by :meth:`pin_inputs` in this read (not checked again); ``opened``: the
        table it opened then (catalog.changes ``read_changes``).
        """
        entry = self.store.lookup(name) if checked else self.check_input(name)
        if isinstance(entry, ViewEntry):
            out = view_table.read_view_changes(entry.path, after, upto, name=entry.name)
            if on_rows is not None:
                on_rows(out.num_rows)
            return out
        return read_changes(
            entry.path,
            after,
            upto,
            schema=entry.schema,
            name=entry.name,
            table_id=table_id,
            on_rows=on_rows,
            consolidated=consolidated,
            opened=opened,
        )

    def read(self, name: str | Identifier, version: int | None = None) -> pa.Table:
        """Current rows of a table or view (views decoded to their multiset)."""
        entry = self.check_input(name)
        if isinstance(entry, ViewEntry):
            return view_table.read_view(entry.path, version)
        return delta.read_snapshot(entry.path, version, columns=entry.schema.names)

    def changes_since(
        self,
        pins: Mapping[str, tuple[int, str]],
        versions: Mapping[str, int],
        ids: Mapping[str, str],
        *,
        group: str = "",
    ) -> dict[str, pa.Table] | None:
        """Each pinned input's changes since ``versions`` (a checkpoint's), or ``None`` when
        its views must be recomputed from the inputs' snapshots: an input was replaced
        (another table id than ``ids`` records, or its history went back) or its changes
        cannot be read any more (e.g. vacuumed files; catalog.capture).

        ``pins``: ``{input: (version, table id)}`` from :meth:`pin_inputs`, which checked
        each input (not checked again: a table dropped or replaced since is found by the
        read itself, catalog.changes, and a pinned version's schema was checked with it).
        The tables the pins were read from are read again, not opened again.
        """
        try:
            return {
                t: self.read_changes(
                    t,
                    versions.get(t),
                    v,
                    table_id=ids.get(t, i),
                    checked=True,
                    opened=self._opened_at(t, v),
                )
                for t, (v, i) in pins.items()
            }
        except ChangesUnavailableError as exc:
            log.warning("group %s: %s; recomputing from the inputs' snapshots", group, exc)
            return None

    def _opened_at(self, name: str, version: int) -> DeltaTable | None:
        """The table :meth:`pin_inputs` opened for ``name`` if it stands at ``version`` or
        later (a kept table is brought forward in place, catalog.delta_cache)."""
        dt = self._pinned.get(name)
        return dt if dt is not None and int(dt.version()) >= version else None

    def input_changes(
        self, pinned: Mapping[str, int], previous: Mapping[str, int]
    ) -> dict[str, pa.Table]:
        """For each pinned input, its changes since ``previous`` (all rows if absent)."""
        return {n: self.read_changes(n, previous.get(n), v) for n, v in pinned.items()}
