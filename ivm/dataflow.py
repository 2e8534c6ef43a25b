"""The dataflow graph, its scopes, and the scheduler that processes epochs.

Scheduling (CIDR 2013 §3; Naiad §3): each epoch is processed as one outer time ``(e,)``.
Within a scope, times are processed in lexicographic order — a linear extension of the
product order — and within a time, operators in the order they were built (a topological
order, feedback edges excepted, as they go to a later iteration).  When an operator
processes time t, every update at a time ``<= t`` has therefore already reached it.  A loop
scope runs its iterations ``(t, 0), (t, 1), ...`` while any operator inside has work at
``(t, i)`` for a later ``i``; then its ``Leave`` operators hand the sums to the parent.
At the end of an epoch every trace is compacted to the next epoch's frontier.
"""

from __future__ import annotations

import time as _clock
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ivm import sharding
from ivm.errors import ArithmeticOverflowError, EpochError, IvmError, PlanError
from ivm.lattice import ALTNEU, Kinds, Time
from ivm.metrics import Metrics
from ivm.operators.base import Operator
from ivm.operators.io import Input, Output
from ivm.operators.iterate import Enter, Feedback, Leave
from ivm.schema import Schema
from ivm.sharding import ShardSpec

if TYPE_CHECKING:
    from ivm.collection import Collection, InputCollection
    from ivm.types import Rows, SchemaSpec


class LoopLimitError(IvmError, RuntimeError):
    """A loop did not reach its fixed point within the iteration limit."""


class Scope:
    """A region of the dataflow whose times share a prefix: the root, a loop, an alt/neu."""

    def __init__(
        self, graph: Dataflow, parent: Scope | None, kind: int | None, label: str = ""
    ) -> None:
        self.graph = graph
        self.parent = parent
        self.kind = kind
        self.kinds: Kinds = (*parent.kinds, kind) if parent is not None and kind is not None else ()
        self.depth = len(self.kinds)
        self.items: list[Operator | Scope] = []
        self.leaves: list[Leave] = []
        self.label = label or (
            "root" if parent is None else ("altneu" if kind == ALTNEU else "loop")
        )
        self._ops_cache: list[Operator] | None = None
        self._plan_cache: tuple[list[Operator | Scope], list[Operator]] | None = None
        self._maps_cache: list[Mapping[Time, object]] | None = None

    def is_within(self, other: Scope) -> bool:
        s: Scope | None = self
        while s is not None:
            if s is other:
                return True
            s = s.parent
        return False

    def subtree_ops(self) -> list[Operator]:
        if self._ops_cache is None:
            ops: list[Operator] = []
            for item in self.items:
                ops.extend(item.subtree_ops() if isinstance(item, Scope) else [item])
            self._ops_cache = ops
        return self._ops_cache

    def plan(self) -> tuple[list[Operator | Scope], list[Operator]]:
        """The schedule of the scope, computed once per graph shape: the items a round
        visits in order (inner scopes, and the operators that queue work: a ``forwards``
        operator handles each batch as it arrives and never holds any), and every
        operator of the subtree that can hold work (whose pending times say whether the
        loop has another round, as progress tracking does in Naiad §3)."""
        if self._plan_cache is None:
            items = [i for i in self.items if isinstance(i, Scope) or not i.forwards]
            watched = [op for op in self.subtree_ops() if not op.forwards]
            self._plan_cache = (items, watched)
        return self._plan_cache

    def next_coordinate(self, t: Time, after: int) -> int | None:
        """Smallest coordinate > ``after`` at which something in the scope has work."""
        maps = self.pending_maps()
        # the next round nearly always has work at once (a loop's feedback): one lookup per
        # map instead of a scan of every pending time
        nxt = (*t, after + 1)
        for pending in maps:
            if nxt in pending:
                return after + 1
        n = len(t)
        best: int | None = None
        for pending in maps:
            if not pending:
                continue
            for pt in pending:
                if len(pt) > n:
                    c = pt[n]
                    if c > after and (best is None or c < best) and pt[:n] == t:
                        best = c
        return best

    def pending_maps(self) -> list[Mapping[Time, object]]:
        """The live collections whose keys are the pending times of the operators that
        :meth:`next_coordinate` watches (:meth:`Operator.pending_maps`), listed once per
        graph shape: a round reads them without a call per operator."""
        if self._maps_cache is None:
            self._maps_cache = [m for op in self.plan()[1] for m in op.pending_maps()]
        return self._maps_cache

    def check_rounds(self, rounds: int, limit: int) -> None:
        """Raise :class:`LoopLimitError` once the loop has run more than ``limit`` rounds."""
        if rounds > limit:
            raise LoopLimitError(
                f"{self.label} did not converge in {limit} iterations; bound it with max_iterations"
            )

    def flush_leaves(self, t: Time) -> None:
        """Emit what the loop's leave operators accumulated at outer time ``t``."""
        for leave in self.leaves:
            try:
                leave.flush(t)
            except ArithmeticOverflowError as exc:
                leave.blame(exc)
                raise


