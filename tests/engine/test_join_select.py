"""``join(..., select=)``: the join's output columns chosen without a projection after it.

Oracle: in the same dataflow, ``join(select=s, names=n)`` equals ``join().project(*s,
names=n)`` after every step of random inserts and deletes, outside and inside a loop, and
both equal a plain-Python join of the accumulated inputs.
"""

from __future__ import annotations

from collections import Counter

import pytest
from engine_helpers import apply_changes, assert_same, check_output, examples, ref_reachable
from hypothesis import given
from hypothesis import strategies as st

import ivm
from ivm.errors import PlanError

ROW = st.tuples(st.integers(0, 5), st.integers(0, 5))
STEP = st.lists(st.tuples(ROW, st.sampled_from([1, 1, -1])), max_size=6)
SELECTS = [
    ((2,), None),  # one right column (W2's reach step)
    (("b", "x"), ("p", "q")),  # both sides, renamed
    ((3, 0, 3), None),  # a column twice, the right's clashing name
    (("y", "a"), None),
]


def ref_join(left: Counter, right: Counter, select: tuple[int, ...]) -> Counter:
    """The equi-join of ``left (a, b)`` and ``right (x, y)`` on ``b = x``, columns ``select``
    of ``(a, b, x, y)``."""
    out: Counter = Counter()
    for (a, b), n in left.items():
        for (x, y), m in right.items():
            if b == x:
                row = (a, b, x, y)
                out[tuple(row[i] for i in select)] += n * m
    return Counter({r: n for r, n in out.items() if n})


@examples(40)
@given(steps=st.lists(st.tuples(STEP, STEP), min_size=1, max_size=6), pick=st.sampled_from(SELECTS))
def test_select_equals_project_after_join(steps: list, pick: tuple) -> None:
    select, names = pick
    g = ivm.Dataflow()
    left = g.input("l", [("a", "int64"), ("b", "int64")])
    right = g.input("r", [("x", "int64"), ("y", "int64")])
    fused = g.output(left.join(right, on=[("b", "x")], select=select, names=names), "fused")
    plain = g.output(left.join(right, on=[("b", "x")]).project(*select, names=names), "plain")
    assert fused.schema == plain.schema
    positions = left.schema.concat(right.schema).indices(list(select))
    lstate: Counter = Counter()
    rstate: Counter = Counter()
    prev: Counter | None = Counter()
    for lchg, rchg in steps:
        for row, d in lchg:
            left.send([row], d)
        for row, d in rchg:
            right.send([row], d)
        apply_changes(lstate, lchg)
        apply_changes(rstate, rchg)
        g.step()
        want = ref_join(lstate, rstate, positions)
        check_output(fused, want, prev, "select")
        check_output(plain, want, prev, "project")
        prev = want


@examples(25)
@given(
    steps=st.lists(
        st.lists(st.tuples(ROW, st.sampled_from([1, 1, -1])), max_size=5), min_size=1, max_size=5
    )
)
def test_reachability_with_select_equals_reference(steps: list) -> None:
    from ivm.library.graphs import reachable

    g = ivm.Dataflow()
    edges = g.input("edges", [("src", "int64"), ("dst", "int64")])
    roots = g.input("roots", [("node", "int64")])
    out = g.output(reachable(edges, roots), "reach")
    roots.insert([(0,)])
    state: Counter = Counter()
    for chg in steps:
        for row, d in chg:
            if d < 0 and state[row] <= 0:
                continue  # only edges that are there are deleted
            edges.send([row], d)
            apply_changes(state, [(row, d)])
        g.step()
        want = Counter({(n,): 1 for n in ref_reachable(state, [0])})
        assert_same(out.counts(), want, "reach")


def test_select_is_described_and_checked() -> None:
    g = ivm.Dataflow()
    left = g.input("l", [("a", "int64"), ("b", "int64")])
    right = g.input("r", [("x", "int64"), ("y", "int64")])
    j = left.join(right, on=[("b", "x")], select=["y"], names=["out"])
    assert j.schema.names == ("out",)
    assert "keeping ['out']" in g.explain()
    with pytest.raises(PlanError, match="names= renames the columns of select="):
        left.join(right, on=[("b", "x")], names=["z"])
    with pytest.raises(PlanError, match="2 columns selected, 1 names given"):
        left.join(right, on=[("b", "x")], select=["a", "y"], names=["z"])
