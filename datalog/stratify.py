"""Stratification: the precedence graph, its strongly connected components, and their order.

The precedence graph has an edge ``head -> q`` for every relation ``q`` read by a rule for
``head``, labelled by how it is read: ``positive``, ``negation`` (``!q(...)``), or the aggregate
(``count``/``sum``/``min``/``max``) whose body contains it (a negation inside an aggregate is
a ``negation``; nested aggregates take the least monotone label).

Every strongly connected component (SCC, from the front ends' one SCC utility
:mod:`sql_frontend.scc`, shared with SQL's ``WITH RECURSIVE``) becomes one evaluation unit: a non-recursive SCC is
computed directly; a recursive one (several relations, or one that reads itself) becomes one
``ivm.iterate`` scope, its relations mutually recursive. SCCs are evaluated dependencies first.

Semantics of aggregates in recursion. An edge inside an SCC must be ``positive``, ``min`` or
``max``: ``negation``, ``count`` and ``sum`` are refused (the program is not stratifiable) and
the error names the cycle. A recursive SCC denotes the limit of the iteration
``R_0 = ∅, R_{i+1} = F(R_i)``, where F evaluates every rule of the SCC once on the current
relations (min/max by their usual meaning on the current relation) — exactly what the engine's
iterate computes with the reduce inside the loop, and what it maintains under changes (the
iterates are recomputed differentially, so deletions are handled exactly, not by
over-approximation). For the programs this is meant for — min-label propagation, shortest paths
with non-negative weights, widest paths with max — F is monotone in the order "more facts, and
smaller (min) / larger (max) aggregate values", the limit is the least fixed point, and it is
reached in finitely many steps. A program whose iteration does not converge (e.g. shortest paths
with a negative cycle) does not terminate; pass ``max_iterations`` to ``compile_program`` to cap
it (the result is then the capped iterate, not a fixed point).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from datalog import ast
from datalog.errors import StratificationError
from sql_frontend.scc import strongly_connected_components

EdgeLabel = Literal["positive", "negation", "count", "sum", "min", "max"]
_RANK: Mapping[str, int] = {"positive": 0, "min": 1, "max": 1, "count": 2, "sum": 2, "negation": 3}
#: Labels allowed on an edge inside a recursive SCC.
RECURSIVE_LABELS = frozenset({"positive", "min", "max"})


@dataclass(frozen=True)
class Edge:
    """``head`` reads ``body`` (``label``) at ``pos`` (the reading literal)."""

    head: str
    body: str
    label: EdgeLabel
    pos: ast.Pos


@dataclass(frozen=True)
class Stratum:
    """One SCC of the precedence graph: the relations computed together."""

    relations: tuple[str, ...]
    recursive: bool


def precedence_edges(rules: Iterable[ast.Rule]) -> list[Edge]:
    """Every dependency edge of the rules."""
    edges: list[Edge] = []
    for rule in rules:
        _collect(rule.head.relation, rule.body, "positive", edges)
    return edges


def _worse(a: EdgeLabel, b: EdgeLabel) -> EdgeLabel:
    return a if _RANK[a] >= _RANK[b] else b


def _collect(head: str, body: tuple[ast.Literal, ...], label: EdgeLabel, edges: list[Edge]) -> None:
    for lit in body:
        if isinstance(lit, ast.Atom):
            edges.append(Edge(head, lit.relation, label, lit.pos))
        elif isinstance(lit, ast.Negation):
            edges.append(Edge(head, lit.atom.relation, "negation", lit.pos))
        for term in ast.literal_terms(lit):
            for agg in ast.aggregates_in(term):
                fn: EdgeLabel = agg.function  # type: ignore[assignment]
                _collect(head, agg.body, _worse(label, fn), edges)


def stratify(relations: Iterable[str], rules: Iterable[ast.Rule]) -> tuple[Stratum, ...]:
    """The SCCs of the program in evaluation order (dependencies first).

    Raises :class:`StratificationError` naming a cycle through negation, count or sum.

    >>> from datalog.parser import parse
    >>> p = parse('.decl e(x: number)\\n.decl p(x: number)\\np(x) :- e(x).\\np(x) :- p(x).')
    >>> [(s.relations, s.recursive) for s in stratify(['e', 'p'], p.rules)]
    [(('e',), False), (('p',), True)]
    """
    rules = tuple(rules)
    names = list(dict.fromkeys(relations))
    edges = precedence_edges(rules)
    succ: dict[str, list[Edge]] = {n: [] for n in names}
    for e in edges:
        succ.setdefault(e.head, []).append(e)
        succ.setdefault(e.body, [])
    components = strongly_connected_components(
        list(succ), {n: [e.body for e in es] for n, es in succ.items()}
    )
    component_of = {n: i for i, comp in enumerate(components) for n in comp}
    strata: list[Stratum] = []
    for i, comp in enumerate(components):
        inner = [e for n in comp for e in succ[n] if component_of[e.body] == i]
        for e in inner:
            if e.label not in RECURSIVE_LABELS:
                raise _cycle_error(e, inner)
        strata.append(Stratum(comp, bool(inner)))
    return tuple(strata)


def _cycle_error(bad: Edge, inner: list[Edge]) -> StratificationError:
    # Shortest path body -> ... -> head inside the SCC closes the cycle head -> body.
    by_head: dict[str, list[Edge]] = {}
    for e in inner:
        by_head.setdefault(e.head, []).append(e)
    parent: dict[str, Edge | None] = {bad.body: None}
    queue = deque([bad.body])
    while queue and bad.head not in parent:
        node = queue.popleft()
        for e in by_head.get(node, []):
            if e.body not in parent:
                parent[e.body] = e
                queue.append(e.body)
    path: list[Edge] = []
    node = bad.head
    while node != bad.body:
        step = parent[node]
        assert step is not None
        path.append(step)
        node = step.head
    path.reverse()
    cycle_edges = [bad, *path]

    def show(e: Edge) -> str:
        prefix = {"positive": "", "negation": "!", "min": "min ", "max": "max "}.get(
            e.label, f"{e.label} "
        )
        return prefix + e.body

    text = " -> ".join([bad.head, *(show(e) for e in cycle_edges)])
    what = "negation" if bad.label == "negation" else f"aggregate {bad.label}"
    cycle = (bad.head, *(e.body for e in cycle_edges))
    return StratificationError(
        f"program is not stratifiable: {bad.head} depends on itself through {what} "
        f"(cycle {text}); only min and max may be used inside recursion",
        cycle=cycle,
        line=bad.pos.line,
        column=bad.pos.column,
        construct=bad.body,
    )
