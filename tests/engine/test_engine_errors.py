"""Bad input raises a typed error from ``ivm.errors`` and changes nothing.

Each case checks the exception type (an ``IvmError`` that is also the matching builtin),
the wording of the message (it names the object and what is wrong), and that the dataflow's
checkpointed state and outputs are exactly as before — then that the dataflow keeps working:
the next valid change is processed normally.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ivm

SCHEMA = [("k", "int64"), ("v", "int64"), ("s", "str"), ("a", "any")]


class Flow:
    """A small dataflow with a join, a reduce and a loop, already holding data."""

    def __init__(self) -> None:
        g = self.g = ivm.Dataflow("flow")
        self.x = g.input("x", SCHEMA)
        self.e = g.input("edges", [("src", "int64"), ("dst", "int64")])
        self.outs = {
            "agg": g.output(self.x.reduce("k", [("count",), ("sum", "v"), ("max", "s")]), "agg"),
            "join": g.output(self.x.join(self.x, on=[("v", "k")]).count("k"), "join"),
            "reach": g.output(
                self.x.project("k")
                .rename(["node"])
                .iterate(
                    lambda r: (
                        r.join(self.e, on=[("node", "src")])
                        .project("dst")
                        .rename(["node"])
                        .concat(r)
                        .distinct()
                    )
                ),
                "reach",
            ),
        }
        self.x.insert([(1, 2, "a", None), (2, 3, "b", 1.5), (2, 1, None, "z")])
        self.e.insert([(1, 5), (5, 6)])
        g.step()
        self.fresh_key = 100

    def snapshot(self) -> tuple[dict[str, Counter], dict[str, dict], int]:
        state = {
            k: Counter(tuple(r.values()) for r in t.to_pylist()) for k, t in self.g.state().items()
        }
        return state, {n: o.counts() for n, o in self.outs.items()}, self.g.epoch

    def still_works(self) -> None:
        """A valid change after the error is processed as if the error never happened."""
        self.fresh_key += 1
        k = self.fresh_key
        before = self.outs["agg"].counts()
        self.x.insert([(k, 1, "q", None)])
        self.g.step()
        assert self.outs["agg"].counts() == {**before, (k, 1, 1, "q"): 1}
        assert self.outs["agg"].changed_counts() == {(k, 1, 1, "q"): 1}
        assert (k,) in self.outs["reach"].counts()


def expect(
    flow: Flow, action: Callable[[], Any], error: type[ivm.IvmError], builtin: type, *wording: str
) -> None:
    before = flow.snapshot()
    with pytest.raises(error) as info:
        action()
    assert isinstance(info.value, ivm.IvmError) and isinstance(info.value, builtin)
    message = str(info.value)
    for w in wording:
        assert w in message, f"{w!r} not in {message!r}"
    # nothing changed, not even after processing an (empty) epoch
    assert flow.snapshot() == before
    flow.g.step()
    after = flow.snapshot()
    assert after[0].keys() == before[0].keys()
    assert {k: v for k, v in after[0].items() if k != "__meta__"} == {
        k: v for k, v in before[0].items() if k != "__meta__"
    }
    assert after[1] == before[1]
    flow.still_works()


# -- rows that do not match the schema ----------------------------------------------------
@pytest.mark.parametrize(
    ("rows", "wording"),
    [
        ([(1, 2, "a")], ("input:x", "does not match schema", "4 columns")),
        ([(1, 2, "a", None, 5)], ("input:x", "does not match schema")),
        ([(1, 2, "a", None), (3,)], ("(3,)", "does not match schema")),
        ([("one", 2, "a", None)], ("column 'k' is int64", "str", "'one'")),
        ([(1.5, 2, "a", None)], ("column 'k' is int64", "float")),
        ([(None, 2, "a", None)], ("column 'k'", "cannot hold NULL", "'any'")),
        ([(1, 2, 3, None)], ("column 's' is str", "int")),
        ([(1, 2, "a", [1, 2])], ("column 'a'", "hashable", "list")),
        ([1, 2, 3, 4], ("row 1 does not match",)),
        (42, ("rows must be a list of tuples", "int")),
        ({"k": [1], "v": [2], "s": ["a"]}, ("missing ['a']",)),
        ({"k": [1], "v": [2], "s": ["a"], "a": [None], "zz": [0]}, ("unexpected ['zz']",)),
        ({"k": [1, 2], "v": [2], "s": ["a"], "a": [None]}, ("different lengths",)),
        (
            {"k": np.array([1.5]), "v": [2], "s": ["a"], "a": [None]},
            ("column 'k' is int64", "float64"),
        ),
        (pa.table({"k": [1], "v": [2]}), ("Arrow data lacks column(s) ['s', 'a']",)),
    ],
)
@pytest.mark.parametrize("verb", ["insert", "delete"])
def test_rows_not_matching_schema(rows: Any, wording: tuple[str, ...], verb: str) -> None:
    flow = Flow()
    expect(flow, lambda: getattr(flow.x, verb)(rows), ivm.SchemaError, ValueError, *wording)


def test_bad_row_in_a_batch_of_good_rows_changes_nothing() -> None:
    flow = Flow()
    rows = [(9, 9, "ok", None)] * 50 + [(9, None, "bad", None)]
    expect(flow, lambda: flow.x.insert(rows), ivm.SchemaError, ValueError, "column 'v'", "NULL")


def test_update_with_bad_new_rows_does_not_delete_the_old_ones() -> None:
    flow = Flow()
    expect(
        flow,
        lambda: flow.x.update([(1, 2, "a", None)], [(1, "two", "a", None)]),
        ivm.SchemaError,
        ValueError,
        "column 'v' is int64",
    )
    expect(
        flow,
        lambda: flow.x.update([(1, 2, "a")], [(1, 3, "a", None)]),
        ivm.SchemaError,
        ValueError,
        "does not match schema",
    )


# -- epochs -------------------------------------------------------------------------------
@pytest.mark.parametrize("epoch", [0, 1, 5, 9])
def test_epoch_that_does_not_advance(epoch: int) -> None:
    flow = Flow()
    flow.g.step(epoch=9)
    before = flow.snapshot()
    flow.x.insert([(8, 8, "pending", None)])  # a pending change survives the error
    with pytest.raises(ivm.EpochError) as info:
        flow.g.step(epoch=epoch)
    assert isinstance(info.value, ValueError)
    assert f"epoch {epoch} does not advance past the last epoch 9" in str(info.value)
    assert flow.g.epoch == 9
    assert {n: o.counts() for n, o in flow.outs.items()} == before[1]
    flow.g.step(epoch=12)
    assert flow.g.epoch == 12
    assert (8, 1, 8, "pending") in flow.outs["agg"].counts()
    flow.still_works()


# -- diffs --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("diffs", "wording"),
    [
        (1.0, "diffs must be integers, got float64"),
        (np.float64(2), "diffs must be integers, got float64"),
        (True, "diffs must be integers, got bool"),
        ("1", "diffs must be integers, got <U1"),
        ([1, 2.5], "diffs must be integers"),
        ([True, False], "diffs must be integers, got bool"),
        ([1, None], "diffs must be integers, got object"),
        ([1, 2, 3], "3 diffs for 2 rows"),
        (2**70, "64-bit"),
        ([1, 2**70], "64-bit"),
    ],
)
def test_non_integer_diff(diffs: Any, wording: str) -> None:
    flow = Flow()
    expect(
        flow,
        lambda: flow.x.send([(1, 1, "a", None), (2, 2, "b", None)], diffs),
        ivm.DiffError,
        TypeError,
        "input:x",
        wording,
    )


# -- wiring across dataflows ----------------------------------------------------------------
def foreign_actions(flow: Flow, other: ivm.Collection) -> list[tuple[str, Callable[[], Any]]]:
    x = flow.x
    o2 = other.rename(["k", "v", "s", "a"])
    return [
        ("join", lambda: x.join(other, on=[("k", "k")])),
        ("join reversed", lambda: other.join(x, on=[("k", "k")])),
        ("semijoin", lambda: x.semijoin(other, on=[("k", "k")])),
        ("antijoin", lambda: x.antijoin(other, on=[("k", "k")])),
        ("concat", lambda: x.concat(o2)),
        ("output", lambda: flow.g.output(other, "foreign")),
        ("iterate inits", lambda: ivm.iterate([x, o2], lambda vs: vs)),
        ("iterate body uses", lambda: x.iterate(lambda v: v.concat(o2).distinct())),
        ("iterate body returns", lambda: x.iterate(lambda v: o2)),
        ("differentiate body returns", lambda: x.differentiate(lambda d: o2)),
    ]


@pytest.mark.parametrize("case", range(10))
def test_operator_wired_to_another_dataflow(case: int) -> None:
    flow = Flow()
    g2 = ivm.Dataflow("other")
    other = g2.input("y", SCHEMA)
    name, action = foreign_actions(flow, other)[case]
    # the message names the offending operator and both dataflows
    wording = (
        "input:x#0 belongs to dataflow 'flow', not 'other'"
        if name == "join reversed"
        else "#0 belongs to dataflow 'other', not 'flow'"
        if "join" in name or name == "output"
        else "#1 belongs to dataflow 'other', not 'flow'"
    )
    expect(flow, action, ivm.ForeignCollectionError, ValueError, wording)
    # the other dataflow is untouched too
    out = g2.output(other, "y")
    other.insert([(1, 1, "a", None)])
    g2.step()
    assert out.counts() == {(1, 1, "a", None): 1}, name


def test_plan_errors_are_typed() -> None:
    flow = Flow()
    expect(flow, lambda: flow.x.project("nope"), ivm.PlanError, ValueError, "no column 'nope'")
    expect(
        flow,
        lambda: flow.x.reduce("k", [("median", "v")]),
        ivm.PlanError,
        ValueError,
        "unknown aggregate 'median'",
    )
    expect(
        flow,
        lambda: flow.x.iterate(lambda v: v.project("k")),
        ivm.PlanError,
        ValueError,
        "does not match",
    )
    expect(
        flow,
        lambda: flow.g.input("x", SCHEMA),
        ivm.PlanError,
        ValueError,
        "already has an input named 'x'",
    )


def test_loop_limit_is_typed() -> None:
    g = ivm.Dataflow("counter", loop_limit=50)
    x = g.input("x", [("n", "int64")])
    g.output(x.iterate(lambda v: v.map(lambda n: (n + 1,), [("n", "int64")])), "up")
    x.insert([(0,)])
    with pytest.raises(ivm.LoopLimitError, match="did not converge in 50 iterations"):
        g.step()
    assert isinstance(ivm.LoopLimitError("x"), ivm.IvmError)


def test_error_during_an_epoch_leaves_state_unchanged() -> None:
    """Values an ``any`` column accepts but ``max`` cannot compare fail inside ``step``;
    the dataflow must be left as it was before the epoch (the failed epoch's changes
    dropped or retried), not with the bad row half-applied in some traces."""
    g = ivm.Dataflow("mixed")
    x = g.input("x", [("k", "int64"), ("a", "any")])
    out = g.output(x.max("k", "a"), "max")
    x.insert([(1, 5)])
    g.step()
    x.insert([(1, "five")])
    with pytest.raises(ivm.SchemaError, match="cannot be compared"):
        g.step()
    x.insert([(1, 6), (2, 7)])  # key 1 again: the failed epoch's row must be gone
    g.step()
    assert out.counts() == {(1, 6): 1, (2, 7): 1}
