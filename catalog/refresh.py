"""The atomic refresh protocol: state checkpoint first, then the view commits, each idempotent.

A refresh of a dataflow (one *group*: the views computed by one ``ivm`` dataflow) at epoch
``e`` has computed, from the checkpoint of epoch ``p < e`` and the input changes in Delta
versions ``(I_p, I_e]``, the new engine state ``S_e`` and, per view ``v``, a change batch
``Δv_e``.  It then:

1. **checkpoint** — saves ``(e, I_e, S_e, pending={v: Δv_e})`` atomically
   (catalog.checkpoint: one pack file, then ``CURRENT``).  This is the commit point of the refresh: before it, the refresh
   did not happen; after it, it did, and its view changes are durable in ``pending``.
2. **publish** — for each view with a non-empty ``Δv_e``, in dependency order, applies it to
   the view table (which holds the view's rows) as one Delta commit — appended rows, removed
   rows by copy-on-write or deletion vectors, a change-data file equal to ``Δv_e`` — carrying
   the Delta ``txn`` action ``("spark-ivm:<v>", e)`` and commit metadata ``(e, I_e)``
   (catalog.view_table).  A view whose ``txn`` version is already ``>= e`` is skipped:
   publishing is idempotent.  Invariant: a table whose ``txn`` version is ``e`` holds exactly
   the view at epoch ``e``, so ``Δv_e`` is always applied to the view at ``e - 1``.

**Recovery** (:func:`recover`, run before every refresh and by a new process): load the
current checkpoint ``(c, I_c, S_c, pending)`` and publish its pending changes (step 2 again).

Every step runs under the group's writer lock (catalog.locks), held by the caller: one
process at a time computes and commits a group's next epoch (docs/reliability.md).

Why every crash point is safe ("nothing lost, nothing twice"):

* crash before or during step 1 (``CURRENT`` not yet replaced): the current checkpoint is
  still ``p`` and all of ``p``'s pending changes were published before epoch ``e`` began
  (:func:`commit_refresh` checks it).  Nothing of epoch ``e`` is visible anywhere; the next
  refresh recomputes it from ``S_p`` and the inputs' changes after ``I_p``, exactly as an
  uninterrupted run would.
* crash after step 1, before or between view commits: recovery publishes the views whose
  ``txn`` version is below ``e`` — each exactly once, since the ``txn`` version is written
  in the same atomic Delta commit as the rows.  The next refresh then starts from ``S_e`` and
  ``I_e``.
* crash inside a Delta commit: the commit is atomic (the log entry is created with
  put-if-absent); either it exists with its ``txn`` or it does not.  A published entry's
  name becomes durable with the next checkpoint (its barrier fsyncs the view tables' log
  directories), so a power loss can drop only commits of the current checkpoint's epoch,
  which recovery publishes again.  Data, deletion-vector
  and change files written before a crash are referenced by no snapshot; recovery writes new
  ones and vacuum removes the orphans.

* a view table whose ``txn`` version is *ahead* of the checkpoint means the checkpoint was
  lost or rolled back: :class:`RecoveryError` (the view must be recomputed), never a silent
  double count.
* on an object store the writer lock is a lease that a stalled holder can lose
  (catalog.leases): the holder checks it before ``CURRENT`` (catalog.checkpoint) and before
  each view commit here (``fence``), and a Delta commit its successor already made is
  refused by put-if-absent; either way the stale writer stops with :class:`CheckpointError`
  and commits nothing.

The full table of crash points and the maintenance policy: ``docs/refresh-protocol.md``.

A view reader in Spark sees the view table's latest version: always a whole refresh of that
view.  Views of one group are published one after the other, so for a moment a downstream
view may be one epoch behind its upstream; both record their input versions.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from catalog import storage, view_table
from catalog.changes import DIFF, consolidate
from catalog.checkpoint import Checkpoint, CheckpointStore, Hook
from catalog.delta import WriteResult
from catalog.delta_commit import ConcurrentCommitError
from catalog.durable import fsync_path
from catalog.errors import RecoveryError
from catalog.locks import check_fence


@dataclass(frozen=True)
class ViewTarget:
    """A view of a group, the location of its table, and its key (catalog.view_key)."""

    name: str
    path: str
    key: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RefreshResult:
    """What a refresh (or a recovery) committed."""

    epoch: int
    input_versions: Mapping[str, int]
    commits: Mapping[str, WriteResult | None]  # view -> its new version, None if unchanged

    @property
    def published(self) -> tuple[str, ...]:
        return tuple(v for v, r in self.commits.items() if r is not None)


@dataclass
class RowsWritten:
    """Counts the changed rows of the view tables written so far in a publish (an inserted or
    a removed copy of a row is one), reporting ``(done, total)`` over all views; a view
    whose commit is skipped (nothing to do, or done before) counts as written."""

    totals: Mapping[str, int]
    report: Callable[[int, int], None]
    done: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, pending: Mapping[str, pa.Table], report: Callable[[int, int], None]) -> RowsWritten:
        totals = {v: int(np.abs(c.column(DIFF).to_numpy()).sum()) for v, c in pending.items()}
        return cls(totals, report)

    @property
    def total(self) -> int:
        return sum(self.totals.values())

    def wrote(self, view: str, rows: int) -> None:
        """``rows`` of ``view``'s change are written (a count that only grows)."""
        self.done[view] = min(max(rows, self.done.get(view, 0)), self.totals.get(view, 0))
        self.report(sum(self.done.values()), self.total)

    def finished(self, view: str) -> None:
        self.wrote(view, self.totals.get(view, 0))


