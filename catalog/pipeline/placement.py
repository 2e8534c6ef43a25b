"""Where a refresh's epoch runs: in this process, or sharded on a cluster (issue 17).

The refresh pipeline steps a group's dataflow through an :class:`EpochRunner`.  Without one
the epoch runs in this process (:meth:`ivm.Dataflow.step`).  A runner may run it elsewhere.
The Spark one is ``spark_exec.executor_policy.ShardedRefresh``: one barrier stage of N shard
engines (``docs/design/2026-11-23-sharded-execution.md``).  In both cases the in-process
dataflow ends the epoch holding the epoch's state and view changes.  So the phases after
``step`` (write the outputs, commit one Delta version per changed view) are the same
whichever executor ran the epoch.

After a sharded epoch the dataflow holds no state (:func:`release_state`): the shards'
checkpoints hold it, and the group checkpoint names them (``Placement.shard_state``,
catalog.pipeline.meta.ShardRef).  An epoch run here on such a group first merges them
(:func:`load_shard_state`), once.

:class:`GroupBuilder` is a group's build as a picklable function of a dataflow.  Every shard
uses it to build its part of the group, with the same code as :func:`build_group`.

Nothing here imports Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import ivm
from catalog.pipeline.groups import BuiltGroup, GroupSpec, build_group
from catalog.pipeline.languages import GroupDataflow, language_of
from catalog.pipeline.meta import ShardRef

EXECUTORS = ("auto", "local", "spark")
#: the view property that overrides where a view's group runs: ``TBLPROPERTIES
#: ('ivm.executor' = ...)``, or ``WITH (executor = ...)`` (the same property, short name)
EXECUTOR_PROPERTY = "ivm.executor"
EXECUTOR_KEYS = (EXECUTOR_PROPERTY, "executor")


@dataclass(frozen=True)
class Placement:
    """Where one epoch ran, and what it cost when it ran sharded.

    ``executor`` is ``"local"`` (this process) or ``"spark <master>"``.  ``reason`` says why
    the policy chose it.  ``shard_rows`` holds the arranged rows per shard (the balance).
    ``rounds`` counts the exchange rounds.  ``attempts_failed`` counts the attempts retried
    before this one.  ``shard_state``: the shard checkpoints that hold the state after the
    epoch (the group checkpoint names them instead of holding the state).
    """

    executor: str = "local"
    reason: str = ""
    shard_rows: tuple[int, ...] = ()
    rounds: int = 0
    bytes_exchanged: int = 0
    attempts_failed: int = 0
    seconds: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)
    shard_state: ShardRef | None = None

    @property
    def sharded(self) -> bool:
        return bool(self.shard_rows)

    def describe(self) -> str:
        """One line for reports and EXPLAIN."""
        why = f" ({self.reason})" if self.reason else ""
        if not self.sharded:
            return f"ran in-process{why}"
        total = sum(self.shard_rows) or 1
        shares = ", ".join(f"{r} ({100 * r / total:.0f}%)" for r in self.shard_rows)
        retried = (
            f", {self.attempts_failed} failed attempt(s) retried" if self.attempts_failed else ""
        )
        return (
            f"ran on {self.executor}{why}: {len(self.shard_rows)} shards, arranged rows per "
            f"shard {shares}; {self.rounds} exchange rounds; {self.bytes_exchanged} bytes "
            f"exchanged{retried}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "executor": self.executor,
            "reason": self.reason,
            "shard_rows": list(self.shard_rows),
            "rounds": self.rounds,
            "bytes_exchanged": self.bytes_exchanged,
            "attempts_failed": self.attempts_failed,
        }


LOCAL = Placement()


class EpochRunner(Protocol):
    """Runs one epoch of a group whose input changes are already sent.

    The runner returns the epoch's differences and where it ran.  Afterwards ``group.g`` is
    at ``epoch`` and holds the epoch's state and output changes, as if ``g.step`` had run.
    """

    def step(self, group: BuiltGroup, epoch: int) -> tuple[int, Placement]: ...


def step_in_process(group: BuiltGroup, epoch: int, reason: str = "") -> tuple[int, Placement]:
    """The epoch in this process (:meth:`ivm.Dataflow.step`), after merging the shards'
    state into it if a sharded epoch left it there."""
    load_shard_state(group)
    report = group.g.step(epoch=epoch)
    return report.differences, Placement(reason=reason) if reason else LOCAL


@dataclass(frozen=True)
class GroupBuilder:
    """Builds ``spec``'s dataflow into a given ``g``: the shards' copy of :func:`build_group`."""

    spec: GroupSpec

    def __call__(self, g: ivm.Dataflow) -> None:
        spec = self.spec
        flow = GroupDataflow(spec.name, spec.views, {t.name: t for t in spec.tables})
        flow.g = g
        for v in spec.views:
            language_of(v).compile(flow, v)


def load_shard_state(group: BuiltGroup) -> None:
    """Sharded -> local: merge the shard checkpoints ``group.shard_ref`` names into the
    group's dataflow (changes already sent to it stay pending); nothing if it has none."""
    from ivm.shard.reshard import merged_checkpoint

    ref = group.shard_ref
    if ref is None:
        return
    group.g.load_state(merged_checkpoint(ref.directory, GroupBuilder(group.spec), ref.shards))
    group.shard_ref = None


def release_state(group: BuiltGroup, ref: ShardRef, epoch: int) -> None:
    """After a sharded epoch: the group's dataflow becomes an empty build at ``epoch``
    whose state is the shard checkpoints ``ref`` (the driver keeps none of it); the
    epoch's view changes are set on its outputs afterwards."""
    fresh = build_group(None, group.spec)
    group.g, group.feeds, group.outputs = fresh.g, fresh.feeds, fresh.outputs
    group.g.epoch = epoch
    group.shard_ref = ref
