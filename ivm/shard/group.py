"""N shards of one dataflow in one process: the in-process sharded executor.

``ShardGroup(build, n)`` builds the same dataflow ``n`` times (``build(g)`` on shard
``p of n``), splits every input change across the shards (any split is right: the exchanges
fix placement), runs each epoch in lockstep (:func:`~ivm.shard.transport.run_lockstep`),
and reads each output as the union of the shards' parts — each output row lives on one
shard, because an output is exchanged by its whole row.  With ``n == 1`` it is exactly the
single-process :meth:`Dataflow.step <ivm.dataflow.Dataflow.step>`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
import pyarrow as pa

from ivm import sharding
from ivm.batch import Batch
from ivm.dataflow import Dataflow, StepReport
from ivm.errors import PlanError, SchemaError
from ivm.operators.io import Input, Output, coerce_diffs, rows_to_columns
from ivm.shard.scheduler import ShardAborted, ShardScheduler
from ivm.shard.transport import run_lockstep, run_shard

T = TypeVar("T")


@dataclass(frozen=True)
class Balance:
    """Arranged rows per shard, and the largest shard's share of them."""

    rows: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.rows)

    @property
    def max_share(self) -> float:
        return max(self.rows) / self.total if self.total else 0.0

    def __str__(self) -> str:
        shares = ", ".join(
            f"{r} ({100 * r / self.total:.0f}%)" if self.total else str(r) for r in self.rows
        )
        return f"arranged rows per shard: {shares}"


class ShardedInput:
    """An input of every shard; each change is split round-robin across them."""

    def __init__(self, ops: list[Input]) -> None:
        self.ops = ops
        self._calls = 0

    def send(self, rows: Any, diffs: Any) -> None:
        cols = rows_to_columns(self.ops[0], rows)
        n = len(cols[0]) if cols else 0
        d = coerce_diffs(self.ops[0], diffs, n)
        if not n:
            return
        k = len(self.ops)
        which = (np.arange(n) + self._calls) % k
        self._calls += 1
        for p, op in enumerate(self.ops):
            idx = np.flatnonzero(which == p)
            if len(idx):
                op.pending.append(Batch(tuple(c[idx] for c in cols), d[idx]))

    def insert(self, rows: Any) -> None:
        self.send(rows, 1)

    def delete(self, rows: Any) -> None:
        self.send(rows, -1)


class ShardedOutput:
    """An output as the union of its shards' parts."""

    def __init__(self, parts: list[Output]) -> None:
        self.parts = parts

    def _union(self, batches: list[Batch]) -> Batch:
        nonempty = [b for b in batches if len(b)]
        if not nonempty:
            return self.parts[0].empty_batch()
        return Batch.concat(nonempty).consolidate()

    def last_changes(self) -> Batch:
        return self._union([o.last_changes for o in self.parts])

    def consolidated(self) -> Batch:
        return self._union([o.consolidated() for o in self.parts])

    def changes(self) -> pa.Table:
        return self.parts[0]._table(self.last_changes(), "__diff__")

    def contents(self) -> pa.Table:
        b = self.consolidated()
        if (b.diff < 0).any():
            raise SchemaError(f"{self.parts[0].name}: negative multiplicities in output")
        return self.parts[0]._table(b.take(np.repeat(np.arange(len(b)), b.diff)), None)

    def counts(self) -> dict[tuple, int]:
        return _counts(self.consolidated())

    def changed_counts(self) -> dict[tuple, int]:
        return _counts(self.last_changes())

    def rows_per_shard(self) -> list[int]:
        return [int(o.consolidated().diff.sum()) for o in self.parts]


def _counts(b: Batch) -> dict[tuple, int]:
    rows = zip(*(c.tolist() for c in b.cols), strict=True) if b.cols else [()] * len(b)
    return {tuple(r): int(d) for r, d in zip(rows, b.diff.tolist(), strict=True)}


