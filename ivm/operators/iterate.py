"""Loop scopes: ingress, the loop variable, feedback and egress (CIDR 2013 §3.5, §4).

Inside a scope every time gets one more coordinate.  ``Enter`` brings a collection in at
counter 0 — or, for a prioritized fixed point, at a counter chosen per record
(Foundations §5) — and, since a collection accumulates over all earlier times, it is then
present unchanged at every iteration.  The ``Variable`` is the entered initial collection
plus what ``Feedback`` sends back: ``result − initial`` moved one iteration later, so the
variable at iteration i+1 accumulates to the result at iteration i (plus any records that
enter exactly at i+1).  ``Leave`` drops the
last coordinate: summing a result's updates over all iterations yields its fixed point
(or, with a bound of k iterations, the result after k rounds).  An alt/neu scope (see
``differentiate``) uses the same ``Enter``/``Leave`` with its own coordinate kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ivm import limits
from ivm.batch import Batch, distinct_ints
from ivm.errors import PlanError
from ivm.lattice import Time
from ivm.operators.base import Operator


class Enter(Operator):
    """Moves a collection from the parent scope into this one (time t -> (t, 0))."""

    kind = "enter"
    forwards = True

    def __init__(self, *args: Any, entry: Callable[..., Any] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.entry = entry

    def push(self, port: int, time: Time, batch: Batch) -> None:
        if batch.diff.shape[0] == 0:
            return
        if self.entry is None:
            super().push(port, (*time, 0), batch)
            return
        at = np.asarray(self.entry(*batch.cols), dtype=np.int64).reshape(-1)
        if len(at) != len(batch) or (len(at) and at.min() < 0):
            raise PlanError(f"{self.name}: entry must give a non-negative iteration per record")
        for it in distinct_ints(at):
            super().push(port, (*time, int(it)), batch.take(np.flatnonzero(at == it)))

    def forward(self, port: int, time: Time, batch: Batch) -> None:
        self.emit(time, batch)

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        if inputs[0] is not None:
            self.emit(time, inputs[0])


class Variable(Operator):
    """The loop variable: initial updates (port 0) plus feedback (port 1)."""

    kind = "variable"
    forwards = True

    def forward(self, port: int, time: Time, batch: Batch) -> None:
        self.emit(time, batch)

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        parts = [b for b in inputs if b is not None]
        if parts:
            self.emit(time, Batch.concat(parts))


class Feedback(Operator):
    """Sends ``result − initial`` back to the variable at the next iteration.

    ``variable = initial + delay(result − initial)``, so ``variable(i+1) = result(i)``.
    """

    kind = "feedback"

    def __init__(
        self, *args: Any, variable: Variable, max_iterations: int | None, **kw: Any
    ) -> None:
        super().__init__(*args, **kw)
        self.variable = variable
        self.max_iterations = max_iterations

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        result, initial = inputs
        parts = []
        if result is not None:
            parts.append(result)
        if initial is not None:
            parts.append(initial.negate())
        if not parts:
            return
        bounds = limits.current()
        if bounds is not None:  # a round of this loop: check the active resource limits
            bounds.check_round(self.graph, self.scope.label or self.name, (self.id, time[:-1]))
        nxt = time[-1] + 1
        if self.max_iterations is not None and nxt >= self.max_iterations:
            return
        if len(parts) == 1 and parts[0].rowhash is not None:
            out = parts[0]  # consolidated already (a reduce's output)
        else:
            out = Batch.concat(parts).consolidate()
        if len(out):
            self.variable.push(1, (*time[:-1], nxt), out)


class Leave(Operator):
    """Leaves the scope: sums updates over the scope's coordinate (egress).

    ``alt_only`` keeps just the ``alt`` moment (``integrate`` of the alt/neu scope).
    Updates are held until the scope is done with the outer time, then emitted there.
    Holding is all it does inside the loop, so it takes each batch as it arrives
    (``forwards``): the held batches of an outer time are the same, and summed the same
    way, as if they were queued and taken iteration by iteration.
    """

    kind = "leave"
    forwards = True

    def __init__(self, *args: Any, alt_only: bool = False, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.alt_only = alt_only
        self.held: dict[Time, list[Batch]] = {}
        self.outer_consumers: list[tuple[Operator, int]] = []

    def forward(self, port: int, time: Time, batch: Batch) -> None:
        if self.alt_only and time[-1] != 0:
            return
        self.held.setdefault(time[:-1], []).append(batch)

    def restore(self, snap: object) -> None:
        self.held.clear()

    def flush(self, outer: Time) -> None:
        parts = self.held.pop(outer, None)
        if parts:
            self.emit(outer, Batch.concat_consolidated(parts))


class Retract(Operator):
    """``(r, (t, alt), d) -> (r, (t, neu), −d)``: the retraction half of ``differentiate``.

    ``differentiate(c) = enter_alt(c) − delay_to_neu(enter_alt(c))``: every change is
    present at its ``alt`` moment only (the blog-post seed's AltNeu).
    """

    kind = "retract"

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        b = inputs[0]
        if b is not None and time[-1] == 0:
            for op, port in self.consumers:
                op.push(port, (*time[:-1], 1), b.negate())
