"""Transports: how shards exchange batches and agree, and the drivers that use them.

A :class:`Transport` is one shard's end of the group's communication, with three blocking
collectives — :meth:`~Transport.exchange` (send the routed batches, wait for every shard,
receive), :meth:`~Transport.all_min` and :meth:`~Transport.vote` — and :meth:`~Transport.abort`
to tell the others that this shard failed.  :func:`run_shard` runs one shard's epoch on a
transport (one process or thread per shard: the file transport on Spark).

:func:`run_lockstep` needs no transport: it runs N shards in one process, advancing every
shard's :class:`~ivm.shard.scheduler.ShardScheduler` to its next request and answering all
of them at once.  This is the in-process N-shard execution the tests use.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Generator, Sequence
from typing import Any

from ivm.dataflow import StepReport
from ivm.errors import IvmError
from ivm.shard.scheduler import (
    AllMin,
    Delivered,
    Request,
    Routed,
    ShardAborted,
    ShardScheduler,
    Sync,
    Vote,
)


class Transport(abc.ABC):
    """One shard's end of the communication among ``count`` shards."""

    index: int
    count: int

    @abc.abstractmethod
    def exchange(self, outgoing: list[Routed]) -> list[Delivered]:
        """Send every routed batch to its shard; wait for all shards; return the batches
        routed to this shard (ordered by source shard).  A transport may empty
        ``outgoing`` as it sends, so that a sent batch is freed at once."""

    @abc.abstractmethod
    def all_min(self, value: int | None) -> int | None:
        """The minimum of every shard's ``value`` (None counts as no value)."""

    @abc.abstractmethod
    def vote(self, ok: bool) -> bool:
        """True when every shard voted ok."""

    @abc.abstractmethod
    def abort(self, reason: str) -> None:
        """Tell the other shards that this shard failed; their next collective raises
        :class:`ShardAborted`."""

    def answer(self, req: Request) -> Any:
        if isinstance(req, Sync):
            return self.exchange(req.outgoing)
        if isinstance(req, AllMin):
            return self.all_min(req.value)
        if isinstance(req, Vote):
            if not self.vote(req.ok):
                raise ShardAborted(f"shard {self.index}: another shard voted against the epoch")
            return True
        raise IvmError(f"internal: unknown shard request {req!r}")


def run_shard(
    scheduler: ShardScheduler, transport: Transport, epoch: int | None = None
) -> StepReport:
    """One epoch of one shard over a blocking transport."""
    gen = scheduler.step(epoch)
    answer: Any = None
    while True:
        try:
            req = gen.send(answer)
        except StopIteration as stop:
            report: StepReport = stop.value
            return report
        except BaseException as exc:
            transport.abort(f"shard {transport.index}: {type(exc).__name__}: {exc}")
            raise
        try:
            answer = transport.answer(req)
        except ShardAborted as exc:
            with contextlib.suppress(ShardAborted):
                gen.throw(exc)  # the shard rolls back, then re-raises
            raise


def _advance(gen: Generator[Request, Any, StepReport], answer: Any) -> tuple[bool, Any]:
    """(done, request or report)"""
    try:
        return False, gen.send(answer)
    except StopIteration as stop:
        return True, stop.value


def route_lockstep(requests: Sequence[Sync]) -> list[list[Delivered]]:
    """Every shard's inbound batches, ordered by source shard."""
    inbound: list[list[Delivered]] = [[] for _ in requests]
    for req in requests:
        for dst, op_id, time, batch in req.outgoing:
            inbound[dst].append((op_id, time, batch))
    return inbound


def run_lockstep(
    schedulers: Sequence[ShardScheduler], epoch: int | None = None
) -> list[StepReport]:
    """One epoch of N shards in this process, in lockstep; one report per shard.

    If any shard raises, the others are rolled back (:class:`ShardAborted` is thrown into
    them) and the first error propagates, so the epoch is all or nothing on every shard.
    """
    gens = [s.step(epoch) for s in schedulers]
    n = len(gens)
    answers: list[Any] = [None] * n
    reports: list[StepReport | None] = [None] * n
    failed: set[int] = set()
    live = list(range(n))
    try:
        while live:
            reqs: dict[int, Any] = {}
            error: BaseException | None = None
            for p in live:  # advance every shard, even after one failed: all must start
                try:
                    done, got = _advance(gens[p], answers[p])
                except BaseException as exc:
                    failed.add(p)
                    error = error or exc
                    continue
                if done:
                    reports[p] = got
                else:
                    reqs[p] = got
            if error is not None:
                raise error
            if reqs and len(reqs) != len(live):
                raise IvmError("internal: shards disagree on the end of the epoch")
            live = sorted(reqs)
            if not live:
                break
            answers = _answer_all(reqs, answers)
    except BaseException as exc:
        for p in range(n):
            if reports[p] is None and p not in failed:
                # it rolls back and re-raises ShardAborted (or its own rollback error)
                with contextlib.suppress(BaseException):
                    gens[p].throw(ShardAborted(f"shard {p}: epoch aborted by {type(exc).__name__}"))
        raise
    return [r for r in reports if r is not None]


def _answer_all(reqs: dict[int, Any], answers: list[Any]) -> list[Any]:
    """The answers to one collective request of every live shard."""
    kinds = {type(r) for r in reqs.values()}
    if len(kinds) != 1:
        raise IvmError(f"internal: shards made different requests {sorted(map(str, kinds))}")
    live = sorted(reqs)
    first = reqs[live[0]]
    answers = list(answers)
    if isinstance(first, Sync):
        inbound = route_lockstep([reqs[p] for p in live])
        for p in live:
            answers[p] = inbound[p]
    elif isinstance(first, AllMin):
        vals = [r.value for r in reqs.values() if r.value is not None]
        m = min(vals) if vals else None
        for p in live:
            answers[p] = m
    elif isinstance(first, Vote):
        for p in live:
            answers[p] = True
    else:
        raise IvmError(f"internal: unknown shard request {first!r}")
    return answers
