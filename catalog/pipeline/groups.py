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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import ivm
from catalog import Catalog
from catalog.changes import DIFF
from catalog.dtypes import (
    column_mappings,
    engine_schema,
    from_engine_columns,
    schema_to_text,
    storage_schema,
    to_engine_columns,
)
from catalog.errors import SchemaChangeError
from catalog.names import Identifier, parse_identifier
from catalog.pipeline.meta import FORMAT
from catalog.refresh import ViewTarget
from catalog.sql_types import frontend_columns, view_schema
from catalog.store import TableEntry, ViewEntry
from catalog.view_key import key_of
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
        return [ViewTarget(v.name, v.path, key_of(v)) for v in self.views]


def _sort_key(i: Identifier) -> tuple[str, str]:
    return (i.db or "", i.name)


def plan_groups(catalog: Catalog, extra: Sequence[ViewEntry] = ()) -> list[GroupSpec]:
    """The refresh groups of the catalog's views (plus ``extra`` views not yet stored)."""
    stored = {v.ident: v for v in catalog.views()}
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
        if v.language == "datalog":
            first = programs.setdefault(v.definition, i)
            union(first, i)
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
class Feed:
    """A base table's changes entering the dataflow through one engine input.

    ``datalog`` feeds carry a Datalog ``.input`` relation's declared dtypes (positional);
    rows with a NULL are no facts and are left out.
    """

    table: TableEntry
    input: ivm.InputCollection
    datalog: tuple[str, ...] | None = None

    def send(self, changes: pa.Table) -> int:
        if changes.num_rows == 0:
            return 0
        diffs = changes.column(DIFF).to_numpy()
        if self.datalog is None:
            cols = to_engine_columns(changes, column_mappings(self.table.schema))
            self.input.send(cols, diffs)
            return changes.num_rows
        names = self.table.schema.names
        mask = np.ones(changes.num_rows, dtype=bool)
        for n in names:
            col = changes.column(n)
            if col.null_count:
                nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)
                mask = np.logical_and(mask, np.logical_not(nulls))
        kept = changes.filter(pa.array(mask)) if not mask.all() else changes
        out: dict[str, np.ndarray] = {}
        for n, dtype, target in zip(names, self.datalog, self.input.schema.names, strict=True):
            col = kept.column(n)
            if dtype == "str":
                out[target] = np.asarray(col.to_numpy(zero_copy_only=False), dtype=object)
            else:
                arrow = pa.int64() if dtype == "int64" else pa.float64()
                out[target] = np.asarray(pc.cast(col, arrow).to_numpy())
        self.input.send(out, diffs[mask])
        return kept.num_rows


def _same_columns(got: pa.Schema, stored: pa.Schema) -> bool:
    """Whether a recompiled view yields the stored columns: the same types in the same order.
    Names may differ — the stored ones stay: a view created before the front end took Spark's
    output names (``count(1)`` instead of ``_col_1``) keeps its table's names."""
    return got.equals(stored) or (
        len(got) == len(stored) and all(a.type == b.type for a, b in zip(got, stored, strict=True))
    )


@dataclass
class BuiltGroup:
    """A group's dataflow, its inputs and one output per view."""

    spec: GroupSpec
    g: ivm.Dataflow
    feeds: list[Feed]
    outputs: dict[str, ivm.Output]
    schemas: dict[str, pa.Schema]
    plans: dict[str, str] = field(default_factory=dict)

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


def datalog_dtypes_ok(arrow_type: pa.DataType, dtype: str) -> bool:
    """Whether a table column of ``arrow_type`` can feed a Datalog column of ``dtype``."""
    if dtype == "int64":
        return bool(pa.types.is_integer(arrow_type))
    if dtype == "float64":
        return bool(pa.types.is_floating(arrow_type))
    return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))


def check_datalog_input(
    rel: str, schema: pa.Schema, decl: Sequence[tuple[str, str]], pos: Any
) -> None:
    """Raise ``DatalogTypeError`` unless table ``schema`` can feed ``.input rel`` (``decl``)."""
    from datalog.errors import DatalogTypeError

    line, column = getattr(pos, "line", None), getattr(pos, "column", None)
    if len(schema) != len(decl):
        raise DatalogTypeError(
            f".input {rel}: the table {rel!r} has {len(schema)} columns "
            f"({', '.join(schema.names)}), the .decl has {len(decl)}",
            line=line,
            column=column,
            construct=rel,
        )
    for f, (col, dtype) in zip(schema, decl, strict=True):
        if not datalog_dtypes_ok(storage_schema(pa.schema([f])).field(0).type, dtype):
            kind = {"int64": "number", "float64": "float", "str": "symbol"}[dtype]
            raise DatalogTypeError(
                f".input {rel}: column {f.name!r} of the table is {f.type}, but the .decl "
                f"declares {col}: {kind}",
                line=line,
                column=column,
                construct=rel,
            )


