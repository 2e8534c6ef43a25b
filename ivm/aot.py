"""Ahead-of-time compiled kernels: the engine's numba kernels built once per machine into one
native extension module, so that a process runs them without starting numba's compiler.

With numba's JIT alone, a process pays on its first kernel call for numba initializing its
typing and code-generation contexts (~0.3 s), then ~5 ms for every further kernel signature
it loads from numba's on-disk cache (reading and linking its machine code).  An initial load
of the reachability benchmark (W2, 31k reached nodes) spent ~0.4 s of its ~0.48 s there, the
connected-components one ~0.55 s of ~1.2 s.  Importing the module built here takes < 1 ms.

:mod:`ivm.aot_build` (``python -m ivm.aot_build``; ``./run`` calls it on set-up) compiles every
signature of :data:`signatures` with numba's ``pycc`` for this machine's CPU, as numba's JIT
would.  :func:`install` hands each compiled function to its kernel's numba dispatcher as the
overload of that signature, so call sites keep calling the dispatcher: it still checks every
argument's type, and a call with types the table does not list (another dtype, a strided
array) compiles a JIT specialization as before.  Nothing is trusted blindly: the module is
used only when its stamp — a hash of the kernels' sources, numba's and Python's versions and
the CPU — matches this process; otherwise (an edited kernel, another machine) the engine
runs on the JIT alone until the next build.  ``IVM_AOT=0`` turns the module off.

Compiled kernels release the GIL, as the JIT's ``nogil=True`` kernels do (the shard group
runs its shards on threads).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: the package directory; the sources whose text the stamp hashes
PACKAGE = Path(__file__).resolve().parent
SOURCES = ("kernels.py", "difference.py", "aot.py", "aot_build.py")
#: where the module and its stamp are written (ignored by git)
OUT_DIR = PACKAGE / "_aot"
MODULE = "ivm_kernels_aot"
STAMP = OUT_DIR / f"{MODULE}.json"

_lock = threading.Lock()
_loaded: list[Any] = []  # [module or None] once looked for
#: (kernel module, kernel name, argument types) -> the compiled function installed
INSTALLED: dict[tuple[str, str, tuple[Any, ...]], Callable[..., Any]] = {}


@functools.cache
def signatures() -> dict[str, dict[str, list[tuple[Any, ...]]]]:
    """Kernel module -> kernel name -> the argument types compiled ahead of time: the types
    the engine's own arrays have (``uint64`` hashes, ``int64`` times, diffs and integer
    columns, C-contiguous), as its call sites pass them.  Built once (not to be changed:
    :func:`install` and :mod:`ivm.kernel_entries` read it)."""
    from numba import types

    u64 = types.Array(types.uint64, 1, "C")
    u64_ro = types.Array(types.uint64, 1, "C", readonly=True)
    i64 = types.Array(types.int64, 1, "C")
    i64_ro = types.Array(types.int64, 1, "C", readonly=True)
    f64 = types.Array(types.float64, 1, "C")
    times = types.Array(types.int64, 2, "C")
    b, i, u = types.boolean, types.int64, types.uint64
    run = (u64, u64, u64, times, i64)  # sortkey, keyhash, rowhash, times, diff
    key_run = (u64, u64, times, i64, i64)  # sortkey, keyhash, times, diff, key column

    def cols(n: int) -> Any:
        return types.UniTuple(i64, n)

    return {
        "ivm.kernels": {
            "lower_bounds": [(u64, u64)],
            "probe_run": [(u64, u64, times, u64, i64, b, i, i, i64, b)],
            "sum_run": [(u64, u64, times, i64, u64, b, i, i, i64, i64, b)],
            "group_hashes": [(u64, i64)],
            "hash_group_sums": [(u64, i64)],
            "first_of_hashes": [(u64,)],
            "distinct_changes": [(i64, i64, i64, i)],
            "sort_run": [(u64, u64, times, i64, b, i)],
            "sort_key_run": [(u64, times, i64, i64, b, i)],
            "mix_hashes": [(u64, u64, u), (u64, u64_ro, u)],
            "mix_offset": [(u64, u), (u64_ro, u)],
            "mix_int_offset": [(i64, u), (i64_ro, u)],
            "mix_int_hashes": [(u64, i64, u), (u64, i64_ro, u)],
            "radix_order": [(u64,)],
            "counting_order": [(i64, i)],
            "merge_runs": [run * 2],
            "merge_key_runs": [key_run * 2],
            "push_key_run": [(u64, u64, times, i64, i64, u64, times, i64, i64, b, i)],
            "stage_key_batch": [(i64, i64, u, i, i, b, i)],
            "merge_int_runs": [(*run, cols(n), *run, cols(n)) for n in range(2, 8)],
            "stage_int_rows": [
                *[(u64, u64, cols(n), i64, i, i, b, i) for n in range(2, 8)],
                (u64, u64, types.UniTuple(i64_ro, 2), i64, i, i, b, i),
            ],
            "consolidate_sorted": [(u64, u64, i64)],
            "consolidate_by_owner": [(i64, u64, i64, i)],
            "take_concat": [(i64, i64, i64), (u64, u64, i64), (f64, f64, i64)],
        },
        "ivm.difference": {
            "abs_max": [(i64,)],
            "add_arrays": [(i64, i64)],
            "mul_arrays": [(i64, i64)],
            "mul_gathered": [(i64, i64, i64)],
            "segment_sums": [(i64, i64)],
            "add_at": [(i64, i64, i64)],
        },
    }


def symbol(module: str, name: str, index: int) -> str:
    return f"{module.rsplit('.', 1)[-1]}__{name}__{index}"


def stamp() -> dict[str, str]:
    """What a built module must match to be used by this process."""
    import llvmlite.binding as llvm
    import numba

    digest = hashlib.blake2b(digest_size=16)
    for name in SOURCES:
        digest.update((PACKAGE / name).read_bytes())
    return {
        "sources": digest.hexdigest(),
        "numba": numba.__version__,
        "python": sys.version,
        "cpu": llvm.get_host_cpu_name(),
        "features": llvm.get_host_cpu_features().flatten(),
    }


def _disabled() -> bool:
    return os.environ.get("IVM_AOT", "1").strip().lower() in ("0", "false", "no", "off")


def is_current() -> bool:
    """Whether a module built for this machine and these sources is in place."""
    try:
        return bool(json.loads(STAMP.read_text()) == stamp())
    except (OSError, ValueError):
        return False


def module() -> Any | None:
    """The built module, imported once (None: turned off, not built, or stale)."""
    with _lock:
        if not _loaded:
            _loaded.append(None if _disabled() or not is_current() else _import())
        return _loaded[0]


def _import() -> Any | None:
    path = next(OUT_DIR.glob(f"{MODULE}.*.so"), None)
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location(MODULE, path)
    if spec is None or spec.loader is None:
        return None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def install(kernel_module: str, namespace: dict[str, Any]) -> int:
    """Give the dispatchers of ``kernel_module`` (its ``namespace``) their compiled
    functions; returns how many signatures were installed."""
    mod = module()
    if mod is None:
        return 0
    n = 0
    for name, sigs in signatures()[kernel_module].items():
        dispatcher = namespace[name]
        for index, args in enumerate(sigs):
            fn = getattr(mod, symbol(kernel_module, name, index), None)
            if fn is None:  # the stamp matched, so the table did too; kept defensive
                continue
            # numba's own way to add an overload (Dispatcher.add_overload): the argument
            # types' codes and a CPython-callable compiled function
            dispatcher._insert([t._code for t in args], fn, False)
            INSTALLED[(kernel_module, name, tuple(args))] = fn
            n += 1
    return n


def compiled(kernel_module: str, name: str, args: tuple[Any, ...]) -> Callable[..., Any] | None:
    """The compiled function installed for that kernel and those argument types, if any."""
    return INSTALLED.get((kernel_module, name, tuple(args)))