class ShardGroup(Generic[T]):
    """``count`` shards of the dataflow that ``build`` makes, run in this process."""

    def __init__(
        self,
        build: Callable[[Dataflow], T],
        count: int,
        name: str = "dataflow",
        loop_limit: int = 1_000_000,
        exchange_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """``exchange_dir``: run each shard in its own thread over the file transport
        (:mod:`ivm.shard.files`) with one directory per epoch under it, instead of in
        lockstep in this thread."""
        if count < 1:
            raise PlanError(f"a shard group needs at least one shard, not {count}")
        self.count = count
        self.graphs: list[Dataflow] = []
        self.built: list[T] = []
        for p in range(count):
            with sharding.building(p, count) as spec:
                g = Dataflow(name, loop_limit=loop_limit, shard=spec)
                self.built.append(build(g))
            self.graphs.append(g)
        sigs = {len(g.ops) for g in self.graphs}
        if len(sigs) != 1:
            raise PlanError("the build function made different dataflows on different shards")
        self.schedulers = [ShardScheduler(g) for g in self.graphs]
        self.exchange_dir = None if exchange_dir is None else Path(exchange_dir)
        self.file_bytes = 0
        self._attempt = 0

    @property
    def epoch(self) -> int:
        return self.graphs[0].epoch

    def input(self, name: str) -> ShardedInput:
        return ShardedInput([g.inputs[name] for g in self.graphs])

    def output(self, name: str) -> ShardedOutput:
        return ShardedOutput([g.outputs[name] for g in self.graphs])

    def step(self, epoch: int | None = None) -> StepReport:
        """One epoch on every shard (all or nothing); the report sums the shards'."""
        if self.count == 1:
            return self.graphs[0].step(epoch)
        if self.exchange_dir is not None:
            reports = self._run_threads(epoch)
        else:
            reports = run_lockstep(self.schedulers, epoch)
        return StepReport(
            reports[0].epoch,
            sum(r.input_rows for r in reports),
            sum(r.differences for r in reports),
            max(r.seconds for r in reports),
        )

    def _run_threads(self, epoch: int | None) -> list[StepReport]:
        from ivm.shard.files import FileTransport

        assert self.exchange_dir is not None
        e = self.epoch + 1 if epoch is None else int(epoch)
        root = self.exchange_dir / f"{e}-{self._attempt}"
        self._attempt += 1
        transports = [FileTransport(root, p, self.count, g) for p, g in enumerate(self.graphs)]
        results: list[StepReport | BaseException | None] = [None] * self.count

        def one(p: int) -> None:
            try:
                results[p] = run_shard(self.schedulers[p], transports[p], epoch)
            except BaseException as exc:
                results[p] = exc

        threads = [threading.Thread(target=one, args=(p,)) for p in range(self.count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.file_bytes += sum(t.bytes_written for t in transports)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            first = [r for r in errors if not isinstance(r, ShardAborted)] or errors
            raise first[0]
        return [r for r in results if isinstance(r, StepReport)]

    def states(self) -> list[dict[str, pa.Table]]:
        """Every shard's checkpoint (:meth:`Dataflow.state`)."""
        return [g.state() for g in self.graphs]

    def load_states(self, states: list[dict[str, pa.Table]]) -> None:
        """Restore every shard's checkpoint (taken by :meth:`states`)."""
        if len(states) != self.count:
            raise PlanError(f"{len(states)} checkpoints for {self.count} shards")
        for g, st in zip(self.graphs, states, strict=True):
            g.load_state(st)

    def reshard_from(self, other: ShardGroup[Any]) -> None:
        """Take the state of ``other`` (same build, any shard count): a view moving
        between the single-process and the sharded executor (:mod:`ivm.shard.reshard`)."""
        from ivm.shard.reshard import reshard

        self.load_states(reshard(other.states(), other.graphs, self.graphs))

    def balance(self) -> Balance:
        """Rows held by each shard's traces (arrangements, reduce outputs)."""
        return Balance(tuple(sum(g.arrangement_rows().values()) for g in self.graphs))

    def report(self) -> dict[str, Any]:
        """Where the epochs ran, the shard balance, the rounds and the bytes exchanged."""
        stats = [s.stats for s in self.schedulers]
        return {
            "executor": f"in-process, {self.count} shard(s)",
            "shards": self.count,
            "balance": list(self.balance().rows),
            "rounds": stats[0].rounds,
            "loop_rounds": stats[0].loop_rounds,
            "rows_exchanged": sum(s.rows_sent for s in stats),
            "bytes_exchanged": sum(s.bytes_sent for s in stats),
        }