@dataclass(frozen=True)
class StepReport:
    """What one epoch did."""

    epoch: int
    input_rows: int
    differences: int
    seconds: float


@dataclass
class EpochRoles:
    """The operators an epoch's start and end call (:meth:`Dataflow.epoch_roles`): the
    inputs, those that keep a snapshot to roll back to, and those with an end-of-epoch step
    (compaction); in the order they were built."""

    inputs: list[Input]
    keeping: list[Operator]
    ending: list[Operator]


@dataclass
class EpochStart:
    """An epoch being processed: what :meth:`Dataflow.step` needs to report or undo it."""

    epoch: int
    input_rows: int
    differences_before: int
    started: float
    saved: list[Any]

    @property
    def time(self) -> Time:
        return (self.epoch,)

    def report(self, metrics: Metrics) -> StepReport:
        """The epoch's report, once it has finished."""
        return StepReport(
            self.epoch,
            self.input_rows,
            metrics.total(epoch=self.epoch) - self.differences_before,
            _clock.perf_counter() - self.started,
        )


class Dataflow:
    """A differential dataflow: build it with collections, then feed it epoch by epoch."""

    def __init__(
        self,
        name: str = "dataflow",
        loop_limit: int = 1_000_000,
        shard: ShardSpec | None = None,
    ) -> None:
        """``shard``: which shard of a sharded dataflow this is (:mod:`ivm.sharding`;
        default: the one ``sharding.building`` names, else the only shard)."""
        self.name = name
        self.loop_limit = loop_limit
        self.shard = shard if shard is not None else sharding.current()
        # sharded only: updates an Exchange routed to other shards, until the next round
        self.outbox: list[tuple[int, int, Time, Any]] = []
        self._exchanges: dict[tuple[int, tuple[int, ...]], Operator] = {}
        self._placement: dict[int, tuple[int, ...] | None] = {}
        self.ops: list[Operator] = []
        self.root = Scope(self, None, None)
        self.epoch = 0
        self.inputs: dict[str, Input] = {}
        self.outputs: dict[str, Output] = {}
        self.metrics = Metrics()
        self._arrangements: dict[tuple[int, tuple[int, ...]], Any] = {}
        self._entered: dict[tuple[int, int], Operator] = {}
        self._constants: list[Input] = []
        self._running = False
        self._epoch_roles: EpochRoles | None = None

    def _register(self, op: Operator) -> int:
        self.ops.append(op)
        self._invalidate()
        return len(self.ops) - 1

    def _invalidate(self) -> None:
        self._epoch_roles = None
        s: list[Scope] = [self.root]
        while s:
            sc = s.pop()
            sc._ops_cache = None
            sc._plan_cache = None
            sc._maps_cache = None
            s.extend(i for i in sc.items if isinstance(i, Scope))

    def _rollback(self, mark: int) -> None:
        """Forget every operator registered since ``mark`` (a build that raised).

        Unwires them from their inputs and from every scope, cache and registry, so that
        an error while building a loop body leaves the dataflow as it was.
        """
        removed = self.ops[mark:]
        if not removed:
            return
        gone = {id(op) for op in removed}
        del self.ops[mark:]
        for op in removed:
            for inp in op.inputs:
                inp.consumers = [(c, p) for c, p in inp.consumers if id(c) not in gone]
            for attr in ("left", "right", "source"):
                arr = getattr(op, attr, None)
                if arr is not None and id(arr) not in gone and hasattr(arr, "users"):
                    arr.users -= 1

        def prune(scope: Scope) -> bool:
            """Drop removed operators (and scopes left empty); True if anything is left."""
            kept: list[Operator | Scope] = []
            for item in scope.items:
                if isinstance(item, Scope):
                    if prune(item):
                        kept.append(item)
                elif id(item) not in gone:
                    kept.append(item)
            scope.items = kept
            scope.leaves = [lv for lv in scope.leaves if id(lv) not in gone]
            return bool(kept)

        prune(self.root)
        self._entered = {k: v for k, v in self._entered.items() if id(v) not in gone}
        self._arrangements = {k: v for k, v in self._arrangements.items() if id(v) not in gone}
        self._exchanges = {k: v for k, v in self._exchanges.items() if id(v) not in gone}
        self._placement = {}
        self.inputs = {k: v for k, v in self.inputs.items() if id(v) not in gone}
        self.outputs = {k: v for k, v in self.outputs.items() if id(v) not in gone}
        self._constants = [c for c in self._constants if id(c) not in gone]
        self._invalidate()

    # -- building --------------------------------------------------------------------------
    def input(self, name: str, schema: SchemaSpec) -> InputCollection:
        """A new input collection with the given schema (``[(name, dtype), ...]``)."""
        from ivm.collection import InputCollection

        if name in self.inputs:
            raise PlanError(f"dataflow {self.name!r} already has an input named {name!r}")
        op = Input(self, self.root, [], Schema.of(schema), label=f"input:{name}")
        self.inputs[name] = op
        return InputCollection(self, op)

    def constant(self, rows: Rows, schema: SchemaSpec, name: str = "constant") -> Collection:
        """A collection holding ``rows`` from the first epoch on."""
        from ivm.collection import Collection

        op = Input(self, self.root, [], Schema.of(schema), label=f"const:{name}", constant=True)
        op.send(rows, 1)
        if self.shard.index > 0:
            op.pending = []  # sharded: the rows enter once, on shard 0
        self._constants.append(op)
        return Collection(self, op)

    def empty(self, schema: SchemaSpec) -> Collection:
        return self.constant([], schema, "empty")

    def output(self, collection: Collection, name: str) -> Output:
        """Expose a collection: its last changes and its current contents."""
        collection._check_graph(self)
        if collection.scope is not self.root:
            raise PlanError(
                f"output {name!r}: the collection is inside a loop; use the "
                "result of iterate() instead"
            )
        if name in self.outputs:
            raise PlanError(f"dataflow {self.name!r} already has an output named {name!r}")
        src = self.exchanged(
            collection.op, tuple(range(len(collection.schema))), any_placement=True
        )
        op = Output(self, self.root, [src], collection.schema, label=f"output:{name}")
        self.outputs[name] = op
        return op

    @property
    def shards(self) -> int:
        """How many shards the dataflow is split into (1: not sharded)."""
        return self.shard.count

    def exchanged(
        self, op: Operator, key_idx: tuple[int, ...], any_placement: bool = False
    ) -> Operator:
        """``op``'s stream routed to the shards owning ``key_idx`` (``op`` itself unsharded,
        or when it is placed by ``key_idx`` already).  ``any_placement``: a placement by any
        key will do (an output only needs equal rows on one shard)."""
        if self.shard.count == 1:
            return op
        from ivm.operators.exchange import Exchange, partitioning

        placed = partitioning(op, self._placement)
        if placed == key_idx or (placed is not None and any_placement):
            return op  # already placed by this key (or, if that is enough, by some key)
        key = (op.id, key_idx)
        found = self._exchanges.get(key)
        if found is None:
            found = Exchange(self, out_scope(op), [op], op.schema, key_idx=key_idx)
            self._exchanges[key] = found
        return found

    def _enter(self, op: Operator, scope: Scope) -> Operator:
        """``op``'s stream as seen from ``scope`` (entering each loop on the way)."""
        src = out_scope(op)
        if src is scope:
            return op
        if not scope.is_within(src):
            raise PlanError(
                f"{op.name} lives in a loop that {scope.label} is not inside; "
                "use the loop's result instead"
            )
        parent = scope.parent
        assert parent is not None
        outer = self._enter(op, parent)
        key = (outer.id, id(scope))
        found = self._entered.get(key)
        if found is None:
            found = Enter(self, scope, [outer], op.schema, label="enter")
            self._entered[key] = found
        return found

    # -- running ---------------------------------------------------------------------------
    def step(self, epoch: int | None = None) -> StepReport:
        """Process every pending change as one epoch.

        A step is all or nothing: if processing raises (an error in a user function, values
        that cannot be compared, a multiplicity past 64 bits, an interrupt), every operator
        returns to its state before the epoch, the epoch's input changes are discarded, and
        the error propagates.  An overflow (:class:`~ivm.errors.ArithmeticOverflowError`)
        names the operator that raised it and the outputs that operator feeds.
        """
        start = self.begin_epoch(epoch)
        try:
            self.start_inputs(start)
            self._run_items(self.root, start.time)
            self.end_operators()
        except BaseException as exc:
            # an error in a user function (or an interrupt) mid-epoch: put every operator
            # back as it was before the epoch, so the dataflow stays consistent
            self.roll_back(start, exc)
            raise
        finally:
            self._running = False
        self.check_drained(start.epoch)
        self.epoch = start.epoch
        return start.report(self.metrics)

    # -- the parts of an epoch (shared with the sharded scheduler) -------------------------
    def begin_epoch(self, epoch: int | None) -> EpochStart:
        """Check that ``epoch`` (default: the next one) advances, snapshot every operator,
        mark the epoch as running and open it at the inputs."""
        if self._running:
            raise EpochError("step() called while an epoch is being processed")
        e = self.epoch + 1 if epoch is None else int(epoch)
        if e <= self.epoch:
            raise EpochError(f"epoch {e} does not advance past the last epoch {self.epoch}")
        started = _clock.perf_counter()
        # every input: the named ones and the constants
        n_in = sum([op.pending_rows() for op in self.epoch_roles().inputs])
        start = EpochStart(e, n_in, self.metrics.total(epoch=e), started, [])
        self._running = True
        start.saved.extend(op.snapshot() for op in self.epoch_roles().keeping)
        return start

    def epoch_roles(self) -> EpochRoles:
        """Which operators take part in an epoch's start and end (computed once per graph
        shape: a small step would otherwise call every operator's no-op hooks)."""
        if self._epoch_roles is None:
            base = Operator
            self._epoch_roles = EpochRoles(
                [op for op in self.ops if isinstance(op, Input)],
                [op for op in self.ops if type(op).snapshot is not base.snapshot],
                [op for op in self.ops if type(op).end_epoch is not base.end_epoch],
            )
        return self._epoch_roles

    def start_inputs(self, start: EpochStart) -> None:
        """Open the epoch at every input (inside the caller's roll-back guard)."""
        for op in self.epoch_roles().inputs:
            op.start_epoch(start.time)

    def end_operators(self) -> None:
        """End the epoch at every operator; an overflow names the operator that raised it."""
        for op in self.epoch_roles().ending:
            try:
                op.end_epoch()
            except ArithmeticOverflowError as exc:
                op.blame(exc)
                raise

    def roll_back(self, start: EpochStart, exc: BaseException) -> None:
        """Put every operator back as it was before the epoch ``start`` opened."""
        saved = dict(zip(map(id, self.epoch_roles().keeping), start.saved, strict=True))
        for op in self.ops:
            op.inbox.clear()
            op.restore(saved.get(id(op)))
        self.metrics.forget_epoch(start.epoch)
        if isinstance(exc, ArithmeticOverflowError):
            exc.outputs = self.outputs_fed_by(exc.operator_id)
            exc.rolled_back = True

    def check_drained(self, e: int) -> None:
        """Raise if any operator still holds work after epoch ``e``."""
        # the pending maps of every operator that can hold work (forwarding ones never do)
        if any(self.root.pending_maps()):
            leftover = [op.name for op in self.ops if op.pending_times()]
            raise IvmError(f"internal: work left after epoch {e} at {leftover}")

    def _run_items(self, scope: Scope, t: Time) -> None:
        for item in scope.plan()[0]:
            if isinstance(item, Scope):
                self._run_scope(item, t)
            else:
                item.run(t)

    def _run_scope(self, scope: Scope, t: Time) -> None:
        i = scope.next_coordinate(t, -1)
        rounds = 0
        while i is not None:
            self._run_items(scope, (*t, i))
            rounds += 1
            scope.check_rounds(rounds, self.loop_limit)
            i = scope.next_coordinate(t, i)
        scope.flush_leaves(t)

    # -- inspecting ------------------------------------------------------------------------
    def outputs_fed_by(self, op_id: int | None) -> tuple[str, ...]:
        """Names of the outputs that operator ``op_id`` feeds, directly or not (all of
        them when ``op_id`` is None)."""
        if op_id is None:
            return tuple(self.outputs)
        seen = {op_id}
        todo = [self.ops[op_id]]
        while todo:
            op = todo.pop()
            nxt = [c for c, _ in op.consumers]
            if isinstance(op, Feedback):
                nxt.append(op.variable)
            for c in nxt:
                if c.id not in seen:
                    seen.add(c.id)
                    todo.append(c)
        return tuple(name for name, out in self.outputs.items() if out.id in seen)

    def arrangement_rows(self) -> dict[str, int]:
        """Rows held by every trace (arrangements, reduce outputs, output contents)."""
        from ivm.operators.accumulate import AccumulateReduce
        from ivm.operators.arrange import Arrange
        from ivm.operators.reduce import Reduce

        out = {}
        for op in self.ops:
            if isinstance(op, Arrange):
                out[op.name] = op.trace.rows_held()
            elif isinstance(op, AccumulateReduce):
                out[op.name] = op.totals.rows_held()
            elif isinstance(op, Reduce):
                out[op.name] = op.out.rows_held() + op.cache.rows()
        return out

    def explain(self) -> str:
        lines = [f"dataflow {self.name!r} (epoch {self.epoch})"]

        def walk(scope: Scope, indent: str) -> None:
            for item in scope.items:
                if isinstance(item, Scope):
                    lines.append(f"{indent}{item.label} scope (depth {item.depth}):")
                    walk(item, indent + "  ")
                else:
                    srcs = ", ".join(i.name for i in item.inputs)
                    lines.append(f"{indent}{item.describe()}" + (f" <- {srcs}" if srcs else ""))

        walk(self.root, "  ")
        return "\n".join(lines)

    # -- checkpoints -----------------------------------------------------------------------
    def state(self) -> dict[str, pa.Table]:
        """Every trace as an Arrow table, plus the epoch: a checkpoint of the dataflow."""
        if self._running:
            raise EpochError("state() during an epoch")
        if any(op.pending for op in self.inputs.values()):
            raise EpochError("state() with unprocessed input changes; call step() first")
        out = {"__meta__": self.state_meta()}
        for op in self.ops:
            for key, (cols, times, diff) in op.state().items():
                out[f"{op.id}.{key}"] = _to_arrow(cols, times, diff)
        return out

    def state_meta(self) -> pa.Table:
        """The ``__meta__`` entry of :meth:`state`: epoch, operator count, signature."""
        if self._running:
            raise EpochError("state() during an epoch")
        if any(op.pending for op in self.inputs.values()):
            raise EpochError("state() with unprocessed input changes; call step() first")
        return pa.table(
            {"epoch": [self.epoch], "ops": [len(self.ops)], "signature": [self.signature()]}
        )

    def load_state(self, state: dict[str, pa.Table]) -> None:
        """Restore a checkpoint taken by :meth:`state` of a dataflow built the same way."""
        meta = state["__meta__"].to_pylist()[0]
        if meta["signature"] != self.signature():
            raise PlanError("checkpoint was taken from a differently built dataflow")
        for op in self.ops:
            parts = {
                k.split(".", 1)[1]: _from_arrow(v, op, k.split(".", 1)[1])
                for k, v in state.items()
                if k.split(".", 1)[0] == str(op.id)
            }
            if parts:
                op.load_state(parts)
        for c in self._constants:
            c.pending = []
        self.epoch = int(meta["epoch"])

    def signature(self) -> str:
        """A fingerprint of the graph's shape (operator kinds, schemas, wiring)."""
        import hashlib

        h = hashlib.sha256()
        if self.shard.count > 1:
            h.update(f"{self.shard.index}/{self.shard.count};".encode())
        for op in self.ops:
            h.update(f"{op.id}:{op.kind}:{op.schema}:{[i.id for i in op.inputs]};".encode())
        return h.hexdigest()[:16]

    def operators(self) -> Iterator[Operator]:
        return iter(self.ops)


