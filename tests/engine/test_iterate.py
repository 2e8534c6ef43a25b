"""Composed dataflows with loops against from-scratch references.

Reachability, min-label propagation (with and without prioritized entry), a bounded loop
(fixed-k egress), mutual recursion, and nested loops (SCC by trim-and-reverse, and a
synthetic loop-in-a-loop), all under random edge inserts and deletes over several epochs.
After every epoch the output must equal the fixed point computed plainly in the test.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import networkx as nx
import numpy as np
from engine_helpers import (
    apply_changes,
    change_sequence,
    check_output,
    edge_row,
    every_third,
    examples,
    node_row,
    push,
    reach_round,
    ref_min_label,
    replay,
    seed_row,
)
from hypothesis import given
from hypothesis import strategies as st

import ivm
from ivm.library.graphs import (
    EDGE,
    NODE_LABEL,
    connected_components,
    propagate_min_label,
    reachable,
    strongly_connected_edges,
)

NODE = [("node", "int64")]

Changes = list[list[tuple[tuple, int]]]


# -- plain references -------------------------------------------------------------------
def successors(edges: Counter) -> dict[int, set[int]]:
    succ: dict[int, set[int]] = {}
    for (s, d), n in edges.items():
        if n > 0:
            succ.setdefault(s, set()).add(d)
    return succ


def ref_reach(edges: Counter, roots: set[int], max_steps: int | None = None) -> set[int]:
    """Nodes within ``max_steps`` edges (any number if None) of ``roots``."""
    succ = successors(edges)
    seen = set(roots)
    frontier = set(roots)
    steps = 0
    while frontier and (max_steps is None or steps < max_steps):
        frontier = {d for s in frontier for d in succ.get(s, ())} - seen
        seen |= frontier
        steps += 1
    return seen


def as_set(rows: Counter) -> Counter:
    return Counter({r: 1 for r, n in rows.items() if n > 0})


def ref_parity(edges: Counter) -> tuple[Counter, Counter]:
    """(x, y) joined by a walk of odd length / of even length >= 2."""
    e = {r for r, n in edges.items() if n > 0}
    odd: set = set(e)
    even: set = set()
    while True:
        new_odd = e | {(x, d) for (x, y) in even for (s, d) in e if s == y}
        new_even = {(x, d) for (x, y) in odd for (s, d) in e if s == y}
        if (new_odd, new_even) == (odd, even):
            return Counter({r: 1 for r in odd}), Counter({r: 1 for r in even})
        odd, even = new_odd, new_even


def ref_scc_edges(edges: Counter) -> Counter:
    g = nx.DiGraph()
    live = [r for r, n in edges.items() if n > 0]
    g.add_edges_from(live)
    comp = {}
    for i, c in enumerate(nx.strongly_connected_components(g)):
        for v in c:
            comp[v] = i
    return Counter({(s, d): n for (s, d), n in edges.items() if n > 0 and comp[s] == comp[d]})


def ref_two_level(e1: Counter, e2: Counter, roots: set[int]) -> Counter:
    """``S = roots ∪ E2(E1*(S))`` by plain fixed-point iteration."""
    succ2 = successors(e2)
    s = set(roots)
    while True:
        closed = ref_reach(e1, s)
        new = set(roots) | {d for v in closed for d in succ2.get(v, ())}
        if new == s:
            return Counter({(v,): 1 for v in s})
        s = new


# -- dataflows under test -----------------------------------------------------------------
def reach_by_hand(
    edges: ivm.Collection, roots: ivm.Collection, max_iterations: int | None = None
) -> ivm.Collection:
    return roots.iterate(
        lambda r: (
            r.join(edges, on=[("node", "src")]).project("dst").rename(["node"]).concat(r).distinct()
        ),
        max_iterations=max_iterations,
    )


def parity(edges: ivm.Collection) -> list[ivm.Collection]:
    g = edges.graph
    empty = g.empty(EDGE)

    def body(vs: list[ivm.Collection]) -> list[ivm.Collection]:
        odd, even = vs

        def step(paths: ivm.Collection) -> ivm.Collection:
            return paths.join(edges, on=[("dst", "src")]).map(lambda s, d, s2, d2: (s, d2), EDGE)

        return [edges.concat(step(even)).distinct(), step(odd).distinct()]

    return ivm.iterate([edges, empty], body)


def two_level(e1: ivm.Collection, e2: ivm.Collection, roots: ivm.Collection) -> ivm.Collection:
    """An outer loop whose body runs an inner loop over the outer variable."""

    def outer(s: ivm.Collection) -> ivm.Collection:
        closed = s.iterate(lambda r: reach_round(r, e1, keep=s))
        return reach_round(closed, e2, keep=roots)

    return roots.iterate(outer)


def by_bit_length(node: np.ndarray, label: np.ndarray) -> np.ndarray:
    return np.floor(np.log2(np.maximum(label, 1))).astype(np.int64)


@st.composite
def graph_scenario(draw: st.DrawFn, with_seeds: bool = False) -> tuple[Changes, Changes]:
    epochs = draw(st.integers(2, 5))
    edges = draw(change_sequence(edge_row, epochs))
    other = draw(change_sequence(seed_row if with_seeds else node_row, epochs))
    return edges, other


def graph_inputs(
    name: str, schema: list[tuple[str, str]]
) -> tuple[ivm.Dataflow, ivm.InputCollection, ivm.InputCollection]:
    """A dataflow with an ``edges`` input and one more input ``name``."""
    g = ivm.Dataflow()
    return g, g.input("edges", EDGE), g.input(name, schema)


def check_edge_program(
    edge_changes: Changes,
    program: Callable[[ivm.Collection], Sequence[ivm.Collection]],
    reference: Callable[[Counter], Sequence[Counter]],
    what: list[str],
) -> None:
    """Maintain ``program``'s outputs over an edge input under ``edge_changes``; after every
    epoch each output (named in ``what``) equals its ``reference`` of the current edges."""
    g = ivm.Dataflow()
    edges = g.input("edges", EDGE)
    outs = [g.output(c, f"out{i}") for i, c in enumerate(program(edges))]
    prev: Sequence[Counter] = [Counter() for _ in outs]
    for epoch, (E,) in replay(g, [(edges, edge_changes, 0)]):
        want = reference(E)
        for out, w, p, name in zip(outs, want, prev, what, strict=True):
            check_output(out, w, p, f"epoch {epoch} {name}")
        prev = want


@given(graph_scenario())
@examples(25)
def test_reachability_and_bounded_reachability(sc: tuple[Changes, Changes]) -> None:
    edge_changes, root_changes = sc
    g, edges, roots = graph_inputs("roots", NODE)
    outs = {
        "library": (g.output(reachable(edges, roots), "lib"), None),
        "by_hand": (g.output(reach_by_hand(edges, roots), "hand"), None),
        "k=1": (g.output(reach_by_hand(edges, roots, 1), "k1"), 1),
        "k=2": (g.output(reach_by_hand(edges, roots, 2), "k2"), 2),
        "k=3": (g.output(reach_by_hand(edges, roots, 3), "k3"), 3),
    }
    prev = {k: Counter() for k in outs}
    feeds = [(edges, edge_changes, every_third), (roots, root_changes, 0)]
    for epoch, (E, R) in replay(g, feeds):
        root_set = {r[0] for r, n in R.items() if n > 0}
        for name, (out, k) in outs.items():
            # the bounded loop applies the body k times: k steps from the roots
            want = Counter({(v,): 1 for v in ref_reach(E, root_set, k)})
            check_output(out, want, prev[name], f"epoch {epoch} reach {name}")
            prev[name] = want


@given(graph_scenario(with_seeds=True))
@examples(25)
def test_min_label_with_and_without_priority(sc: tuple[Changes, Changes]) -> None:
    edge_changes, seed_changes = sc
    g, edges, seeds = graph_inputs("seeds", NODE_LABEL)
    plain = g.output(propagate_min_label(edges, seeds), "plain")
    prio = g.output(propagate_min_label(edges, seeds, entry=by_bit_length), "prio")
    # a generic prioritized iterate: roots enter at iteration node % 3
    roots = seeds.project("node")
    reach_prio = g.output(
        roots.iterate(
            lambda r: reach_round(r, edges),
            entry=lambda n: n % 3,
        ),
        "reach_prio",
    )
    prev: dict[str, Counter] = {"plain": Counter(), "reach": Counter()}
    for epoch, (E, S) in replay(g, [(edges, edge_changes, 0), (seeds, seed_changes, every_third)]):
        want = ref_min_label(E, S)
        check_output(plain, want, prev["plain"], f"epoch {epoch} min-label")
        check_output(prio, want, prev["plain"], f"epoch {epoch} prioritized min-label")
        want_r = Counter({(v,): 1 for v in ref_reach(E, {n for (n, _), c in S.items() if c > 0})})
        check_output(reach_prio, want_r, prev["reach"], f"epoch {epoch} prioritized reach")
        prev = {"plain": want, "reach": want_r}


#: node ids spread over the entry levels of ``connected_components`` (16x per level),
#: with a negative id and one beyond 2^53 (where a float's log2 rounds)
SPREAD = [3, -7, 17, 300, 4_099, 70_000, (1 << 60) + 1, 2**40]


def ref_components(edges: Counter) -> Counter:
    """(node, smallest node of its weakly connected component) over the live edges."""
    g = nx.Graph()
    g.add_edges_from(r for r, n in edges.items() if n > 0)
    return Counter({(v, min(c)): 1 for c in nx.connected_components(g) for v in c})


@given(graph_scenario())
@examples(25)
def test_prioritized_components_equal_plain_and_reference(sc: tuple[Changes, Changes]) -> None:
    """``connected_components`` with labels entering by magnitude (the default) and
    without priorities equal the components of the live edges after every epoch, with
    node ids on every entry level (negative and huge ones included)."""
    spread = [[((SPREAD[s], SPREAD[d]), n) for (s, d), n in ch] for ch in sc[0]]
    g = ivm.Dataflow()
    edges = g.input("edges", EDGE)
    outs = {
        "prioritized": g.output(connected_components(edges), "prio"),
        "plain": g.output(connected_components(edges, prioritized=False), "plain"),
    }
    prev: Counter = Counter()
    for epoch, (E,) in replay(g, [(edges, spread, every_third)]):
        want = ref_components(E)
        for name, out in outs.items():
            check_output(out, want, prev, f"epoch {epoch} {name} components")
        prev = want


@given(graph_scenario())
@examples(20)
def test_mutual_recursion_even_odd_walks(sc: tuple[Changes, Changes]) -> None:
    check_edge_program(sc[0], parity, ref_parity, ["odd walks", "even walks"])


@given(graph_scenario())
@examples(15)
def test_nested_scc_edges_match_networkx(sc: tuple[Changes, Changes]) -> None:
    check_edge_program(
        sc[0], lambda e: [strongly_connected_edges(e)], lambda E: [ref_scc_edges(E)], ["scc edges"]
    )


@given(graph_scenario(), st.lists(edge_row, max_size=6))
@examples(20)
def test_synthetic_nested_loop(sc: tuple[Changes, Changes], e2_rows: list[tuple]) -> None:
    edge_changes, root_changes = sc
    g = ivm.Dataflow()
    e1 = g.input("e1", EDGE)
    e2 = g.input("e2", EDGE)
    roots = g.input("roots", NODE)
    out = g.output(two_level(e1, e2, roots), "nested")
    E1: Counter = Counter()
    E2: Counter = Counter()
    R: Counter = Counter()
    prev: Counter = Counter()
    for epoch, (ce, cr) in enumerate(zip(edge_changes, root_changes, strict=True), 1):
        # e2 changes: insert its rows in the first epoch, then flip one edge per epoch
        ce2 = (
            [(r, 1) for r in e2_rows]
            if epoch == 1
            else (
                [(e2_rows[epoch % len(e2_rows)], -1 if E2[e2_rows[epoch % len(e2_rows)]] else 1)]
                if e2_rows
                else []
            )
        )
        push(e1, ce, 0)
        push(e2, ce2, 0)
        push(roots, cr, 0)
        apply_changes(E1, ce)
        apply_changes(E2, ce2)
        apply_changes(R, cr)
        g.step()
        want = ref_two_level(E1, E2, {r[0] for r, n in R.items() if n > 0})
        check_output(out, want, prev, f"epoch {epoch} nested loop")
        prev = want


def test_early_change_corrected_at_later_iteration_without_new_input() -> None:
    """Deleting an edge changes a label at an early iteration; the min reduce must then
    correct its output at a later iteration at which no input row reached it (a scheduled
    "interesting time", CIDR 2013 §3.4), and the result must still be right.

    Node 9 hears label 0 directly from node 0 (iteration 0) and label 1 along the chain
    1 → 2 → 3 → 4 → 9 (iteration 3).  Deleting (0, 9) changes its input only at iteration
    0, yet its minimum must move from 9 back to 1 at iteration 3.
    """
    g = ivm.Dataflow()
    edges = g.input("edges", EDGE)
    seeds = g.input("seeds", NODE_LABEL)
    out = g.output(propagate_min_label(edges, seeds), "labels")
    graph = [(0, 9), (1, 2), (2, 3), (3, 4), (4, 9)]
    nodes = [0, 1, 2, 3, 4, 9]
    edges.insert(graph)
    seeds.insert([(i, i) for i in nodes])
    g.step()
    E = Counter(graph)
    S = Counter({(i, i): 1 for i in nodes})
    before = ref_min_label(E, S)
    check_output(out, before, None, "initial labels")

    edges.delete([(0, 9)])
    E[(0, 9)] -= 1
    g.step()
    want = ref_min_label(E, S)
    check_output(out, want, before, "labels after deleting (0, 9)")
    assert out.changed_counts() == {(9, 0): -1, (9, 1): 1}

    reduces = [d for d in g.metrics.differences(epoch=g.epoch) if d.kind == "reduce"]
    idle = {d.iteration[-1] for d in reduces if d.rows == 0}
    fed = {d.iteration[-1] for d in reduces if d.rows > 0}
    assert fed == {0}, reduces
    assert 3 in idle, f"the reduce was not re-run at iteration 3: {reduces}"


def test_prioritized_entry_is_the_same_fixed_point_on_a_fixed_graph() -> None:
    """A larger fixed example: entry by bit length gives the plain fixed point."""
    rng = np.random.default_rng(7)
    edge_list = [(int(a), int(b)) for a, b in rng.integers(0, 60, size=(120, 2))]
    g = ivm.Dataflow()
    edges = g.input("edges", EDGE)
    seeds = g.input("seeds", NODE_LABEL)
    plain = g.output(propagate_min_label(edges, seeds), "plain")
    prio = g.output(propagate_min_label(edges, seeds, entry=by_bit_length), "prio")
    edges.insert(edge_list)
    seeds.insert([(i, 60 - i) for i in range(60)])
    g.step()
    want = ref_min_label(Counter(edge_list), Counter({(i, 60 - i): 1 for i in range(60)}))
    check_output(plain, want, None, "plain")
    check_output(prio, want, None, "prioritized")
    edges.delete(edge_list[:30])
    g.step()
    want2 = ref_min_label(Counter(edge_list[30:]), Counter({(i, 60 - i): 1 for i in range(60)}))
    check_output(plain, want2, want, "plain after deletes")
    check_output(prio, want2, want, "prioritized after deletes")
