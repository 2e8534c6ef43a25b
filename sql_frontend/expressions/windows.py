"""Window functions beyond ranking and running aggregates, and explicit frames (Spark's
semantics), computed over one partition's sorted rows — the Window operator recomputes every
affected partition (``reduce_group``, CIDR 2013 §3.4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sql_frontend.plan import AggFunc, WindowCall, WindowFunc
from sql_frontend.sql_types import SqlType


def _peer_bounds(peers: list[tuple]) -> tuple[list[int], list[int]]:
    """Per row, the first and last position of its peer group (rows equal on ORDER BY)."""
    n = len(peers)
    first, last = [0] * n, [0] * n
    start = 0
    for i in range(n):
        if i > 0 and peers[i] != peers[i - 1]:
            start = i
        first[i] = start
    end = n - 1
    for i in range(n - 1, -1, -1):
        if i < n - 1 and peers[i] != peers[i + 1]:
            end = i
        last[i] = end
    return first, last


def frame_bounds(frame: tuple | None, peers: list[tuple], ordered: bool) -> list[tuple[int, int]]:
    """Per row, the inclusive ``(lo, hi)`` positions of its frame (empty when lo > hi).
    The default frame is the whole partition without ORDER BY, else RANGE BETWEEN UNBOUNDED
    PRECEDING AND CURRENT ROW (up to the last peer)."""
    n = len(peers)
    first, last = _peer_bounds(peers) if ordered else ([0] * n, [n - 1] * n)
    if frame is None:
        return [(0, last[i] if ordered else n - 1) for i in range(n)]
    kind, start, end = frame
    out = []
    for i in range(n):
        if kind == "range":  # only UNBOUNDED and CURRENT ROW bounds reach here
            lo = 0 if start is None else first[i]
            hi = n - 1 if end is None else last[i]
        else:
            lo = 0 if start is None else max(i + start, 0)
            hi = n - 1 if end is None else min(i + end, n - 1)
        out.append((lo, hi))
    return out


def window_values(
    func: WindowFunc | AggFunc,
    arg: int | None,
    param: Any,
    frame: tuple | None,
    t: SqlType,
    rows: list[tuple],
    peers: list[tuple],
    aggregate: Callable[[Any, list[object]], object],
) -> list[object]:
    n = len(rows)
    vals = [None if arg is None else r[arg] for r in rows]
    if func in (WindowFunc.LAG, WindowFunc.LEAD):
        offset, default = param
        step = -offset if func == WindowFunc.LAG else offset
        return [vals[i + step] if 0 <= i + step < n else default for i in range(n)]
    if func == WindowFunc.NTILE:
        buckets = int(param)
        size, extra = divmod(n, buckets)
        out: list[object] = []
        for b in range(buckets):
            out += [b + 1] * (size + (1 if b < extra else 0))
        return out[:n]
    first, last = _peer_bounds(peers)
    if func == WindowFunc.PERCENT_RANK:
        return [0.0 if n <= 1 else first[i] / (n - 1) for i in range(n)]
    if func == WindowFunc.CUME_DIST:
        return [(last[i] + 1) / n for i in range(n)]
    bounds = frame_bounds(frame, peers, bool(peers and peers[0]))
    if func in (WindowFunc.FIRST_VALUE, WindowFunc.LAST_VALUE):
        first_value = func == WindowFunc.FIRST_VALUE
        return [None if lo > hi else vals[lo if first_value else hi] for lo, hi in bounds]
    call = WindowCall(func, arg, t)  # the running aggregate over each row's frame
    cache: dict[tuple[int, int], object] = {}
    results = []
    for lo, hi in bounds:
        if (lo, hi) not in cache:
            cache[lo, hi] = aggregate(call, vals[lo : hi + 1] if lo <= hi else [])
        results.append(cache[lo, hi])
    return results
