"""Plain-Python references several suites check maintained views against.

``from references import transitive_closure`` (tests/ is on ``sys.path``: each suite's
conftest puts it there).  Each reference recomputes its answer from scratch out of the
current inputs, with nothing shared with the engine.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def transitive_closure(edges: set[tuple[Any, Any]]) -> set[tuple[Any, Any]]:
    """Every ``(a, b)`` joined by a path of one or more edges (naive fixed point)."""
    reach = set(edges)
    while True:
        new = {(a, d) for a, b in reach for c, d in edges if b == c} - reach
        if not new:
            return reach
        reach |= new


def asof_join(orders: Counter, prices: Counter, left: bool = False) -> dict[tuple, int]:
    """Event-time as-of join: each ``(oid, sym, t)`` order with the ``(sym, t, px)`` price of
    its symbol at the greatest time <= its own (the smallest ``px`` among prices of that
    time), as a bag.  With ``left``, an order without a price keeps NULL price columns."""
    out: Counter = Counter()
    for (oid, sym, t), n in orders.items():
        cands = [(pt, px) for (s, pt, px), m in prices.items() if m > 0 and s == sym]
        cands = [c for c in cands if sym is not None and c[0] <= t]
        if cands:
            best = max(c[0] for c in cands)
            px = min(c[1] for c in cands if c[0] == best)
            out[(oid, sym, t, sym, best, px)] += n
        elif left:
            out[(oid, sym, t, None, None, None)] += n
    return {r: n for r, n in out.items() if n}


def step_edge_batch(
    g: Any, e: Any, cur: set[tuple[int, int]], adds: set, dels: set
) -> set[tuple[int, int]]:
    """Delete ``dels`` and insert ``adds`` (minus ``dels``) in edge input ``e`` and step the
    dataflow ``g``; returns the edge set the inputs now hold."""
    adds = adds - dels
    e.insert(sorted(adds))
    e.delete(sorted(dels))
    g.step()
    return (cur | adds) - dels
