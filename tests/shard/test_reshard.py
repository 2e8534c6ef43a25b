"""A dataflow's state moves between shard counts (1 → 3 → 2 → 1) and stays exact."""

from __future__ import annotations

import random

import pytest
from shard_harness import table_rows

import ivm
from ivm.errors import PlanError
from ivm.library.graphs import connected_components
from ivm.shard import ShardGroup

EDGE = [("src", "int64"), ("dst", "int64")]


def build(g: ivm.Dataflow) -> None:
    e = g.input("e", EDGE)
    t = g.input("t", [("k", "int64"), ("s", "str")])
    g.output(connected_components(e), "wcc")
    g.output(t.reduce("k", [("count",)], plan="accumulable"), "acc")
    g.output(t.reduce("s", [("min", "k"), ("max", "k")], plan="hierarchical"), "hier")
    g.output(t.join(e, [("k", "src")]).project("s", "dst").distinct(), "joined")


def changes(rng: random.Random, cur: dict[str, list[tuple]]) -> dict[str, tuple[list, list]]:
    out = {}
    for name, gen in (
        ("e", lambda: (rng.randrange(40), rng.randrange(40))),
        ("t", lambda: (rng.randrange(40), rng.choice(["x", "y", "zz"]))),
    ):
        ins = [gen() for _ in range(12)]
        dels = rng.sample(cur[name], min(4, len(cur[name])))
        for r in dels:
            cur[name].remove(r)
        cur[name].extend(ins)
        out[name] = (ins, dels)
    return out


def test_state_moves_between_shard_counts() -> None:
    rng = random.Random(11)
    cur: dict[str, list[tuple]] = {"e": [], "t": []}
    ref = ShardGroup(build, 1)
    moving: ShardGroup = ShardGroup(build, 1)
    for count in (1, 3, 2, 1):
        if count != moving.count:
            nxt: ShardGroup = ShardGroup(build, count)
            nxt.reshard_from(moving)
            assert nxt.epoch == moving.epoch
            for name in ref.graphs[0].outputs:
                assert nxt.output(name).counts() == ref.output(name).counts()
            moving = nxt
        for _ in range(2):
            for name, (ins, dels) in changes(rng, cur).items():
                for grp in (ref, moving):
                    grp.input(name).insert(ins)
                    if dels:
                        grp.input(name).delete(dels)
            ref.step()
            moving.step()
            for name in ref.graphs[0].outputs:
                got, want = moving.output(name), ref.output(name)
                assert table_rows(got.changes()) == table_rows(want.changes()), (count, name)
                assert got.counts() == want.counts(), (count, name)


def test_resharding_refuses_another_dataflow() -> None:
    a: ShardGroup = ShardGroup(build, 2)
    b: ShardGroup = ShardGroup(lambda g: g.output(g.input("e", EDGE).distinct(), "d"), 3)
    with pytest.raises(PlanError, match="differently built"):
        b.reshard_from(a)
