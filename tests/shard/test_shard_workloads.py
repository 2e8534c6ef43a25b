"""The oracle loop the cluster tests use (``bench.shard_workloads.run_epochs``), without
Spark: 2 shards in lockstep stand in the executor's place (``ShardGroup``), so the
workloads' epochs are checked here too, and a wrong epoch is caught."""

from __future__ import annotations

from typing import Any

import pytest

from bench.shard_workloads import make, run_epochs
from ivm.shard import ShardGroup
from spark_exec.sharded import EpochResult, ShardReport


class Lockstep:
    """``SparkShardedExecutor``'s interface over 2 shards in this thread; ``drop`` removes
    the first changed row of every epoch (a wrong executor)."""

    def __init__(self, build: Any, drop: bool = False) -> None:
        self.group = ShardGroup(build, 2)
        self.drop = drop

    def send(self, name: str, cols: Any, diff: int) -> None:
        self.group.input(name).send(cols, diff)

    def step(self) -> EpochResult:
        self.group.step()
        g0 = self.group.graphs[0]
        changes = {n: self.group.output(n).changes() for n in g0.outputs}
        if self.drop:
            changes = {n: t.slice(1) for n, t in changes.items()}
        stats = [s.stats.per_epoch[-1] for s in self.group.schedulers]
        shards = [
            ShardReport(
                p, 0, True, rows, st["rounds"], st["loop_rounds"], st["bytes_sent"], 0, 0, 0, 0
            )
            for p, (rows, st) in enumerate(zip(self.group.balance().rows, stats, strict=True))
        ]
        return EpochResult(g0.epoch, 0, "in-process, 2 shard(s)", changes, shards, 0.0)


@pytest.mark.parametrize("name", ["depth20", "w2", "w3"])
def test_workload_epochs_on_two_shards_equal_one_process(name: str) -> None:
    epochs = list(run_epochs(make(name, "tiny", 3), Lockstep(make(name).build)))
    assert len(epochs) == 4 and epochs[0]["changed_rows"] > 0
    assert all(0.4 <= s <= 0.6 for e in epochs for s in e["shares"]), epochs


def test_a_wrong_epoch_is_caught() -> None:
    w = make("w3", "tiny", 1)
    with pytest.raises(AssertionError, match="w3/w3: epoch 1 differs from in-process"):
        list(run_epochs(w, Lockstep(w.build, drop=True)))
