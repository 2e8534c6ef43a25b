"""The value-counts reduce (ivm/operators/value_counts.py) beyond the shared plan tests.

``test_reduce_plans.py`` checks every strategy against the model's reference on int and
string columns; here: float columns (NaN, infinities, -0.0) and mixed Python values against
the general reduce on the same random changes, the work a change costs (a key is read back
only when a change deletes its extreme), checkpoints, and the state kept: exactly the live
(key, value) multiset, consolidated, nothing of the other columns.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
from engine_helpers import apply_changes, change_sequence, examples, push
from hypothesis import given
from hypothesis import strategies as st
from test_checkpoint import through_ipc

import ivm
from ivm.operators.value_counts import ValueCountsReduce
from ivm.reduce_plan import ReducePlan

SCHEMA = [("k", "int64"), ("f", "float64"), ("a", "any")]
AGGS = [("count",), ("min", "f"), ("max", "f"), ("sum", "a"), ("min", "a"), ("max", "a")]
row = st.tuples(
    st.integers(0, 2),
    st.sampled_from([0.0, -0.0, 1.5, -2.0, math.inf, -math.inf, math.nan]),
    st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([2**62, -(2**62)])),
)


def _norm(v: Any) -> Any:
    v = v.item() if isinstance(v, np.generic) else v
    return "NaN" if isinstance(v, float) and math.isnan(v) else v


def _rows(out: ivm.Output) -> Counter:
    return Counter({tuple(_norm(v) for v in r): n for r, n in out.counts().items()})


def build(plan: str) -> tuple[ivm.Dataflow, ivm.InputCollection, ivm.Output]:
    g = ivm.Dataflow()
    t = g.input("t", SCHEMA)
    r = t.reduce("k", AGGS, plan=plan)
    assert r.op.plan == ReducePlan.of(plan)
    return g, t, g.output(r, "r")


@given(
    changes=st.integers(1, 6).flatmap(lambda e: change_sequence(row, e)), style=st.integers(0, 2)
)
@examples(25)
def test_value_counts_equals_the_general_reduce_on_floats_and_python_values(
    changes: list, style: int
) -> None:
    flows = [build(p) for p in ("value-counts", "general")]
    for e, batch in enumerate(changes):
        for g, t, _ in flows:
            push(t, batch, style)
            g.step()
        got, want = (_rows(o) for _, _, o in flows)
        assert got == want, f"epoch {e + 1}"


def test_a_key_is_read_back_only_when_a_change_deletes_its_extreme() -> None:
    g = ivm.Dataflow()
    t = g.input("t", [("k", "int64"), ("v", "int64")])
    r = t.reduce("k", [("min", "v"), ("max", "v")], names=["lo", "hi"])
    op = r.op
    assert isinstance(op, ValueCountsReduce)
    out = g.output(r, "r")
    t.insert([(1, v) for v in range(1000)] + [(2, 5)])
    g.step()
    assert out.counts() == {(1, 0, 999): 1, (2, 5, 5): 1}
    t.delete([(1, 500), (1, 7)])  # inside: min and max stay, nothing is read back
    t.insert([(1, -1)])
    g.step()
    assert op.keys_reread == 0
    assert out.counts() == {(1, -1, 999): 1, (2, 5, 5): 1}
    t.delete([(1, -1), (1, 999)])  # both extremes of key 1: it is read back (per aggregate)
    g.step()
    assert op.keys_reread == 2
    assert out.counts() == {(1, 0, 998): 1, (2, 5, 5): 1}
    t.delete([(2, 5)])  # the group is gone: nothing to read
    g.step()
    assert op.keys_reread == 2
    assert out.counts() == {(1, 0, 998): 1}


@given(changes=st.integers(2, 6).flatmap(lambda e: change_sequence(row, e)), cut=st.integers(1, 5))
@examples(15)
def test_a_restored_checkpoint_continues_like_the_uninterrupted_dataflow(
    changes: list, cut: int
) -> None:
    cut = min(cut, len(changes) - 1)
    g, t, out = build("value-counts")
    for batch in changes[:cut]:
        push(t, batch, 0)
        g.step()
    g2, t2, out2 = build("value-counts")
    g2.load_state(through_ipc(g.state()))
    for batch in changes[cut:]:
        for gg, tt in ((g, t), (g2, t2)):
            push(tt, batch, 0)
            gg.step()
        assert _rows(out2) == _rows(out)


@given(changes=st.integers(1, 8).flatmap(lambda e: change_sequence(row, e)))
@examples(15)
def test_the_state_is_the_live_key_value_multiset_consolidated(changes: list) -> None:
    g, t, _ = build("value-counts")
    live: Counter = Counter()
    for batch in changes:
        push(t, batch, 0)
        g.step()
        apply_changes(live, batch)
    state = g.state()
    (op,) = [o for o in g.ops if isinstance(o, ValueCountsReduce)]
    for c, name in ((1, "f"), (2, "a")):
        table = state[f"{op.id}.values{c}"]
        kept = Counter()
        for k, v, d in zip(
            *(table.column(x).to_pylist() for x in ("c0", "c1", "diff")), strict=True
        ):
            assert d != 0
            kept[(k, _norm(v))] += d
        assert len(kept) == table.num_rows, f"{name}: a (key, value) stored twice"
        want = Counter()
        for r, n in live.items():
            if n and r[c] is not None:
                want[(r[0], _norm(r[c]))] += n
        assert kept == want, name
