"""One refresh of a group: the phases of :mod:`catalog.pipeline.phases` in order, timed.

:func:`refresh_group` holds the group's writer lock (catalog.locks; docs/reliability.md)
throughout, runs each phase through :class:`Timings` (the only place that measures time),
and reports per view (:class:`RefreshReport`).  ``hook(step)`` is called at ``"waiting"``,
``"locked"``, ``"restored"``, ``"stepped"``, the commit's own points (catalog.refresh) and
``"published"``: the crash-injection and concurrency points of the tests.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from catalog import Catalog
from catalog.pipeline import phases as ph
from catalog.pipeline.groups import BuiltGroup, GroupSpec
from catalog.pipeline.placement import LOCAL, EpochRunner, Placement
from catalog.pipeline.progress import ProgressCallback, ProgressReporter
from catalog.refresh import RefreshResult

Hook = Callable[[str], None]
P = ParamSpec("P")
R = TypeVar("R")


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
    peak_rss_bytes: int = 0  # the process's peak resident memory after the refresh (0: unknown)
    placement: Placement = LOCAL  # where the epoch ran: in-process or sharded (its figures)

    @property
    def executor(self) -> str:
        """Where the epoch ran: ``"local"`` or ``"spark <master>"``."""
        return self.placement.executor

    def __str__(self) -> str:
        what = (
            f"wrote {self.rows_written} rows in {self.files_written} file(s) as version "
            f"{self.version}"
            if self.committed
            else "view unchanged, nothing written"
        )
        how = "recomputed from the inputs, " if self.recomputed else ""
        where = f"; {self.placement.describe()}" if self.placement.sharded else ""
        return (
            f"{self.view}: epoch {self.epoch}, {how}{self.rows_in} input changes, "
            f"{self.differences} differences processed, {what} ({self.seconds * 1000:.0f} ms)"
            f"{where}"
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


@dataclass
class Timings:
    """Seconds spent per phase; :meth:`run` is the one wrapper that measures them."""

    started: float = field(default_factory=time.perf_counter)
    phases: dict[str, float] = field(default_factory=dict)

    def run(self, phase: str, fn: Callable[P, R], *args: P.args, **kw: P.kwargs) -> R:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            self.phases[phase] = self.phases.get(phase, 0.0) + time.perf_counter() - t0

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started


def _noop(step: str) -> None:
    return None


def _dropped_since_planned(catalog: Catalog, spec: GroupSpec) -> bool:
    """A view of ``spec`` is no longer in the catalog, or was dropped and created anew."""
    for v in spec.views:
        now = catalog.store.find(v.ident)
        if now is None or now.created_ms != v.created_ms:
            return True
    return False


def _holding_group_lock(
    fn: Callable[..., list[RefreshReport]],
) -> Callable[..., list[RefreshReport]]:
    """Run a refresh of a group under its writer lock (catalog.locks); hook ``"locked"``.
    A group planned before another process dropped one of its views is skipped (no
    reports): DROP removes the view under the same lock (catalog.manager)."""

    @functools.wraps(fn)
    def locked(catalog: Catalog, spec: GroupSpec, *args: Any, **kw: Any) -> list[RefreshReport]:
        hook = kw.get("hook") or _noop
        with catalog.checkpoints.lock(spec.name, on_wait=lambda: hook("waiting")):
            hook("locked")
            if kw.get("built") is None and _dropped_since_planned(catalog, spec):
                return []  # another process dropped a view of the group meanwhile
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
    progress: ProgressCallback | None = None,
    runner: EpochRunner | None = None,
) -> list[RefreshReport]:
    """One refresh (one epoch) of ``spec``; ``built``: a fresh build to use if recomputing;
    ``progress``: called with the refresh's :class:`~catalog.pipeline.progress.Progress`;
    ``runner``: where the epoch runs (default: this process; catalog.pipeline.placement)."""
    hook = hook or _noop
    meter = ProgressReporter(spec.name, progress) if progress is not None else None
    clock = Timings()
    previous = clock.run("recover", ph.recover, catalog, spec)
    if meter is not None:
        meter.report("read", 0, len(spec.tables), "inputs")
    inputs = clock.run("read", ph.read_inputs, catalog, spec, previous)
    if inputs.unchanged:
        assert previous.manifest is not None
        if meter is not None:
            meter.finish()
        return _reports(spec, previous.manifest.epoch, inputs, clock, None, None)
    cached = runtime.built.pop(spec.name, None)  # re-cached only after a successful commit
    engine = clock.run("restore", ph.restore, catalog, spec, previous, inputs, cached, built)
    if inputs.changes is not None:
        hook("restored")
    changes = inputs.changes
    if engine.recomputed or changes is None:
        changes = clock.run("read", ph.read_snapshots, catalog, inputs.pins, meter)
    elif meter is not None:
        meter.report("read", len(spec.tables), len(spec.tables), "inputs")
    epoch = ph.next_epoch(spec, previous, engine)
    if meter is not None:
        with meter.observing(engine.group.g):
            stepped = clock.run("engine", ph.step, engine, changes, epoch, runner)
    else:
        stepped = clock.run("engine", ph.step, engine, changes, epoch, runner)
    hook("stepped")
    outputs = clock.run("write", ph.write_outputs, catalog, spec, previous, engine, stepped, inputs)
    written = meter.rows_written if meter is not None else None
    result = clock.run("commit", ph.commit, catalog, spec, stepped, inputs, outputs, hook, written)
    runtime.built[spec.name] = engine.group
    clock.run("gc", ph.collect_garbage, spec, result)
    if meter is not None:
        meter.finish()
    return _reports(spec, epoch, inputs, clock, engine, (stepped, result))


def _reports(
    spec: GroupSpec,
    epoch: int,
    inputs: ph.InputChanges,
    clock: Timings,
    engine: ph.Engine | None,
    done: tuple[ph.Stepped, RefreshResult] | None,
) -> list[RefreshReport]:
    """One report per view of the group (``done`` is ``None`` when nothing was refreshed)."""
    seconds = clock.seconds
    peak = _peak_rss_bytes()
    out = []
    for v in spec.view_names:
        w = done[1].commits.get(v) if done is not None else None
        metrics = dict(w.metrics) if w is not None else {}
        out.append(
            RefreshReport(
                view=v,
                group=spec.name,
                epoch=epoch,
                committed=w is not None,
                version=w.version if w is not None else None,
                rows_in=done[0].rows_in if done is not None else 0,
                differences=done[0].differences if done is not None else 0,
                rows_written=int(metrics.get("num_added_rows", 0)),
                files_written=int(metrics.get("num_added_files", 0)),
                seconds=seconds,
                recomputed=engine.recomputed if engine is not None else False,
                replayed_epochs=engine.replayed if engine is not None else 0,
                input_versions=inputs.versions,
                timings=dict(clock.phases),
                peak_rss_bytes=peak,
                placement=done[0].placement if done is not None else LOCAL,
            )
        )
    return out


def _peak_rss_bytes() -> int:
    """Peak resident memory of this process so far (``getrusage``; Linux counts KiB)."""
    try:
        import resource
    except ImportError:  # not on this platform
        return 0
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
