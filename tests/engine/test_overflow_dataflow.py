"""Multiplicities past 2**63 through join, reduce and iterate: a typed error, never a wrong
output, and a dataflow that is exactly as before the failed epoch.

Every test feeds random epochs of (mostly huge) positive diffs and compares each epoch with
a reference computed in Python's unbounded integers:

* if every accumulated input and every output value fits ``±(2**63 - 1)`` with room to
  spare, the step succeeds and the outputs equal the reference;
* if something does not fit, the step raises :class:`ArithmeticOverflowError` (a
  multiplicity or an integer SUM), naming the operator and the outputs it feeds; the
  dataflow's state, outputs and epoch are unchanged, the epoch's changes are discarded, and
  later epochs are processed as if it never happened;
* in between (a result that fits but an intermediate of the loop that may not) either
  outcome is fine, but a successful step must still be exact.

On today's main these steps succeed with wrapped multiplicities: rows vanish (a count that
wraps to exactly 0) or come out with wrong counts, and no error is raised.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from engine_helpers import examples
from hypothesis import event, given
from hypothesis import strategies as st

import ivm
from ivm.errors import (
    ArithmeticOverflowError,
    IvmError,
    MultiplicityOverflowError,
    SumOverflowError,
)

MAX = 2**63 - 1
ROW = [("k", "int64"), ("v", "int64")]

huge = st.one_of(
    st.integers(1, 4),
    st.sampled_from([2**31, 2**32, 3037000500, 2**40, 2**62, MAX // 2, MAX - 1, MAX]),
    st.integers(1, MAX),
)
small_value = st.integers(1, 3)


def fits(v: Any, margin: int = 1) -> bool:
    return not isinstance(v, int) or abs(v) * margin <= MAX


def representable(counters: Mapping[str, Counter], margin: int = 1) -> bool:
    """Whether every multiplicity and every integer in every row fits (with ``margin``)."""
    for c in counters.values():
        for row, n in c.items():
            if not fits(n, margin) or not all(fits(x, margin) for x in row):
                return False
    return True


def snapshot(g: ivm.Dataflow, outs: Mapping[str, Any]) -> tuple:
    state = {k: Counter(tuple(r.values()) for r in t.to_pylist()) for k, t in g.state().items()}
    return state, {n: o.counts() for n, o in outs.items()}, g.epoch


Epoch = list[tuple[str, tuple, int]]


def drive(
    g: ivm.Dataflow,
    inputs: Mapping[str, Any],
    outs: Mapping[str, Any],
    reference: Callable[[Mapping[str, Counter]], dict[str, Counter]],
    epochs: list[Epoch],
    margin: int = 1,
) -> int:
    """Run ``epochs`` against ``reference`` (see the module docstring); return how many
    epochs overflowed.  Ends with a small valid epoch, which must come out exact."""
    acc: dict[str, Counter] = {name: Counter() for name in inputs}
    overflowed = 0
    fresh = 10**6
    for changes in [*epochs, None]:
        if changes is None:  # the final, valid epoch: one new row per input
            changes = [(name, (fresh, 1), 1) for name in inputs]
        trial = {name: Counter(c) for name, c in acc.items()}
        for name, row, d in changes:
            trial[name][row] += d
        want = reference(trial)
        before = snapshot(g, outs)
        for name, row, d in changes:
            inputs[name].send([row], d)
        if representable(trial, margin) and representable(want, margin):
            g.step()
        elif representable(trial) and representable(want):
            try:
                g.step()
            except ArithmeticOverflowError as exc:  # an intermediate of a loop
                check_error(exc, g, outs, before)
                overflowed += 1
                continue
        else:
            with pytest.raises(ArithmeticOverflowError) as info:
                g.step()
            check_error(info.value, g, outs, before)
            overflowed += 1
            continue
        got = {n: Counter(o.counts()) for n, o in outs.items()}
        assert got == {n: +c for n, c in want.items()}
        acc = trial
    event("an epoch overflowed" if overflowed else "no epoch overflowed")
    return overflowed


def check_error(
    exc: ArithmeticOverflowError, g: ivm.Dataflow, outs: Mapping[str, Any], before: tuple
) -> None:
    assert isinstance(exc, IvmError) and isinstance(exc, OverflowError)
    assert isinstance(exc, MultiplicityOverflowError | SumOverflowError)
    assert exc.operator and exc.rolled_back
    assert exc.outputs and set(exc.outputs) <= set(outs)
    assert "does not fit a signed 64-bit integer" in str(exc)
    # the epoch was undone: same state, same outputs, same epoch, no pending changes
    assert snapshot(g, outs) == before


def epochs_of(names: list[str], value: st.SearchStrategy[int]) -> st.SearchStrategy:
    change = st.tuples(st.sampled_from(names), st.tuples(st.integers(0, 2), value), huge)
    return st.lists(st.lists(change, min_size=1, max_size=4), min_size=1, max_size=4)


# -- join ------------------------------------------------------------------------------------
def join_reference(acc: Mapping[str, Counter]) -> dict[str, Counter]:
    out: Counter = Counter()
    for (k, a), m in acc["x"].items():
        for (k2, b), n in acc["y"].items():
            if k == k2:
                out[(k, a, k2, b)] += m * n
    return {"pairs": out}


@examples(40)
@given(epochs_of(["x", "y"], small_value))
def test_join_products_past_64_bits_raise(epochs: list[Epoch]) -> None:
    g = ivm.Dataflow()
    x, y = g.input("x", ROW), g.input("y", ROW)
    outs = {"pairs": g.output(x.join(y, on=[("k", "k")]), "pairs")}
    drive(g, {"x": x, "y": y}, outs, join_reference, epochs)


# -- reduce: COUNT and SUM ---------------------------------------------------------------------
def agg_reference(acc: Mapping[str, Counter], with_min: bool = False) -> dict[str, Counter]:
    groups: dict[int, list[tuple[int, int]]] = {}
    for (k, v), m in acc["x"].items():
        if m:
            groups.setdefault(k, []).append((v, m))
    out: Counter = Counter()
    for k, rows in groups.items():
        count = sum(m for _, m in rows)
        if count > 0:
            total = sum(v * m for v, m in rows)
            extra = (min(v for v, m in rows if m > 0),) if with_min else ()
            out[(k, count, total, *extra)] = 1
    return {"agg": out}


@examples(40)
@given(epochs_of(["x"], st.one_of(small_value, huge)))
def test_count_and_sum_past_64_bits_raise(epochs: list[Epoch]) -> None:
    """COUNT and SUM outside loops (maintained from the changes alone)."""
    g = ivm.Dataflow()
    x = g.input("x", ROW)
    outs = {"agg": g.output(x.reduce("k", [("count",), ("sum", "v")]), "agg")}
    drive(g, {"x": x}, outs, agg_reference, epochs)


@examples(25)
@given(epochs_of(["x"], st.one_of(small_value, huge)))
def test_count_and_sum_beside_min_past_64_bits_raise(epochs: list[Epoch]) -> None:
    """COUNT and SUM re-read from the group (the general reduce, here in hierarchical
    stages because of MIN)."""
    g = ivm.Dataflow()
    x = g.input("x", ROW)
    agg = x.reduce("k", [("count",), ("sum", "v"), ("min", "v")])
    outs = {"agg": g.output(agg, "agg")}
    drive(g, {"x": x}, outs, lambda acc: agg_reference(acc, with_min=True), epochs)


@pytest.mark.parametrize("with_min", [False, True])
def test_sum_overflow_names_the_column(with_min: bool) -> None:
    """A SUM past 64 bits names its output column, also when it is computed in stages
    (with MIN beside it), whose partial sums have internal names; a COUNT is a multiplicity."""
    g = ivm.Dataflow()
    x = g.input("x", ROW)
    aggs: list[tuple] = [("count",), ("sum", "v"), *([("min", "v")] if with_min else [])]
    names = ["n", "total", *(["low"] if with_min else [])]
    out = g.output(x.reduce("k", aggs, names=names), "agg")
    x.insert([(1, MAX // 2 + 1), (1, MAX // 2 + 1)])
    with pytest.raises(SumOverflowError) as info:
        g.step()
    assert info.value.column == "total"
    assert "(column 'total')" in str(info.value) and "'agg'" in str(info.value)
    assert out.counts() == {}
    x.insert([(1, 5), (1, MAX // 2)])
    g.step()
    low = (5,) if with_min else ()
    assert out.counts() == {(1, 2, MAX // 2 + 5, *low): 1}
    x.send([(1, 0), (2, 0)], MAX - 1)
    with pytest.raises(MultiplicityOverflowError) as count_info:
        g.step()
    assert count_info.value.column is None and "'agg'" in str(count_info.value)
    assert out.counts() == {(1, 2, MAX // 2 + 5, *low): 1}


def loop_reduce_reference(acc: Mapping[str, Counter]) -> dict[str, Counter]:
    counts: Counter = Counter()
    sums: Counter = Counter()
    for (k, v), m in acc["x"].items():
        counts[k] += m
        sums[k] += v * m
    return {
        "count": Counter({(k, n): 1 for k, n in counts.items() if n > 0}),
        "sum": Counter({(k, sums[k]): 1 for k, n in counts.items() if n > 0}),
    }


@examples(25)
@given(epochs_of(["x"], st.one_of(small_value, huge)))
def test_count_and_sum_inside_a_loop_past_64_bits_raise(epochs: list[Epoch]) -> None:
    """The general reduce at loop times (one round, so the result is the aggregate)."""
    g = ivm.Dataflow()
    x = g.input("x", ROW)
    outs = {
        "count": g.output(x.iterate(lambda v: v.count("k"), max_iterations=1), "count"),
        "sum": g.output(x.iterate(lambda v: v.sum("k", "v"), max_iterations=1), "sum"),
    }
    drive(g, {"x": x}, outs, loop_reduce_reference, epochs)


# -- iterate -----------------------------------------------------------------------------------
def square(v: ivm.Collection) -> ivm.Collection:
    """A self-join: each row's multiplicity m becomes m**2."""
    return v.join(v, on=[("k", "k"), ("v", "v")]).project("k", "v")


