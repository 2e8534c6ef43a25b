"""The Session's engine warm-up (spark_exec.warmup): it computes its views right, runs once
per process on a thread, and can be turned off."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from spark_exec import warmup
from spark_exec.session import Session


def _reference(rows: int) -> list[dict[tuple[object, ...], int]]:
    """The warm-up views computed in plain Python from the same inputs."""
    rng = np.random.default_rng(0)
    k, v, x = rng.integers(0, 8, rows), rng.integers(-5, 100, rows), rng.random(rows)
    maybe = warmup._every_third(rows)
    live = [(int(k[i]), int(v[i]), float(x[i]), maybe[i]) for i in range(16, rows)]
    groups: dict[tuple[str, int], list[tuple]] = defaultdict(list)
    for r in live:
        if r[1] > 0:
            groups[(f"d{r[0]}", r[0])].append(r)
    joined = {}
    for (name, key), rs in groups.items():
        xs = [r[2] for r in rs]
        row = (
            name,
            key,
            len(rs),
            sum(r[1] for r in rs),
            min(r[1] for r in rs),
            max(xs),
            sum(xs) / len(xs),
            sum(r[3] is not None for r in rs),
        )
        joined[row] = 1
    per_key = Counter(r[0] for r in live)
    return [joined, {(key, n): 1 for key, n in per_key.items()}]


@pytest.mark.parametrize("rows", [100, 40_000])
def test_the_warm_up_views_equal_a_python_recompute(rows: int) -> None:
    got = warmup.run(rows)
    want = _reference(rows)
    assert got[1] == want[1]
    # AVG's float: compared to the digit (the engine adds in its own order)
    rounded = [{(*r[:6], round(r[6], 9), r[7]): c for r, c in d.items()} for d in (got[0], want[0])]
    assert rounded[0] == rounded[1]


def test_a_session_starts_it_once_per_process(tmp_path: Path) -> None:
    Session(warehouse=tmp_path / "a")
    first = warmup.start()
    Session(warehouse=tmp_path / "b")
    assert first is not None and warmup.start() is first
    first.join(timeout=120)
    assert not first.is_alive()


def test_ivm_warmup_0_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IVM_WARMUP", "0")
    before = {t.ident for t in threading.enumerate()}
    assert warmup.start() is None
    assert {t.ident for t in threading.enumerate() if t.name == "ivm-warmup"} <= before
