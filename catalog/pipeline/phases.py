"""The phases of one refresh of a group, each a function from typed inputs to typed outputs.

In the order :func:`catalog.pipeline.run.refresh_group` runs them, under the group's writer
lock (the protocol and its proof: :mod:`catalog.refresh`)::

    recover ─▶ read_inputs ─▶ restore ─▶ step ─▶ write_outputs ─▶ commit ─▶ collect_garbage
    Previous   InputChanges   Engine     Stepped  Outputs           RefreshResult

* :func:`recover` publishes the pending view changes of the current checkpoint and reads
  its typed metadata (:class:`Previous`);
* :func:`read_inputs` pins the Delta version and table id of every base input and reads
  its changes since the checkpoint (:class:`InputChanges`; ``changes`` is ``None`` when the
  group must be recomputed from the inputs' snapshots, ``unchanged`` when no input moved);
* :func:`restore` brings the engine to the checkpoint: the in-memory dataflow if it is at that
  epoch, else a fresh build that loads the base and replays the log, else (no usable
  checkpoint) a fresh build to be fed the snapshots (:class:`Engine`);
* :func:`step` sends the changes as one epoch and steps the dataflow (:class:`Stepped`);
* :func:`write_outputs` turns the step into what is saved: the view changes (relative to the
  view tables' contents after a recomputation) and the checkpoint's tables, a log entry or
  a new base (:class:`Outputs`);
* :func:`commit` saves the checkpoint (the commit point) and publishes the view changes;
* :func:`collect_garbage` runs each committed view table's maintenance policy.

Only :func:`commit` and :func:`collect_garbage` write; a failure before :func:`commit` leaves
the warehouse as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from catalog import Catalog, view_table
from catalog.changes import DIFF, consolidate
from catalog.checkpoint import Hook, Manifest
from catalog.dtypes import conform
from catalog.pipeline.groups import BuiltGroup, GroupSpec, build_group
from catalog.pipeline.meta import CheckpointFormatError, GroupMeta, GroupState, LogKey, encode_key
from catalog.pipeline.placement import LOCAL, EpochRunner, Placement, step_in_process
from catalog.pipeline.progress import ProgressReporter, snapshot_rows
from catalog.refresh import RefreshResult, ViewTarget, commit_refresh, publish
from ivm.errors import PlanError

log = logging.getLogger("ivm.session")

Pins = Mapping[str, tuple[int, str]]


@dataclass(frozen=True)
class Previous:
    """The group's current checkpoint after recovery (``None``: it has none)."""

    manifest: Manifest | None
    meta: GroupMeta | None
    compatible: bool  # made for this group's definition (same fingerprint)


def recover(catalog: Catalog, spec: GroupSpec) -> Previous:
    """Publish the current checkpoint's pending view changes; read its metadata."""
    store = catalog.checkpoints
    manifest = store.manifest(spec.name)
    if manifest is None:
        return Previous(None, None, False)
    meta = GroupMeta.from_json(manifest.meta, spec.name)
    covered = [t for t in spec.targets() if t.name in set(meta.views)]
    if manifest.pending_views and not _published(manifest, covered):
        ckpt = store.load(spec.name)
        assert ckpt is not None
        publish(ckpt, covered)
    return Previous(manifest, meta, meta.fingerprint == spec.fingerprint)


def _published(manifest: Manifest, targets: list[ViewTarget]) -> bool:
    """Whether every view table stands exactly at the checkpoint's epoch where it has a
    pending change, and none is past it: then recovery has nothing to do, and the
    checkpoint's tables need not be read (:func:`catalog.refresh.publish` does the rest)."""
    for t in targets:
        done = view_table.committed_epoch(t.path, t.name)
        if done is not None and done > manifest.epoch:
            return False  # publish raises RecoveryError
        if t.name in manifest.pending_views and (done is None or done < manifest.epoch):
            return False
    return True


@dataclass(frozen=True)
class InputChanges:
    """The pinned inputs and their changes since the checkpoint (``None``: recompute)."""

    pins: Pins
    changes: Mapping[str, pa.Table] | None
    unchanged: bool = False  # no input has a new version: nothing to do

    @property
    def versions(self) -> dict[str, int]:
        return {t: v for t, (v, _) in self.pins.items()}

    @property
    def ids(self) -> dict[str, str]:
        return {t: i for t, (_, i) in self.pins.items()}


