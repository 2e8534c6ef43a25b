"""Refresh groups: the views one ``ivm`` dataflow computes, and the refresh of a group.

A **group** is a connected component of the view dependency graph: two views are in one
group when one reads the other (or when both are outputs of one Datalog program).  A view that
reads another view of its group reads that view's *collection* inside the dataflow, so
upstream and downstream change in the same epoch and always agree.  Views that only share base
tables are in different groups (each has its own dataflow, checkpoint and epochs).

:func:`plan_groups` derives the groups from the catalog; a group is named after its smallest
view name and carries a **fingerprint** of everything its dataflow is built from (view
definitions, schemas, input tables).  :func:`build_group` builds the dataflow — the same code
in the same order, so the same ``g.signature()`` in every process.

:func:`refresh_group` runs one epoch (catalog.refresh has the protocol and its proof), holding
the group's writer lock throughout (catalog.locks; docs/reliability.md):

1. *recover*: publish the pending view changes of the group's current checkpoint;
2. *pin* the current Delta version and table id of every base input (schema checked, dropped
   inputs refused) and capture its changes since the checkpoint (catalog.capture); an input
   replaced since (another table id) or whose changes are gone (vacuumed) makes the group
   recomputed — with no new input version, nothing happens and nothing is committed;
3. bring the engine to the checkpoint: the in-memory dataflow if it is at that epoch, else a
   fresh build that loads the checkpoint (never a recomputation); when the checkpoint was made
   for another fingerprint (a view was added to or dropped from the group) or does not exist,
   the dataflow is built from scratch and fed the inputs' snapshots ("recomputed");
4. push the changes (the snapshots when recomputing) as one epoch and ``g.step()``;
5. ``commit_refresh``: checkpoint (commit point), then one Delta version per changed view.

After a recomputation a view's change is *new contents − current table contents*, so a
group can be rebuilt at any time (views added, dropped, merged into one group, checkpoints
lost) without losing or doubling a row.

**Checkpoints** hold a full ``g.state()`` (*base*, keys ``s/...``) followed by a *log* of the
input changes of later epochs (keys ``l/<epoch>/<table>``); the base files are carried over
by hard link, so a refresh writes only its own input changes, not the whole state.  A new
process loads the base and replays the logged epochs (work proportional to the logged
changes); a new base is written when the log reaches a quarter of the base's rows or
:data:`MAX_LOG_EPOCHS` epochs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import ivm
from catalog import Catalog, view_table
from catalog.changes import DIFF, consolidate
from catalog.dtypes import (
    column_mappings,
    conform,
    engine_schema,
    from_engine_columns,
    schema_to_text,
    storage_schema,
    to_engine_columns,
)
from catalog.errors import SchemaChangeError
from catalog.names import Identifier, parse_identifier
from catalog.refresh import ViewTarget, commit_refresh, publish
from catalog.store import TableEntry, ViewEntry
from ivm.errors import PlanError
from spark_exec.types import frontend_columns, view_schema

log = logging.getLogger("ivm.session")

FORMAT = 1
MAX_LOG_EPOCHS = 64
LOG_MIN_ROWS = 100_000
Hook = Callable[[str], None]


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
        return [ViewTarget(v.name, v.path) for v in self.views]


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


def build_group(catalog: Catalog, spec: GroupSpec) -> BuiltGroup:
    """Build the group's dataflow (no data): one output per view, inputs for base tables."""
    from datalog import analyze, compile_program
    from sql_frontend.compile import compile_view

    g = ivm.Dataflow(f"group {spec.name}")
    tables = {t.name: t for t in spec.tables}
    sql_inputs: dict[str, ivm.InputCollection] = {}
    feeds: list[Feed] = []
    env: dict[str, ivm.Collection] = {}
    schemas: dict[str, pa.Schema] = {v.name: v.schema for v in spec.views}
    outputs: dict[str, ivm.Output] = {}
    plans: dict[str, str] = {}
    programs: dict[str, int] = {}

    def sql_relation(name: str) -> ivm.Collection:
        if name in env:
            return env[name]
        if name not in sql_inputs:
            entry = tables[name]
            inp = g.input(name, engine_schema(entry.schema))
            sql_inputs[name] = inp
            feeds.append(Feed(entry, inp))
        return sql_inputs[name]

    def schema_of(name: str) -> pa.Schema:
        return tables[name].schema if name in tables else schemas[name]

    for v in spec.views:
        if v.language == "sql":
            deps = [str(d) for d in v.dependencies]
            cat = {d: frontend_columns(schema_of(d)) for d in deps}
            cv = compile_view(v.definition, cat, g, {d: sql_relation(d) for d in deps})
            got = view_schema(cv.schema)
            if not got.equals(storage_schema(v.schema)):
                raise SchemaChangeError(
                    v.name,
                    f"its definition now yields {got.to_string(show_schema_metadata=False)}"
                    f" instead of the stored {v.schema.to_string(show_schema_metadata=False)}",
                )
            outputs[v.name] = g.output(cv.collection, v.name)
            env[v.name] = cv.collection
            plans[v.name] = cv.explain
            continue
        if v.definition in programs:
            continue
        k = programs[v.definition] = len(programs)
        analysis = analyze(v.definition)
        given: dict[str, ivm.Collection] = {}
        for rel, decl in analysis.input_schemas.items():
            name = str(parse_identifier(rel))
            pos = analysis.relations[rel].decl.pos
            check_datalog_input(rel, schema_of(name), decl, pos)
            if name in env:
                given[rel] = _adapt_for_datalog(env[name], decl)
            else:
                entry = tables[name]
                dtypes = tuple(d for _, d in decl)
                inp = g.input(
                    f"{name}@datalog{k}", list(zip(entry.schema.names, dtypes, strict=True))
                )
                feeds.append(Feed(entry, inp, dtypes))
                given[rel] = inp
        prog = compile_program(v.definition, g, given, output_prefix=f"datalog{k}:")
        for w in spec.views:
            if w.language == "datalog" and w.definition == v.definition:
                rel = next(r for r in prog.outputs if str(parse_identifier(r)) == w.name)
                outputs[w.name] = prog.outputs[rel]
                env[w.name] = prog.relations[rel]
                plans[w.name] = prog.explain
    return BuiltGroup(spec, g, feeds, outputs, schemas, plans)


