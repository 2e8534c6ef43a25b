"""The runnable examples: each runs, its networkx check passes, and work follows change."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` as ``python examples/<name>.py`` runs it: with its own
    directory first on ``sys.path`` (examples share helpers such as ``edge_churn``)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(EXAMPLES))
    return mod


def test_wcc_matches_networkx_every_step() -> None:
    res = load("wcc").main(["--nodes", "300", "--edges", "400", "--steps", "12", "--batch", "8"])
    assert res["checks"] == 12
    assert res["nodes"] > 0


def test_scc_matches_networkx_every_step() -> None:
    res = load("scc").main(["--nodes", "150", "--edges", "200", "--steps", "6", "--batch", "4"])
    assert res["checks"] == 7  # the initial state and every step


def test_sliding_window_work_follows_change(tmp_path: Path) -> None:
    out = tmp_path / "cc.png"
    res = load("sliding_window_cc").main(
        ["--nodes", "3000", "--window", "10000", "--slides", "2", "--out", str(out)]
    )
    assert res["correct"]
    # counted, not timed: a 0.1% slide processes at most 1% of the initial differences
    assert res["worst_ratio"] <= 0.01, res["ratios"]
    # the per-iteration series have the shape of CIDR Fig. 1: the slide is far smaller
    # than the initial computation at every loop iteration
    assert all(res["slide"].get(k, 0) < v for k, v in res["initial"].items() if v > 1000)
    assert out.exists() and out.stat().st_size > 1000
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_examples_run_as_scripts() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "wcc.py"),
            "--nodes",
            "100",
            "--edges",
            "120",
            "--steps",
            "3",
            "--batch",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ok: labels equal networkx" in proc.stdout


@pytest.mark.slow
def test_wcc_full_size() -> None:
    """≥ 50 random insert/delete steps on ≥ 1,000 nodes, checked after every step."""
    res = load("wcc").main(["--nodes", "1000", "--edges", "1500", "--steps", "50"])
    assert res["checks"] == 50


@pytest.mark.slow
def test_scc_full_size() -> None:
    """≥ 50 random insert/delete steps on ≥ 1,000 nodes, checked after every step."""
    res = load("scc").main(["--nodes", "1000", "--edges", "1300", "--steps", "50"])
    assert res["checks"] == 51


def test_orders_prices_asof_example() -> None:
    # the example asserts, every step, that processing-time rows are never revised and
    # that event-time rows equal its plain reference
    assert load("orders_prices").main(["--steps", "12", "--seed", "3"]) == 0
