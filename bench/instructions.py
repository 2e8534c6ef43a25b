"""Instructions per engine step, counted by valgrind's callgrind.

This machine is shared and its speed moves by up to 2x minutes apart, so wall-clock A/B
comparisons of small engine changes are noise.  Instruction counts are repeatable: the
same code on the same inputs gives the same count whatever else the machine does.

``python -m bench instructions [--workload w2] [--scale small] [--steps 20] [--warm 2]`` runs
the workload's engine part (no baseline) under callgrind twice — with W and with W + N steps
after the initial computation — and prints ``(I(W + N) − I(W)) / N``, the instructions of one step
(Python interpreter, numpy and compiled kernels alike).  It first runs once under
valgrind without instrumentation, so numba's cache holds kernels for the CPU model
valgrind presents (numba keys its cache by CPU).  Slow: W2 at small scale takes minutes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import workloads as W
from bench.cli import bench_arguments

CHILD = "--child"
ROOT = Path(__file__).resolve().parent.parent


def _child(workload: str, scale: str, generated: int, steps: int) -> None:
    """Build the workload (``generated`` steps of it: the generators' output depends on
    it), compute the initial output, and run the first ``steps`` steps."""
    from bench.engine_bench import engine_setup

    e = engine_setup(workload, scale, 42, generated)
    e.load()
    if steps < 0:
        return  # set-up and pushing the initial data only (see --initial)
    e.g.step()
    e.out.changes()
    for i in range(1, steps + 1):
        e.push(i)
        e.g.step()
        e.out.changes()


def _valgrind(args: list[str], tool: str, out_file: str | None = None) -> int | None:
    cmd = ["valgrind", f"--tool={tool}"]
    if out_file:
        cmd.append(f"--callgrind-out-file={out_file}")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.run(
        [*cmd, sys.executable, "-m", "bench.instructions", CHILD, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    m = re.search(r"Collected : (\d+)", proc.stderr)
    return int(m.group(1)) if m else None


def main(argv: list[str] | None = None) -> int:
    ap = bench_arguments(
        "python -m bench instructions",
        description=__doc__,
        flags={"initial": "count the initial computation (step() over the initial data) instead"},
        steps=20,
    )
    ap.add_argument("--workload", default="w2", choices=["w1", "w2", "w3"])
    ap.add_argument("--scale", default="small", choices=sorted(W.SCALES))
    ap.add_argument(
        "--warm", type=int, default=2, help="steps run before the counted ones (default 2)"
    )
    a = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    # per step: I(warm + N) − I(warm), so that compiled kernels first called (and loaded
    # from numba's cache) in the first steps are not counted as a step's work
    warm = 0 if a.initial else a.warm
    with tempfile.TemporaryDirectory() as tmp:
        _valgrind([a.workload, a.scale, str(warm + a.steps), str(warm + a.steps)], "none")
        counts = []
        for n in (-1, 0) if a.initial else (warm, warm + a.steps):
            got = _valgrind(
                [a.workload, a.scale, str(warm + a.steps), str(n)], "callgrind", f"{tmp}/cg.{n}"
            )
            if got is None:
                print("could not read callgrind's instruction count", file=sys.stderr)
                return 1
            counts.append(got)
    if a.initial:
        print(
            f"{a.workload} {a.scale}: {(counts[1] - counts[0]) / 1e6:.1f} M instructions for "
            f"the initial computation (set-up and data: {counts[0] / 1e9:.2f} G)"
        )
        return 0
    per_step = (counts[1] - counts[0]) / a.steps
    print(
        f"{a.workload} {a.scale}: {per_step / 1e6:.2f} M instructions per step "
        f"(initial computation and set-up: {counts[0] / 1e9:.2f} G)"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == CHILD:
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(main(sys.argv[1:]))
