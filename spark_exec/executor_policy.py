"""Where each epoch of a view group runs: in this process, or sharded on Spark (issue 17).

:class:`ShardedRefresh` is the refresh pipeline's epoch runner
(:class:`catalog.pipeline.placement.EpochRunner`).  A Session makes one.  For each epoch it:

1. finds the group's override: the views' ``TBLPROPERTIES ('ivm.executor' = 'spark' |
   'local' | 'auto')`` or ``WITH (executor = ...)``, else the Session's ``executor``
   setting.  A group's views must
   not ask for different executors;
2. asks :class:`~spark_exec.sharded.ExecutorPolicy` where the epoch runs, from the state
   held (arranged rows), the change sent and the memory budget
   (``docs/design/2026-11-23-sharded-execution.md`` §4).  The override wins; otherwise a
   state beyond the budget or a large change (an initial load, a backfill) runs sharded,
   and a small change runs in-process;
3. runs the epoch in-process (:meth:`ivm.Dataflow.step`), or as one Spark barrier stage of
   ``shards`` engines (:class:`~spark_exec.sharded.SparkShardedExecutor`, its checkpoints
   under ``<warehouse>/_ivm/shards/<group>/<fingerprint>/``).

The group's catalog checkpoint stays the truth, so a view moves between the executors
through it.  After a sharded epoch the group checkpoint does not hold the state: it names
the shard checkpoints the epoch's shards wrote (``catalog.pipeline.meta.ShardRef``), and
the driver's dataflow is an empty build (``release_state``); it keeps only the epoch's
merged view changes, which it commits (one Delta version per changed view and epoch).  The
next sharded epoch starts from the named shard checkpoints: no merge, no split.  An
in-process epoch merges them into the driver once (``load_shard_state``); a sharded epoch
after in-process ones splits the in-process state (``adopt``).  Until the group checkpoint
commits, it still names the previous shard checkpoints, which stay on disk (a crash leaves
the epoch before or after); the next sharded epoch removes the ones no longer named.  A
failed barrier stage (a lost executor) is re-run from the named checkpoint, up to
``max_attempts`` times, before the refresh fails.  If it fails, nothing was committed.

When the memory budget was set (a Session argument, ``IVM_EXECUTOR_MEMORY_BUDGET``,
``[executor] memory_budget``, an ``executor_policy``), an in-process epoch whose state is
estimated past it is refused (:class:`ExecutorBudgetError`, naming the budget and what to
set).

Limitation: the epoch's input changes and its view changes still pass through the driver
(read from Delta, written as the shards' Arrow input files; merged from the shards'
change files for the Delta commit).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ivm
from catalog.errors import CatalogError
from catalog.pipeline.groups import BuiltGroup, GroupSpec
from catalog.pipeline.meta import ShardRef
from catalog.pipeline.placement import (
    EXECUTOR_KEYS,
    EXECUTOR_PROPERTY,
    EXECUTORS,
    GroupBuilder,
    Placement,
    load_shard_state,
    release_state,
    step_in_process,
)
from ivm.errors import IvmError
from spark_exec.sharded import EpochResult, ExecutorPolicy, SparkShardedExecutor


class ExecutorSettingError(IvmError, ValueError):
    """A Session's ``executor`` or ``shards`` setting that cannot be used."""


class ExecutorBudgetError(IvmError, MemoryError):
    """An epoch asked to run in-process whose state is estimated past the executor policy's
    memory budget: refused before it starts (nothing is written)."""


