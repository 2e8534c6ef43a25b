"""The sharded scheduler: one shard's epoch as a generator of collective requests.

Each of N shards runs the same dataflow (:mod:`ivm.sharding`) with the same schedule as
:meth:`Dataflow.step <ivm.dataflow.Dataflow.step>` (times in lexicographic order, operators
in build order), in bulk-synchronous rounds (Naiad §3 describes the asynchronous
alternative; BSP is simpler and its rounds are few):

* **Exchange rounds.**  An :class:`~ivm.operators.exchange.Exchange` leaves the updates it
  routes to other shards in the dataflow's outbox.  Before an operator that reads an
  exchange visited since the last round runs, the shard yields :class:`Sync` with its
  outbox and gets back what the others routed to it, delivered at the same time.  The
  decision to sync depends only on the graph, never on the data, so every shard makes the
  same rounds in the same order — also a shard that has nothing to send.
* **Loop coordinates.**  A loop's next iteration is the global minimum over shards of the
  local next coordinate (:class:`AllMin`); a loop ends when no shard has work.
* **Commit vote.**  After the epoch (compaction included) each shard yields :class:`Vote`.
  A shard that raises before it aborts the epoch on every shard: the driver throws
  :class:`ShardAborted` into the others, and every shard restores its snapshot, exactly as
  a failed single-process step does.

A driver answers the requests: :func:`ivm.shard.transport.run_lockstep` for N shards in
one process, :func:`ivm.shard.transport.run_shard` with a blocking transport (files, one
process per shard).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from ivm.batch import Batch
from ivm.dataflow import Dataflow, Scope, StepReport
from ivm.errors import IvmError
from ivm.lattice import Time
from ivm.operators.base import Operator
from ivm.operators.exchange import Exchange
from ivm.shard.memory import release_free_memory

#: an update batch routed between shards: (destination shard, exchange id, time, batch)
Routed = tuple[int, int, Time, Batch]
#: an update batch received: (exchange id, time, batch)
Delivered = tuple[int, Time, Batch]


class ShardAborted(IvmError, RuntimeError):
    """Another shard failed during the epoch; this shard rolled the epoch back."""


@dataclass
class Sync:
    """An exchange round: send ``outgoing``, receive what the others routed here."""

    outgoing: list[Routed]


@dataclass
class AllMin:
    """The minimum over shards of ``value`` (None: this shard has no work)."""

    value: int | None


@dataclass
class Vote:
    """Every shard finished the epoch; the answer is the commit."""

    ok: bool = True


Request = Sync | AllMin | Vote


@dataclass
class ShardStats:
    """What the sharded epochs of one shard did (cumulative)."""

    rounds: int = 0
    loop_rounds: int = 0
    rows_sent: int = 0
    bytes_sent: int = 0
    rows_received: int = 0
    epochs: int = 0
    per_epoch: list[dict[str, int]] = field(default_factory=list)


def batch_bytes(b: Batch) -> int:
    """Bytes of a batch's columns and diffs (object columns: 8 bytes a value)."""
    return int(sum(c.nbytes for c in b.cols) + b.diff.nbytes)


#: an operator that ran over at least this many rows gives its freed memory back to the
#: system before the next one runs (:mod:`ivm.shard.memory`)
TRIM_ROWS = 1 << 16


def _rows_waiting(op: Operator, t: Time) -> int:
    """The rows in ``op``'s inbox at ``t``."""
    slot = op.inbox.get(t)
    return sum(len(b) for parts in slot for b in parts) if slot else 0


class ShardScheduler:
    """Runs one shard of a sharded :class:`Dataflow`, epoch by epoch."""

    def __init__(self, graph: Dataflow) -> None:
        self.graph = graph
        self.stats = ShardStats()
        self._visited: set[int] = set()
        self._feeds: dict[int, frozenset[int]] = {}

    def _exchange_inputs(self, op: Operator) -> frozenset[int]:
        got = self._feeds.get(op.id)
        if got is None:
            got = frozenset(i.id for i in op.inputs if isinstance(i, Exchange))
            self._feeds[op.id] = got
        return got

    # -- one epoch -----------------------------------------------------------------------
    def step(self, epoch: int | None = None) -> Generator[Request, Any, StepReport]:
        """One epoch of this shard (see the module docstring); returns its report."""
        g = self.graph
        start = g.begin_epoch(epoch)
        rounds0, loops0, sent0 = self.stats.rounds, self.stats.loop_rounds, self.stats.bytes_sent
        self._visited.clear()
        g.outbox = []
        try:
            g.start_inputs(start)
            yield from self._run_items(g.root, start.time)
            held = any(isinstance(op, Exchange) and op.held for op in g.ops)
            if g.outbox or held:  # every exchange's readers run after it at the same time
                raise IvmError(f"internal: updates left in the outbox after epoch {start.epoch}")
            g.end_operators()
            g.check_drained(start.epoch)
            yield Vote(True)
        except BaseException as exc:
            g.outbox = []
            g.roll_back(start, exc)
            raise
        finally:
            g._running = False
        g.epoch = start.epoch
        self.stats.epochs += 1
        self.stats.per_epoch.append(
            {
                "epoch": start.epoch,
                "rounds": self.stats.rounds - rounds0,
                "loop_rounds": self.stats.loop_rounds - loops0,
                "bytes_sent": self.stats.bytes_sent - sent0,
            }
        )
        return start.report(g.metrics)

    def _sync(self) -> Generator[Request, Any, None]:
        g = self.graph
        out, g.outbox = g.outbox, []
        self.stats.rounds += 1
        self.stats.rows_sent += sum(len(b) for *_, b in out)
        self.stats.bytes_sent += sum(batch_bytes(b) for *_, b in out)
        inbound: list[Delivered] = yield Sync(out)
        ops = g.ops
        for op_id, time, batch in inbound:
            self.stats.rows_received += len(batch)
            op = ops[op_id]
            assert isinstance(op, Exchange)
            op.deliver(time, batch)
        del inbound
        for op_id in sorted(self._visited):
            exchange = ops[op_id]
            assert isinstance(exchange, Exchange)
            exchange.flush()
        self._visited.clear()

    def _run_items(self, scope: Scope, t: Time) -> Generator[Request, Any, None]:
        for item in scope.items:
            if isinstance(item, Scope):
                yield from self._run_scope(item, t)
                continue
            if self._visited:
                feeds = self._exchange_inputs(item)
                if feeds and not self._visited.isdisjoint(feeds):
                    yield from self._sync()
            big = _rows_waiting(item, t) >= TRIM_ROWS
            item.run(t)
            if big:
                release_free_memory()
            if isinstance(item, Exchange):
                self._visited.add(item.id)

    def _run_scope(self, scope: Scope, t: Time) -> Generator[Request, Any, None]:
        i = yield AllMin(scope.next_coordinate(t, -1))
        rounds = 0
        while i is not None:
            yield from self._run_items(scope, (*t, i))
            rounds += 1
            self.stats.loop_rounds += 1
            scope.check_rounds(rounds, self.graph.loop_limit)
            i = yield AllMin(scope.next_coordinate(t, i))
        scope.flush_leaves(t)