def squaring_loops(x: ivm.Collection, outer: int, inner: int) -> ivm.Collection:
    """A nested iterate: ``outer`` rounds of ``inner`` squarings, m -> m**(2**(outer·inner))."""
    return x.iterate(lambda v: v.iterate(square, max_iterations=inner), max_iterations=outer)


@examples(40)
@given(
    st.integers(1, 3),
    st.integers(1, 3),
    st.lists(
        st.lists(
            st.tuples(
                st.just("x"),
                st.tuples(st.integers(0, 1), st.just(0)),
                st.one_of(st.integers(1, 3), st.integers(1, 2**16), huge),
            ),
            min_size=1,
            max_size=3,
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_nested_iterate_squaring_multiplicities_raises(
    outer: int, inner: int, epochs: list[Epoch]
) -> None:
    """The issue's fuzz case: a self-join in a nested iterate squares a row's multiplicity
    every round, so it passes 2**63 (2**(2**6) wraps to exactly 0, and the row vanished)."""
    g = ivm.Dataflow()
    x = g.input("x", ROW)
    outs = {"loop": g.output(squaring_loops(x, outer, inner), "loop")}
    rounds = 2 ** (outer * inner)

    def reference(acc: Mapping[str, Counter]) -> dict[str, Counter]:
        return {"loop": Counter({r: m**rounds for r, m in acc["x"].items() if m})}

    drive(g, {"x": x}, outs, reference, epochs, margin=2**8)


def test_the_row_that_wrapped_to_zero() -> None:
    """2**(2**6) = 2**64 is 0 in 64 bits: on main the row silently left the output."""
    g = ivm.Dataflow()
    x = g.input("x", ROW)
    out = g.output(squaring_loops(x, 2, 3), "loop")
    x.send([(1, 0)], 2)
    with pytest.raises(MultiplicityOverflowError) as info:
        g.step()
    msg = str(info.value)
    assert "join#" in msg and "⋈" in msg and "it feeds 'loop'" in msg
    assert "rolled back" in msg and "distinct()" in msg
    assert g.epoch == 0 and out.counts() == {}
    x.send([(1, 0)], 1)  # 1**64 = 1
    g.step()
    assert out.counts() == {(1, 0): 1}

    # the remedy the message gives: set semantics (distinct) in the loop body
    def body(v: ivm.Collection) -> ivm.Collection:
        return square(v.distinct())

    g = ivm.Dataflow()
    x = g.input("x", ROW)
    out = g.output(x.iterate(lambda v: v.iterate(body, max_iterations=3), max_iterations=2), "s")
    x.send([(1, 0)], 2)
    x.send([(2, 0)], MAX)
    g.step()
    assert out.counts() == {(1, 0): 1, (2, 0): 1}


def test_only_the_outputs_fed_are_named() -> None:
    g = ivm.Dataflow()
    x, y = g.input("x", ROW), g.input("y", ROW)
    outs = {
        "pairs": g.output(x.join(y, on=[("k", "k")]), "pairs"),
        "xcount": g.output(x.count("k"), "xcount"),
        "ycount": g.output(y.count("k"), "ycount"),
    }
    before = snapshot(g, outs)
    x.send([(1, 1)], 2**32)
    y.send([(1, 2)], 2**32)
    with pytest.raises(MultiplicityOverflowError) as info:
        g.step()
    assert info.value.outputs == ("pairs",)
    check_error(info.value, g, outs, before)


def test_an_overflow_split_across_runs_is_found_in_its_epoch() -> None:
    """A large arrangement keeps a new small run apart; the row's sum over both runs passes
    64 bits.  The step that makes it so raises (not a later read of the output)."""
    g = ivm.Dataflow()
    x = g.input("x", ROW)
    out = g.output(x, "x")
    x.insert([(i, 0) for i in range(3000)])
    x.send([(-1, 0)], MAX)
    g.step()
    x.send([(-1, 0)], 1)
    with pytest.raises(MultiplicityOverflowError) as info:
        g.step()
    assert info.value.outputs == ("x",)
    assert out.counts()[(-1, 0)] == MAX
    x.send([(-1, 0)], -MAX)  # retracting it all is fine
    g.step()
    assert (-1, 0) not in out.counts() and len(out.counts()) == 3000