def read_inputs(catalog: Catalog, spec: GroupSpec, previous: Previous) -> InputChanges:
    """Pin every base input and read its changes since the checkpoint (catalog.capture)."""
    pins = catalog.pin_inputs([t.name for t in spec.tables], view=spec.views[0].name)
    if not previous.compatible:
        return InputChanges(pins, None)
    assert previous.manifest is not None and previous.meta is not None
    before = previous.manifest.input_versions
    changes = catalog.changes_since(pins, before, previous.meta.input_ids, group=spec.name)
    if changes is None:
        return InputChanges(pins, None)
    unchanged = all(before.get(t) == v for t, (v, _) in pins.items())
    return InputChanges(pins, changes, unchanged)


def read_snapshots(
    catalog: Catalog, pins: Pins, meter: ProgressReporter | None = None
) -> dict[str, pa.Table]:
    """Every pinned input's whole contents as changes (the input of a recomputation);
    ``meter`` is told the rows read of the rows the pinned snapshots hold (their logs).
    Not consolidated: equal rows of a snapshot reach the engine as separate ``+1``s, which
    its input sums (consolidating 2M rows first cost a second, ``python -m bench groupby``)."""
    if meter is None:
        return {
            t: catalog.read_changes(t, None, v, consolidated=False) for t, (v, _) in pins.items()
        }
    sizes = {t: snapshot_rows(catalog.lookup(t).path, v) for t, (v, _) in pins.items()}
    if any(n is None for n in sizes.values()):  # a log without row counts: count inputs
        out = {}
        for i, (t, (v, _)) in enumerate(pins.items()):
            out[t] = catalog.read_changes(t, None, v, consolidated=False)
            meter.report("read", i + 1, len(pins), "inputs")
        return out
    total = sum(n or 0 for n in sizes.values())
    meter.report("read", 0, total, "rows")
    out, done = {}, 0

    def read(n: int) -> None:
        nonlocal done
        done += n
        meter.report("read", done, total, "rows")

    for t, (v, _) in pins.items():
        out[t] = catalog.read_changes(t, None, v, on_rows=read, consolidated=False)
    meter.report("read", total, total, "rows")
    return out


@dataclass
class Engine:
    """The group's dataflow at the checkpoint's epoch, or fresh (``recomputed``)."""

    group: BuiltGroup
    recomputed: bool
    replayed: int = 0


def restore(
    catalog: Catalog,
    spec: GroupSpec,
    previous: Previous,
    inputs: InputChanges,
    cached: BuiltGroup | None,
    fresh: BuiltGroup | None = None,
) -> Engine:
    """The engine at the checkpoint: ``cached`` if it is there, else built and loaded.

    Without a usable checkpoint the engine is ``fresh`` (an unstepped build of ``spec``, e.g.
    the one CREATE validated) or a new build, marked ``recomputed``.
    """
    if inputs.changes is not None:
        assert previous.manifest is not None
        epoch = previous.manifest.epoch
        fits = cached is not None and cached.spec.fingerprint == spec.fingerprint
        if fits and cached is not None and cached.g.epoch == epoch:
            return Engine(cached, False)
        group = build_group(catalog, spec)
        try:
            return Engine(group, False, load_checkpoint(catalog, spec, group))
        except (PlanError, CheckpointFormatError) as exc:
            log.warning(
                "group %s: checkpoint does not fit the dataflow (%s); recomputing", spec.name, exc
            )
    log.info(
        "group %s (%s): %s; recomputing from the inputs' snapshots",
        spec.name,
        ", ".join(spec.view_names),
        "no checkpoint" if previous.manifest is None else "its views changed",
    )
    usable = fresh is not None and fresh.g.epoch == 0
    return Engine(fresh if usable and fresh is not None else build_group(catalog, spec), True)


def load_checkpoint(catalog: Catalog, spec: GroupSpec, group: BuiltGroup) -> int:
    """Load the checkpoint's base state into ``group`` and replay its log; epochs replayed.
    A base held by shard checkpoints is not loaded: ``group`` only names it
    (``shard_ref``), and is merged from it if an epoch runs in this process."""
    manifest = catalog.checkpoints.manifest(spec.name)
    assert manifest is not None
    meta = GroupMeta.from_json(manifest.meta, spec.name)
    if meta.shards is not None:  # the state stays in the shard checkpoints it names
        group.shard_ref = meta.shards
        group.g.epoch = manifest.epoch
        return 0
    ckpt = catalog.checkpoints.load(spec.name)
    assert ckpt is not None
    state = GroupState.from_tables(ckpt.state, spec.name)
    group.g.load_state(dict(state.base))
    for e in meta.log:
        group.send(state.log.get(e, {}))
        group.g.step(epoch=e)
    if group.g.epoch != ckpt.epoch:
        raise PlanError(f"checkpoint epoch {ckpt.epoch} but the replay ended at {group.g.epoch}")
    return len(meta.log)


