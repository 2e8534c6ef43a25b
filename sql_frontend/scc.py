"""Strongly connected components of a dependency graph, dependencies first.

The one SCC utility of the front ends: SQL's ``WITH RECURSIVE`` groups mutually recursive CTEs
with it (:mod:`sql_frontend.translate`), Datalog stratifies its precedence graph with it
(:mod:`datalog.stratify`). Tarjan's algorithm (R. Tarjan, "Depth-first search and linear graph
algorithms", SIAM J. Comput. 1972), iterative so that deep graphs do not hit Python's recursion
limit. A component is emitted after every component it reaches, which is the evaluation order:
a relation is computed after the relations it reads.

>>> strongly_connected_components(["a", "b", "c"], {"a": ["b"], "b": ["a", "c"]})
[('c',), ('a', 'b')]
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Generic, TypeVar

N = TypeVar("N", bound=Hashable)


def strongly_connected_components(
    nodes: Sequence[N], succ: Mapping[N, Iterable[N]]
) -> list[tuple[N, ...]]:
    """The SCCs of the graph ``node -> succ[node]``, each after all the components it reaches.

    Nodes are visited in the order of ``nodes`` (successors not in ``nodes`` are visited too);
    the nodes of a component are listed in the order of ``nodes``, then in discovery order.
    """
    state: _Tarjan[N] = _Tarjan(succ)
    for root in nodes:
        if root not in state.index:
            state.visit(root)
    rank = {n: i for i, n in enumerate(nodes)}
    return [tuple(sorted(c, key=lambda n: rank.get(n, len(rank)))) for c in state.out]


def is_recursive(component: Sequence[N], succ: Mapping[N, Iterable[N]]) -> bool:
    """Whether a component is a cycle: several nodes, or one node that reaches itself."""
    return len(component) > 1 or component[0] in set(succ.get(component[0], ()))


class _Tarjan(Generic[N]):
    def __init__(self, succ: Mapping[N, Iterable[N]]) -> None:
        self.succ = {k: list(v) for k, v in succ.items()}
        self.index: dict[N, int] = {}
        self.low: dict[N, int] = {}
        self.stack: list[N] = []
        self.on_stack: set[N] = set()
        self.out: list[list[N]] = []

    def visit(self, root: N) -> None:
        """Depth-first search from ``root`` with an explicit stack of (node, next child)."""
        work: list[tuple[N, int]] = [(root, 0)]
        while work:
            node, child_i = work.pop()
            if child_i == 0:
                self.index[node] = self.low[node] = len(self.index)
                self.stack.append(node)
                self.on_stack.add(node)
            children = self.succ.get(node, [])
            while child_i < len(children):
                child = children[child_i]
                child_i += 1
                if child not in self.index:
                    work.extend(((node, child_i), (child, 0)))
                    break
                if child in self.on_stack:
                    self.low[node] = min(self.low[node], self.index[child])
            else:
                self.finish(node)
                if work:
                    parent = work[-1][0]
                    self.low[parent] = min(self.low[parent], self.low[node])

    def finish(self, node: N) -> None:
        """All children of ``node`` are done: pop its component if it is a root."""
        if self.low[node] != self.index[node]:
            return
        comp: list[N] = []
        while True:
            w = self.stack.pop()
            self.on_stack.discard(w)
            comp.append(w)
            if w == node:
                break
        self.out.append(comp)


__all__ = ["is_recursive", "strongly_connected_components"]
