"""The command line every bench shares: integer sizes, yes/no switches, where results go.

``bench_arguments("python -m bench x", rows=1_000, spark_runs=5)`` gives ``--rows`` and
``--spark-runs`` (integers with those defaults); ``flags={"no_baseline": "why"}`` adds a
``--no-baseline`` switch; ``out=RESULTS`` adds ``--out`` (a path as a string).  A bench adds
its other options to the parser it gets back.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def bench_arguments(
    prog: str,
    *,
    description: str | None = None,
    flags: dict[str, str] | None = None,
    out: Path | None = None,
    **sizes: int,
) -> argparse.ArgumentParser:
    """A parser with one ``--name`` integer option per size, one switch per flag (its help
    text the value), and ``--out`` when ``out`` is given."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    for name, default in sizes.items():
        ap.add_argument(_option(name), type=int, default=default)
    for name, help_text in (flags or {}).items():
        ap.add_argument(_option(name), action="store_true", help=help_text)
    if out is not None:
        ap.add_argument("--out", default=str(out))
    return ap


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")
