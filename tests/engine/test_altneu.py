"""``differentiate`` / ``integrate``: the alt/neu calculus (blog-post seed, "AltNeu").

``c.differentiate(body)`` runs ``body`` on momentary blips of c's changes and integrates
the result, so for the identity body — and for any linear body — the result equals the
body applied to c itself: ``integrate(differentiate(c)) == c``.  Checked after every epoch
of random inserts and deletes, at the top level, nested twice, and inside a loop body.
"""

from __future__ import annotations

from collections import Counter

from engine_helpers import (
    change_sequence,
    check_output,
    every_third,
    examples,
    reach_round,
    ref_reachable,
    replay,
)
from hypothesis import given
from hypothesis import strategies as st

import ivm
from ivm.library.graphs import EDGE

ROW = st.tuples(st.integers(0, 5), st.integers(0, 5))
SCHEMA = [("src", "int64"), ("dst", "int64")]
NODE = [("node", "int64")]


def ref_reach(edges: Counter, roots: set[int]) -> Counter:
    return Counter({(v,): 1 for v in ref_reachable(edges, roots)})


@given(st.integers(1, 6).flatmap(lambda n: change_sequence(ROW, n)))
@examples(40)
def test_integrate_differentiate_is_identity(changes: list) -> None:
    g = ivm.Dataflow()
    c = g.input("c", SCHEMA)
    outs = {
        "identity": (g.output(c.differentiate(lambda d: d), "id"), lambda C: C),
        "nested": (
            g.output(c.differentiate(lambda d: d.differentiate(lambda e: e)), "nest"),
            lambda C: C,
        ),
        "linear": (
            g.output(
                c.differentiate(
                    lambda d: (
                        d.filter(lambda s, t: s <= t)
                        .map(lambda s, t: (t, s + t), SCHEMA)
                        .concat(d.negate().negate())
                    )
                ),
                "linear",
            ),
            lambda C: Counter({(t, s + t): n for (s, t), n in C.items() if s <= t}) + C,
        ),
        "then_reduce": (
            g.output(c.differentiate(lambda d: d).count("src"), "count"),
            lambda C: _count(C),
        ),
    }
    prev = {k: Counter() for k in outs}
    for epoch, (C,) in replay(g, [(c, changes, every_third)]):
        for name, (out, ref) in outs.items():
            want = Counter({r: n for r, n in ref(C).items() if n})
            check_output(out, want, prev[name], f"epoch {epoch} {name}")
            prev[name] = want


def _count(c: Counter) -> Counter:
    out: Counter = Counter()
    for (s, _), n in c.items():
        out[s] += n
    return Counter({(s, n): 1 for s, n in out.items() if n > 0})


@given(
    st.integers(2, 5).flatmap(lambda n: change_sequence(ROW, n)),
    st.lists(st.integers(0, 5), min_size=1, max_size=3),
)
@examples(25)
def test_differentiate_inside_an_iterate_body(changes: list, roots_list: list[int]) -> None:
    """Reachability whose loop variable passes through differentiate(identity), on both
    the variable and the edges: the fixed point is unchanged."""
    g = ivm.Dataflow()
    edges = g.input("edges", EDGE)
    roots = g.input("roots", NODE)

    def body(r: ivm.Collection) -> ivm.Collection:
        r2 = r.differentiate(lambda d: d)
        e2 = edges.enter_scope(r.scope).differentiate(lambda d: d)
        return (
            r2.join(e2, on=[("node", "src")]).project("dst").rename(["node"]).concat(r2).distinct()
        )

    out = g.output(roots.iterate(body), "reach")
    plain = g.output(
        roots.iterate(lambda r: reach_round(r, edges)),
        "plain",
    )
    roots.insert([(v,) for v in roots_list])
    prev: Counter = Counter()
    for epoch, (E,) in replay(g, [(edges, changes, 0)]):
        want = ref_reach(E, set(roots_list))
        check_output(out, want, prev, f"epoch {epoch} reach through differentiate")
        check_output(plain, want, prev, f"epoch {epoch} plain reach")
        prev = want