def publish(
    ckpt: Checkpoint,
    targets: Sequence[ViewTarget],
    *,
    hook: Hook | None = None,
    rows_written: Callable[[int, int], None] | None = None,
    fence: Callable[[], None] | None = None,
    durable: Sequence[str] = (),
    consolidated: bool = False,
    staged: Future[Mapping[str, view_table.Staged | None]] | None = None,
) -> RefreshResult:
    """Commit the checkpoint's pending view changes that are not yet in their tables.

    ``targets`` gives the order (dependency order) and the tables; pending changes of views
    not in ``targets`` (dropped since) are ignored.  ``hook(f"committed:{view}")`` runs after
    each commit.  ``rows_written(done, total)``: the progress of the writes, in changed rows
    (:class:`RowsWritten`), from ``(0, total)`` to ``(total, total)``.  ``fence()`` raises
    if this writer lost its group lock (catalog.locks.check_fence): it runs before each view
    and when a view's commit or state shows another writer got there first.  ``durable``:
    local files or directories fsynced in each view commit's barrier, before its entry appears.
    ``consolidated``: the pending changes are ``consolidate``'s output (:func:`commit_refresh`
    made them); catalog.view_table does not consolidate them again.  ``staged``: the views'
    commits staged ahead (:func:`_stage_views`; each is used only if its table is still
    where it was staged).
    """
    commits: dict[str, WriteResult | None] = {}
    # the staging done before this reads the view tables (their kept log replays are shared)
    ready = {} if staged is None else staged.result()
    counter = RowsWritten.of(ckpt.pending, rows_written) if rows_written is not None else None
    if counter is not None:
        counter.report(0, counter.total)
    for t in targets:
        if fence is not None:
            fence()
        done = view_table.committed_epoch(t.path, t.name)
        if done is not None and done > ckpt.epoch:
            if fence is not None:
                fence()
            raise RecoveryError(
                f"view {t.name!r} has a commit for epoch {done}, after the checkpoint's epoch "
                f"{ckpt.epoch}: the checkpoint was lost or rolled back; recompute the view"
            )
        change = ckpt.pending.get(t.name)
        if change is None or (done is not None and done >= ckpt.epoch):
            commits[t.name] = None
            if counter is not None and change is not None:
                counter.finished(t.name)
            continue
        on_rows = None
        if counter is not None:
            on_rows = _for_view(counter, t.name)
        try:
            commits[t.name] = view_table.commit_view_changes(
                t.path,
                change,
                view=t.name,
                epoch=ckpt.epoch,
                input_versions=ckpt.input_versions,
                hook=hook,
                key=t.key,
                on_rows=on_rows,
                sync_entry=False,  # made durable by the next checkpoint's barrier (below)
                durable=durable,
                consolidated=consolidated,
                staged=ready.get(t.name),
            )
        except ConcurrentCommitError:
            if fence is not None:
                fence()  # the usual cause: a successor took over this writer's lease
            raise
        if counter is not None:
            counter.finished(t.name)
        if hook:
            hook(f"committed:{t.name}")
    return RefreshResult(ckpt.epoch, dict(ckpt.input_versions), commits)


_stager: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool): none across a fork
_stager_lock = threading.Lock()


def _stage_views(
    ckpt: Checkpoint, targets: Sequence[ViewTarget]
) -> dict[str, view_table.Staged | None]:
    """Each local view's pending change staged (catalog.view_table ``stage_view_changes``:
    split, removed rows located, files encoded in memory — nothing written).  Run on a worker
    thread while the checkpoint is saved, it overlaps that work with the save's writes and
    fsync waits.  A view whose staging fails is left unstaged: its commit does the work
    again in its turn, and raises there what it raises."""
    out: dict[str, view_table.Staged | None] = {}
    for t in targets:
        change = ckpt.pending.get(t.name)
        if change is None or storage.is_object_store(t.path):
            continue
        try:
            out[t.name] = view_table.stage_view_changes(
                t.path, change, view=t.name, epoch=ckpt.epoch, key=t.key, consolidated=True
            )
        except Exception:  # the commit meets it again, in order, with the crash points
            out[t.name] = None
    return out