# -- refreshing --------------------------------------------------------------------------


@dataclass(frozen=True)
class RefreshReport:
    """What one refresh did for one view (group-wide numbers are the group's)."""

    view: str
    group: str
    epoch: int | None
    committed: bool
    version: int | None
    rows_in: int
    differences: int
    rows_written: int
    files_written: int
    seconds: float
    recomputed: bool = False
    replayed_epochs: int = 0
    input_versions: Mapping[str, int] = field(default_factory=dict)
    timings: Mapping[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        what = (
            f"wrote {self.rows_written} rows in {self.files_written} file(s) as version "
            f"{self.version}"
            if self.committed
            else "view unchanged, nothing written"
        )
        how = "recomputed from the inputs, " if self.recomputed else ""
        return (
            f"{self.view}: epoch {self.epoch}, {how}{self.rows_in} input changes, "
            f"{self.differences} differences processed, {what} ({self.seconds * 1000:.0f} ms)"
        )


@dataclass
class GroupRuntime:
    """The in-memory dataflows of one Session, by group name."""

    built: dict[str, BuiltGroup] = field(default_factory=dict)

    def forget(self, name: str | None = None) -> None:
        if name is None:
            self.built.clear()
        else:
            self.built.pop(name, None)


def _noop(step: str) -> None:
    return None


def _holding_group_lock(
    fn: Callable[..., list[RefreshReport]],
) -> Callable[..., list[RefreshReport]]:
    """Run a refresh of a group under its writer lock (catalog.locks); hook ``"locked"``."""

    @functools.wraps(fn)
    def locked(catalog: Catalog, spec: GroupSpec, *args: Any, **kw: Any) -> list[RefreshReport]:
        hook = kw.get("hook") or _noop
        with catalog.checkpoints.lock(spec.name, on_wait=lambda: hook("waiting")):
            hook("locked")
            return fn(catalog, spec, *args, **kw)

    return locked


@_holding_group_lock
def refresh_group(
    catalog: Catalog,
    spec: GroupSpec,
    runtime: GroupRuntime,
    *,
    hook: Hook | None = None,
    built: BuiltGroup | None = None,
) -> list[RefreshReport]:
    """One refresh (one epoch) of ``spec``; see the module docstring for the steps."""
    hook = hook or _noop
    started = time.perf_counter()
    store = catalog.checkpoints
    targets = spec.targets()
    timings: dict[str, float] = {}

    # 1. recovery: finish publishing the current checkpoint to the views it covers
    manifest = store.manifest(spec.name)
    if manifest is not None and manifest.pending_views:
        covered = set(manifest.meta.get("views", ()))
        ckpt = store.load(spec.name)
        assert ckpt is not None
        publish(ckpt, [t for t in targets if t.name in covered])
    compatible = manifest is not None and manifest.meta.get("fingerprint") == spec.fingerprint

    # 2. pin the inputs (version and table id); read their changes (None: recompute)
    t0 = time.perf_counter()
    pins = catalog.pin_inputs([t.name for t in spec.tables], view=spec.views[0].name)
    pinned = {t: v for t, (v, _) in pins.items()}
    changes: dict[str, pa.Table] | None = None
    if compatible:
        assert manifest is not None
        ids = manifest.meta.get("input_ids", {})
        changes = catalog.changes_since(pins, manifest.input_versions, ids, group=spec.name)
        compatible = changes is not None
    if compatible:
        assert manifest is not None
        previous = dict(manifest.input_versions)
        if all(previous.get(t) == v for t, v in pinned.items()):
            timings["pin"] = time.perf_counter() - t0
            return [
                _unchanged(v, spec, manifest.epoch, pinned, started, timings)
                for v in spec.view_names
            ]

    # 3. the engine at the checkpoint (or a fresh build)
    replayed = 0
    recomputed = not compatible
    group = runtime.built.pop(spec.name, None)
    runtime.forget(spec.name)  # re-cached only after a successful commit
    t1 = time.perf_counter()
    if compatible:
        assert manifest is not None
        if (
            group is None
            or group.spec.fingerprint != spec.fingerprint
            or group.g.epoch != manifest.epoch
        ):
            group = build_group(catalog, spec)
            try:
                replayed = _restore(catalog, spec, group)
            except PlanError as exc:
                log.warning(
                    "group %s: checkpoint does not fit the dataflow (%s); recomputing",
                    spec.name,
                    exc,
                )
                recomputed = True
        hook("restored")
    if recomputed:
        group = built if built is not None and built.g.epoch == 0 else build_group(catalog, spec)
        reason = "no checkpoint" if manifest is None else "its views changed"
        log.info(
            "group %s (%s): %s; recomputing from the inputs' snapshots",
            spec.name,
            ", ".join(spec.view_names),
            reason,
        )
    assert group is not None
    timings["restore"] = time.perf_counter() - t1

    # 4. read the changes and run one epoch
    t2 = time.perf_counter()
    if recomputed or changes is None:
        changes = {t: catalog.read_changes(t, None, v) for t, v in pinned.items()}
    timings["read"] = time.perf_counter() - t2 + (t1 - t0)
    t3 = time.perf_counter()
    rows_in = group.send(changes)
    if recomputed:
        committed = [view_table.committed_epoch(t.path, t.name) or 0 for t in targets]
        epoch = max([manifest.epoch if manifest else 0, *committed]) + 1
    else:
        assert manifest is not None
        epoch = manifest.epoch + 1
    step = group.g.step(epoch=epoch)
    view_changes = group.view_changes()
    if recomputed:
        view_changes = {v: _minus_table(c, spec, v) for v, c in view_changes.items()}
    timings["engine"] = time.perf_counter() - t3
    hook("stepped")

    # 5. checkpoint, then publish
    t4 = time.perf_counter()
    state, carry, meta = _checkpoint_parts(
        catalog, spec, group, manifest, recomputed, epoch, changes
    )
    meta["input_ids"] = {t: i for t, (_, i) in pins.items()}
    result = commit_refresh(
        store,
        spec.name,
        epoch=epoch,
        input_versions=pinned,
        state=state,
        view_changes=view_changes,
        targets=targets,
        meta=meta,
        hook=hook,
        carry=carry,
    )
    hook("published")
    runtime.built[spec.name] = group
    for t in targets:
        if result.commits.get(t.name) is not None:
            view_table.maintain(t.path)
    timings["commit"] = time.perf_counter() - t4
    seconds = time.perf_counter() - started
    reports = []
    for v in spec.view_names:
        w = result.commits.get(v)
        metrics = dict(w.metrics) if w is not None else {}
        reports.append(
            RefreshReport(
                view=v,
                group=spec.name,
                epoch=epoch,
                committed=w is not None,
                version=w.version if w is not None else None,
                rows_in=rows_in,
                differences=step.differences,
                rows_written=int(metrics.get("num_added_rows", 0)),
                files_written=int(metrics.get("num_added_files", 0)),
                seconds=seconds,
                recomputed=recomputed,
                replayed_epochs=replayed,
                input_versions=dict(pinned),
                timings=dict(timings),
            )
        )
    return reports


def _unchanged(
    view: str,
    spec: GroupSpec,
    epoch: int,
    pinned: Mapping[str, int],
    started: float,
    timings: Mapping[str, float],
) -> RefreshReport:
    return RefreshReport(
        view=view,
        group=spec.name,
        epoch=epoch,
        committed=False,
        version=None,
        rows_in=0,
        differences=0,
        rows_written=0,
        files_written=0,
        seconds=time.perf_counter() - started,
        input_versions=dict(pinned),
        timings=dict(timings),
    )


def _minus_table(change: pa.Table, spec: GroupSpec, view: str) -> pa.Table:
    """``change − (current contents of the view table)``: the change a recomputation writes."""
    entry = next(v for v in spec.views if v.name == view)
    current = view_table.read_view_counts(entry.path)
    if current.num_rows == 0:
        return change
    rows = change.schema.remove(change.schema.get_field_index(DIFF))
    current = conform(current, rows, name=view, extra=[DIFF])
    negated = current.set_column(
        current.num_columns - 1,
        change.schema.field(DIFF),
        pa.array(-current.column(DIFF).to_numpy().astype(np.int64)),
    )
    return consolidate(pa.concat_tables([change, negated.cast(change.schema)]))


def _restore(catalog: Catalog, spec: GroupSpec, group: BuiltGroup) -> int:
    """Load the checkpoint's base state into ``group`` and replay its log; epochs replayed."""
    ckpt = catalog.checkpoints.load(spec.name)
    assert ckpt is not None
    base = {k[2:]: t for k, t in ckpt.state.items() if k.startswith("s/")}
    if "__meta__" not in base:
        raise PlanError("checkpoint has no base state")
    group.g.load_state(base)
    logged = [int(e) for e in ckpt.meta.get("log", ())]
    for e in logged:
        prefix = f"l/{e}/"
        group.send({k[len(prefix) :]: t for k, t in ckpt.state.items() if k.startswith(prefix)})
        group.g.step(epoch=e)
    if group.g.epoch != ckpt.epoch:
        raise PlanError(f"checkpoint epoch {ckpt.epoch} but the replay ended at {group.g.epoch}")
    return len(logged)


def _checkpoint_parts(
    catalog: Catalog,
    spec: GroupSpec,
    group: BuiltGroup,
    manifest: Any,
    recomputed: bool,
    epoch: int,
    changes: Mapping[str, pa.Table],
) -> tuple[dict[str, pa.Table], tuple[str, ...], dict[str, Any]]:
    """A log entry carried onto the current base, or a new full base (see module doc)."""
    meta: dict[str, Any] = {
        "format": FORMAT,
        "fingerprint": spec.fingerprint,
        "views": list(spec.view_names),
    }
    rows = sum(c.num_rows for c in changes.values())
    if not recomputed and manifest is not None:
        old = manifest.meta
        log_epochs = [*old.get("log", ()), epoch]
        log_rows = int(old.get("log_rows", 0)) + rows
        base_rows = int(old.get("base_rows", 0))
        if len(log_epochs) <= MAX_LOG_EPOCHS and log_rows <= max(LOG_MIN_ROWS, base_rows // 4):
            carry = catalog.checkpoints.state_keys(spec.name)
            state = {f"l/{epoch}/{t}": c for t, c in changes.items() if c.num_rows}
            meta.update(
                base_epoch=old.get("base_epoch"),
                log=log_epochs,
                log_rows=log_rows,
                base_rows=base_rows,
            )
            return state, carry, meta
    full = {f"s/{k}": t for k, t in group.g.state().items()}
    meta.update(
        base_epoch=epoch, log=[], log_rows=0, base_rows=sum(t.num_rows for t in full.values())
    )
    return full, (), meta


def stale_checkpoint_groups(catalog: Catalog, live: Sequence[str]) -> list[str]:
    """Checkpoint groups on disk that are no group of the catalog any more.

    The catalog is planned again here (another process may have added a view since ``live``
    was computed), so a group created meanwhile is not reported.
    """
    root = catalog.warehouse.internal_dir / "checkpoints"
    if not root.exists():
        return []
    current = {*live, *(s.name for s in plan_groups(catalog))}
    out = []
    for db in root.iterdir():
        if not db.is_dir():
            continue
        for d in db.iterdir():
            name = d.name if db.name == "default" else f"{db.name}.{d.name}"
            if d.is_dir() and name not in current:
                out.append(name)
    return out
