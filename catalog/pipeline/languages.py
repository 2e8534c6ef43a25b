"""View languages behind one protocol: how a stored definition enters a group's dataflow.

A :class:`ViewLanguage` is an object; the catalog stores its ``name`` with each view and
:func:`language_of` finds the object again. Everything that differs between SQL and Datalog is
a method, so no code outside this module asks which language a view is written in:

* :meth:`~ViewLanguage.plan` — text → the relational plan, its outputs' schemas and the
  relations it reads (the front end; nothing is built);
* :meth:`~ViewLanguage.program` — the program a view is one output of (a Datalog program has
  several ``.output`` views, computed by one compilation and hence in one group);
* :meth:`~ViewLanguage.key` — the view's key, when the language can derive one
  (:mod:`catalog.view_key`);
* :meth:`~ViewLanguage.explain_lines` — what EXPLAIN shows of the definition;
* :meth:`~ViewLanguage.compile` — wire the view into the group's dataflow.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

import ivm
from catalog.dtypes import engine_schema, storage_schema
from catalog.errors import CatalogError, SchemaChangeError
from catalog.names import parse_identifier
from catalog.pipeline.feeds import Feed, check_datalog_input
from catalog.sql_types import frontend_columns, view_schema
from catalog.store import TableEntry, ViewEntry, ViewKind
from catalog.view_key import Key, view_key


@dataclass(frozen=True)
class FrontEndPlan:
    """What a front end learns from a definition: ``outputs`` (relation → engine schema, one
    entry per view it defines), the relations it ``reads`` (with the schema it expects of each,
    ``None`` when any schema the catalog has will do) and ``explain`` (its plan as text)."""

    outputs: Mapping[str, tuple[tuple[str, str], ...]]
    reads: Mapping[str, tuple[tuple[str, str], ...] | None]
    explain: str


@dataclass
class GroupDataflow:
    """A group's dataflow while it is built: what the languages add views to."""

    name: str
    views: tuple[ViewEntry, ...]
    tables: Mapping[str, TableEntry]
    g: ivm.Dataflow = field(init=False)
    feeds: list[Feed] = field(default_factory=list)
    env: dict[str, ivm.Collection] = field(default_factory=dict)  # views built so far
    outputs: dict[str, ivm.Output] = field(default_factory=dict)
    plans: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, ivm.InputCollection] = field(default_factory=dict)  # by input name
    programs: dict[str, int] = field(default_factory=dict)  # Datalog text → its number

    def __post_init__(self) -> None:
        self.g = ivm.Dataflow(f"group {self.name}")
        self.schemas: dict[str, pa.Schema] = {v.name: v.schema for v in self.views}

    def schema_of(self, name: str) -> pa.Schema:
        return self.tables[name].schema if name in self.tables else self.schemas[name]

    def add_view(self, name: str, coll: ivm.Collection, output: str, explain: str) -> None:
        """Record view ``name``: its collection, dataflow output and plan text."""
        self.outputs[name] = self.g.output(coll, output)
        self.env[name] = coll
        self.plans[name] = explain

    def table_input(
        self, name: str, input_name: str, dtypes: tuple[str, ...] | None = None
    ) -> ivm.InputCollection:
        """The engine input fed by base table ``name`` (one per ``input_name``); ``dtypes``:
        the Datalog ``.input``'s declared dtypes (rows with a NULL are no facts)."""
        if input_name not in self.inputs:
            entry = self.tables[name]
            schema = engine_schema(entry.schema)
            if dtypes is not None:
                schema = list(zip(entry.schema.names, dtypes, strict=True))
            self.inputs[input_name] = self.g.input(input_name, schema)
            self.feeds.append(Feed(entry, self.inputs[input_name], dtypes))
        return self.inputs[input_name]


@runtime_checkable
class ViewLanguage(Protocol):
    """A view language: see the module docstring."""

    name: ViewKind

    def plan(self, text: str, relations: Mapping[str, pa.Schema]) -> FrontEndPlan: ...

    def program(self, view: ViewEntry) -> str | None: ...

    def key(self, view: ViewEntry) -> Key | None: ...

    def explain_lines(self, view: ViewEntry) -> tuple[str, ...]: ...

    def compile(self, flow: GroupDataflow, view: ViewEntry) -> None: ...


