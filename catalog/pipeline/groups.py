"""Refresh groups: the views one ``ivm`` dataflow computes, and how that dataflow is built.

A **group** is a connected component of the view dependency graph: two views are in one
group when one reads the other (or when both are outputs of one Datalog program).  A view that
reads another view of its group reads that view's *collection* inside the dataflow, so
upstream and downstream change in the same epoch and always agree.  Views that only share base
tables are in different groups (each has its own dataflow, checkpoint and epochs).

:func:`plan_groups` derives the groups from the catalog; a group is named after its smallest
view name and carries a **fingerprint** of everything its dataflow is built from (view
definitions, schemas, input tables).  :func:`build_group` builds the dataflow — the same code
in the same order, so the same ``g.signature()`` in every process.  How a group is refreshed:
:mod:`catalog.pipeline.phases`.
"""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pyarrow as pa

import ivm
from catalog import Catalog
from catalog.changes import DIFF
from catalog.dtypes import from_engine_columns, schema_to_text
from catalog.names import Identifier
from catalog.pipeline.feeds import Feed
from catalog.pipeline.languages import GroupDataflow, language_of
from catalog.pipeline.meta import FORMAT, ShardRef
from catalog.refresh import ViewTarget
from catalog.store import TableEntry, ViewEntry
from ivm.errors import PlanError

# -- groups ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupSpec:
    """The views of one dataflow (dependency order) and the base tables they read."""

    name: str
    views: tuple[ViewEntry, ...]
    tables: tuple[TableEntry, ...]

    @cached_property
    def fingerprint(self) -> str:
        doc = [
            FORMAT,
            [
                [
                    v.name,
                    v.language,
                    v.definition,
                    [str(d) for d in v.dependencies],
                    schema_to_text(v.schema),
                ]
                for v in self.views
            ],
            [[t.name, schema_to_text(t.schema)] for t in self.tables],
        ]
        return hashlib.sha256(json.dumps(doc).encode()).hexdigest()[:24]

    @property
    def view_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.views)

    def targets(self) -> list[ViewTarget]:
        return [ViewTarget(v.name, v.path, language_of(v).key(v)) for v in self.views]


def _sort_key(i: Identifier) -> tuple[str, str]:
    return (i.db or "", i.name)


_planned: weakref.WeakKeyDictionary[Catalog, tuple[tuple[ViewEntry, ...], list[GroupSpec]]] = (
    weakref.WeakKeyDictionary()
)
"""The last plan of each catalog's stored views, and the entries it was made from."""


def plan_groups(catalog: Catalog, extra: Sequence[ViewEntry] = ()) -> list[GroupSpec]:
    """The refresh groups of the catalog's views (plus ``extra`` views not yet stored).

    The plan of the stored views is kept while the catalog hands out the same entries
    (catalog.store decodes every entry anew when its file changed), so a refresh does not
    plan the catalog and hash its groups' fingerprints again."""
    entries = catalog.views()
    if not extra:
        kept = _planned.get(catalog)
        if kept is not None and _same_entries(kept[0], entries):
            return list(kept[1])
    out = _plan(catalog, entries, extra)
    if not extra:
        _planned[catalog] = (entries, out)
    return list(out)


def _same_entries(a: Sequence[ViewEntry], b: Sequence[ViewEntry]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _plan(
    catalog: Catalog, entries: Sequence[ViewEntry], extra: Sequence[ViewEntry]
) -> list[GroupSpec]:
    stored = {v.ident: v for v in entries}
    views = {**stored, **{v.ident: v for v in extra}}
    parent = {i: i for i in views}

    def find(i: Identifier) -> Identifier:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(a: Identifier, b: Identifier) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb), key=_sort_key)
            parent[hi] = lo

    programs: dict[str, Identifier] = {}
    for i, v in views.items():
        for d in v.dependencies:
            if d in views:
                union(i, d)
        program = language_of(v).program(v)
        if program is not None:  # the outputs of one program are computed together
            union(programs.setdefault(program, i), i)
    order = _dependency_order(views)
    members: dict[Identifier, list[ViewEntry]] = {}
    for v in order:
        members.setdefault(find(v.ident), []).append(v)
    out = []
    for group_views in members.values():
        name = str(min((v.ident for v in group_views), key=_sort_key))
        tables: dict[str, TableEntry] = {}
        for v in group_views:
            for d in v.dependencies:
                if d not in views and str(d) not in tables:
                    tables[str(d)] = catalog.table(d)
        out.append(GroupSpec(name, tuple(group_views), tuple(tables.values())))
    return sorted(out, key=lambda s: s.name)


