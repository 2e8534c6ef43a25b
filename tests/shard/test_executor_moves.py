"""The per-epoch executor policy, and a view moving between the in-process and the sharded
executor through its checkpoint (driver side: no Spark job runs here)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import ivm
from ivm.shard import ShardGroup
from ivm.shard.state_files import read_tables
from spark_exec.sharded import (
    DatalogProgram,
    ExecutorPolicy,
    ShardedEpochError,
    SparkShardedExecutor,
)

PROGRAM = DatalogProgram(
    """
    .decl e(x: number, y: number)  .input e
    .decl path(x: number, y: number) .output path
    .decl deg(x: number, n: number) .output deg
    path(x, y) :- e(x, y).
    path(x, z) :- path(x, y), e(y, z).
    deg(x, n) :- e(x, _), n = count : { e(x, _) }.
    """
)


def test_policy() -> None:
    pol = ExecutorPolicy(memory_budget_bytes=1 << 30, bytes_per_row=1000)
    assert pol.choose(state_rows=10_000, change_rows=1) == "local"  # a 1-row change
    assert pol.choose(state_rows=0, change_rows=10_000_000) == "spark"  # an initial load
    assert pol.choose(state_rows=2_000_000, change_rows=1) == "spark"  # beyond the budget
    assert pol.choose(state_rows=2_000_000, change_rows=1, override="local") == "local"
    assert pol.choose(state_rows=0, change_rows=1, override="spark") == "spark"
    with pytest.raises(ShardedEpochError, match="'auto', 'local' or 'spark'"):
        pol.choose(1, 1, override="cluster")


def test_checkpoint_moves_local_to_sharded_and_back(tmp_path: Path) -> None:
    rng = random.Random(2)
    single = ShardGroup(PROGRAM, 1)
    single.input("e").insert([(rng.randrange(15), rng.randrange(15)) for _ in range(30)])
    single.step()
    state = single.graphs[0].state()

    ex = SparkShardedExecutor(None, PROGRAM, 3, tmp_path)
    ex.adopt(state)
    assert (tmp_path / "CURRENT").read_text() == "1-adopted" and ex.epoch == 1
    # the shard checkpoints load into a 3-shard group that continues exactly
    shards = ShardGroup(PROGRAM, 3)
    base = tmp_path / "checkpoints" / "1-adopted"
    shards.load_states([read_tables(base / f"shard-{p}.arrow") for p in range(3)])
    for grp in (single, shards):
        grp.input("e").insert([(3, 4), (4, 3)])
        grp.step()
    for name in ("path", "deg"):
        assert shards.output(name).counts() == single.output(name).counts()
    # and back: CURRENT's shard checkpoints merged into one single-process checkpoint
    back = ivm.Dataflow()
    PROGRAM(back)
    back.load_state(ex.export_single())
    assert back.epoch == 1
    fresh = ShardGroup(PROGRAM, 1)
    fresh.load_states([state])
    for name in ("path", "deg"):
        assert back.outputs[name].counts() == fresh.output(name).counts()
