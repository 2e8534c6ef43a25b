"""SUM over an object column (a nullable BIGINT) equals the value-by-value Python sum, with
the int64 fast path (ivm.operators.accumulate._object_sum) and without it."""

from __future__ import annotations

import numpy as np
import pytest

from ivm.batch import sort_groups
from ivm.operators.accumulate import _object_sum
from ivm.operators.aggregates import _not_null


def _reference(c: np.ndarray, diff: np.ndarray, groups: np.ndarray) -> dict[int, object]:
    out: dict[int, object] = {}
    for v, d, g in zip(c.tolist(), diff.tolist(), groups.tolist(), strict=True):
        out.setdefault(g, None)
        if v is not None:
            acc = out[g]
            out[g] = v * d if acc is None else acc + v * d
    return out


@pytest.mark.parametrize("kind", ["ints", "big ints", "floats", "mixed", "all null"])
@pytest.mark.parametrize("seed", range(6))
def test_object_sum_equals_the_python_sum(kind: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    groups = rng.integers(0, max(1, n // 4), n)
    diff = rng.choice(np.array([-2, -1, 1, 1, 3], np.int64), n)
    values: list[object] = rng.integers(-(10**6), 10**6, n).tolist()
    if kind == "big ints":  # past 64 bits: exact Python ints, as before
        values[0] = 2**70
        values[-1] = -(2**63) - 5
    elif kind == "floats":
        values = [float(v) / 7 for v in values]
    elif kind == "mixed":
        values[n // 2] = 1.5
    elif kind == "all null":
        values = [None] * n
    for i in rng.choice(n, n // 3, replace=False):
        values[i] = None
    if kind == "ints" and seed == 0:
        values[0] = 2**62  # its product with 3 passes 64 bits: the exact path takes it
        diff[0] = 3
    c = np.empty(n, dtype=object)
    c[:] = values
    order, starts = sort_groups(groups.astype(np.int64), (groups.astype(np.int64),))
    got = _object_sum(c, _not_null(c), diff, order, starts)
    want = _reference(c, diff, groups)
    keys = groups[order[starts]].tolist()
    for k, g in zip(keys, got.tolist(), strict=True):
        w = want[k]
        assert type(g) is type(w) or (isinstance(w, float) and isinstance(g, float)), (k, g, w)
        assert g == pytest.approx(w) if isinstance(w, float) else g == w
