"""Build the engine's ahead-of-time compiled kernels (:mod:`ivm.aot`) for this machine.

``python -m ivm.aot_build`` compiles them unless a module built for these sources, this
numba and this CPU is in place (``--force``: always); ``./run`` calls it on set-up, so an
edited kernel is rebuilt by the next ``./run test``.  It takes a minute or two (numba compiles
each kernel and its inlined helpers once more, for ``pycc``).  A machine where it cannot build
(no C compiler, a numba without ``pycc``) runs the engine on numba's JIT, as before: the build
says so and set-up goes on.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from ivm import aot


def _memoized_unserialize(unserialize: Any) -> Any:
    """numba's ``PythonAPI.unserialize``, emitting code that unpickles each constant once.

    Boxing a returned array needs the ``ndarray`` type, a pickled constant.  The JIT's
    runtime unpickles it through a memo (a Python call, ~0.3 µs); pycc's calls
    ``pickle.loads`` on every call (~0.75 µs a returned array: a W2 step returns ~150).
    The code emitted here keeps the object in a global slot of the module after its first
    unpickling (a new reference is still returned, as before); the GIL is held there.
    """
    from llvmlite import ir
    from numba.core import cgutils

    def memoized(self: Any, structptr: Any) -> Any:
        # serialize_object's constants only (a global per pickled object); anything else
        # is unpickled as before
        if not (
            isinstance(structptr, ir.GlobalVariable)
            and structptr.name.startswith(".const.picklebuf.")
        ):
            return unserialize(self, structptr)
        builder = self.builder
        name = f"{structptr.name}.unpickled"
        try:
            slot = builder.module.get_global(name)
        except KeyError:
            slot = ir.GlobalVariable(builder.module, self.pyobj, name=name)
            slot.linkage = "internal"
            slot.initializer = ir.Constant(self.pyobj, None)
        cached = builder.load(slot)
        with builder.if_else(cgutils.is_null(builder, cached)) as (missing, present):
            with missing:
                fresh = unserialize(self, structptr)
                with builder.if_then(cgutils.is_not_null(builder, fresh)):
                    self.incref(fresh)  # the slot's own reference, kept for good
                    builder.store(fresh, slot)
                after_missing = builder.basic_block
            with present:
                self.incref(cached)
                after_present = builder.basic_block
        obj = builder.phi(self.pyobj)
        obj.add_incoming(fresh, after_missing)
        obj.add_incoming(cached, after_present)
        return obj

    return memoized


def build(force: bool = False, quiet: bool = False) -> bool:
    """Compile the kernels of :func:`ivm.aot.signatures` into the extension module, unless
    one for this machine and these sources is in place; returns whether it built."""
    if not force and aot.is_current():
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba marks pycc as pending deprecation
        import llvmlite.binding as llvm
        from numba.core import pythonapi
        from numba.core.compiler import Flags
        from numba.pycc import CC
        from numba.pycc import compiler as pycc_compiler

    class _NoGilFlags(Flags):
        """pycc's compile flags, releasing the GIL like the JIT's ``nogil=True``."""

        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            setattr(self, "release_gil", True)  # noqa: B010 - an Option, typed as such

    started = time.perf_counter()
    aot.OUT_DIR.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=aot.OUT_DIR))
    saved = pycc_compiler.Flags
    unserialize = pythonapi.PythonAPI.unserialize
    try:
        cc = CC(aot.MODULE)
        cc.output_dir = str(work)
        cc.target_cpu = llvm.get_host_cpu_name()  # as the JIT compiles: for this CPU
        count = 0
        for kernel_module, kernels in aot.signatures().items():
            mod = importlib.import_module(kernel_module)
            for name, sigs in kernels.items():
                dispatcher = getattr(mod, name)
                for index, args in enumerate(sigs):
                    # the JIT's typing of these arguments gives the return type pycc needs
                    dispatcher.compile(args)
                    signature = dispatcher.overloads[tuple(args)].signature
                    cc.export(aot.symbol(kernel_module, name, index), signature)(dispatcher.py_func)
                    count += 1
        setattr(pycc_compiler, "Flags", _NoGilFlags)  # noqa: B010 - while pycc compiles
        setattr(pythonapi.PythonAPI, "unserialize", _memoized_unserialize(unserialize))  # noqa: B010
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cc.compile()
        built = work / cc.output_file
        aot.STAMP.unlink(missing_ok=True)  # first: a module without its stamp is unused
        for old in aot.OUT_DIR.glob(f"{aot.MODULE}.*.so"):
            old.unlink()
        os.replace(built, aot.OUT_DIR / built.name)
        aot.STAMP.write_text(json.dumps(aot.stamp(), indent=1))
    finally:
        setattr(pycc_compiler, "Flags", saved)  # noqa: B010
        setattr(pythonapi.PythonAPI, "unserialize", unserialize)  # noqa: B010
        shutil.rmtree(work, ignore_errors=True)
    if not quiet:
        secs = time.perf_counter() - started
        print(
            f"ivm.aot_build: {count} kernel signatures compiled into {aot.OUT_DIR} in {secs:.0f} s"
        )
    return True


def main(argv: list[str]) -> int:
    """``python -m ivm.aot_build [--force] [--quiet] [--status]``; a failed build is
    reported and leaves the engine on the JIT (exit status 0: set-up goes on)."""
    if "--status" in argv:
        print("current" if aot.is_current() else "missing or stale", aot.STAMP)
        return 0
    try:
        build(force="--force" in argv, quiet="--quiet" in argv)
    except Exception as exc:  # an optimization: report it, never fail set-up
        print(
            f"ivm.aot_build: could not build the compiled kernels ({type(exc).__name__}: "
            f"{exc}); the engine runs on numba's JIT, which loads its kernels on first use",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