class SqlLanguage:
    """A SQL query: one view, compiled by :mod:`sql_frontend` onto its relational plan."""

    name: ViewKind = "sql"

    def plan(self, text: str, relations: Mapping[str, pa.Schema]) -> FrontEndPlan:
        from sql_frontend import plan as p
        from sql_frontend.compile import explain_text, output_names
        from sql_frontend.planner import plan_sql

        node = plan_sql(text, {n: frontend_columns(s) for n, s in relations.items()})
        names = output_names(node.schema)
        schema = tuple((n, t.engine_dtype) for n, (_, t) in zip(names, node.schema, strict=True))
        return FrontEndPlan({"": schema}, dict.fromkeys(p.tables(node)), explain_text(node))

    def program(self, view: ViewEntry) -> str | None:
        return None

    def key(self, view: ViewEntry) -> Key | None:
        return view_key(view.definition, tuple(view.schema.names))

    def explain_lines(self, view: ViewEntry) -> tuple[str, ...]:
        return (f"definition: {view.definition}",)

    def compile(self, flow: GroupDataflow, view: ViewEntry) -> None:
        from sql_frontend.compile import compile_view

        deps = [str(d) for d in view.dependencies]
        cat = {d: frontend_columns(flow.schema_of(d)) for d in deps}
        reads = {d: flow.env[d] if d in flow.env else flow.table_input(d, d) for d in deps}
        cv = compile_view(view.definition, cat, flow.g, reads)
        got = view_schema(cv.schema)
        if not _same_columns(got, storage_schema(view.schema)):
            raise SchemaChangeError(
                view.name,
                f"its definition now yields {got.to_string(show_schema_metadata=False)}"
                f" instead of the stored {view.schema.to_string(show_schema_metadata=False)}",
            )
        flow.add_view(view.name, cv.collection, view.name, cv.explain)


class DatalogLanguage:
    """A Datalog program: one view per ``.output`` relation, all compiled at once."""

    name: ViewKind = "datalog"

    def plan(self, text: str, relations: Mapping[str, pa.Schema]) -> FrontEndPlan:
        from datalog import analyze

        analysis = analyze(text)
        for rel, decl in analysis.input_schemas.items():
            pos = analysis.relations[rel].decl.pos
            check_datalog_input(rel, relations[str(parse_identifier(rel))], decl, pos)
        return FrontEndPlan(
            dict(analysis.output_schemas), dict(analysis.input_schemas), analysis.explain()
        )

    def program(self, view: ViewEntry) -> str | None:
        return view.definition

    def key(self, view: ViewEntry) -> Key | None:
        return None  # Datalog relations are sets without a declared key

    def explain_lines(self, view: ViewEntry) -> tuple[str, ...]:
        return ()  # the program's strata and rule plans follow in the explain text

    def compile(self, flow: GroupDataflow, view: ViewEntry) -> None:
        from datalog import compile_program

        if view.definition in flow.programs:
            return  # compiled with an earlier output of the same program
        k = flow.programs[view.definition] = len(flow.programs)
        front = self.plan(view.definition, _Relations(flow))
        given = {rel: _datalog_input(flow, k, rel, decl) for rel, decl in front.reads.items()}
        prog = compile_program(view.definition, flow.g, given, output_prefix=f"datalog{k}:")
        for w in flow.views:
            if language_of(w).program(w) == view.definition:
                rel = next(r for r in prog.outputs if str(parse_identifier(r)) == w.name)
                flow.outputs[w.name] = prog.outputs[rel]
                flow.env[w.name] = prog.relations[rel]
                flow.plans[w.name] = f"{prog.explain}\n{prog.relational_explain(rel)}"


SQL = SqlLanguage()
DATALOG = DatalogLanguage()
LANGUAGES: Mapping[str, ViewLanguage] = {lang.name: lang for lang in (SQL, DATALOG)}


def language_of(view: ViewEntry) -> ViewLanguage:
    """The language object of a stored view."""
    try:
        return LANGUAGES[view.language]
    except KeyError:
        raise CatalogError(
            f"view {view.name} is written in {view.language!r}, which this version does not "
            f"know; known: {sorted(LANGUAGES)}"
        ) from None


class _Relations(Mapping[str, pa.Schema]):
    """The schemas a group's views may read (its base tables and views), by name."""

    def __init__(self, flow: GroupDataflow) -> None:
        self.flow = flow

    def __getitem__(self, name: str) -> pa.Schema:
        return self.flow.schema_of(name)

    def __iter__(self) -> Iterator[str]:
        return iter([*self.flow.tables, *self.flow.schemas])

    def __len__(self) -> int:
        return len(self.flow.tables) + len(self.flow.schemas)


def _datalog_input(
    flow: GroupDataflow, k: int, rel: str, decl: Sequence[tuple[str, str]] | None
) -> ivm.Collection:
    """What ``.input rel`` of program ``k`` reads: a view of the group, or a base table."""
    assert decl is not None
    name = str(parse_identifier(rel))
    if name in flow.env:
        return _adapt_for_datalog(flow.env[name], decl)
    return flow.table_input(name, f"{name}@datalog{k}", tuple(d for _, d in decl))


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


def _same_columns(got: pa.Schema, stored: pa.Schema) -> bool:
    """Whether a recompiled view yields the stored columns: the same types in the same order.
    Names may differ — the stored ones stay: a view created before the front end took Spark's
    output names (``count(1)`` instead of ``_col_1``) keeps its table's names."""
    return got.equals(stored) or (
        len(got) == len(stored) and all(a.type == b.type for a, b in zip(got, stored, strict=True))
    )


__all__ = [
    "DATALOG",
    "LANGUAGES",
    "SQL",
    "DatalogLanguage",
    "FrontEndPlan",
    "GroupDataflow",
    "SqlLanguage",
    "ViewLanguage",
    "language_of",
]