@dataclass(frozen=True)
class Stepped:
    """One epoch of the dataflow: its number, what went in, and what it cost."""

    epoch: int
    changes: Mapping[str, pa.Table]
    rows_in: int
    differences: int
    placement: Placement = LOCAL  # where the epoch ran (catalog.pipeline.placement)


def next_epoch(spec: GroupSpec, previous: Previous, engine: Engine) -> int:
    """The epoch of this refresh: one after the checkpoint's and every view table's."""
    last = previous.manifest.epoch if previous.manifest is not None else 0
    if not engine.recomputed:
        return last + 1
    committed = [view_table.committed_epoch(t.path, t.name) or 0 for t in spec.targets()]
    return max([last, *committed]) + 1


def step(
    engine: Engine, changes: Mapping[str, pa.Table], epoch: int, runner: EpochRunner | None = None
) -> Stepped:
    """Send ``changes`` into the dataflow and run epoch ``epoch``: in this process, or where
    ``runner`` decides (catalog.pipeline.placement).

    A recomputed group's changes are its inputs' snapshots: once sent they are dropped
    from ``changes`` (the new base checkpoint does not log them), so their Arrow memory is
    free before the engine's initial computation allocates its own."""
    rows_in = engine.group.send(changes)
    if engine.recomputed and isinstance(changes, dict):
        changes.clear()
    if runner is None:
        differences, placement = step_in_process(engine.group, epoch)
    else:
        differences, placement = runner.step(engine.group, epoch)
    return Stepped(epoch, changes, rows_in, differences, placement)


@dataclass(frozen=True)
class Outputs:
    """What a refresh saves: view changes, and the checkpoint's new tables and metadata."""

    view_changes: Mapping[str, pa.Table]
    state: Mapping[str, pa.Table]
    carry: tuple[str, ...]  # tables of the current checkpoint kept (a logged epoch)
    meta: GroupMeta


def write_outputs(
    catalog: Catalog,
    spec: GroupSpec,
    previous: Previous,
    engine: Engine,
    stepped: Stepped,
    inputs: InputChanges,
) -> Outputs:
    """The view changes of the step, and a log entry carried onto the base or a new base."""
    changes = engine.group.view_changes()
    if engine.recomputed:
        changes = {v: minus_table(c, spec, v) for v, c in changes.items()}
    rows = sum(c.num_rows for c in stepped.changes.values())
    old = previous.meta
    fresh = GroupMeta(spec.fingerprint, spec.view_names, inputs.ids)
    ref = stepped.placement.shard_state
    if ref is not None:  # the base is the shard checkpoints: named, not copied
        meta = replace(fresh, base_epoch=stepped.epoch, base_rows=ref.rows, shards=ref)
        return Outputs(changes, {}, (), meta)
    if not engine.recomputed and old is not None and old.logs_more(rows, stepped.differences):
        meta = replace(
            fresh,
            base_epoch=old.base_epoch,
            base_rows=old.base_rows,
            log=(*old.log, stepped.epoch),
            log_rows=old.log_rows + rows,
            log_work=old.log_work + stepped.differences,
        )
        logged = {t: c for t, c in stepped.changes.items() if c.num_rows}
        state = {encode_key(LogKey(stepped.epoch, t)): c for t, c in logged.items()}
        return Outputs(changes, state, catalog.checkpoints.state_keys(spec.name), meta)
    base = GroupState(base=engine.group.g.state()).to_tables()
    rows_base = sum(t.num_rows for t in base.values())
    meta = replace(fresh, base_epoch=stepped.epoch, base_rows=rows_base)
    return Outputs(changes, base, (), meta)


def minus_table(change: pa.Table, spec: GroupSpec, view: str) -> pa.Table:
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


def commit(
    catalog: Catalog,
    spec: GroupSpec,
    stepped: Stepped,
    inputs: InputChanges,
    outputs: Outputs,
    hook: Hook,
    rows_written: Callable[[int, int], None] | None = None,
) -> RefreshResult:
    """Checkpoint (the commit point), then one Delta commit per changed view
    (``rows_written(done, total)``: the writes' progress, catalog.refresh.publish)."""
    result = commit_refresh(
        catalog.checkpoints,
        spec.name,
        epoch=stepped.epoch,
        input_versions=inputs.versions,
        state=outputs.state,
        view_changes=outputs.view_changes,
        targets=spec.targets(),
        meta=outputs.meta.to_json(),
        hook=hook,
        carry=outputs.carry,
        rows_written=rows_written,
    )
    hook("published")
    return result


def collect_garbage(spec: GroupSpec, result: RefreshResult) -> None:
    """The maintenance policy of every view table that received a commit (catalog.view_table)."""
    for t in spec.targets():
        if result.commits.get(t.name) is not None:
            view_table.maintain(t.path)
