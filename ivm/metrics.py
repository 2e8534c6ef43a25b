"""Counts of work: differences processed per operator per time, rows held per trace.

These counts do not depend on machine noise, so tests and benchmarks use them to show that
the work of a refresh follows the size of the change (CIDR 2013 Fig. 1).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ivm.lattice import Time

if TYPE_CHECKING:
    from ivm.operators.base import Operator


@dataclass(frozen=True)
class Difference:
    """The ``rows`` updates operator ``operator`` (of ``kind``) processed at ``time``."""

    operator: str
    kind: str
    time: Time
    rows: int

    @property
    def epoch(self) -> int:
        return self.time[0]

    @property
    def iteration(self) -> tuple[int, ...]:
        """The loop counters of the time (empty outside loops)."""
        return self.time[1:]


class Metrics:
    """Differences processed per (operator, time).

    Recording is on every operator activation, reading is rare (reports, tests, benchmarks):
    :meth:`record` only appends to a log, which the readers fold into the counts first.
    The log and the count tables are mutated in place, never replaced, so a wrapper that
    shares them (``catalog.pipeline.progress``) sees every count."""

    def __init__(self) -> None:
        self._rows: dict[tuple[int, Time], int] = defaultdict(int)
        self._per_epoch: dict[int, int] = defaultdict(int)
        self._ops: dict[int, Operator] = {}
        self._log: list[tuple[Operator, Time, int]] = []

    #: a log this long is folded at the next :meth:`total` (a dataflow stepped for a
    #: long time without its counts being read keeps a bounded log)
    FOLD_AT = 1 << 14

    def record(self, op: Operator, time: Time, rows: int) -> None:
        self._log.append((op, time, rows))

    def _fold(self) -> None:
        """Add the logged activations to the counts."""
        log = self._log
        if not log:
            return
        rows, per_epoch, ops = self._rows, self._per_epoch, self._ops
        for op, time, n in log:
            ops[op.id] = op
            rows[(op.id, time)] += n
            per_epoch[time[0]] += n
        log.clear()

    def forget_epoch(self, epoch: int) -> None:
        """Drop the counts of an epoch that was rolled back."""
        self._fold()
        for k in [k for k in self._rows if k[1][0] == epoch]:
            del self._rows[k]
        self._per_epoch.pop(epoch, None)

    def clear(self) -> None:
        self._log.clear()
        self._rows.clear()
        self._per_epoch.clear()

    def differences(self, epoch: int | None = None) -> list[Difference]:
        """Every (operator, epoch, iteration) with the number of updates it processed."""
        self._fold()
        out = []
        for (oid, t), n in sorted(self._rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            if epoch is not None and t[0] != epoch:
                continue
            op = self._ops[oid]
            out.append(Difference(op.name, op.kind, t, n))
        return out

    def total(self, epoch: int | None = None, kind: str | None = None) -> int:
        """Updates processed by every operator (optionally of one kind) in an epoch."""
        if kind is None and epoch is not None:
            # read twice a step (its report): the log's tail is summed, not folded, until
            # the log is long; epochs are logged in order, so the epoch's entries are the
            # last ones from the end down to an earlier epoch's
            log = self._log
            if len(log) >= self.FOLD_AT:
                self._fold()
            logged = 0
            for j in range(len(log) - 1, -1, -1):
                e = log[j][1][0]
                if e < epoch:
                    break
                if e == epoch:
                    logged += log[j][2]
            return self._per_epoch.get(epoch, 0) + logged
        self._fold()
        return sum(
            n
            for (oid, t), n in self._rows.items()
            if (epoch is None or t[0] == epoch) and (kind is None or self._ops[oid].kind == kind)
        )

    def by_iteration(self, epoch: int) -> dict[tuple[int, ...], int]:
        """Updates processed per inner time (loop counters) in one epoch, all operators."""
        self._fold()
        out: dict[tuple[int, ...], int] = defaultdict(int)
        for (_, t), n in self._rows.items():
            if t[0] == epoch:
                out[t[1:]] += n
        return dict(sorted(out.items()))