def _dependency_order(views: Mapping[Identifier, ViewEntry]) -> list[ViewEntry]:
    order: list[ViewEntry] = []
    done: set[Identifier] = set()

    def visit(i: Identifier, path: tuple[Identifier, ...]) -> None:
        if i in done:
            return
        if i in path:
            raise PlanError(f"views depend on each other in a cycle: {' -> '.join(map(str, path))}")
        for d in views[i].dependencies:
            if d in views:
                visit(d, (*path, i))
        done.add(i)
        order.append(views[i])

    for i in sorted(views, key=_sort_key):
        visit(i, ())
    return order


# -- building ----------------------------------------------------------------------------


@dataclass
class BuiltGroup:
    """A group's dataflow, its inputs and one output per view.

    ``shard_ref`` set: the dataflow holds no state; its state at ``g.epoch`` is the shard
    checkpoints named there (a sharded epoch left it so, catalog.pipeline.placement)."""

    spec: GroupSpec
    g: ivm.Dataflow
    feeds: list[Feed]
    outputs: dict[str, ivm.Output]
    schemas: dict[str, pa.Schema]
    plans: dict[str, str] = field(default_factory=dict)
    shard_ref: ShardRef | None = None

    def send(self, changes: Mapping[str, pa.Table]) -> int:
        rows = 0
        for t, c in changes.items():
            for f in self.feeds:
                if f.table.name == t:
                    rows += f.send(c)
        return rows

    def view_changes(self) -> dict[str, pa.Table]:
        """The last epoch's change of every view, typed as its view table (rows + diff)."""
        out = {}
        for name, o in self.outputs.items():
            b = o.last_changes
            schema = self.schemas[name]
            cols = dict(zip(schema.names, b.cols, strict=True))
            t = from_engine_columns(cols, schema, name=name)
            out[name] = t.append_column(pa.field(DIFF, pa.int64(), False), pa.array(b.diff))
        return out


def build_group(catalog: Catalog | None, spec: GroupSpec) -> BuiltGroup:
    """Build the group's dataflow (no data): one output per view, inputs for base tables.

    Each view is compiled by its language (:mod:`catalog.pipeline.languages`), in dependency
    order; a view reading another view of the group reads its collection."""
    flow = GroupDataflow(spec.name, spec.views, {t.name: t for t in spec.tables})
    for v in spec.views:
        language_of(v).compile(flow, v)
    return BuiltGroup(spec, flow.g, flow.feeds, flow.outputs, flow.schemas, flow.plans)


# -- checkpoints of former groups -------------------------------------------------------


def stale_checkpoint_groups(catalog: Catalog, live: Sequence[str]) -> list[str]:
    """Checkpoint groups on disk that are no group of the catalog any more.

    The catalog is planned again here (another process may have added a view since ``live``
    was computed), so a group created meanwhile is not reported — only when a group on disk
    is not in ``live`` (the common case, none, costs one listing and no planning).  Locally,
    a listing that found none is not repeated while the checkpoint directories stand as
    they were (:func:`_directory_stamps`: a directory made or removed in one changes its
    parent's link count).
    """
    known = set(live)
    wh = catalog.warehouse
    memo_key = (wh.root.as_posix(), frozenset(known))
    if not wh.remote:
        kept = _none_stale.get(memo_key)
        if kept is not None and kept == _directory_stamps(wh.internal_dir / "checkpoints", kept):
            return []
    candidates = [g for g in wh.checkpoint_groups() if g not in known]
    if not candidates:
        if not wh.remote:
            root = wh.internal_dir / "checkpoints"
            if len(_none_stale) >= 64:
                _none_stale.clear()
            _none_stale[memo_key] = _directory_stamps(root, None)
        return []
    current = {s.name for s in plan_groups(catalog)}
    return [g for g in candidates if g not in current]


_DirStamps = dict[str, tuple[int, int, int]]
_none_stale: dict[tuple[str, frozenset[str]], _DirStamps] = {}
"""Per warehouse and live groups: the checkpoint directories' stamps when none was stale."""


def _directory_stamps(root: Path, kept: _DirStamps | None) -> _DirStamps:
    """(inode, link count, mtime) of the checkpoint root and of its database directories
    (those of ``kept`` when given, else those listed now)."""
    names = list(kept) if kept is not None else [root.as_posix()]
    if kept is None and root.is_dir():
        names += [d.as_posix() for d in root.iterdir() if d.is_dir()]
    out: _DirStamps = {}
    for n in names:
        try:
            st = os.stat(n)
        except OSError:
            continue
        out[n] = (st.st_ino, st.st_nlink, st.st_mtime_ns)
    return out
