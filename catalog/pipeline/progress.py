"""How far a refresh has got: phases, and a fraction done counted from real work.

A refresh (and the first load of a new view, which is a refresh) goes through three phases
that do work; each reports ``done`` of ``total`` units as the units are finished:

==========  =========================================================================  ==========
phase       counted                                                                     unit
==========  =========================================================================  ==========
``read``    rows of the inputs read (a recomputation: counted per Arrow batch of the    ``rows``
            scan, the pinned snapshots' row counts from the Delta logs are the total;
            an incremental refresh: the inputs whose changes were read, one unit each) ``inputs``
``engine``  operators of the group's dataflow that have started (in topological order;  ``operators``
            an operator starts only once those before it have processed their input)
``commit``  changed rows of the view tables written (an inserted or removed copy of   ``rows``
            a row is one; counted file by file as each view table's commit is written,
            catalog.refresh.RowsWritten); ``views`` only in the last report when no row
            changed                                                                     ``views``
==========  =========================================================================  ==========

Every :class:`Progress` also carries ``fraction``, the whole refresh's share done, in
``[0, 1]``, never decreasing, and exactly ``1.0`` in the last report: the phases take the
spans :data:`PHASE_SPANS` of it (what a first load of a GROUP BY over 1M rows spends in each,
measured: read 10 %, engine 84 %, write and commit 6 %) and a phase's own ``done / total``
places it inside its span.  Reports are throttled to one per :data:`MIN_STEP` of a phase's
own ``done / total`` (plus the first and last of each phase and unit).

The engine's operators are observed through the dataflow's public work counters
(:attr:`ivm.Dataflow.metrics`, which every operator updates as it starts on its input for a
time): :func:`ProgressReporter.observing` puts a :class:`~ivm.metrics.Metrics` that also
reports around the dataflow's own for the length of one step, and puts the original back.
No operator code is involved.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ivm.metrics import Metrics

if TYPE_CHECKING:
    from ivm import Dataflow
    from ivm.lattice import Time
    from ivm.operators.base import Operator

Phase = Literal["read", "engine", "commit"]
Unit = Literal["rows", "inputs", "operators", "views"]

#: the share of the whole refresh each phase spans (see the module docstring)
PHASE_SPANS: dict[Phase, tuple[float, float]] = {
    "read": (0.0, 0.1),
    "engine": (0.1, 0.94),
    "commit": (0.94, 1.0),
}
MIN_STEP = 0.01


@dataclass(frozen=True)
class Progress:
    """One progress report of a group's refresh: ``done`` of ``total`` ``unit`` in ``phase``;
    ``fraction``: the whole refresh's share done (monotone, 1.0 at the end)."""

    group: str
    phase: Phase
    done: int
    total: int
    unit: Unit
    fraction: float


ProgressCallback = Callable[[Progress], None]


class ProgressReporter:
    """Turns counts of work into throttled, monotone :class:`Progress` reports."""

    def __init__(self, group: str, callback: ProgressCallback) -> None:
        self.group = group
        self.callback = callback
        self._last = -1.0
        self._share = 0.0  # the phase's own done / total at the last report
        self._phase: Phase | None = None
        self._unit: Unit | None = None

    def report(self, phase: Phase, done: int, total: int, unit: Unit) -> None:
        """``done`` of ``total`` units of ``phase`` are finished (reported if it is the first
        or last report of the phase or unit, or the phase's ``done / total`` moved by
        :data:`MIN_STEP`; never twice the same)."""
        total = max(int(total), 1)
        done = min(max(int(done), 0), total)
        lo, hi = PHASE_SPANS[phase]
        share = done / total
        fraction = max(self._last, lo + (hi - lo) * share)
        same = (phase, unit) == (self._phase, self._unit)
        if same and share == self._share:  # nothing new
            return
        edge = not same or done == total
        if not edge and share - self._share < MIN_STEP:
            return
        self._phase, self._unit = phase, unit
        self._last, self._share = fraction, share
        self.callback(Progress(self.group, phase, done, total, unit, round(fraction, 6)))

    def finish(self) -> None:
        """The last report: the commit phase complete, fraction 1.0 (unless just reported)."""
        if self._phase == "commit" and self._last >= 1.0:
            return
        self._phase = None  # always reported
        self.report("commit", 1, 1, "views")

    def rows_written(self, done: int, total: int) -> None:
        """The ``commit`` phase: ``done`` of the ``total`` changed rows of the view tables
        written (catalog.refresh.publish)."""
        if total > 0:
            self.report("commit", done, total, "rows")

    @contextmanager
    def observing(self, g: Dataflow) -> Iterator[None]:
        """Report the ``engine`` phase while ``g`` steps (see the module docstring)."""
        total = len(g.ops)
        self.report("engine", 0, total, "operators")
        inner = g.metrics
        g.metrics = _ObservedMetrics(inner, lambda op_id: self._started(op_id, total))
        try:
            yield
        finally:
            g.metrics = inner
        self.report("engine", total, total, "operators")

    def _started(self, op_id: int, total: int) -> None:
        # operator ``op_id`` starts: every operator before it in the order has run
        self.report("engine", op_id, total, "operators")


class _ObservedMetrics(Metrics):
    """The dataflow's own counters (shared, not copied), also reporting each operator start."""

    def __init__(self, inner: Metrics, started: Callable[[int], None]) -> None:
        self.__dict__.update(inner.__dict__)  # the same count tables: nothing is lost
        self._started = started
        self._highest = -1

    def record(self, op: Operator, time: Time, rows: int) -> None:
        super().record(op, time, rows)
        if op.id > self._highest:
            self._highest = op.id
            self._started(op.id)


def snapshot_rows(path: str | os.PathLike[str], version: int) -> int | None:
    """Rows of a Delta table's snapshot at ``version`` from its log's statistics (``None``
    when a file has no row count)."""
    from catalog import delta

    actions = delta.open_table(path, version).get_add_actions(flatten=True)
    if "num_records" not in actions.column_names:
        return None
    counts = actions.column("num_records").to_pylist()
    if any(c is None for c in counts):
        return None
    return int(sum(counts))
