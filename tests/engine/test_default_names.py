"""Default column names are distinct and deterministic (docs/engine-api.md, "Default names").

A name keeps its first occurrence; a later one becomes ``name_k`` with the smallest ``k``
not used by any column of the result.  Explicit names are taken as given (duplicates among
them are still a :class:`PlanError`).
"""

from __future__ import annotations

import pytest

import ivm
from ivm.collection import distinct_names
from ivm.errors import PlanError


def _graph() -> tuple[ivm.Dataflow, ivm.InputCollection]:
    g = ivm.Dataflow()
    return g, g.input("t", [("a", "int64"), ("b", "int64")])


def test_projecting_a_repeated_column_again_gets_fresh_names() -> None:
    g, t = _graph()
    twice = t.project(0, 0)
    assert twice.schema.names == ("a", "a_1")
    again = twice.project(0, 0, 1)
    assert again.schema.names == ("a", "a_2", "a_1")
    out = g.output(again, "o")
    t.insert([(1, 2), (3, 4)])
    g.step()
    assert out.counts() == {(1, 1, 1): 1, (3, 3, 3): 1}


def test_aggregates_with_the_same_default_name_get_distinct_names() -> None:
    g, t = _graph()
    r = t.reduce("a", [("count",), ("count",), ("sum", "b"), ("sum", "b")])
    assert r.schema.names == ("a", "count", "count_1", "sum_b", "sum_b_1")
    out = g.output(r, "o")
    t.insert([(1, 2), (1, 5)])
    g.step()
    assert out.counts() == {(1, 2, 2, 7, 7): 1}


def test_an_aggregate_named_like_a_key_column_gets_a_suffix() -> None:
    g = ivm.Dataflow()
    t = g.input("t", [("count", "int64"), ("v", "int64")])
    assert t.reduce("count", [("count",), ("min", "v")]).schema.names == (
        "count",
        "count_1",
        "min_v",
    )


def test_explicit_duplicate_names_are_still_refused() -> None:
    _, t = _graph()
    with pytest.raises(PlanError, match="duplicate column names"):
        t.project(0, 1, names=["x", "x"])
    with pytest.raises(PlanError, match="duplicate column names"):
        t.reduce("a", [("count",), ("sum", "b")], names=["n", "n"])


@pytest.mark.parametrize(
    ("given", "want"),
    [
        (["a", "a", "a"], ["a", "a_1", "a_2"]),
        (["a", "a", "a_1"], ["a", "a_2", "a_1"]),
        (["a_1", "a", "a"], ["a_1", "a", "a_2"]),
        (["x", "y"], ["x", "y"]),
    ],
)
def test_distinct_names_scheme(given: list[str], want: list[str]) -> None:
    assert distinct_names(given) == want
