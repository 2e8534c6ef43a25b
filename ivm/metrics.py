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
    """Differences processed per (operator, time)."""

    def __init__(self) -> None:
        self._rows: dict[tuple[int, Time], int] = defaultdict(int)
        self._per_epoch: dict[int, int] = defaultdict(int)
        self._ops: dict[int, Operator] = {}

    def record(self, op: Operator, time: Time, rows: int) -> None:
        self._ops[op.id] = op
        self._rows[(op.id, time)] += rows
        self._per_epoch[time[0]] += rows

    def forget_epoch(self, epoch: int) -> None:
        """Drop the counts of an epoch that was rolled back."""
        for k in [k for k in self._rows if k[1][0] == epoch]:
            del self._rows[k]
        self._per_epoch.pop(epoch, None)

    def clear(self) -> None:
        self._rows.clear()
        self._per_epoch.clear()

    def differences(self, epoch: int | None = None) -> list[Difference]:
        """Every (operator, epoch, iteration) with the number of updates it processed."""
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
            return self._per_epoch.get(epoch, 0)
        return sum(
            n
            for (oid, t), n in self._rows.items()
            if (epoch is None or t[0] == epoch) and (kind is None or self._ops[oid].kind == kind)
        )

    def by_iteration(self, epoch: int) -> dict[tuple[int, ...], int]:
        """Updates processed per inner time (loop counters) in one epoch, all operators."""
        out: dict[tuple[int, ...], int] = defaultdict(int)
        for (_, t), n in self._rows.items():
            if t[0] == epoch:
                out[t[1:]] += n
        return dict(sorted(out.items()))
