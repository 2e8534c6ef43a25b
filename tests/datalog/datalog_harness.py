"""Helpers for Datalog tests: run a program incrementally beside the naive reference."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from datalog_reference import evaluate
from shard_harness import Twins

import ivm
from datalog import compile_program

Row = tuple[Any, ...]


class Maintained:
    """A program compiled into a fresh dataflow, with the inputs' current contents tracked.

    ``sharded=True`` also runs it in-process sharded N = 2, 3 and 7 ways
    (:class:`shard_harness.Twins`): every step then checks that each sharded run's changes
    and contents equal the single process's, which the reference checks in turn.
    """

    def __init__(self, text: str, *, sharded: bool = False, **kw: Any) -> None:
        self.text = text
        self.twins: Twins | None = None
        if sharded:
            built: list[Any] = []
            self.twins = Twins(lambda g: built.append(compile_program(text, g, **kw)))
            self.g = self.twins.groups[1].graphs[0]
            self.prog = built[0]  # the single process's, built first
        else:
            self.g = ivm.Dataflow()
            self.prog = compile_program(text, self.g, **kw)
        self.current: dict[str, set[Row]] = {name: set() for name in self.prog.new_inputs}

    def send(self, name: str, rows: list[Row], diff: int) -> None:
        """``rows`` into input ``name`` as they are (duplicates too), untracked by ``current``."""
        if self.twins is not None:
            self.twins.send(name, rows, diff)
        elif diff > 0:
            self.prog.new_inputs[name].insert(rows)
        else:
            self.prog.new_inputs[name].delete(rows)

    def change(
        self,
        inserts: Mapping[str, set[Row]] | None = None,
        deletes: Mapping[str, set[Row]] | None = None,
    ) -> ivm.StepReport:
        for name, rows in (deletes or {}).items():
            rows = rows & self.current[name]
            if rows:
                self.send(name, sorted(rows), -1)
                self.current[name] -= rows
        for name, rows in (inserts or {}).items():
            rows = rows - self.current[name]
            if rows:
                self.send(name, sorted(rows), 1)
                self.current[name] |= rows
        return self.step()

    def step(self) -> ivm.StepReport:
        """One epoch (in every sharded run too, checked against the single process)."""
        return self.twins.step() if self.twins is not None else self.g.step()

    def output(self, name: str) -> set[Row]:
        counts = self.prog.outputs[name].counts()
        bad = {row: c for row, c in counts.items() if c != 1}
        assert not bad, f"{name}: rows with multiplicity other than 1: {bad}"
        return set(counts)

    def check(self, expected: Mapping[str, set[Row]] | None = None) -> dict[str, set[Row]]:
        """Every output equals the reference (or ``expected``) on the current inputs."""
        ref = evaluate(self.text, self.current) if expected is None else expected
        for name in self.prog.outputs:
            got = self.output(name)
            want = {tuple(r) for r in ref[name]}
            if got != want:
                raise AssertionError(
                    f"{name} differs from the reference after inputs {self.current}:\n"
                    f"  missing {sorted(want - got)[:20]}\n  extra {sorted(got - want)[:20]}"
                )
        return dict(ref)


def random_edges(rng: random.Random, n: int, m: int) -> set[tuple[int, int]]:
    return {(rng.randrange(n), rng.randrange(n)) for _ in range(m)}


def run_random(
    m: Maintained,
    rng: random.Random,
    steps: int,
    gen: Mapping[str, Callable[[random.Random], Row]],
    batch: int = 3,
    initial: int = 10,
    extra_check: Callable[[Maintained], None] | None = None,
) -> None:
    """Random insert/delete batches on every input; check after every step."""
    m.change(inserts={name: {g(rng) for _ in range(initial)} for name, g in gen.items()})
    m.check()
    if extra_check:
        extra_check(m)
    for _ in range(steps):
        inserts: dict[str, set[Row]] = {}
        deletes: dict[str, set[Row]] = {}
        for name, g in gen.items():
            k = rng.randrange(batch + 1)
            inserts[name] = {g(rng) for _ in range(k)}
            live = sorted(m.current[name])
            deletes[name] = set(rng.sample(live, min(len(live), rng.randrange(batch + 1))))
        m.change(inserts, deletes)
        m.check()
        if extra_check:
            extra_check(m)
