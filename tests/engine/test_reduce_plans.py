"""Every reduce strategy against the model's reference, at partially ordered times.

The strategies (ivm/reduce_plan.py: accumulable, hierarchical, general, general with the
prefix cache) must be observationally identical: the same output differences at every
time, equal to :func:`reduce_reference.reduce_reference`, which computes
``out(t) = f(A(t)) − Σ_{s<t} out(s)`` directly (CIDR 2013 §3.4).  A probe operator records
the reduce's emissions at their times: ``(epoch,)`` outside loops, ``(epoch, iteration)``
inside an iterate, where times of different epochs and iterations are incomparable.

Inside the loop each input row ``(k, v, s, d)`` reaches the reduce at iteration ``d``: the
loop variable carries a counter ``c`` that climbs to ``d``, and the reduce reads the rows
whose counter has arrived.  So the reduce's input changes at ``(e, d)`` for the epoch ``e``
of each insert or delete — a random set of partially ordered times.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from engine_helpers import (
    change_sequence,
    counter,
    every_key_cached,
    examples,
    push,
)
from hypothesis import given
from hypothesis import strategies as st
from reduce_reference import grid, reduce_reference, sql_aggregate

import ivm
from ivm.aggregate_spec import Agg
from ivm.batch import Batch
from ivm.errors import PlanError
from ivm.lattice import Time
from ivm.operators.base import Operator
from ivm.reduce_plan import LARGE_GROUP_ROWS, ReducePlan, ReduceStrategy, check_plan

SCHEMA = [("k", "int64"), ("v", "int64"), ("s", "str"), ("d", "int64")]
MAX_DELAY = 3
row = st.tuples(
    st.integers(0, 2),
    st.integers(-5, 5),
    st.sampled_from(["a", "bb", "c", None]),
    st.integers(0, MAX_DELAY),
)
COLUMN = {"v": 1, "s": 2}
DTYPE = {"v": "int64", "s": "str"}

# aggregate sets: (engine spec, reference function name, output dtype)
LINEAR = [
    (("count",), "count*", "int64"),
    (("count", "s"), "count", "int64"),
    (("sum", "v"), "sum", "int64"),
]
MINMAX = [
    *LINEAR,
    (("min", "v"), "min", "int64"),
    (("max", "v"), "max", "int64"),
    (("min", "s"), "min", "str"),
    (("max", "s"), "max", "str"),
]
OTHER = [(("count_distinct", "s"), "count_distinct", "int64"), (("max", "s"), "max", "str")]
AGG_SETS = {"linear": LINEAR, "minmax": MINMAX, "count-distinct": OTHER}

PLANS = [
    ReducePlan(ReduceStrategy.ACCUMULABLE),
    ReducePlan(ReduceStrategy.HIERARCHICAL),
    ReducePlan(ReduceStrategy.HIERARCHICAL, prefix_cache=True),
    ReducePlan(ReduceStrategy.VALUE_COUNTS),
    ReducePlan(ReduceStrategy.GENERAL),
    ReducePlan(ReduceStrategy.GENERAL, prefix_cache=True),
]


class Probe(Operator):
    """Records every difference its input emits, by time (a test instrument)."""

    kind = "probe"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.seen: dict[Time, Counter] = {}

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        b = inputs[0]
        if b is None:
            return
        got = self.seen.setdefault(tuple(time), Counter())
        for j in range(len(b)):
            got[tuple(_py(c[j]) for c in b.cols)] += int(b.diff[j])

    def differences(self) -> dict[Time, Counter]:
        out = {}
        for t, c in self.seen.items():
            c = Counter({r: n for r, n in c.items() if n != 0})
            if c:
                out[t] = c
        return out


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def plans_for(aggs: list, depth: int) -> list[ReducePlan]:
    specs = [Agg.of(a[0][0], COLUMN[a[0][1]] if len(a[0]) > 1 else None) for a in aggs]
    dtypes = [d for _, d in SCHEMA]
    ok = []
    for p in PLANS:
        try:
            check_plan(p, specs, dtypes, depth)
        except PlanError:
            continue
        ok.append(p)
    return ok


def build(aggs: list, plan: ReducePlan, in_loop: bool) -> tuple[Any, Any, Probe, Any]:
    g = ivm.Dataflow()
    src = g.input("t", SCHEMA)
    specs = [a[0] for a in aggs]
    names = [f"a{j}" for j in range(len(aggs))]
    probes: list[Probe] = []

    def reduce(c: ivm.Collection) -> ivm.Collection:
        r = c.reduce("k", specs, names=names, plan=plan)
        assert r.op.plan == plan
        probes.append(Probe(g, r.scope, [r.op], r.schema))
        return r

    if not in_loop:
        out = g.output(reduce(src), "r")
        return g, src, probes[0], out
    counted = src.map(
        lambda k, v, s, d: (k, v, s, d, np.zeros(len(k), dtype=np.int64)),
        [*SCHEMA, ("c", "int64")],
    )
    empty = g.empty([("k", "int64"), *zip(names, (a[2] for a in aggs), strict=True)])

    def body(vs: list[ivm.Collection]) -> list[ivm.Collection]:
        s, _ = vs
        advanced = s.map(lambda k, v, s_, d, c: (k, v, s_, d, np.minimum(c + 1, d)), s.schema)
        arrived = s.filter(lambda k, v, s_, d, c: c == d).project("k", "v", "s", "d")
        return [advanced, reduce(arrived)]

    _, final = ivm.iterate([counted, empty], body)
    return g, src, probes[0], g.output(final, "r")


def aggregate(aggs: list) -> Callable[[tuple, list[tuple]], tuple]:
    def f(key: tuple, rows: list[tuple]) -> tuple:
        return tuple(
            sql_aggregate(fn, [r[COLUMN[a[1]]] if len(a) > 1 else None for r in rows])
            for a, fn, _ in aggs
        )

    return f


@pytest.mark.parametrize("in_loop", [False, True], ids=["top-level", "in-iterate"])
@pytest.mark.parametrize("agg_set", sorted(AGG_SETS))
@given(
    changes=st.integers(1, 4).flatmap(lambda e: change_sequence(row, e)), style=st.integers(0, 2)
)
@examples(40)
def test_every_strategy_emits_the_reference_differences(
    agg_set: str, in_loop: bool, changes: list, style: int
) -> None:
    aggs = AGG_SETS[agg_set]
    epochs = len(changes)
    updates = [
        (r, (e + 1, r[3]) if in_loop else (e + 1,), d)
        for e, batch in enumerate(changes)
        for r, d in batch
    ]
    times = grid([epochs + 1, MAX_DELAY + 2] if in_loop else [epochs + 1])
    key = lambda r: (r[0],)  # noqa: E731
    want = reduce_reference(updates, key, aggregate(aggs), times)
    # per epoch, the view's changes: the reference at top-level times
    top = reduce_reference(
        [(r, t[:1], d) for r, t, d in updates], key, aggregate(aggs), grid([epochs + 1])
    )
    plans = plans_for(aggs, 1 if in_loop else 0)
    assert len(plans) >= (2 if agg_set != "count-distinct" or in_loop else 1)
    seen_changes: dict[str, list[dict]] = {}
    for plan in plans:
        with every_key_cached():
            g, src, probe, out = build(aggs, plan, in_loop)
            per_epoch = []
            for e, batch in enumerate(changes):
                push(src, batch, style)
                g.step()
                assert g.epoch == e + 1
                per_epoch.append(counter(out.changed_counts()))
        assert probe.differences() == want, f"{plan}: differences at times differ from the model"
        for e in range(epochs):
            assert per_epoch[e] == top.get((e + 1,), Counter()), f"{plan}: epoch {e + 1} changes"
        seen_changes[str(plan)] = per_epoch
    first = next(iter(seen_changes.values()))
    assert all(v == first for v in seen_changes.values()), "strategies disagree"


def test_the_planner_chooses_by_aggregates_and_depth() -> None:
    g = ivm.Dataflow()
    t = g.input("t", SCHEMA)
    assert t.reduce("k", [("count",), ("sum", "v")]).op.plan == ReducePlan(
        ReduceStrategy.ACCUMULABLE
    )
    minmax = [("count",), ("min", "s")]
    assert t.reduce("k", minmax).op.plan == ReducePlan(ReduceStrategy.VALUE_COUNTS)
    assert t.reduce("k", minmax, group_rows=100).op.plan == ReducePlan(ReduceStrategy.VALUE_COUNTS)
    # large groups: a deleted extreme would re-read the group, a bucket re-reads 1/256 of it
    hier = t.reduce("k", minmax, group_rows=LARGE_GROUP_ROWS).op.plan
    assert hier == ReducePlan(ReduceStrategy.HIERARCHICAL)
    assert t.reduce("k", [("count_distinct", "s")]).op.plan == ReducePlan(ReduceStrategy.GENERAL)
    plans = []

    def body(x: ivm.Collection) -> ivm.Collection:
        r = x.reduce("k", [("sum", "v")], names=["v"])
        plans.append(r.op.plan)
        return r.map(lambda k, v: (k, v, np.full(len(k), None, dtype=object), k), SCHEMA)

    t.iterate(body)
    assert plans == [ReducePlan(ReduceStrategy.GENERAL, prefix_cache=True)]
    assert "plan=general + prefix cache" in g.explain()
    assert "plan=hierarchical" in g.explain()
    assert "plan=value-counts" in g.explain()
    assert "plan=accumulable" in g.explain()


@pytest.mark.parametrize(
    ("aggs", "plan", "in_loop", "message"),
    [
        ([("min", "v")], "accumulable", False, "computes only COUNT and SUM"),
        ([("count",)], "accumulable", True, "only outside loops"),
        ([("min", "v")], "value-counts", True, "only outside loops"),
        ([("count_distinct", "s")], "value-counts", False, "computes only COUNT, SUM"),
        ([("count_distinct", "s")], "hierarchical", False, "combines only COUNT, SUM, MIN"),
        ([("count",)], ReducePlan(ReduceStrategy.GENERAL, prefix_cache=True), False, "one loop"),
        ([("count",)], "fastest", False, "unknown reduce strategy"),
    ],
)
def test_a_plan_that_cannot_compute_the_aggregates_is_refused(
    aggs: list, plan: Any, in_loop: bool, message: str
) -> None:
    g = ivm.Dataflow()
    t = g.input("t", SCHEMA)
    before = len(g.ops)

    def attempt(c: ivm.Collection) -> ivm.Collection:
        c.reduce("k", aggs, plan=plan)
        return c

    with pytest.raises(PlanError, match=message):
        if in_loop:
            t.iterate(attempt)
        else:
            attempt(t)
    assert len(g.ops) == before or in_loop
