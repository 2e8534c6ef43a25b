"""An output's contents when its changes are added to them lazily (``Output.end_epoch``).

Epochs' changes wait unmerged until they hold an eighth of the contents; every read
(``counts``, ``contents``, a checkpoint) and every roll-back must see exactly the rows a
plain-Python reference holds after the same changes, however many epochs went unread.
Also: the Arrow columns ``changes()`` returns keep the types Arrow infers from Python
values.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ivm
from ivm.errors import ArithmeticOverflowError
from ivm.operators.io import Output

ROW = st.tuples(st.integers(0, 30), st.sampled_from(["a", "b", "c"]))
#: per epoch: rows inserted, and how many of the live rows to delete
EPOCHS = st.lists(st.tuples(st.lists(ROW, max_size=12), st.integers(0, 6)), max_size=25)


def build() -> tuple[ivm.Dataflow, ivm.InputCollection, Output, Output]:
    g = ivm.Dataflow("lazy")
    x = g.input("x", [("k", "int64"), ("s", "str")])
    rows = g.output(x, "rows")
    per_key = g.output(x.count("s"), "per_s")
    return g, x, rows, per_key


def apply(x: ivm.InputCollection, live: Counter, ins: list, n_del: int) -> None:
    dels = sorted(live.elements())[:n_del]
    if ins:
        x.insert(ins)
    if dels:
        x.delete(dels)
    live.update(ins)
    live.subtract(dels)


def counted(live: Counter) -> dict:
    return {r: n for r, n in live.items() if n}


@settings(max_examples=40, deadline=None)
@given(EPOCHS, st.integers(1, 5))
def test_contents_equal_the_reference_read_every_few_epochs(epochs: list, every: int) -> None:
    g, x, rows, per_key = build()
    live: Counter = Counter()
    for i, (ins, n_del) in enumerate(epochs):
        apply(x, live, ins, n_del)
        g.step()
        if i % every == 0:
            assert rows.counts() == counted(live)
            by_s = Counter()
            for (_, s), n in counted(live).items():
                by_s[s] += n
            assert per_key.counts() == {(s, n): 1 for s, n in by_s.items() if n}
    assert rows.counts() == counted(live)


def test_many_unread_epochs_stay_unmerged_and_read_whole() -> None:
    """Small changes to large contents are not merged epoch by epoch."""
    g, x, rows, _ = build()
    x.insert([(k, "a") for k in range(50_000)])
    g.step()
    rows.counts()  # merged
    live = Counter({(k, "a"): 1 for k in range(50_000)})
    for e in range(20):
        apply(x, live, [(100_000 + e, "b")], 0)
        x.delete([(e, "a")])
        live.subtract([(e, "a")])
        g.step()
    assert rows._unmerged, "small changes should wait unmerged"
    assert rows.counts() == counted(live)
    assert not rows._unmerged


def test_failed_epoch_restores_unmerged_changes() -> None:
    g = ivm.Dataflow("rollback")
    x = g.input("x", [("k", "int64"), ("a", "any")])
    out = g.output(x, "rows")
    mx = g.output(x.max("k", "a"), "max")
    x.insert([(k, k) for k in range(40_000)])
    g.step()
    out.counts()
    x.insert([(1, 5)])
    g.step()
    x.insert([(2, 7)])
    g.step()
    pending = len(out._unmerged)
    assert pending == 2
    x.insert([(1, "five")])  # max cannot compare it: the epoch rolls back
    with pytest.raises(ivm.SchemaError, match="cannot be compared"):
        g.step()
    assert len(out._unmerged) == pending
    want = Counter({(k, k): 1 for k in range(40_000)})
    want.update([(1, 5), (2, 7)])
    assert out.counts() == dict(want)
    assert mx.counts()[(1, 5)] == 1


def test_checkpoint_includes_unmerged_changes() -> None:
    g, x, rows, _ = build()
    x.insert([(k, "a") for k in range(40_000)])
    g.step()
    rows.counts()
    x.insert([(7, "z")])
    x.delete([(3, "a")])
    g.step()
    assert rows._unmerged
    state = g.state()
    g2, _, rows2, _ = build()
    g2.load_state(state)
    assert rows2.counts() == rows.counts()


def test_overflowing_multiplicity_is_found_in_its_epoch() -> None:
    """Unmerged changes whose diffs could sum past 64 bits are merged in their epoch, so
    the overflow is raised there (and rolled back), as when every epoch merged."""
    g = ivm.Dataflow("big")
    x = g.input("x", [("k", "int64")])
    out = g.output(x, "rows")
    x.insert([(k,) for k in range(40_000)])
    g.step()
    big = 2**62
    x.send([(1,)], big)
    g.step()
    x.send([(1,)], big)
    with pytest.raises(ArithmeticOverflowError):
        g.step()
    assert out.counts()[(1,)] == big + 1


@pytest.mark.parametrize(
    ("values", "arrow_type"),
    [
        (["x", None, "y"], pa.string()),
        ([None, None], pa.null()),
        ([], pa.null()),
    ],
)
def test_changes_str_column_arrow_type(values: list, arrow_type: pa.DataType) -> None:
    g = ivm.Dataflow("arrow")
    x = g.input("x", [("k", "int64"), ("s", "str")])
    out = g.output(x, "rows")
    x.insert([(i, v) for i, v in enumerate(values)])
    g.step()
    t = out.changes()
    assert t.column("s").type == arrow_type
    assert sorted(t.column("s").to_pylist(), key=str) == sorted(values, key=str)


def test_str_column_accepts_str_subclasses() -> None:
    g = ivm.Dataflow("sub")
    x = g.input("x", [("s", "str")])
    out = g.output(x, "rows")
    x.insert({"s": np.array([np.str_("a"), "b", None], dtype=object)})
    g.step()
    assert out.counts() == {("a",): 1, ("b",): 1, (None,): 1}
    assert out.changes().column("s").to_pylist() == ["a", "b", None]
