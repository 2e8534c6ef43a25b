"""Engine operators run sharded in-process at N = 1, 2, 3, 7: every epoch equals one process.

Each case builds a dataflow with ``build(g)``, drives it through random inserts and
deletes (retractions of earlier rows, and rows inserted twice), and
:class:`~shard_harness.Twins` checks ``changes()`` and ``contents()`` of every output.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from shard_harness import Twins, drive

import ivm
from ivm.collection import delta_join
from ivm.library.graphs import (
    connected_components,
    reachable,
    strongly_connected_components,
)

EDGE = [("src", "int64"), ("dst", "int64")]
KV = [("k", "int64"), ("v", "int64")]
KVS = [("k", "int64"), ("v", "int64"), ("s", "str")]


def edges(n: int) -> Callable[[random.Random], tuple]:
    return lambda rng: (rng.randrange(n), rng.randrange(n))


def kvs(rng: random.Random) -> tuple:
    return (rng.randrange(6), rng.randrange(-3, 9), rng.choice(["a", "b", "ab", ""]))


def kv(rng: random.Random) -> tuple:
    return (rng.randrange(6), rng.randrange(-3, 9))


def _joins(g: ivm.Dataflow) -> None:
    t = g.input("t", KVS)
    u = g.input("u", KV)
    g.output(t.join(u, [("k", "k")]), "join")
    g.output(t.join(u, []).filter(lambda k, v, s, k2, v2: v == v2), "cross")
    g.output(t.semijoin(u, [("k", "k")]), "semi")
    g.output(t.antijoin(u, [("v", "v")]), "anti")
    g.output(t.join(t, [("s", "s"), ("k", "k")]).project(0, 1, 4), "self")


def _reduces(g: ivm.Dataflow) -> None:
    t = g.input("t", KVS)
    g.output(t.reduce("k", [("count",), ("sum", "v")], plan="accumulable"), "acc")
    g.output(t.reduce("s", [("min", "v"), ("max", "v")], plan="hierarchical"), "hier")
    g.output(t.reduce("k", [("min", "s"), ("max", "v")], plan="general"), "general")
    g.output(t.reduce((), [("count",), ("sum", "v"), ("max", "v")]), "global")
    g.output(t.count(), "count_all")
    g.output(t.project("k", "s").distinct(), "distinct")
    g.output(t.top_k("k", [("v", True), ("s", False)], 2), "topk")
    g.output(t.top_k((), [("v", False)], 3), "topk_global")

    def median(key: tuple, rows: list[tuple], counts: list[int]) -> list[tuple[tuple, int]]:
        vals = sorted(r[1] for r, c in zip(rows, counts, strict=True) for _ in range(c))
        return [((vals[len(vals) // 2],), 1)] if vals else []

    g.output(t.reduce_group("k", median, [("median", "int64")]), "udf")


def _constants(g: ivm.Dataflow) -> None:
    t = g.input("t", KV)
    c = g.constant([(1, 10), (2, 20), (2, 20)], KV, "c")
    g.output(t.concat(c).count(("k",)), "with_constant")
    g.output(t.join(c, [("k", "k")]), "join_constant")


def _graphs(g: ivm.Dataflow) -> None:
    e = g.input("e", EDGE)
    g.output(connected_components(e), "wcc")
    g.output(connected_components(e, prioritized=False), "wcc_plain")
    g.output(strongly_connected_components(e), "scc")
    roots = e.filter(lambda s, d: s < 3).project("src", names=["node"]).distinct()
    g.output(reachable(e, roots), "reach")


def _nested(g: ivm.Dataflow) -> None:
    """A loop inside a loop: per outer round, the closure of the current pairs (bounded)."""
    e = g.input("e", EDGE)

    def outer(x: ivm.Collection) -> ivm.Collection:
        inner_e = e.enter_scope(x.scope)

        def inner(y: ivm.Collection) -> ivm.Collection:
            return (
                y.join(inner_e, [("dst", "src")])
                .project(0, 3, names=["src", "dst"])
                .concat(y)
                .distinct()
            )

        closed = x.iterate(inner, max_iterations=4)
        return closed.filter(lambda s, d: (s + d) % 5 != 0).concat(x).distinct()

    g.output(e.iterate(outer, max_iterations=3), "nested")
    g.output(e.iterate(outer), "nested_fixpoint")


def _delta_and_asof(g: ivm.Dataflow) -> None:
    e = g.input("e", EDGE)
    a = e.rename(["a", "b"])
    b = e.rename(["b", "c"])
    c = e.rename(["a", "c"])
    tri = delta_join([a, b, c], [((0, "b"), (1, "b")), ((1, "c"), (2, "c")), ((0, "a"), (2, "a"))])
    g.output(tri, "triangles")
    t = g.input("t", KV)
    u = g.input("u", KV)
    g.output(t.join_at_arrival(u, [("k", "k")]), "arrival")
    g.output(t.asof_join(u, [("k", "k")], "v", "v"), "asof")


CASES: dict[str, tuple[Callable[[ivm.Dataflow], Any], dict[str, Any]]] = {
    "joins": (_joins, {"t": kvs, "u": kv}),
    "reduces": (_reduces, {"t": kvs}),
    "constants": (_constants, {"t": kv}),
    "graphs": (_graphs, {"e": edges(25)}),
    "nested_loops": (_nested, {"e": edges(12)}),
    "delta_join_asof": (_delta_and_asof, {"e": edges(8), "t": kv, "u": kv}),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_sharded_equals_single_process(case: str, seed: int) -> None:
    build, gens = CASES[case]
    tw = Twins(build)
    drive(tw, random.Random(seed), gens, epochs=5)
    # one figure per shard (the key domains here are too small for an even spread; see
    # test_balance_of_a_large_wcc_is_even)
    for n, bal in tw.balance().items():
        assert len(bal.rows) == n and bal.total > 0, (case, n, bal)


def test_balance_of_a_large_wcc_is_even() -> None:
    """Arranged rows per shard on a 3 000-edge graph: every shard within ±10% of 1/N."""
    rng = random.Random(7)
    tw = Twins(lambda g: g.output(connected_components(g.input("e", EDGE)), "wcc"), (1, 2, 3))
    tw.insert("e", [(rng.randrange(2000), rng.randrange(2000)) for _ in range(3000)])
    tw.step()
    for n, bal in tw.balance().items():
        shares = np.array(bal.rows) / bal.total
        assert np.all(np.abs(shares - 1 / n) <= 0.1), (n, bal)


def test_report_counts_rounds_and_bytes() -> None:
    tw = Twins(lambda g: g.output(connected_components(g.input("e", EDGE)), "wcc"), (1, 2))
    tw.insert("e", [(1, 2), (2, 3), (5, 6)])
    tw.step()
    rep = tw.groups[2].report()
    assert rep["shards"] == 2 and rep["rounds"] > 0 and rep["loop_rounds"] > 0
    assert rep["bytes_exchanged"] > 0 and sum(rep["balance"]) > 0
    assert tw.groups[2].schedulers[0].stats.per_epoch[0]["epoch"] == 1


def test_an_error_on_one_shard_rolls_back_every_shard() -> None:
    """A user function that raises on one shard's rows aborts the epoch on all shards."""

    def build(g: ivm.Dataflow) -> None:
        t = g.input("t", KV)

        def check(k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            if (v == 666).any():
                raise ValueError("bad row")
            return k, v

        g.output(t.count(("k",)).map(check, KV), "n")

    tw = Twins(build, (1, 3))
    tw.insert("t", [(k, 1) for k in range(20)])
    tw.step()
    for grp in tw.groups.values():
        grp.input("t").insert([(k, 2) for k in range(20)] + [(5, 7)] * 664)
        with pytest.raises(ValueError, match="bad row"):
            grp.step()
        assert grp.epoch == 1
    tw.insert("t", [(3, 3)])
    tw.step()  # the failed epoch left no trace on any shard: the next one is exact
    assert tw.groups[3].output("n").counts()[(3, 2)] == 1