def check_budget(policy: ExecutorPolicy, state: int, change: int, group: str) -> None:
    """Refuse an in-process epoch whose estimated state, ``(state + change) rows x
    bytes_per_row``, exceeds ``policy.memory_budget_bytes`` (the sharded path holds it in
    shards instead)."""
    need = (state + change) * policy.bytes_per_row
    if need > policy.memory_budget_bytes:
        raise ExecutorBudgetError(
            f"refresh group {group}: its epoch would hold about {state + change} rows x "
            f"{policy.bytes_per_row} B = {need >> 20} MiB in this process, over the executor "
            f"memory budget of {policy.memory_budget_bytes >> 20} MiB; nothing was written. "
            "Run it sharded: executor 'auto' or 'spark' (TBLPROPERTIES ('ivm.executor' = "
            "'auto'), Session(executor='auto'), IVM_EXECUTOR=auto, [executor] default), or "
            "raise the budget (IVM_EXECUTOR_MEMORY_BUDGET, [executor] memory_budget, "
            "--executor-memory-budget, Session(executor_policy=ExecutorPolicy(...)))"
        )


def check_executor(value: str, where: str) -> str:
    """``value`` as one of 'auto', 'local', 'spark' (else an error naming ``where``)."""
    v = str(value).strip().lower()
    if v not in EXECUTORS:
        raise ExecutorSettingError(
            f"{where}: executor must be 'auto', 'local' or 'spark', not {value!r}"
        )
    return v


def group_override(spec: GroupSpec, default: str) -> str:
    """The executor the group's views ask for (``ivm.executor``), else ``default``."""
    asked: dict[str, str] = {}
    for v in spec.views:
        for key, value in v.options.properties:
            if key.lower() in EXECUTOR_KEYS:
                if value.strip().lower() not in EXECUTORS:
                    raise CatalogError(
                        f"view {v.name}: TBLPROPERTIES '{EXECUTOR_PROPERTY}' must be 'auto', "
                        f"'local' or 'spark', not {value!r}"
                    )
                asked[v.name] = value.strip().lower()
    kinds = set(asked.values())
    if len(kinds) > 1:
        detail = ", ".join(f"{k} = {v!r}" for k, v in sorted(asked.items()))
        raise CatalogError(
            f"refresh group {spec.name}: its views ask for different executors ({detail}); "
            f"one dataflow runs in one place: give them the same '{EXECUTOR_PROPERTY}'"
        )
    return kinds.pop() if kinds else default


def _check_hash_seed(spark: Any) -> None:
    """The driver splits and merges shard states with the workers' string hash: Python's,
    so both need the same ``PYTHONHASHSEED`` (PySpark gives workers ``0`` unless set)."""
    want = spark.sparkContext.getConf().get("spark.executorEnv.PYTHONHASHSEED", "0")
    if os.environ.get("PYTHONHASHSEED") != want:
        raise ExecutorSettingError(
            f"sharded epochs need the driver's PYTHONHASHSEED to equal the workers' ({want}), "
            f"not {os.environ.get('PYTHONHASHSEED')!r}: string keys are routed by Python's "
            f"hash; start Python with PYTHONHASHSEED={want}"
        )


_LOCAL_MASTER = re.compile(r"^local(?:\[\s*(\*|\d+)\s*(?:,\s*\d+\s*)?\])?$")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]$")


