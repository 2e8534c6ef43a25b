"""Graph computations written with the collection API (CIDR 2013 §4, Fig. 7/8).

Every function takes collections of ``(src, dst)`` int64 edges and returns a collection
that is maintained incrementally as the edges change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ivm.collection import Collection

NODE_LABEL = [("node", "int64"), ("label", "int64")]
EDGE = [("src", "int64"), ("dst", "int64")]


def symmetric(edges: Collection) -> Collection:
    """Both directions of every edge."""
    return edges.concat(edges.map(lambda s, d: (d, s), EDGE))


def propagate_min_label(
    edges: Collection,
    seeds: Collection,
    entry: Callable[..., Any] | None = None,
    useful: Callable[..., Any] | None = None,
) -> Collection:
    """Smallest label reaching each node along ``edges`` from ``(node, label)`` seeds.

    ``labels = min-by-node(seeds ∪ {(d, l) : (n, l) ∈ labels, (n, d) ∈ edges})``.  With
    ``entry`` the seeds enter at an iteration chosen per seed — the prioritized fixed point
    of Foundations §5, which lets small labels settle before large ones are introduced.
    ``useful(node, label) -> mask`` drops proposals ``(d, l)`` before they are arranged;
    it may reject only proposals not smaller than a label seeded at ``d`` itself (the fixed
    point is then unchanged), e.g. ``l >= d`` when every node is seeded with its own id.
    """
    seeds = seeds.enter_scope(seeds._deeper(edges))
    # with priorities the seeds are a collection the body reads, not the loop variable's
    # initial value: a seed entering the variable at its iteration was proposed to every
    # neighbour even when its node already held a smaller label (and retracted one
    # iteration later), which on an initial load was half of the loop's differences.  The
    # variable starts empty and holds the results only (W1 medium initial load:
    # bench/README.md, eleventh pass)
    init = seeds.filter(_nothing) if entry is not None else seeds

    def body(labels: Collection) -> Collection:
        moved = labels.join(edges, on=[("node", "src")]).map(
            lambda node, label, src, dst: (dst, label), NODE_LABEL
        )
        if useful is not None:
            moved = moved.filter(useful)
        base = seeds.enter_prioritized(labels, entry) if entry is not None else seeds
        return moved.concat(base).min("node", "label").rename(["node", "label"])

    return init.iterate(body)


def _nothing(node: np.ndarray, label: np.ndarray) -> np.ndarray:
    """No row: the empty initial value of a prioritized loop's variable."""
    return np.zeros(len(node), dtype=bool)


def connected_components(edges: Collection, prioritized: bool = True) -> Collection:
    """Weakly connected components: ``(node, smallest node id in its component)``.

    ``prioritized`` (the default) introduces small labels first, a few orders of magnitude
    per iteration (:func:`_label_level`, Foundations §5): most nodes take their final
    label as the first one that reaches them instead of stepping down through larger ones,
    which halves the differences of a change; a label reaches its neighbours one iteration
    after it enters (:func:`propagate_min_label`), so the loop may run one more iteration
    than without priorities.  Every node is
    seeded with its own id, so a proposal ``(d, l)`` with ``l >= d`` can never be ``d``'s
    label and is dropped before it is arranged (:func:`_below_node`).
    """
    both = symmetric(edges)
    nodes = both.project("src").distinct()
    seeds = nodes.map(lambda n: (n, n), NODE_LABEL)
    return propagate_min_label(
        both, seeds, entry=_label_level if prioritized else None, useful=_below_node
    )


def _below_node(node: np.ndarray, label: np.ndarray) -> np.ndarray:
    return label < node


def reachable(edges: Collection, roots: Collection) -> Collection:
    """Nodes reachable from ``roots`` (``(node,)``) along directed edges."""
    roots = roots.enter_scope(roots._deeper(edges))

    def body(reach: Collection) -> Collection:
        step = reach.join(edges, on=[("node", "src")], select=["dst"], names=["node"])
        return step.concat(roots).distinct()

    return roots.iterate(body)


def _trim(cycle: Collection, edges: Collection) -> Collection:
    """Keep the edges of ``edges`` whose endpoints get the same label by forward
    propagation over ``cycle``, and return them reversed (CIDR 2013 Fig. 8)."""
    nodes = edges.map(lambda s, d: (d, d), NODE_LABEL)
    labels = propagate_min_label(cycle, nodes, entry=_priority)
    by_src = edges.join(labels, on=[("src", "node")]).map(
        lambda s, d, n, lab: (s, d, lab), [("src", "int64"), ("dst", "int64"), ("l1", "int64")]
    )
    both = by_src.join(labels, on=[("dst", "node")]).filter(lambda s, d, l1, n, l2: l1 == l2)
    return both.map(lambda s, d, l1, n, l2: (d, s), EDGE)


def _priority(node: np.ndarray, label: np.ndarray) -> np.ndarray:
    # small labels first: a label enters at the iteration given by its bit length
    return np.floor(np.log2(np.maximum(label, 1))).astype(np.int64)


#: bits of label magnitude per entry iteration of :func:`connected_components`
LEVEL_BITS = 4


def _label_level(node: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Entry iteration of a seed label: ``⌊log2(label) / LEVEL_BITS⌋`` (0 for labels
    below 2^LEVEL_BITS, and for negative ones).  One level per bit (:func:`_priority`)
    spreads the entries over as many iterations as the ids have bits, and a step's loop
    runs to the last level it touches; levels of 16x keep the loop as short as without
    priorities (W1 medium: 7-8 iterations a step either way, differences per step -45%)."""
    return _priority(node, label) // LEVEL_BITS


def strongly_connected_edges(edges: Collection) -> Collection:
    """Edges whose endpoints are in the same strongly connected component.

    The doubly nested trim-and-reverse fixed point of CIDR 2013 Fig. 7: repeatedly keep the
    edges that lie on a cycle in the forward graph, then in the reversed graph.
    """
    reverse = edges.map(lambda s, d: (d, s), EDGE)

    def body(inner: Collection) -> Collection:
        return _trim(_trim(inner, edges), reverse)

    return edges.iterate(body)


def strongly_connected_components(edges: Collection) -> Collection:
    """``(node, label)`` with label = smallest node of the node's SCC (nodes on a cycle)."""
    scc_edges = strongly_connected_edges(edges)
    nodes = symmetric(scc_edges).project("src").distinct()
    seeds = nodes.map(lambda n: (n, n), NODE_LABEL)
    return propagate_min_label(symmetric(scc_edges), seeds)
