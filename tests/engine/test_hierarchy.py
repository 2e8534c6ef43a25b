"""Hierarchical MIN/MAX (ivm/hierarchy.py) against plain references.

Outside loops, a reduce with MIN or MAX (and COUNT/SUM beside them) runs in stages over
hash buckets.  The hypothesis test drives random inserts and deletes (NULLs included) and
compares every epoch with a plain-Python aggregation, with the production bucket sizes
and with tiny ones (many rows per bucket, more levels).  Buckets are stored data, so
they must not depend on the process: checked across PYTHONHASHSEEDs and through a
checkpoint restored into a new dataflow.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from engine_helpers import change_sequence, check_output, every_third, examples, replay
from hypothesis import given
from hypothesis import strategies as st

import ivm
from ivm import hierarchy
from ivm.hierarchy import stable_row_hash
from ivm.operators.reduce import Reduce

SCHEMA = [("k", "int64"), ("v", "int64"), ("s", "str")]
row = st.tuples(st.integers(0, 3), st.integers(-5, 5), st.sampled_from(["a", "bb", "c", None]))
AGGS = [
    ("count",),
    ("count", "s"),
    ("sum", "v"),
    ("min", "v"),
    ("max", "v"),
    ("min", "s"),
    ("max", "s"),
]


@contextmanager
def bucket_bits(leaf: int, fanout: int) -> Iterator[None]:
    old = hierarchy.LEAF_BITS, hierarchy.FANOUT_BITS
    hierarchy.LEAF_BITS, hierarchy.FANOUT_BITS = leaf, fanout
    try:
        yield
    finally:
        hierarchy.LEAF_BITS, hierarchy.FANOUT_BITS = old


def reference(rows: Counter, by_key: bool) -> Counter:
    groups: dict[tuple, list[tuple]] = {}
    for r, n in rows.items():
        groups.setdefault((r[0],) if by_key else (), []).extend([r] * n)
    out: Counter = Counter()
    for g, rs in groups.items():
        vs = [r[1] for r in rs]
        ss = [r[2] for r in rs if r[2] is not None]
        agg = (
            len(rs),
            len(ss),
            sum(vs),
            min(vs),
            max(vs),
            min(ss) if ss else None,
            max(ss) if ss else None,
        )
        out[(*g, *agg)] += 1
    return out


@pytest.mark.parametrize("bits", [(8, 4), (3, 1)], ids=["production", "tiny-buckets"])
@given(changes=st.integers(1, 6).flatmap(lambda e: change_sequence(row, e)))
@examples(40)
def test_hierarchical_aggregates_match_a_reference(bits: tuple[int, int], changes: list) -> None:
    g = ivm.Dataflow()
    src = g.input("t", SCHEMA)
    with bucket_bits(*bits):
        by_k = g.output(src.reduce(["k"], AGGS, plan="hierarchical"), "by_k")
        total = g.output(src.reduce((), AGGS, plan="hierarchical"), "total")
    reduces = sum(isinstance(op, Reduce) for op in g.ops)
    levels = 1 + -(-(bits[0] - bits[1]) // bits[1])  # leaf + coarsening stages
    assert reduces == 2 * (levels + 1)
    prev = {"k": Counter(), "all": Counter()}
    for epoch, (state,) in replay(g, [(src, changes, every_third)]):
        want = {"k": reference(state, True), "all": reference(state, False)}
        check_output(by_k, want["k"], prev["k"], f"epoch {epoch} by k")
        check_output(total, want["all"], prev["all"], f"epoch {epoch} total")
        prev = want


@pytest.mark.parametrize("plan", ["hierarchical", "value-counts"])
def test_large_group_and_checkpoint_restore(plan: str) -> None:
    """One group of 5,000 rows: deleting its minimum and maximum, before and after a
    checkpoint restored into a new dataflow, gives the next ones."""

    def build() -> tuple[ivm.Dataflow, ivm.InputCollection, ivm.Output]:
        g = ivm.Dataflow("minmax")
        src = g.input("t", SCHEMA)
        aggs = [("min", "v"), ("max", "v"), ("count",)]
        out = g.output(src.reduce(["k"], aggs, plan=plan), "o")
        return g, src, out

    g, src, out = build()
    vals = np.arange(5000, dtype=np.int64)
    strs = np.array([f"s{i % 7}" for i in range(5000)], dtype=object)
    src.insert({"k": np.zeros(5000, dtype=np.int64), "v": vals, "s": strs})
    g.step()
    assert set(out.counts()) == {(0, 0, 4999, 5000)}
    src.delete([(0, 0, "s0"), (0, 4999, f"s{4999 % 7}")])
    g.step()
    assert set(out.counts()) == {(0, 1, 4998, 4998)}
    g2, src2, out2 = build()
    g2.load_state(g.state())
    src2.delete([(0, 1, "s1"), (0, 4998, f"s{4998 % 7}")])
    g2.step()
    assert set(out2.counts()) == {(0, 2, 4997, 4996)}


def test_bucket_hash_is_the_same_in_every_process() -> None:
    code = (
        "import numpy as np; from ivm.hierarchy import stable_row_hash; "
        "c = (np.array(['x', 'yy', None], dtype=object), np.array([1, 2, 3])); "
        "print(stable_row_hash(c, 3).tolist())"
    )
    seen = set()
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        seen.add(out)
    here = stable_row_hash(
        (np.array(["x", "yy", None], dtype=object), np.array([1, 2, 3])), 3
    ).tolist()
    assert seen == {f"{here}\n"}
