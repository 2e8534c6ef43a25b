"""What the graph examples (``wcc.py``, ``scc.py``) share: random edge churn checked against
networkx.

Each example keeps a set of live edges, its dataflow's edge input and a networkx graph in
step: :func:`churn` deletes ``batch`` random live edges and inserts as many new ones in all
three, and :func:`compare_labels` checks the maintained ``(node, label)`` output against the
labels networkx computes.  Import it from an example run as ``python examples/<name>.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np

import ivm


def smallest_member_labels(components: Any) -> dict[int, int]:
    """node -> smallest node id of its component, for components of at least two nodes
    (networkx's answer in the form the maintained outputs take)."""
    out = {}
    for comp in components:
        if len(comp) > 1:
            out.update(dict.fromkeys(comp, min(comp)))
    return out


def random_edges(
    rng: np.random.Generator, n: int, k: int, avoid: set, *, directed: bool
) -> list[tuple[int, int]]:
    """``k`` new edges over ``n`` nodes (no self-loops, none in ``avoid``, which they join);
    an undirected edge is written ``(low, high)``."""
    out: list[tuple[int, int]] = []
    while len(out) < k:
        a, b = (int(x) for x in rng.integers(0, n, size=2))
        e = (a, b) if directed else (min(a, b), max(a, b))
        if a != b and e not in avoid:
            avoid.add(e)
            out.append(e)
    return out


def edge_dataflow(name: str, algorithm: Any, output: str) -> tuple[Any, Any, Any]:
    """A dataflow ``name`` with one ``edges`` input of ``(src, dst)`` rows and the output
    ``algorithm(edges)``: ``(dataflow, edges input, output)``."""
    g = ivm.Dataflow(name)
    edges = g.input("edges", [("src", "int64"), ("dst", "int64")])
    return g, edges, g.output(algorithm(edges), output)


def initial_graph(
    rng: np.random.Generator, a: argparse.Namespace, edges: Any, *, directed: bool
) -> tuple[set, list[tuple[int, int]], nx.Graph]:
    """``a.edges`` random edges over ``a.nodes`` nodes inserted into the input ``edges``:
    ``(live edge set, the edges, the same graph in networkx)``."""
    live: set[tuple[int, int]] = set()
    initial = random_edges(rng, a.nodes, a.edges, live, directed=directed)
    edges.insert(initial)
    return live, initial, (nx.DiGraph if directed else nx.Graph)(initial)


def churn_arguments(
    description: str, *, nodes: int, edges: int, batch: int, seed: int, edges_help: str = ""
) -> argparse.ArgumentParser:
    """The command line of a churn example: graph size, steps, batch, checks and seed."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--nodes", type=int, default=nodes)
    ap.add_argument("--edges", type=int, default=edges, help=edges_help or None)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=batch, help="edges deleted and inserted per step")
    ap.add_argument(
        "--check-every",
        type=int,
        default=1,
        help="compare with networkx every k steps (0: only at the end)",
    )
    ap.add_argument("--seed", type=int, default=seed)
    return ap


def churn(
    rng: np.random.Generator, a: argparse.Namespace, live: set, edges: Any, ref: nx.Graph
) -> tuple[list, list]:
    """Delete ``a.batch`` random live edges and insert as many new ones, in ``live``, the
    dataflow input ``edges`` and the networkx graph ``ref``; returns ``(gone, new)``."""
    gone = [tuple(e) for e in rng.permutation(sorted(live))[: a.batch].tolist()]
    live.difference_update(gone)
    new = random_edges(rng, a.nodes, a.batch, live, directed=ref.is_directed())
    edges.delete(gone)
    edges.insert(new)
    ref.remove_edges_from(gone)
    ref.add_edges_from(new)
    return gone, new


def compare_labels(
    step: int, got: dict[tuple, int], want: dict[int, int], what: str
) -> dict[int, int]:
    """The maintained labels (``got``: ``{(node, label): 1}``) as ``{node: label}``, after
    checking that each node has one label and that they equal networkx's ``want``."""
    mine = {node: label for (node, label) in got}
    if len(mine) != len(got):
        raise AssertionError(f"step {step}: a node has two {what}")
    if mine != want:
        bad = sorted(v for v in set(mine) | set(want) if mine.get(v) != want.get(v))
        raise AssertionError(
            f"step {step}: {len(bad)} {what} differ from networkx, e.g. "
            f"node {bad[0]}: {mine.get(bad[0])} vs {want.get(bad[0])}"
        )
    return mine


def churn_steps(
    rng: np.random.Generator,
    a: argparse.Namespace,
    graph: tuple[Any, Any, Any],
    live: set,
    ref: nx.Graph,
    check: Callable[[int], dict[int, int]],
) -> tuple[int, dict[int, int]]:
    """The examples' main loop over ``graph = (dataflow, edges input, output)``: ``a.steps``
    times, :func:`churn` the edges and step; print the first three steps and the last, and
    ``check`` every ``a.check_every`` steps and at the end.  Returns the number of checks and
    the labels the last one returned."""
    g, edges, out = graph
    checks, mine = 0, {}
    for step in range(1, a.steps + 1):
        gone, new = churn(rng, a, live, edges, ref)
        rep = g.step()
        if step <= 3 or step == a.steps:
            # the output's changes of this epoch: (node, label, __diff__) rows
            print(
                f"step {step}: -{len(gone)} +{len(new)} edges -> "
                f"{out.changes().num_rows} label changes, {rep.differences:,} differences, "
                f"{rep.seconds * 1e3:.0f} ms"
            )
        if (a.check_every and step % a.check_every == 0) or step == a.steps:
            mine = check(step)
            checks += 1
    return checks, mine
