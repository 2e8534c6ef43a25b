"""Resource limits of a running epoch: loop iterations, rows held in state, process memory.

A :class:`Limits` is made active for the duration of some work with :func:`active`; while it
is, every loop of a dataflow checks it between iterations (in ``Feedback``, which runs once
per round of a loop), and raises a :class:`ResourceLimitError` when a bound is passed.  The
error propagates out of ``Dataflow.step``, which rolls the epoch back (every operator returns
to its state before the epoch), so a refused epoch leaves nothing half done.

With no active limits (plain engine use) nothing is checked beyond ``Dataflow.loop_limit``.

>>> import ivm
>>> g = ivm.Dataflow()
>>> x = g.input("x", [("n", "int64")])
>>> out = g.output(x.iterate(lambda c: c.map(lambda n: (n + 1,), [("n", "int64")])
...                                   .concat(c).distinct()), "count_up")
>>> x.insert([(0,)])
>>> with active(Limits(max_iterations=50)):
...     g.step()                                            # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
IterationLimitError: a loop did not converge within 50 iterations ...
>>> g.epoch  # rolled back: the epoch never happened
0
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ivm.errors import IvmError

#: Default number of rounds a loop may run in one epoch (each round is one iteration).
DEFAULT_MAX_ITERATIONS = 10_000
#: Default bound on the rows held by all arrangements of a dataflow.
DEFAULT_MAX_STATE_ROWS = 200_000_000
#: Default ``memory_budget``: this fraction of the machine's physical memory.
MEMORY_FRACTION = 0.8
#: State and memory are checked at most this often (seconds) so that tiny rounds stay cheap;
#: the first round of every loop is always checked.
CHECK_INTERVAL = 0.01


class ResourceLimitError(IvmError, RuntimeError):
    """Work that passed a resource limit; the epoch was rolled back.

    ``limit`` names the setting (``max_iterations``, ``max_state_rows``, ``memory_budget``),
    ``value`` its bound, ``view`` the view (or group) concerned when known.
    """

    def __init__(self, message: str, *, limit: str, value: int, view: str | None = None) -> None:
        self.limit = limit
        self.value = value
        self.view = view
        self.detail = message
        super().__init__(message)

    def __str__(self) -> str:
        where = f"view {self.view}: " if self.view else ""
        return (
            f"{where}{self.detail}. The refresh was rolled back; nothing was written. "
            f"If the work is expected, raise {self.limit} (Session({self.limit}=...)); if not, "
            "look for a recursion that never converges (e.g. a counter that keeps growing)"
        )


class IterationLimitError(ResourceLimitError):
    """A loop that did not reach its fixed point within ``max_iterations`` rounds."""


class MemoryLimitError(ResourceLimitError, MemoryError):
    """State (rows held) or process memory (RSS) past its budget."""


@dataclass
class Limits:
    """Bounds checked between loop iterations (``None``: unbounded).

    ``max_iterations``: rounds of one loop in one epoch; ``max_state_rows``: rows held by the
    dataflow's arrangements; ``memory_budget``: resident memory of the process, in bytes.
    """

    max_iterations: int | None = DEFAULT_MAX_ITERATIONS
    max_state_rows: int | None = DEFAULT_MAX_STATE_ROWS
    memory_budget: int | None = None
    rounds: dict[Any, int] = field(default_factory=dict, repr=False)
    last_check: float = field(default=float("-inf"), repr=False)

    def __post_init__(self) -> None:
        for name in ("max_iterations", "max_state_rows", "memory_budget"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise ValueError(f"{name} must be a positive integer or None, not {v!r}")

    def check_round(self, graph: Any, loop: str, key: Any) -> None:
        """Called once per round of a loop (``key``: the loop and its outer time).  Rounds are
        counted every time; state rows and resident memory are read on a loop's first round
        and then at most every :data:`CHECK_INTERVAL` seconds."""
        n = self.rounds.get(key, 0) + 1
        self.rounds[key] = n
        where = f" ({loop})" if loop and loop != "loop" else ""
        if self.max_iterations is not None and n > self.max_iterations:
            raise IterationLimitError(
                f"a loop{where} did not converge within {self.max_iterations} iterations",
                limit="max_iterations",
                value=self.max_iterations,
            )
        if self.max_state_rows is None and self.memory_budget is None:
            return
        now = time.perf_counter()
        if n > 1 and now - self.last_check < CHECK_INTERVAL:
            return
        self.last_check = now
        if self.max_state_rows is not None:
            held = sum(graph.arrangement_rows().values())
            if held > self.max_state_rows:
                raise MemoryLimitError(
                    f"the state grew to {held} rows in arrangements, past "
                    f"max_state_rows={self.max_state_rows} (in a loop{where}, round {n})",
                    limit="max_state_rows",
                    value=self.max_state_rows,
                )
        if self.memory_budget is not None:
            rss = resident_bytes()
            if rss is not None and rss > self.memory_budget:
                raise MemoryLimitError(
                    f"the process holds {rss} bytes, past memory_budget={self.memory_budget} "
                    f"(in a loop{where}, round {n})",
                    limit="memory_budget",
                    value=self.memory_budget,
                )


_ACTIVE: ContextVar[Limits | None] = ContextVar("ivm_limits", default=None)


def current() -> Limits | None:
    """The limits active in this context, if any."""
    return _ACTIVE.get()


@contextlib.contextmanager
def active(limits: Limits | None) -> Iterator[Limits | None]:
    """Make ``limits`` the active limits while the block runs (round counts start at 0)."""
    if limits is not None:
        limits.rounds.clear()
        limits.last_check = float("-inf")
    token = _ACTIVE.set(limits)
    try:
        yield limits
    finally:
        _ACTIVE.reset(token)
        if limits is not None:
            limits.rounds.clear()


def physical_memory() -> int | None:
    """Bytes of physical memory of the machine (``None`` where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def default_memory_budget() -> int | None:
    """The default ``memory_budget``: :data:`MEMORY_FRACTION` of the physical memory."""
    total = physical_memory()
    return int(total * MEMORY_FRACTION) if total else None


def resident_bytes() -> int | None:
    """The process's resident memory in bytes (Linux ``/proc``; ``None`` elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