def _adapt_for_datalog(coll: ivm.Collection, decl: Sequence[tuple[str, str]]) -> ivm.Collection:
    """A view's collection as a Datalog input: NULL rows dropped, columns in decl dtypes."""
    src = list(coll.schema.dtypes)
    if src == [d for _, d in decl]:
        return coll

    def no_nulls(*cols: np.ndarray) -> np.ndarray:
        keep = np.ones(len(cols[0]), dtype=bool)
        for c in cols:
            if c.dtype == object:
                keep &= np.fromiter((v is not None for v in c), dtype=bool, count=len(c))
        return keep

    def convert(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
        out = []
        for c, (_, d) in zip(cols, decl, strict=True):
            if d == "str":
                out.append(c.astype(object))
            else:
                out.append(np.asarray(c.tolist(), dtype=np.int64 if d == "int64" else np.float64))
        return tuple(out)

    return coll.filter(no_nulls).map(convert, list(decl))


class _Builder:
    """Builds one group's dataflow: SQL views compiled in order, each Datalog program once."""

    def __init__(self, catalog: Catalog, spec: GroupSpec) -> None:
        self.spec = spec
        self.g = ivm.Dataflow(f"group {spec.name}")
        self.tables = {t.name: t for t in spec.tables}
        self.sql_inputs: dict[str, ivm.InputCollection] = {}
        self.feeds: list[Feed] = []
        self.env: dict[str, ivm.Collection] = {}  # views of the group built so far
        self.schemas: dict[str, pa.Schema] = {v.name: v.schema for v in spec.views}
        self.outputs: dict[str, ivm.Output] = {}
        self.plans: dict[str, str] = {}
        self.programs: dict[str, int] = {}

    def schema_of(self, name: str) -> pa.Schema:
        return self.tables[name].schema if name in self.tables else self.schemas[name]

    def sql_relation(self, name: str) -> ivm.Collection:
        """A relation a SQL view reads: a view of the group, or a base table's input."""
        if name in self.env:
            return self.env[name]
        if name not in self.sql_inputs:
            entry = self.tables[name]
            inp = self.g.input(name, engine_schema(entry.schema))
            self.sql_inputs[name] = inp
            self.feeds.append(Feed(entry, inp))
        return self.sql_inputs[name]

    def sql_view(self, v: ViewEntry) -> None:
        from sql_frontend.compile import compile_view

        deps = [str(d) for d in v.dependencies]
        cat = {d: frontend_columns(self.schema_of(d)) for d in deps}
        cv = compile_view(v.definition, cat, self.g, {d: self.sql_relation(d) for d in deps})
        got = view_schema(cv.schema)
        if not _same_columns(got, storage_schema(v.schema)):
            raise SchemaChangeError(
                v.name,
                f"its definition now yields {got.to_string(show_schema_metadata=False)}"
                f" instead of the stored {v.schema.to_string(show_schema_metadata=False)}",
            )
        self.outputs[v.name] = self.g.output(cv.collection, v.name)
        self.env[v.name] = cv.collection
        self.plans[v.name] = cv.explain

    def datalog_input(self, k: int, rel: str, decl: Sequence[tuple[str, str]]) -> ivm.Collection:
        """What ``.input rel`` of program ``k`` reads: a view of the group, or a base table."""
        name = str(parse_identifier(rel))
        if name in self.env:
            return _adapt_for_datalog(self.env[name], decl)
        entry = self.tables[name]
        dtypes = tuple(d for _, d in decl)
        inp = self.g.input(f"{name}@datalog{k}", list(zip(entry.schema.names, dtypes, strict=True)))
        self.feeds.append(Feed(entry, inp, dtypes))
        return inp

    def datalog_program(self, v: ViewEntry) -> None:
        from datalog import analyze, compile_program

        if v.definition in self.programs:
            return
        k = self.programs[v.definition] = len(self.programs)
        analysis = analyze(v.definition)
        given: dict[str, ivm.Collection] = {}
        for rel, decl in analysis.input_schemas.items():
            pos = analysis.relations[rel].decl.pos
            check_datalog_input(rel, self.schema_of(str(parse_identifier(rel))), decl, pos)
            given[rel] = self.datalog_input(k, rel, decl)
        prog = compile_program(v.definition, self.g, given, output_prefix=f"datalog{k}:")
        for w in self.spec.views:
            if w.language == "datalog" and w.definition == v.definition:
                rel = next(r for r in prog.outputs if str(parse_identifier(r)) == w.name)
                self.outputs[w.name] = prog.outputs[rel]
                self.env[w.name] = prog.relations[rel]
                self.plans[w.name] = prog.explain

    def build(self) -> BuiltGroup:
        for v in self.spec.views:
            self.sql_view(v) if v.language == "sql" else self.datalog_program(v)
        return BuiltGroup(self.spec, self.g, self.feeds, self.outputs, self.schemas, self.plans)


def build_group(catalog: Catalog, spec: GroupSpec) -> BuiltGroup:
    """Build the group's dataflow (no data): one output per view, inputs for base tables."""
    return _Builder(catalog, spec).build()


# -- checkpoints of former groups -------------------------------------------------------


def stale_checkpoint_groups(catalog: Catalog, live: Sequence[str]) -> list[str]:
    """Checkpoint groups on disk that are no group of the catalog any more.

    The catalog is planned again here (another process may have added a view since ``live``
    was computed), so a group created meanwhile is not reported.
    """
    current = {*live, *(s.name for s in plan_groups(catalog))}
    return [g for g in catalog.warehouse.checkpoint_groups() if g not in current]
