"""The operator base class: inboxes of batches per time and port, and emission."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ivm.batch import Batch
from ivm.errors import ArithmeticOverflowError
from ivm.lattice import Time
from ivm.schema import DTYPES, Schema

if TYPE_CHECKING:
    from ivm.dataflow import Dataflow, Scope
    from ivm.trace import Trace


class Operator:
    """A node of the dataflow graph.

    An operator owns an inbox: for each time, one list of batches per input port.  The
    scheduler calls :meth:`run` with the time being processed; operators consume only the
    batches of exactly that time and :meth:`emit` their output batches to the inboxes of
    their consumers, possibly at later times (a join with history, a feedback edge).
    """

    kind = "op"
    #: a stateless operator that handles each update alone and keeps its time: it
    #: transforms each batch as it arrives (:meth:`forward`) and passes it on at once,
    #: instead of queueing it to be run in its turn.  Within a time every operator runs
    #: after its inputs (see :mod:`ivm.dataflow`), so its consumers receive the same
    #: updates at the same times either way; this saves a queue round trip per operator
    #: and iteration, the fixed cost that dominates small changes.
    forwards = False

    def __init__(
        self,
        graph: Dataflow,
        scope: Scope,
        inputs: list[Operator],
        schema: Schema,
        label: str | None = None,
    ) -> None:
        self.graph = graph
        self.scope = scope
        self.inputs = inputs
        self.schema = schema
        self.dtypes = tuple(DTYPES[d] for d in schema.dtypes)
        self.consumers: list[tuple[Operator, int]] = []
        self.inbox: dict[Time, list[list[Batch]]] = {}
        self.nports = max(1, len(inputs))
        self.id = graph._register(self)
        self.label = label or self.kind
        for port, inp in enumerate(inputs):
            inp.consumers.append((self, port))
        scope.items.append(self)

    @property
    def name(self) -> str:
        return f"{self.label}#{self.id}"

    # -- messages ------------------------------------------------------------------------
    def push(self, port: int, time: Time, batch: Batch) -> None:
        n = len(batch.diff)
        if n == 0:
            return
        if self.forwards:
            self.graph.metrics.record(self, time, n)
            self.forward(port, time, batch)
            return
        slot = self.inbox.get(time)
        if slot is None:
            slot = self.inbox[time] = [[]] if self.nports == 1 else [[] for _ in range(self.nports)]
        slot[port].append(batch)

    def emit(self, time: Time, batch: Batch) -> None:
        if len(batch.diff) == 0:
            return
        for op, port in self.consumers:
            op.push(port, time, batch)

    def pending_times(self) -> Collection[Time]:
        """The times this operator still has work at (a live view: not to be kept)."""
        return self.inbox.keys()

    def pending_maps(self) -> tuple[Mapping[Time, object], ...]:
        """Live collections (kept for the operator's life) whose keys together are
        :meth:`pending_times`, for a scheduler that reads them every round."""
        return (self.inbox,)

    def has_work(self, time: Time) -> bool:
        return time in self.inbox

    def run(self, time: Time) -> None:
        """Process everything this operator has for ``time``."""
        slot = self.inbox.pop(time, None)
        n = 0
        if slot is None:
            if not self.has_work(time):
                return
            inputs: list[Batch | None] = [None] * self.nports
        elif self.nports == 1:
            # one port, one batch: the common case of a small change, without a loop
            parts = slot[0]
            b = parts[0] if len(parts) == 1 else Batch.concat(parts)
            n = b.diff.shape[0]
            inputs = [b]
        else:
            inputs = []
            for parts in slot:
                if parts:
                    b = Batch.concat(parts)
                    n += b.diff.shape[0]
                    inputs.append(b)
                else:
                    inputs.append(None)
        self.graph.metrics.record(self, time, n)
        try:
            self.process(time, inputs)
        except ArithmeticOverflowError as exc:
            self.blame(exc)
            raise

    def blame(self, exc: ArithmeticOverflowError) -> None:
        """Name this operator in an overflow raised while it ran (unless named already)."""
        if exc.operator_id is None:
            what = self.describe()
            if what.startswith(self.name) and what != self.name:
                what = f"{self.name} ({what[len(self.name) :].strip()})"
            exc.operator_id = self.id
            exc.operator = what

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not process batches")

    def forward(self, port: int, time: Time, batch: Batch) -> None:
        """A ``forwards`` operator's handling of one batch (emits its output)."""
        raise NotImplementedError(f"{type(self).__name__} does not forward batches")

    # -- epochs and state ----------------------------------------------------------------
    def end_epoch(self) -> None:
        """Called once every operator is done with the epoch (compaction, flushing)."""

    def snapshot(self) -> object:
        """What :meth:`restore` needs to undo an epoch that failed (cheap: runs are
        immutable, so copying the lists of runs is enough)."""
        return None

    def restore(self, snap: object) -> None:
        """Return to the state captured by :meth:`snapshot`."""

    def state(self) -> dict[str, tuple]:
        """Named traces to checkpoint: name -> (cols, times, diff)."""
        return {}

    def checkpoint_dtypes(self, key: str) -> tuple[np.dtype, ...]:
        """The column dtypes of the checkpointed trace ``key`` (default: the output's)."""
        return self.dtypes

    def load_state(self, state: dict[str, tuple]) -> None:
        if state:
            raise ValueError(f"{self.name} keeps no state")

    def empty_batch(self) -> Batch:
        return Batch(tuple(np.empty(0, dtype=d) for d in self.dtypes), np.zeros(0, dtype=np.int64))

    def describe(self) -> str:
        return f"{self.name} {self.schema}"


class KeepsTrace(Operator):
    """An operator whose whole state is one trace, kept in the attribute named ``state_key``
    (also its checkpoint key): compaction, snapshots and checkpoints all go to that trace."""

    state_key: ClassVar[str]

    def new_trace(self) -> Trace:
        """An empty trace of the kept shape (dtypes, key, time kinds)."""
        raise NotImplementedError(f"{type(self).__name__} does not say its trace's shape")

    @property
    def kept(self) -> Trace:
        trace: Trace = getattr(self, self.state_key)
        return trace

    def end_epoch(self) -> None:
        self.kept.compact()

    def snapshot(self) -> object:
        return self.kept.snapshot()

    def restore(self, snap: object) -> None:
        assert isinstance(snap, tuple)
        self.kept.restore(snap)

    def state(self) -> dict[str, tuple]:
        return {self.state_key: self.kept.all_updates()}

    def load_state(self, state: dict[str, tuple]) -> None:
        trace = self.new_trace()
        trace.insert(*state[self.state_key])
        setattr(self, self.state_key, trace)
