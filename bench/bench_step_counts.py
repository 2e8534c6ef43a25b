"""What one small engine step does, counted (not timed): ``python -m bench step-counts``.

A workload of ``bench engine`` (default W2 at medium scale: a 10+10-edge change to
reachability), ``--warm`` steps, then ``--steps`` steps under cProfile.  Per step: Python
function calls, calls of the compiled (numba) kernels, operator activations and the
differences processed.  These do not move with the machine's load, so two trees can be
compared on a busy machine — the fixed per-step cost of a small change is mostly calls:
run the module from each tree (``cd TREE && PYTHONPATH=. python -m bench step-counts
--out ...``).  Results go to ``bench/results/step_counts_<workload>.json``.
"""

from __future__ import annotations

import cProfile
import json
import pstats
import re
from pathlib import Path
from typing import TYPE_CHECKING

from bench.cli import bench_arguments

if TYPE_CHECKING:
    from bench.engine_bench import EngineSetup

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str]) -> int:
    from bench import engine_bench as eb

    ap = bench_arguments("python -m bench step-counts", steps=40, warm=20, seed=0)
    ap.add_argument("--workload", default="w2", choices=["w1", "w2", "w3"])
    ap.add_argument("--scale", default="medium", choices=["small", "medium"])
    ap.add_argument("--out", default=None)
    ap.add_argument(
        "--cpu",
        action="store_true",
        help="time the steps instead (process CPU, no profiler): median and mean ms; run "
        "two trees at once to compare them on a loaded machine",
    )
    ap.add_argument(
        "--replay",
        type=int,
        default=0,
        metavar="R",
        help="with --cpu: run each step R times from the same state (the dataflow rolled "
        "back between runs) and keep its least CPU time: a figure the machine's load "
        "hardly moves (caches warm: below a step's time in a run of new changes)",
    )
    args = ap.parse_args(argv)
    e = eb.engine_setup(args.workload, args.scale, args.seed, args.warm + args.steps)
    e.load()
    e.g.step()
    e.out.changes()
    for i in range(1, args.warm + 1):
        e.push(i)
        e.g.step()
        e.out.changes()
    if args.cpu:
        return _cpu_times(e, args.warm, args.steps, args.replay)
    prof = cProfile.Profile()
    diffs = 0
    for i in range(args.warm + 1, args.warm + args.steps + 1):
        prof.enable()
        e.push(i)
        rep = e.g.step()
        e.out.changes()
        prof.disable()
        diffs += rep.differences
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    n = args.steps

    def calls(match: object) -> float:
        return sum(v[1] for k, v in stats.items() if callable(match) and match(k)) / n

    per = {
        "Python function calls": sum(v[1] for v in stats.values()) / n,
        "compiled kernel calls": calls(lambda k: _kernel(k) is not None),
        "operator activations (run)": calls(lambda k: k[2] == "run" and "operators" in k[0]),
        "differences processed": diffs / n,
    }
    kernels: dict[str, float] = {}
    for k, v in stats.items():
        name = _kernel(k)
        if name is not None:
            kernels[name] = round(kernels.get(name, 0.0) + v[1] / n, 2)
    result = {
        "benchmark": "step-counts",
        "workload": args.workload,
        "scale": args.scale,
        "seed": args.seed,
        "warm": args.warm,
        "steps": n,
        "per_step": per,
        "kernel_calls_per_step": dict(sorted(kernels.items(), key=lambda kv: -kv[1])),
    }
    out = Path(args.out) if args.out else RESULTS / f"step_counts_{args.workload}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    for k, v in per.items():
        print(f"{k:>30}: {v:,.1f}")
    return 0


def _kernel(key: tuple[str, int, str]) -> str | None:
    """The compiled kernel a profiler entry is a call of (through numba's dispatcher, or
    straight to its entry point, :mod:`ivm.kernel_entries`: the JIT's or the ahead-of-time
    compiled one, :mod:`ivm.aot`), else None."""
    path, _, name = key
    if path.endswith(("ivm/kernels.py", "difference.py")):
        return name
    if path != "~":
        return None
    entry = "<built-in method ivm.kernels."
    if name.startswith(entry):
        return name[len(entry) : -1]
    compiled = re.fullmatch(
        r"<built-in method ivm_kernels_aot\.(?:kernels|difference)__(\w+?)__\d+>", name
    )
    return compiled.group(1) if compiled else None


def _cpu_times(e: EngineSetup, warm: int, steps: int, replay: int = 0) -> int:
    """Print the median and mean process CPU ms of ``steps`` steps after ``warm`` (with
    ``replay``: each step's least CPU time over that many runs from the same state)."""
    import statistics
    import time

    g = e.g
    used = []
    for i in range(warm + 1, warm + steps + 1):
        saved = [op.snapshot() for op in g.ops] if replay else []
        epoch = g.epoch
        best = float("inf")
        for r in range(max(replay, 1)):
            if r:  # roll the dataflow back to before the step, as a failed epoch is
                for op, snap in zip(g.ops, saved, strict=True):
                    op.inbox.clear()
                    op.restore(snap)
                g.metrics.forget_epoch(g.epoch)
                g.epoch = epoch
            c = time.process_time()
            e.push(i)
            g.step()
            e.out.changes()
            best = min(best, (time.process_time() - c) * 1e3)
        used.append(best)
    what = f"least of {replay} runs per step, " if replay else ""
    print(
        f"cpu ({what}{steps} steps) median {statistics.median(used):.3f} ms, "
        f"mean {statistics.fmean(used):.3f} ms"
    )
    return 0
