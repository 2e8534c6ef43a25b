"""Compiled kernels called without numba's per-call type dispatch, for the trace's hot loop.

Calling a numba kernel first types every argument to pick the compiled version (about
0.3 µs for the ten arguments of :func:`ivm.kernels.sum_run`); a small change calls the
trace kernels ~80 times a step, once per run of every trace it reads, so a W2 step spent
~7% of its CPU there.  This module gives each of those kernels' entry point for one fixed
signature: a call goes straight to the compiled code.

An entry point does **not** check its arguments: an array of another dtype or layout
would be read as if it had the declared one.  So it is only for call sites whose arrays
are known: a trace's runs (every run's arrays are built by the engine — sorted, gathered
or merged — C-contiguous, ``uint64`` hashes, ``int64`` times and diffs) and the caller's
arrays checked once per read (:func:`plain`), falling back to the dispatcher otherwise.
Each entry point is the ahead-of-time compiled function when :mod:`ivm.aot` has one,
otherwise compiled (or loaded from numba's cache) on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ivm import aot, kernels

#: the kernels called through their entry points; each one's signature is the first that
#: :func:`ivm.aot.signatures` lists for it (the types the engine's own arrays have):
#: sum_run (sortkey, keyhash, times, diff, probe_hash, by_time, upto, iter_bits, sums,
#: next, want), probe_run (sortkey, keyhash, times, probe_hash, after, by_time, upto,
#: iter_bits, next, want), merge_runs ((sortkey, keyhash, rowhash, times, diff) of each run)
NAMES = ("sum_run", "probe_run", "merge_runs")


def signature(name: str) -> tuple[Any, ...]:
    """The argument types of kernel ``name``'s entry point."""
    return aot.signatures()["ivm.kernels"][name][0]


def entry_point(name: str) -> Callable[..., Any]:
    """The compiled entry point of kernel ``name`` for its :func:`signature` types."""
    sig = signature(name)
    built = aot.compiled("ivm.kernels", name, sig)
    if built is not None:  # compiled ahead of time: no checks either, same contract
        return built
    kernel = getattr(kernels, name)
    kernel.compile(sig)
    # ``entry_point`` is an attribute of numba's compile result, not a documented API: a
    # numba without it gets the dispatcher, which is slower but types its arguments
    entry: Callable[..., Any] | None = getattr(kernel.overloads.get(sig), "entry_point", None)
    return entry if entry is not None else kernel


def __getattr__(name: str) -> Callable[..., Any]:
    # first use of a kernel: compile (or load) it, and keep it as a module attribute
    if name not in NAMES:
        raise AttributeError(name)
    f = entry_point(name)
    globals()[name] = f
    return f


_DT_U64 = np.dtype(np.uint64)
_DT_I64 = np.dtype(np.int64)


def plain(probes: np.ndarray, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the arrays a reader passed can go to an entry point as they are: ``probes``
    ``uint64`` and ``a``, ``b`` ``int64``, all C-contiguous.  Otherwise the reader calls
    the dispatcher, which types them."""
    return (
        (probes.dtype is _DT_U64 or probes.dtype == _DT_U64)
        and (a.dtype is _DT_I64 or a.dtype == _DT_I64)
        and (b.dtype is _DT_I64 or b.dtype == _DT_I64)
        and probes.flags.c_contiguous
        and a.flags.c_contiguous
        and b.flags.c_contiguous
    )