def _submit_staging(
    ckpt: Checkpoint, targets: Sequence[ViewTarget]
) -> Future[Mapping[str, view_table.Staged | None]]:
    global _stager
    with _stager_lock:
        if _stager is None or _stager[0] != os.getpid():
            _stager = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="ivm-stage"))
        pool = _stager[1]
    return pool.submit(_stage_views, ckpt, targets)


def _for_view(counter: RowsWritten, view: str) -> Callable[[int], None]:
    return lambda rows: counter.wrote(view, rows)


def recover(
    store: CheckpointStore, group: str, targets: Sequence[ViewTarget]
) -> tuple[Checkpoint | None, RefreshResult | None]:
    """Bring the view tables of ``group`` up to its current checkpoint.

    Returns the checkpoint (to resume the engine from: ``g.load_state(ckpt.state)``) and
    what was rolled forward; ``(None, None)`` if the group has no checkpoint yet (then a
    view table that already has refresh commits raises :class:`RecoveryError`).
    """
    ckpt = store.load(group)
    if ckpt is None:
        for t in targets:
            if os.path.exists(t.path) and view_table.committed_epoch(t.path, t.name) is not None:
                raise RecoveryError(
                    f"view {t.name!r} has refresh commits but its group {group!r} has no "
                    "checkpoint; recompute the view"
                )
        return None, None
    return ckpt, publish(ckpt, targets, fence=lambda: check_fence(store.warehouse, group))


def _view_logs(targets: Sequence[ViewTarget]) -> list[str]:
    """The local view tables' log directories.  :func:`publish` leaves its new log entries'
    names to be made durable here, in the next checkpoint's barrier: a checkpoint of epoch
    ``e`` is never durable before the view commits of ``e - 1`` are (recovery republishes
    the current checkpoint's pending changes whose commits a crash lost)."""
    logs = [view_table.log_directory(t.path) for t in targets]
    return [d for d in logs if not storage.is_object_store(d) and os.path.isdir(d)]


def commit_refresh(
    store: CheckpointStore,
    group: str,
    *,
    epoch: int,
    input_versions: Mapping[str, int],
    state: Mapping[str, pa.Table],
    view_changes: Mapping[str, pa.Table],
    targets: Sequence[ViewTarget],
    meta: Mapping[str, object] | None = None,
    hook: Hook | None = None,
    carry: Sequence[str] = (),
    rows_written: Callable[[int, int], None] | None = None,
) -> RefreshResult:
    """Steps 1 and 2 of the protocol for one epoch.

    ``view_changes``: per view, the epoch's output changes (row columns + ``__diff__``);
    ``targets``: every view of the group in dependency order.  ``hook(step)`` is called at
    ``"before_checkpoint"``, the checkpoint's own points (``"files_written"``,
    ``"renamed"``), ``"checkpointed"`` and ``"committed:<view>"`` — the crash-injection
    points of the tests.  ``carry``: state entries of the current checkpoint kept unchanged
    (see :meth:`CheckpointStore.save`).  ``rows_written``: see :func:`publish`.
    """
    manifest = store.manifest(group)
    if manifest is not None:
        for t in targets:
            if t.name in manifest.pending_views:
                done = view_table.committed_epoch(t.path, t.name)
                if done is None or done < manifest.epoch:
                    raise RecoveryError(
                        f"epoch {manifest.epoch} of view {t.name!r} is not published yet; "
                        "call recover() before refreshing"
                    )
    unknown = set(view_changes) - {t.name for t in targets}
    if unknown:
        raise RecoveryError(f"changes for views without a target: {sorted(unknown)}")
    pending = {}
    for name, change in view_changes.items():
        c = consolidate(change)
        if c.num_rows:
            pending[name] = c
    ckpt = Checkpoint(
        group=group,
        epoch=epoch,
        input_versions=dict(input_versions),
        state=dict(state),
        pending=pending,
        meta=dict(meta or {}),
    )
    local = not store.warehouse.remote
    # the view commits' work that writes nothing, done while the checkpoint is saved
    staged = _submit_staging(ckpt, targets) if local and pending else None
    try:
        if hook:
            hook("before_checkpoint")
        logs = _view_logs(targets)
        store.save(ckpt, hook=hook, carry=carry, durable=logs, sync_pointer=not local)
        # the new CURRENT's name is made durable in the first view commit's barrier, before
        # any log entry of epoch ``e`` appears (or here, when nothing is published)
        pointer = [os.fspath(store.directory(group))] if local else []
        if hook:
            hook("checkpointed")
        result = publish(
            ckpt,
            targets,
            hook=hook,
            rows_written=rows_written,
            fence=lambda: check_fence(store.warehouse, group),
            durable=pointer,
            consolidated=True,  # consolidated above
            staged=staged,
        )
    finally:
        if staged is not None:
            wait([staged])  # never left running past the refresh (it reads the kept files)
    if pointer and not result.published:
        fsync_path(pointer[0])
    return result