def master_slots(master: str, task_cpus: int = 1) -> int | None:
    """Tasks a Spark master runs at once when its name says so (``local``, ``local[N]``,
    ``local[*]``, ``local-cluster[W,C,M]``); ``None`` for a cluster manager (``spark://``,
    ``yarn``, ``k8s://``), whose executors come and go: Spark checks those slots itself."""
    m = _LOCAL_MASTER.match(master.strip())
    if m:
        n = m.group(1)
        cores = 1 if n is None else (os.cpu_count() or 1) if n == "*" else int(n)
        return cores // max(task_cpus, 1)
    m = _LOCAL_CLUSTER.match(master.strip())
    if m:
        return int(m.group(1)) * (int(m.group(2)) // max(task_cpus, 1))
    return None


def check_barrier_slots(spark: Any, shards: int, group: str) -> None:
    """Refuse a sharded epoch the master cannot run: a barrier stage starts all its
    ``shards`` tasks at once, and Spark would otherwise retry the stage for minutes."""
    master = spark.sparkContext.master
    cpus = int(spark.sparkContext.getConf().get("spark.task.cpus", "1"))
    slots = master_slots(master, cpus)
    if slots is not None and shards > slots:
        raise ExecutorSettingError(
            f"refresh group {group}: a sharded epoch runs its {shards} shards as one Spark "
            f"barrier stage, all at once, but master {master} runs at most {slots} tasks at "
            f"once; set shards to {slots} or less (Session(shards=...), IVM_SHARDS, "
            "[executor] shards), or use a cluster master (spark_master / IVM_SPARK_MASTER, "
            "e.g. 'local-cluster[2,1,1024]' or 'spark://host:7077')"
        )


def pending_rows(g: ivm.Dataflow) -> int:
    """Rows sent to the dataflow's inputs and not yet stepped (the epoch's change)."""
    return sum(len(b) for op in g.inputs.values() for b in op.pending)


def state_rows(g: ivm.Dataflow) -> int:
    """Rows the dataflow holds in its traces (arrangements, reduces, outputs)."""
    return int(sum(g.arrangement_rows().values()))


def reason_for(policy: ExecutorPolicy, state: int, change: int, override: str) -> str:
    """Why :meth:`ExecutorPolicy.choose` chose what it chose (for reports and EXPLAIN)."""
    if override != "auto":
        return f"executor = '{override}'"
    need = (state + change) * policy.bytes_per_row
    if need > policy.memory_budget_bytes:
        return (
            f"auto: state {state + change} rows ~ {need >> 20} MiB > budget "
            f"{policy.memory_budget_bytes >> 20} MiB"
        )
    if change >= policy.large_change_rows:
        return f"auto: change of {change} rows >= {policy.large_change_rows}"
    return f"auto: change of {change} rows, state {state} rows fit in-process"


def _take_changes(group: BuiltGroup, ref: ShardRef, epoch: int, result: EpochResult) -> int:
    """After a sharded epoch: the group's dataflow holds no state (the shard checkpoints
    ``ref`` do, and the group checkpoint will name them), only the epoch's merged view
    changes, which the refresh commits; the number of changed output rows."""
    release_state(group, ref, epoch)
    changed = 0
    for name, o in group.g.outputs.items():
        o.last_changes = result.batches[name]
        changed += len(o.last_changes)
    return changed


@dataclass
class ShardedRefresh:
    """The Session's epoch runner: the hybrid policy, and sharded epochs on Spark."""

    #: the SparkSession that runs sharded epochs (started lazily); one returning ``None``
    #: runs the shards as threads of this process (spark_exec.sharded.run_in_threads)
    spark: Callable[[], Any]
    root: Path  # where shard checkpoints, exchange files and epoch inputs live
    shards: int = 2
    default: str = "local"
    policy: ExecutorPolicy = field(default_factory=ExecutorPolicy)
    max_attempts: int = 3
    #: fault injection for tests: group -> fault of its next sharded epoch's first attempt
    #: (``kill:<p>``: shard p SIGKILLs its executor JVM in exchange round 5)
    faults: dict[str, str] = field(default_factory=dict)
    #: refuse an in-process epoch past the policy's memory budget (:func:`check_budget`);
    #: the Session sets it when the budget was set (not the default)
    enforce_budget: bool = False
    #: the last placement of each group (EXPLAIN shows it)
    last: dict[str, Placement] = field(default_factory=dict)
    _executors: dict[tuple[str, str], SparkShardedExecutor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.default = check_executor(self.default, "Session(executor=...)")
        if not isinstance(self.shards, int) or self.shards < 1:
            raise ExecutorSettingError(
                f"Session(shards=...): a whole number of shards >= 1, not {self.shards!r}"
            )

    def choose(self, group: BuiltGroup) -> tuple[str, str]:
        """Where the group's next epoch runs (``"local"`` or ``"spark"``), and why; an
        in-process epoch past the memory budget is refused (:func:`check_budget`)."""
        override = group_override(group.spec, self.default)
        held = group.shard_ref.rows if group.shard_ref is not None else state_rows(group.g)
        state, change = held, pending_rows(group.g)
        where = self.policy.choose(state, change, override)
        if where == "local" and self.enforce_budget:
            check_budget(self.policy, state, change, group.spec.name)
        return where, reason_for(self.policy, state, change, override)

    def step(self, group: BuiltGroup, epoch: int) -> tuple[int, Placement]:
        where, why = self.choose(group)
        if where == "local":
            differences, placement = step_in_process(group, epoch, why)
        else:
            differences, placement = self._step_sharded(group, epoch, why)
        self.last[group.spec.name] = placement
        return differences, placement

    # -- sharded epochs ------------------------------------------------------------------------
    def _executor(self, spec: GroupSpec) -> SparkShardedExecutor:
        key = (spec.name, spec.fingerprint)
        ex = self._executors.get(key)
        if ex is None:
            spark = self.spark()
            if spark is not None:
                check_barrier_slots(spark, self.shards, spec.name)
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in spec.name)
            ex = SparkShardedExecutor(
                spark,
                GroupBuilder(spec),
                self.shards,
                self.root / safe / f"{spec.fingerprint}-n{self.shards}",
                max_attempts=self.max_attempts,
            )
            self._executors[key] = ex
        return ex

    def _step_sharded(self, group: BuiltGroup, epoch: int, why: str) -> tuple[int, Placement]:
        ex = self._executor(group.spec)
        if ex.spark is not None:
            _check_hash_seed(ex.spark)
        sent = {name: list(op.pending) for name, op in group.g.inputs.items() if op.pending}
        for op in group.g.inputs.values():
            op.pending.clear()  # the epoch's change goes to the shards
        start = self._shard_start(group, ex)
        ex.collect({start})  # shard checkpoints no group checkpoint names any more
        ex.pending = sent
        ex.fault = self.faults.pop(group.spec.name, None)
        try:
            result = ex.step_from(start, epoch)
        finally:
            ex.fault = None
        assert ex.current is not None
        ref = ShardRef(str(ex.root), ex.current, ex.n, int(sum(result.balance)))
        differences = _take_changes(group, ref, epoch, result)
        placement = Placement(
            executor=result.executor,
            reason=why,
            shard_rows=tuple(result.balance),
            rounds=result.rounds,
            bytes_exchanged=result.bytes_exchanged,
            attempts_failed=len(result.attempts_failed),
            seconds=result.seconds,
            extra={"cache_hits": [s.cache_hit for s in result.shards]},
            shard_state=ref,
        )
        return differences, placement

    @staticmethod
    def _shard_start(group: BuiltGroup, ex: SparkShardedExecutor) -> str | None:
        """The shard checkpoint the epoch starts from.  Sharded -> sharded: the one the
        group checkpoint names (no merge, no split).  Local -> sharded: the in-process
        state split into shard checkpoints (``adopt``), or empty shards for a fresh build.
        Shards of another count are merged here first, then split."""
        ref = group.shard_ref
        if ref is not None and ref.root == str(ex.root) and ref.shards == ex.n:
            return ref.checkpoint
        load_shard_state(group)
        return ex.adopt(group.g.state()) if group.g.epoch != 0 else None

    def explain_lines(self, spec: GroupSpec) -> list[str]:
        """What EXPLAIN says about where the group's epochs run."""
        override = group_override(spec, self.default)
        p = self.policy
        lines = [
            f"executor: {override} ({EXECUTOR_PROPERTY} of the views, else the Session's "
            f"executor = '{self.default}'); {self.shards} shards when sharded",
            "policy: 'local' and 'spark' always run there; 'auto' runs an epoch sharded when "
            f"(state + change rows) x {p.bytes_per_row} B > memory budget "
            f"{p.memory_budget_bytes >> 20} MiB or the change has >= {p.large_change_rows} "
            "rows, else in-process",
        ]
        last = self.last.get(spec.name)
        if last is not None:
            lines.append(f"last epoch: {last.describe()}")
        return lines
