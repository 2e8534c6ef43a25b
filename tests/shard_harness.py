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


def counted(counts: dict[tuple, int]) -> Counter:
    """``{row: count}`` keyed by the values' reprs: NaN equals NaN, nested values (tuples,
    which Arrow cannot always type) compare as they are."""
    return Counter({tuple(map(repr, row)): c for row, c in counts.items()})


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

    def step(self) -> ivm.StepReport:
        """Step every group, check the outputs; the single process's report."""
        reports = {n: grp.step() for n, grp in self.groups.items()}
        self.epochs += 1
        self.check()
        return reports[1]

    def check(self) -> None:
        ref = self.groups[1]
        for name in self.outputs:
            want_changes = counted(ref.output(name).changed_counts())
            want_counts = counted(ref.output(name).counts())
            # join_at_arrival may keep negative counts (its documented semantics)
            valid = all(c > 0 for c in want_counts.values())
            for n, grp in self.groups.items():
                if n == 1:
                    continue
                out = grp.output(name)
                where = f"output {name!r}, {n} shards, epoch {self.epochs}"
                assert counted(out.changed_counts()) == want_changes, f"changes differ: {where}"
                assert counted(out.counts()) == want_counts, f"contents differ: {where}"
                if valid:
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
