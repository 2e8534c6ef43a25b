"""Run one dataflow unsharded and in-process sharded N ways; compare every epoch.

``Twins(build, counts)`` builds the dataflow with ``build(g)`` once per shard count (N = 1
is the plain single-process dataflow, the oracle), feeds every group the same changes (each
group splits them across its shards differently), steps them together, and checks that
every output's ``changes()`` and ``contents()`` are equal to the single process's.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

import ivm
from ivm.shard import ShardGroup

COUNTS = (1, 2, 3, 7)


def table_rows(t: pa.Table) -> Counter:
    return Counter(tuple(map(repr, r.values())) for r in t.to_pylist())


class Twins:
    """The same dataflow as N-shard groups for each N in ``counts`` (1 first)."""

    def __init__(self, build: Callable[[ivm.Dataflow], Any], counts: Iterable[int] = COUNTS):
        self.groups = {n: ShardGroup(build, n) for n in counts}
        assert 1 in self.groups
        self.outputs = list(self.groups[1].graphs[0].outputs)
        self.epochs = 0

    def send(self, name: str, rows: Any, diff: int = 1) -> None:
        for grp in self.groups.values():
            grp.input(name).send(rows, diff)

    def insert(self, name: str, rows: Any) -> None:
        self.send(name, rows, 1)

    def delete(self, name: str, rows: Any) -> None:
        self.send(name, rows, -1)

    def step(self) -> None:
        for grp in self.groups.values():
            grp.step()
        self.epochs += 1
        self.check()

    def check(self) -> None:
        ref = self.groups[1]
        for name in self.outputs:
            want_changes = table_rows(ref.output(name).changes())
            want_counts = ref.output(name).counts()
            # join_at_arrival may keep negative counts (its documented semantics)
            valid = all(c > 0 for c in want_counts.values())
            want_contents = table_rows(ref.output(name).contents()) if valid else None
            for n, grp in self.groups.items():
                if n == 1:
                    continue
                out = grp.output(name)
                where = f"output {name!r}, {n} shards, epoch {self.epochs}"
                assert table_rows(out.changes()) == want_changes, f"changes differ: {where}"
                assert out.counts() == want_counts, f"contents differ: {where}"
                if valid:
                    assert table_rows(out.contents()) == want_contents, where
                    # each shard's part is a valid multiset (outputs are exchanged by row)
                    for part in out.parts:
                        assert (part.consolidated().diff > 0).all(), where

    def balance(self) -> dict[int, Any]:
        return {n: grp.balance() for n, grp in self.groups.items()}


def drive(
    tw: Twins,
    rng: random.Random,
    gens: dict[str, Callable[[random.Random], tuple]],
    epochs: int = 5,
    batch: int = 12,
) -> None:
    """Random changes to every input: inserts, and deletes of rows inserted before."""
    current: dict[str, list[tuple]] = {name: [] for name in gens}
    for _ in range(epochs):
        for name, gen in gens.items():
            ins = [gen(rng) for _ in range(batch)]
            cur = current[name]
            dels = rng.sample(cur, min(len(cur), batch // 3))
            for r in dels:
                cur.remove(r)
            cur.extend(ins)
            tw.insert(name, ins)
            if dels:
                tw.delete(name, dels)
        tw.step()