def out_scope(op: Operator) -> Scope:
    """The scope in which an operator's output collection lives."""
    if isinstance(op, Leave):
        assert op.scope.parent is not None
        return op.scope.parent
    return op.scope


def _to_arrow(cols: tuple[np.ndarray, ...], times: np.ndarray, diff: np.ndarray) -> pa.Table:
    import pickle

    arrays: dict[str, pa.Array] = {}
    for i, c in enumerate(cols):
        if c.dtype == object:
            try:
                arrays[f"c{i}"] = pa.array(c, from_pandas=False)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                arrays[f"p{i}"] = pa.array([pickle.dumps(v) for v in c.tolist()], pa.binary())
        else:
            arrays[f"c{i}"] = pa.array(c)
    for k in range(times.shape[1]):
        arrays[f"t{k}"] = pa.array(times[:, k])
    arrays["diff"] = pa.array(diff)
    return pa.table(arrays)


def _object_values(col: pa.ChunkedArray) -> Any:
    """An Arrow column as Python values (None for NULL), vectorized where Arrow can."""
    t = col.type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        arr = col.fill_null(False if pa.types.is_boolean(t) else 0).to_numpy().astype(object)
        if col.null_count:
            arr[col.is_null().to_numpy(zero_copy_only=False)] = None
        return arr
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return col.to_numpy(zero_copy_only=False)
    return col.to_pylist()


def _from_arrow(table: pa.Table, op: Operator, key: str) -> tuple[Any, ...]:
    import pickle

    cols = []
    for i, d in enumerate(op.checkpoint_dtypes(key)):
        if f"p{i}" in table.column_names:
            vals = [pickle.loads(v) for v in table.column(f"p{i}").to_pylist()]
        else:
            col = table.column(f"c{i}")
            vals = _object_values(col) if d == np.dtype(object) else col.to_numpy()
        arr = np.empty(len(vals), dtype=d) if d == np.dtype(object) else None
        if arr is not None:
            arr[:] = vals
            cols.append(arr)
        else:
            cols.append(np.asarray(vals, dtype=d))
    depth = sum(1 for n in table.column_names if n.startswith("t"))
    times = (
        np.column_stack([table.column(f"t{k}").to_numpy() for k in range(depth)])
        if depth
        else np.zeros((table.num_rows, 0), dtype=np.int64)
    )
    return tuple(cols), times.astype(np.int64), table.column("diff").to_numpy().astype(np.int64)
