"""Compiled loops for the two primitives every operator calls on small batches.

The engine is columnar (numpy), but its batches are often tiny — a 10-edge change to a
reachability loop moves a few dozen rows per operator — and then the fixed cost of each
numpy call dominates: probing one run of a trace took a dozen calls (binary searches,
range expansion, hash checks).  These kernels do such a step in one compiled call
(numba, ``cache=True`` so they are compiled once per machine and loaded afterwards):

* :func:`probe_run` — the rows of a sorted run whose key matches each probe, optionally
  bounded by loop iteration, with each probe's next later iteration (the "interesting
  time" search of CIDR 2013 §3.4 inside one loop);
* :func:`sum_run` — the same search, but only each probe's sum of diffs: the accumulated
  multiplicity of a key when the key is the whole row (``distinct``, set semantics), with
  nothing gathered at all;
* :func:`merge_runs` — merge two sorted runs in one linear pass, summing equal updates;
* :func:`group_hashes` — group rows by a 64-bit hash with an open-addressing table and sum
  their diffs: consolidation in O(n) instead of a sort, keeping first-occurrence order (so
  concatenated sorted runs stay nearly sorted for the stable sort that follows).

Sums of diffs are checked (:mod:`ivm.difference`): a multiplicity that would leave 64
bits raises instead of wrapping.  The kernels work on hashes, positions and diffs only;
the columns (which may be Python objects) are gathered and compared by numpy, so a hash
collision is always caught by the caller.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ivm import aot as _aot
from ivm.difference import add


@njit(cache=True, nogil=True, inline="always")
def _lower_next(
    sortkey: np.ndarray,
    keyhash: np.ndarray,
    times: np.ndarray,
    i: int,
    top: np.uint64,
    ph: np.uint64,
    next_time: np.ndarray,
    j: int,
) -> None:
    """From row ``i`` on, lower ``next_time[j]`` to the iteration of the first row whose
    key hash is ``ph`` and whose sort key is at most ``top``."""
    m = sortkey.shape[0]
    while i < m and sortkey[i] <= top:
        if keyhash[i] == ph:
            if times[i, 0] < next_time[j]:
                next_time[j] = times[i, 0]
            return
        i += 1


@njit(cache=True, nogil=True, inline="always")
def _bounds(ph: np.uint64, by_time: bool, upto: int, iter_bits: int) -> tuple:
    """A probe's sort-key range: ``(base, bound, top)`` — its first update, its last at an
    iteration ``<= upto`` (``upto < 0``: any), and its last.  Single-loop traces (``by_time``)
    keep the iteration in the low ``iter_bits`` bits of the sort key; others sort by the key
    hash alone."""
    if not by_time:
        return ph, ph, ph
    low = np.uint64((1 << iter_bits) - 1)
    base = ph & ~low
    top = base | low
    bound = (base | np.uint64(upto)) if upto >= 0 else top
    return base, bound, top


@njit(cache=True, nogil=True)
def lower_bounds(a: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """For each target, the first position in the sorted ``a`` whose value is not below it
    (``np.searchsorted(a, targets, side="left")``).

    All targets are searched together, one halving step at a time for every target, each
    step without a branch: the loads of different targets do not wait on each other, so
    their cache misses overlap, where one search after another waits for each miss in
    turn.  On a run evicted from the caches (a lookup into a large arrangement, once per
    change) this takes a half to a third of the time for a thousand targets."""
    m = a.shape[0]
    n = targets.shape[0]
    pos = np.zeros(n, dtype=np.int64)
    if m == 0:
        return pos
    size = m
    while size > 1:
        half = size >> 1
        for j in range(n):
            p = pos[j]
            pos[j] = p + half if a[p + half - 1] < targets[j] else p
        size -= half
    for j in range(n):
        if a[pos[j]] < targets[j]:
            pos[j] += 1
    return pos


@njit(cache=True, nogil=True)
def probe_run(
    sortkey: np.ndarray,
    keyhash: np.ndarray,
    times: np.ndarray,
    probe_hash: np.ndarray,
    after: np.ndarray,
    by_time: bool,
    upto: int,
    iter_bits: int,
    next_time: np.ndarray,
    want_next: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """``(owner, pos)`` of every row of a run matching a probe.

    Probe ``j`` matches the rows whose sort key lies in its range (:func:`_bounds`; with
    ``after[j] >= 0`` — ``after`` may be empty — only those after iteration ``after[j]``)
    and, in a single-loop trace, whose ``keyhash`` equals ``probe_hash[j]`` (elsewhere the
    sort key is the key hash).  With ``want_next`` the first matching-key row past the
    range lowers ``next_time[j]`` to its iteration ``times[i, 0]``.
    """
    n = probe_hash.shape[0]
    m = sortkey.shape[0]
    has_after = after.shape[0] > 0
    hi = np.empty(n, dtype=np.int64)
    # each probe's first row: from its key's base, or just past iteration after[j]
    # (the first sort key above ``base | a``; ``a`` is below the counter's range)
    targets = np.empty(n, dtype=np.uint64)
    for j in range(n):
        base = _bounds(probe_hash[j], by_time, upto, iter_bits)[0]
        a = after[j] if has_after else -1
        targets[j] = (base | np.uint64(a)) + np.uint64(1) if a >= 0 else base
    lo = lower_bounds(sortkey, targets)
    total = 0
    for j in range(n):
        ph = probe_hash[j]
        _, b, top = _bounds(ph, by_time, upto, iter_bits)
        i = lo[j]
        while i < m and sortkey[i] <= b:
            if not by_time or keyhash[i] == ph:
                total += 1
            i += 1
        hi[j] = i
        if want_next and i < m and sortkey[i] <= top:
            _lower_next(sortkey, keyhash, times, i, top, ph, next_time, j)
    owner = np.empty(total, dtype=np.int64)
    pos = np.empty(total, dtype=np.int64)
    k = 0
    for j in range(n):
        ph = probe_hash[j]
        for i in range(lo[j], hi[j]):
            if not by_time or keyhash[i] == ph:
                owner[k] = j
                pos[k] = i
                k += 1
    return owner, pos


@njit(cache=True, nogil=True)
def sum_run(
    sortkey: np.ndarray,
    keyhash: np.ndarray,
    times: np.ndarray,
    diff: np.ndarray,
    probe_hash: np.ndarray,
    by_time: bool,
    upto: int,
    iter_bits: int,
    sums: np.ndarray,
    next_time: np.ndarray,
    want_next: bool,
) -> None:
    """Add to ``sums[j]`` the diffs of the rows of a run whose key hash is ``probe_hash[j]``
    and whose sort key lies in the probe's range (:func:`_bounds`); with ``want_next``,
    lower ``next_time[j]`` as :func:`probe_run` does."""
    m = sortkey.shape[0]
    n = probe_hash.shape[0]
    targets = np.empty(n, dtype=np.uint64)
    for j in range(n):
        targets[j] = _bounds(probe_hash[j], by_time, upto, iter_bits)[0]
    lo = lower_bounds(sortkey, targets)
    for j in range(n):
        ph = probe_hash[j]
        _, b, top = _bounds(ph, by_time, upto, iter_bits)
        i = lo[j]
        s = np.int64(0)
        while i < m and sortkey[i] <= b:
            if keyhash[i] == ph:
                s = add(s, diff[i])
            i += 1
        sums[j] = add(sums[j], s)
        if want_next and i < m and sortkey[i] <= top:
            _lower_next(sortkey, keyhash, times, i, top, ph, next_time, j)


@njit(cache=True, nogil=True)
def group_hashes(h: np.ndarray, diff: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group rows by hash: ``(group of each row, first row of each group, diff sums)``.

    Groups are numbered in order of first occurrence.  Rows are grouped by hash alone; the
    caller verifies that the rows of a group are equal (a collision is rare, not impossible).
    """
    n = h.shape[0]
    cap = 16
    while cap < 2 * n:
        cap *= 2
    mask = np.uint64(cap - 1)
    # slot s: table[2s] the hash, table[2s + 1] its group + 1 (0: empty) — one cache line
    # per probe instead of a slot, then the group's first row, then that row's hash
    table = np.zeros(2 * cap, dtype=np.uint64)
    gid = np.empty(n, dtype=np.int64)
    rep = np.empty(n, dtype=np.int64)
    sums = np.empty(n, dtype=np.int64)
    ng = 0
    for i in range(n):
        x = h[i]
        s = np.int64(x & mask)
        while True:
            g = np.int64(table[2 * s + 1]) - 1
            if g < 0:
                table[2 * s] = x
                table[2 * s + 1] = np.uint64(ng + 1)
                rep[ng] = i
                gid[i] = ng
                sums[ng] = diff[i]
                ng += 1
                break
            if table[2 * s] == x:
                gid[i] = g
                sums[g] = add(sums[g], diff[i])
                break
            s = (s + 1) & (cap - 1)
    return gid, rep[:ng], sums[:ng]


@njit(cache=True, nogil=True)
def hash_group_sums(h: np.ndarray, diff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`group_hashes` reduced to what a consolidation keeps: the first row of each
    hash group whose diffs do not sum to zero, and that sum (groups in order of first
    occurrence).  Only for rows whose hashes cannot collide (one integer column)."""
    _, rep, sums = group_hashes(h, diff)
    keep = np.empty(rep.shape[0], dtype=np.int64)
    kept = np.empty(rep.shape[0], dtype=np.int64)
    k = 0
    for g in range(rep.shape[0]):
        if sums[g] != 0:
            keep[k] = rep[g]
            kept[k] = sums[g]
            k += 1
    return keep[:k], kept[:k]


@njit(cache=True, nogil=True)
def first_of_hashes(h: np.ndarray) -> np.ndarray:
    """The position of each distinct hash's first occurrence, in order of occurrence (the
    distinct keys among probes whose hashes cannot collide, by one compiled pass)."""
    return group_hashes(h, np.zeros(h.shape[0], dtype=np.int64))[1]


@njit(cache=True, nogil=True)
def distinct_changes(
    count: np.ndarray, old: np.ndarray, next_time: np.ndarray, none: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """A distinct's outcome for its probes, in one pass: each probe's output is
    ``[count > 0]`` and ``old`` what it output so far, so the change is their difference.
    Returns ``(changed probes, their changes, probes with a later time, the first of those
    times, whether they all share it)``; ``next_time`` (empty outside loops) holds each
    probe's next interesting iteration, ``none`` where it has none."""
    n = count.shape[0]
    sel = np.empty(n, dtype=np.int64)
    chg = np.empty(n, dtype=np.int64)
    later = np.empty(next_time.shape[0], dtype=np.int64)
    k = 0
    m = 0
    first = none
    same = True
    for j in range(n):
        c = (np.int64(1) if count[j] > 0 else np.int64(0)) - old[j]
        if c != 0:
            sel[k] = j
            chg[k] = c
            k += 1
    for j in range(next_time.shape[0]):
        t = next_time[j]
        if t != none:
            later[m] = j
            m += 1
            if first == none:
                first = t
            elif t != first:
                same = False
    return sel[:k], chg[:k], later[:m], first, same


@njit(cache=True, nogil=True)
def sort_run(
    keyhash: np.ndarray,
    rowhash: np.ndarray,
    times: np.ndarray,
    diff: np.ndarray,
    by_time: bool,
    iter_bits: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """A run's sort keys, sorted, and its arrays in that order: ``(order, sortkey,
    keyhash, rowhash, times, diff, largest |diff|)``.  With ``by_time`` the low ``iter_bits``
    bits of the key hash are replaced by the loop counter (capped), as single-loop traces
    sort."""
    n = keyhash.shape[0]
    low = np.uint64((1 << iter_bits) - 1)
    sk = np.empty(n, dtype=np.uint64)
    big = 0
    for i in range(n):
        d = diff[i]
        if d < 0:
            d = -d
        if d > big:
            big = d
        if by_time:
            it = times[i, 0]
            c = low if it >= np.int64(low) else np.uint64(it)
            sk[i] = (keyhash[i] & ~low) | c
        else:
            sk[i] = keyhash[i]
    order = np.argsort(sk)
    return order, sk[order], keyhash[order], rowhash[order], times[order], diff[order], big


@njit(cache=True, nogil=True)
def sort_key_run(
    keyhash: np.ndarray,
    times: np.ndarray,
    diff: np.ndarray,
    col: np.ndarray,
    by_time: bool,
    iter_bits: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`sort_run` of a run whose whole row is one integer column ``col`` (its row
    hash is its key hash), with the column sorted too: ``(sortkey, keyhash, times, diff,
    column, largest |diff|)``."""
    order, sk, kh, _, t, d, big = sort_run(keyhash, keyhash, times, diff, by_time, iter_bits)
    return sk, kh, t, d, col[order], big


@njit(cache=True, nogil=True, inline="always")
def _finalize(x: np.uint64) -> np.uint64:
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True)
def mix_hashes(h: np.ndarray, salt: np.ndarray, mult: np.uint64) -> np.ndarray:
    """splitmix64's finalizer of ``h * mult + salt``, element-wise in one pass."""
    out = np.empty(h.shape[0], dtype=np.uint64)
    for i in range(h.shape[0]):
        out[i] = _finalize(h[i] * mult + salt[i])
    return out


@njit(cache=True, nogil=True)
def mix_offset(h: np.ndarray, offset: np.uint64) -> np.ndarray:
    """splitmix64's finalizer of ``h + offset``, element-wise in one pass."""
    out = np.empty(h.shape[0], dtype=np.uint64)
    for i in range(h.shape[0]):
        out[i] = _finalize(h[i] + offset)
    return out


@njit(cache=True, nogil=True)
def mix_int_offset(col: np.ndarray, offset: np.uint64) -> np.ndarray:
    """:func:`mix_offset` of an int64 column's bits (``col.view(np.uint64)``), without the
    view: the hash of a one-integer-column row in one call."""
    out = np.empty(col.shape[0], dtype=np.uint64)
    for i in range(col.shape[0]):
        out[i] = _finalize(np.uint64(col[i]) + offset)
    return out


@njit(cache=True, nogil=True)
def mix_int_hashes(h: np.ndarray, col: np.ndarray, mult: np.uint64) -> np.ndarray:
    """:func:`mix_hashes` with an int64 column's bits as the salt (no view of it)."""
    out = np.empty(h.shape[0], dtype=np.uint64)
    for i in range(h.shape[0]):
        out[i] = _finalize(h[i] * mult + np.uint64(col[i]))
    return out


@njit(cache=True, nogil=True)
def counting_order(keys: np.ndarray, k: int) -> np.ndarray:
    """The stable order that sorts ``keys`` (ints in ``[0, k)``): a counting sort, two
    passes over the keys and one over the ``k`` counters, where a comparison sort takes
    ``n log n`` (reductions group their gathered rows by probe this way)."""
    n = keys.shape[0]
    starts = np.zeros(k + 1, dtype=np.int64)
    for i in range(n):
        starts[keys[i] + 1] += 1
    for j in range(k):
        starts[j + 1] += starts[j]
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        x = keys[i]
        order[starts[x]] = i
        starts[x] += 1
    return order


#: from this many keys on, :func:`stage_int_rows` sorts by :func:`radix_order`
RADIX_ROWS = 32768


@njit(cache=True, nogil=True)
def radix_order(keys: np.ndarray) -> np.ndarray:
    """The stable order that sorts uint64 ``keys``: one most-significant-digit radix pass
    on the top 16 bits (a histogram and a scatter), then each bucket sorted on its own —
    an insertion sort for the few keys a bucket of uniform hashes holds, a merge sort for
    larger ones (a hub's many equal sort keys).  Sort keys are hashes in their high bits,
    so buckets stay small: 1.7x less CPU than four least-significant-digit passes at 600k
    keys (those measured 1.4-2x less than numpy's ``argsort`` from ~10^5 keys)."""
    return _radix_sorted(keys)[1]


@njit(cache=True, nogil=True)
def _radix_sorted(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`radix_order`'s sort, returning the sorted keys with the order."""
    n = keys.shape[0]
    shift = np.uint64(48)
    starts = np.zeros(65537, dtype=np.int64)
    for i in range(n):
        starts[np.int64(keys[i] >> shift) + 1] += 1
    for j in range(65536):
        starts[j + 1] += starts[j]
    pos = starts[:65536].copy()
    k = np.empty(n, dtype=np.uint64)
    idx = np.empty(n, dtype=np.int64)
    for i in range(n):
        d = np.int64(keys[i] >> shift)
        q = pos[d]
        k[q] = keys[i]
        idx[q] = i
        pos[d] = q + 1
    for b in range(65536):
        lo = starts[b]
        hi = starts[b + 1]
        if hi - lo <= 1:
            continue
        if hi - lo <= 32:
            for u in range(lo + 1, hi):
                x = k[u]
                xi = idx[u]
                v = u
                while v > lo and k[v - 1] > x:
                    k[v] = k[v - 1]
                    idx[v] = idx[v - 1]
                    v -= 1
                k[v] = x
                idx[v] = xi
        else:
            o = np.argsort(k[lo:hi], kind="mergesort")
            idx[lo:hi] = idx[lo:hi][o]
            k[lo:hi] = k[lo:hi][o]
    return k, idx


#: one side of a merge as the kernels below read it: ``(rowhash, times, diff)``
Side = tuple[np.ndarray, np.ndarray, np.ndarray]
#: where the kernels below write: ``(src, dif, ia, ib, used)`` (see :func:`merge_runs`)
Out = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@njit(cache=True, nogil=True, inline="always")
def _end_of(sk: np.ndarray, i: int, s: np.uint64) -> int:
    """The first position from ``i`` on whose sort key is not ``s``."""
    n = sk.shape[0]
    while i < n and sk[i] == s:
        i += 1
    return i


@njit(cache=True, nogil=True, inline="always")
def _same_update(
    rh_a: np.ndarray, t_a: np.ndarray, x: int, rh_b: np.ndarray, t_b: np.ndarray, y: int
) -> bool:
    """Whether row ``x`` of one run and row ``y`` of another are the same update: equal row
    hashes and equal times."""
    same = rh_a[x] == rh_b[y]
    c = 0
    while same and c < t_a.shape[1]:
        same = t_a[x, c] == t_b[y, c]
        c += 1
    return same


@njit(cache=True, nogil=True, inline="always")
def _match_pairwise(
    a: Side, b: Side, oa: np.ndarray, ob: np.ndarray, na: int, out: Out, k: int, m: int
) -> tuple[int, int]:
    """Merge a small block of equal sort keys (rows ``oa`` of ``a``, ``ob`` of ``b``) by
    comparing every pair: row hash and times equal means the same update."""
    rh_a, t_a, d_a = a
    rh_b, t_b, d_b = b
    src, dif, ia, ib, used = out
    for x in oa:
        d = d_a[x]
        for y in ob:
            if not used[y] and _same_update(rh_a, t_a, x, rh_b, t_b, y):
                used[y] = True
                d = add(d, d_b[y])
                ia[m] = x
                ib[m] = y
                m += 1
                break
        if d != 0:
            src[k] = x
            dif[k] = d
            k += 1
    for y in ob:
        if not used[y]:
            src[k] = na + y
            dif[k] = d_b[y]
            k += 1
    return k, m


@njit(cache=True, nogil=True, inline="always")
def _match_block(
    a: Side, b: Side, oa: np.ndarray, ob: np.ndarray, na: int, out: Out, k: int, m: int
) -> tuple[int, int]:
    """Merge one block of equal sort keys, given as the rows ``oa`` of ``a`` and ``ob`` of
    ``b`` each ordered by row hash: a linear walk over row hashes, and pairwise matching
    (:func:`_match_pairwise`) among the (few) rows of one row hash."""
    rh_a, _, d_a = a
    rh_b, _, d_b = b
    src, dif = out[0], out[1]
    p = 0
    q = 0
    while p < oa.shape[0] or q < ob.shape[0]:
        if q >= ob.shape[0] or (p < oa.shape[0] and rh_a[oa[p]] < rh_b[ob[q]]):
            x = oa[p]
            src[k] = x
            dif[k] = d_a[x]
            k += 1
            p += 1
        elif p >= oa.shape[0] or rh_b[ob[q]] < rh_a[oa[p]]:
            y = ob[q]
            src[k] = na + y
            dif[k] = d_b[y]
            k += 1
            q += 1
        else:
            r = rh_a[oa[p]]
            p1 = p
            while p1 < oa.shape[0] and rh_a[oa[p1]] == r:
                p1 += 1
            q1 = q
            while q1 < ob.shape[0] and rh_b[ob[q1]] == r:
                q1 += 1
            k, m = _match_pairwise(a, b, oa[p:p1], ob[q:q1], na, out, k, m)
            p = p1
            q = q1
    return k, m


@njit(cache=True, nogil=True)
def merge_runs(
    sk_a: np.ndarray,
    kh_a: np.ndarray,
    rh_a: np.ndarray,
    t_a: np.ndarray,
    d_a: np.ndarray,
    sk_b: np.ndarray,
    kh_b: np.ndarray,
    rh_b: np.ndarray,
    t_b: np.ndarray,
    d_b: np.ndarray,
) -> tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    int,
]:
    """Merge two consolidated runs sorted by sort key in one linear pass (a spine's merge):
    no hashing of every row and no sort, unlike consolidating their concatenation.

    Updates with equal sort key, row hash and times are summed (checked) and dropped when
    the sum is zero.  Within a block of equal sort keys the rows of each side are ordered
    by row hash and walked together, so the cost stays near linear even for blocks of
    many rows (a hub's updates).  Returns ``(src, sortkey, keyhash, rowhash, times, diff,
    ia, ib, largest |diff|)``: ``src[k]`` is output row k's index in the concatenation ``a ‖ b``, and ``(ia, ib)``
    the pairs that were summed, for the caller to check that their columns are equal.
    """
    src, dif, ia, ib = _merge_positions(sk_a, rh_a, t_a, d_a, sk_b, rh_b, t_b, d_b)
    sk, kh, rh, times, big = _gather_merged(
        (sk_a, kh_a, rh_a, t_a), (sk_b, kh_b, rh_b, t_b), src, dif
    )
    return src, sk, kh, rh, times, dif, ia, ib, big


@njit(cache=True, nogil=True)
def merge_key_runs(
    sk_a: np.ndarray,
    kh_a: np.ndarray,
    t_a: np.ndarray,
    d_a: np.ndarray,
    c_a: np.ndarray,
    sk_b: np.ndarray,
    kh_b: np.ndarray,
    t_b: np.ndarray,
    d_b: np.ndarray,
    c_b: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`merge_runs` of two runs whose whole row is one integer column ``c``: the key
    hash is the row hash and cannot collide, so no summed pairs are returned for checking,
    and the column is gathered here.  Returns ``(sortkey, keyhash, times, diff, column,
    largest |diff|)`` — five arrays where :func:`merge_runs` returns eight and its caller
    gathers the column (each array a kernel returns costs ~0.35 µs to hand to Python).

    Written straight to its outputs by one pass (:func:`_merge_key_into`: no positions,
    pairs and gathers in between; ~40% less time on a 54k-row merge), unless a block of
    equal sort keys is too large to match pairwise."""
    direct = _merge_key_into(
        (sk_a, kh_a, t_a, c_a), d_a, (sk_b, kh_b, t_b, c_b), d_b, np.arange(sk_b.shape[0])
    )
    if direct[5] >= 0:
        return direct
    src, dif, _n, _big = _merge_positions(sk_a, kh_a, t_a, d_a, sk_b, kh_b, t_b, d_b)
    sk, kh, _rh, times, big = _gather_merged(
        (sk_a, kh_a, kh_a, t_a), (sk_b, kh_b, kh_b, t_b), src, dif
    )
    return sk, kh, times, dif, take_concat(c_a, c_b, src), big


#: the most pairs of rows one block of equal sort keys may compare in
#: :func:`_merge_key_into` (beyond: it gives up, and the caller merges the general way)
_PAIRS = 64


@njit(cache=True, nogil=True, inline="always")
def _copy_key_row(
    src: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    x: int,
    d: np.int64,
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    k: int,
) -> None:
    """Row ``x`` of one side ``(sortkey, keyhash, times, column)`` with diff ``d`` as output
    row ``k``."""
    sk, kh, t, c = src
    o_sk, o_kh, o_t, o_d, o_c = out
    o_sk[k] = sk[x]
    o_kh[k] = kh[x]
    for q in range(t.shape[1]):
        o_t[k, q] = t[x, q]
    o_d[k] = d
    o_c[k] = c[x]


# Kept whole: one linear pass with its two cursors, like :func:`_merge_positions`.
@njit(cache=True, nogil=True, inline="always")
def _merge_key_into(
    a: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    d_a: np.ndarray,
    b: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    d_b: np.ndarray,
    order: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`merge_key_runs` of run ``a`` and run ``b`` read in the order ``order`` (each
    side ``(sortkey, keyhash, times, column)``), written straight to the output arrays: the
    same rows in the same order, without the positions, the pairs and the gathers in
    between.  Blocks of equal sort keys are matched pairwise; a block of more than
    :data:`_PAIRS` pairs (a row at thousands of capped iterations) gives up: the largest
    ``|diff|`` returned is then -1 and the arrays are empty."""
    sk_a, kh_a, t_a, _ = a
    sk_b, kh_b, t_b, _ = b
    na = sk_a.shape[0]
    nb = order.shape[0]
    depth = t_a.shape[1]
    n = na + nb
    out = (
        np.empty(n, dtype=np.uint64),
        np.empty(n, dtype=np.uint64),
        np.empty((n, depth), dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=a[3].dtype),
    )
    used = np.zeros(_PAIRS, dtype=np.bool_)
    big = 0
    i = 0
    j = 0
    k = 0
    while i < na or j < nb:
        if j >= nb or (i < na and sk_a[i] < sk_b[order[j]]):
            _copy_key_row(a, i, d_a[i], out, k)
            k += 1
            i += 1
        elif i >= na or sk_b[order[j]] < sk_a[i]:
            y = order[j]
            _copy_key_row(b, y, d_b[y], out, k)
            k += 1
            j += 1
        else:
            s = sk_a[i]
            i1 = _end_of(sk_a, i, s)
            j1 = j
            while j1 < nb and sk_b[order[j1]] == s:
                j1 += 1
            if (i1 - i) * (j1 - j) > _PAIRS:
                return out[0][:0], out[1][:0], out[2][:0], out[3][:0], out[4][:0], -1
            used[: j1 - j] = False
            for x in range(i, i1):
                d = d_a[x]
                for u in range(j1 - j):
                    y = order[j + u]
                    if not used[u] and _same_update(kh_a, t_a, x, kh_b, t_b, y):
                        used[u] = True
                        d = add(d, d_b[y])
                        break
                if d != 0:
                    _copy_key_row(a, x, d, out, k)
                    k += 1
            for u in range(j1 - j):
                if not used[u]:
                    y = order[j + u]
                    _copy_key_row(b, y, d_b[y], out, k)
                    k += 1
            i = i1
            j = j1
    o_d = out[3]
    for r in range(k):
        d = o_d[r]
        if d < 0:
            d = -d
        if d > big:
            big = d
    return out[0][:k], out[1][:k], out[2][:k], o_d[:k], out[4][:k], big


@njit(cache=True, nogil=True)
def push_key_run(
    sk_a: np.ndarray,
    kh_a: np.ndarray,
    t_a: np.ndarray,
    d_a: np.ndarray,
    c_a: np.ndarray,
    kh_b: np.ndarray,
    t_b: np.ndarray,
    d_b: np.ndarray,
    c_b: np.ndarray,
    by_time: bool,
    iter_bits: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """A trace's last run ``a`` merged with new consolidated, unsorted updates ``b`` of one
    integer column (key hash = row hash), in one call: what :func:`sort_key_run` of ``b``
    and then :func:`merge_key_runs` give — the same rows in the same order — without
    handing the sorted run to Python in between.  ``(sortkey, keyhash, times, diff,
    column, largest |diff|)``; that last is -1 when a block of equal sort keys is too large
    to match pairwise (see :func:`_merge_key_into`): the caller then takes the two calls."""
    n = kh_b.shape[0]
    low = np.uint64((1 << iter_bits) - 1)
    sk_b = np.empty(n, dtype=np.uint64)
    for r in range(n):
        if by_time:
            it = t_b[r, 0]
            c = low if it >= np.int64(low) else np.uint64(it)
            sk_b[r] = (kh_b[r] & ~low) | c
        else:
            sk_b[r] = kh_b[r]
    order = np.argsort(sk_b)
    return _merge_key_into((sk_a, kh_a, t_a, c_a), d_a, (sk_b, kh_b, t_b, c_b), d_b, order)


@njit(cache=True, nogil=True, inline="always")
def _abs_max(big: int, d: int) -> int:
    """The larger of ``big`` and ``|d|``."""
    a = -d if d < 0 else d
    return a if a > big else big


@njit(cache=True, nogil=True, inline="always")
def _times_at(n: int, depth: int, iteration: int) -> np.ndarray:
    """``n`` copies of one time of ``depth`` (0 or 1) inner coordinates, ``iteration``."""
    times = np.empty((n, depth), dtype=np.int64)
    if depth:
        times[:, 0] = iteration
    return times


@njit(cache=True, nogil=True)
def stage_key_batch(
    col: np.ndarray,
    diff: np.ndarray,
    offset: np.uint64,
    iteration: int,
    depth: int,
    by_time: bool,
    iter_bits: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """A batch of one integer column made a trace's run in one call: each row hashed
    (:func:`mix_int_offset` with ``offset``: the row hash, which cannot collide, is the
    key hash), sorted by it, equal rows summed (checked) and zero sums dropped.  All rows
    are at one time (inner coordinates: ``depth`` of them, 0 or 1, that one
    ``iteration``), so sorting by key hash sorts by sort key too.  Returns ``(sortkey,
    keyhash, times, diff, column, largest |diff|)``: the run, and — column, diff, key hash
    — the consolidated batch."""
    n = col.shape[0]
    kh = np.empty(n, dtype=np.uint64)
    for r in range(n):
        kh[r] = _finalize(np.uint64(col[r]) + offset)
    order = np.argsort(kh)
    low = np.uint64((1 << iter_bits) - 1)
    c = np.uint64(0)
    if by_time:
        c = low if iteration >= np.int64(low) else np.uint64(iteration)
    o_sk = np.empty(n, dtype=np.uint64)
    o_kh = np.empty(n, dtype=np.uint64)
    o_d = np.empty(n, dtype=np.int64)
    o_c = np.empty(n, dtype=col.dtype)
    big = 0
    k = 0
    r = 0
    while r < n:
        x = order[r]
        h = kh[x]
        d = diff[x]
        r += 1
        while r < n and kh[order[r]] == h:
            d = add(d, diff[order[r]])
            r += 1
        if d != 0:
            o_sk[k] = ((h & ~low) | c) if by_time else h
            o_kh[k] = h
            o_d[k] = d
            o_c[k] = col[x]
            big = _abs_max(big, d)
            k += 1
    return o_sk[:k], o_kh[:k], _times_at(k, depth, iteration), o_d[:k], o_c[:k], big


@njit(cache=True, nogil=True)
def merge_int_runs(
    sk_a: np.ndarray,
    kh_a: np.ndarray,
    rh_a: np.ndarray,
    t_a: np.ndarray,
    d_a: np.ndarray,
    cols_a: tuple,
    sk_b: np.ndarray,
    kh_b: np.ndarray,
    rh_b: np.ndarray,
    t_b: np.ndarray,
    d_b: np.ndarray,
    cols_b: tuple,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`merge_runs` of two runs whose rows are several int64 columns (a tuple of
    equally typed arrays each), with the summed pairs' columns compared and the columns
    gathered here: ``(sortkey, keyhash, rowhash, times, diff, columns, largest |diff|)``,
    the columns as the rows of one 2-D array.  Largest ``|diff|`` -1: two summed updates
    are different rows (a hash collision; the arrays are then empty), for the caller to
    consolidate by comparing rows."""
    src, dif, ia, ib = _merge_positions(sk_a, rh_a, t_a, d_a, sk_b, rh_b, t_b, d_b)
    k = len(cols_a)
    for p in range(ia.shape[0]):
        for c in range(k):
            if cols_a[c][ia[p]] != cols_b[c][ib[p]]:
                e = np.empty(0, dtype=np.uint64)
                return e, e, e, t_a[:0], d_a[:0], np.empty((k, 0), dtype=np.int64), -1
    sk, kh, rh, times, big = _gather_merged(
        (sk_a, kh_a, rh_a, t_a), (sk_b, kh_b, rh_b, t_b), src, dif
    )
    na = sk_a.shape[0]
    cols = np.empty((k, src.shape[0]), dtype=np.int64)
    for c in range(k):
        x = cols_a[c]
        y = cols_b[c]
        row = cols[c]
        for r in range(src.shape[0]):
            q = src[r]
            row[r] = x[q] if q < na else y[q - na]
    return sk, kh, rh, times, dif, cols, big


@njit(cache=True, nogil=True)
def stage_int_rows(
    kh: np.ndarray,
    rh: np.ndarray,
    cols: tuple,
    diff: np.ndarray,
    iteration: int,
    depth: int,
    by_time: bool,
    iter_bits: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """A batch of rows of int64 columns (``cols``, a tuple of equally typed arrays; key
    hashes ``kh``, row hashes ``rh``) made a trace's run in one call: sorted by sort key
    and row hash, equal rows summed (checked; rows of one row hash are compared column by
    column) and zero sums dropped.  All rows are at one time (``depth`` inner coordinates,
    0 or 1, that one ``iteration``).  Returns ``(sortkey, keyhash, rowhash, times, diff,
    columns, largest |diff|)``, the columns as the rows of one 2-D array; largest
    ``|diff|`` -1 (and empty arrays) when two different rows share a row hash, for the
    caller to consolidate by comparing rows."""
    n = kh.shape[0]
    k = len(cols)
    low = np.uint64((1 << iter_bits) - 1)
    c = np.uint64(0)
    if by_time:
        c = low if iteration >= np.int64(low) else np.uint64(iteration)
    sk = np.empty(n, dtype=np.uint64)
    for r in range(n):
        sk[r] = ((kh[r] & ~low) | c) if by_time else kh[r]
    # an initial load's batch: by the radix sort (buckets on the hash bits, so its blocks
    # of equal sort keys come out as small as with a comparison sort)
    if n >= RADIX_ROWS:
        s_sk, order = _radix_sorted(sk)
    else:
        order = np.argsort(sk)
        s_sk = sk[order]
    # the keys and row hashes in sorted order, read in sequence below (gathered once:
    # reading them through ``order`` missed the cache on nearly every row at 10^5 rows)
    s_rh = rh[order]
    # within each block of equal sort keys, by row hash (so equal rows are neighbours)
    s0 = 0
    while s0 < n:
        s1 = s0 + 1
        while s1 < n and s_sk[s1] == s_sk[s0]:
            s1 += 1
        if s1 - s0 > 16:
            sub = np.argsort(s_rh[s0:s1])
            order[s0:s1] = order[s0:s1][sub]
            s_rh[s0:s1] = s_rh[s0:s1][sub]
        else:  # a few rows: sorted in place
            for u in range(s0 + 1, s1):
                x = order[u]
                hx = s_rh[u]
                v = u
                while v > s0 and s_rh[v - 1] > hx:
                    order[v] = order[v - 1]
                    s_rh[v] = s_rh[v - 1]
                    v -= 1
                order[v] = x
                s_rh[v] = hx
        s0 = s1
    o_sk = np.empty(n, dtype=np.uint64)
    o_kh = np.empty(n, dtype=np.uint64)
    o_rh = np.empty(n, dtype=np.uint64)
    o_d = np.empty(n, dtype=np.int64)
    o_c = np.empty((k, n), dtype=np.int64)
    big = 0
    m = 0
    r = 0
    while r < n:
        x = order[r]
        r0 = r
        d = diff[x]
        r += 1
        while r < n and s_rh[r] == s_rh[r0] and s_sk[r] == s_sk[r0]:
            y = order[r]
            for q in range(k):
                if cols[q][y] != cols[q][x]:
                    e = np.empty(0, dtype=np.uint64)
                    return e, e, e, np.empty((0, depth), dtype=np.int64), diff[:0], o_c[:, :0], -1
            d = add(d, diff[y])
            r += 1
        if d != 0:
            o_sk[m] = s_sk[r0]
            o_kh[m] = kh[x]
            o_rh[m] = s_rh[r0]
            o_d[m] = d
            for q in range(k):
                o_c[q, m] = cols[q][x]
            big = _abs_max(big, d)
            m += 1
    times = _times_at(m, depth, iteration)
    return o_sk[:m], o_kh[:m], o_rh[:m], times, o_d[:m], o_c[:, :m], big


# Kept whole: the one linear pass of a spine's merge, compiled by numba; its two cursors
# and outputs are shared by every branch, and the block matching is a kernel of its own.
@njit(cache=True, nogil=True, inline="always")
def _merge_positions(
    sk_a: np.ndarray,
    rh_a: np.ndarray,
    t_a: np.ndarray,
    d_a: np.ndarray,
    sk_b: np.ndarray,
    rh_b: np.ndarray,
    t_b: np.ndarray,
    d_b: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The linear pass of :func:`merge_runs`: ``(src, diff, ia, ib)`` (see there)."""
    na = sk_a.shape[0]
    nb = sk_b.shape[0]
    src = np.empty(na + nb, dtype=np.int64)
    dif = np.empty(na + nb, dtype=np.int64)
    cap = min(na, nb)
    ia = np.empty(cap, dtype=np.int64)
    ib = np.empty(cap, dtype=np.int64)
    used = np.zeros(nb, dtype=np.bool_)
    small_a = np.empty(64, dtype=np.int64)
    small_b = np.empty(64, dtype=np.int64)
    side_a = (rh_a, t_a, d_a)
    side_b = (rh_b, t_b, d_b)
    out = (src, dif, ia, ib, used)
    i = 0
    j = 0
    k = 0
    m = 0
    while i < na or j < nb:
        if j >= nb or (i < na and sk_a[i] < sk_b[j]):
            # a stretch of a below b's next key: copied without comparing row hashes
            while i < na and (j >= nb or sk_a[i] < sk_b[j]):
                src[k] = i
                dif[k] = d_a[i]
                k += 1
                i += 1
        elif i >= na or sk_b[j] < sk_a[i]:
            while j < nb and (i >= na or sk_b[j] < sk_a[i]):
                src[k] = na + j
                dif[k] = d_b[j]
                k += 1
                j += 1
        else:
            s = sk_a[i]
            i1 = _end_of(sk_a, i, s)
            j1 = _end_of(sk_b, j, s)
            if (i1 - i) * (j1 - j) <= 64:
                # a small block: match pairwise, no sorting
                oa = small_a[: i1 - i]
                ob = small_b[: j1 - j]
                for u in range(i1 - i):
                    oa[u] = i + u
                for u in range(j1 - j):
                    ob[u] = j + u
                k, m = _match_pairwise(side_a, side_b, oa, ob, na, out, k, m)
                i = i1
                j = j1
                continue
            oa = np.arange(i, i1)
            ob = np.arange(j, j1)
            oa = oa[np.argsort(rh_a[i:i1])]
            ob = ob[np.argsort(rh_b[j:j1])]
            k, m = _match_block(side_a, side_b, oa, ob, na, out, k, m)
            i = i1
            j = j1
    return src[:k], dif[:k], ia[:m], ib[:m]


@njit(cache=True, nogil=True, inline="always")
def _gather_merged(
    a: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    b: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    src: np.ndarray,
    dif: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The hashes and times of a merge's output rows (``src``: positions in ``a ‖ b``, each
    side ``(sortkey, keyhash, rowhash, times)``) and the largest ``|diff|``."""
    sk_a, kh_a, rh_a, t_a = a
    sk_b, kh_b, rh_b, t_b = b
    na = sk_a.shape[0]
    k = src.shape[0]
    depth = t_a.shape[1]
    big = 0
    sk = np.empty(k, dtype=np.uint64)
    kh = np.empty(k, dtype=np.uint64)
    rh = np.empty(k, dtype=np.uint64)
    times = np.empty((k, depth), dtype=np.int64)
    for r in range(k):
        d = dif[r]
        if d < 0:
            d = -d
        if d > big:
            big = d
        x = src[r]
        if x < na:
            sk[r] = sk_a[x]
            kh[r] = kh_a[x]
            rh[r] = rh_a[x]
            for c in range(depth):
                times[r, c] = t_a[x, c]
        else:
            x -= na
            sk[r] = sk_b[x]
            kh[r] = kh_b[x]
            rh[r] = rh_b[x]
            for c in range(depth):
                times[r, c] = t_b[x, c]
    return sk, kh, rh, times, big


#: where :func:`_sum_by_hash` writes: ``(keep, sums, pa, pb)`` (see :func:`consolidate_sorted`)
Kept = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: a hash table reused across groups: ``(hash, output slot, stamp)`` per slot
Table = tuple[np.ndarray, np.ndarray, np.ndarray]


@njit(cache=True, nogil=True)
def _buffers(n: int, largest: int) -> tuple[Kept, Table]:
    """Outputs for consolidating ``n`` rows, and a table for groups of up to ``largest``
    rows (at most half full; a minimal one when every group takes the pairwise path)."""
    cap = 16
    while largest > 16 and cap < 2 * largest:
        cap *= 2
    out = (
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
    )
    return out, (
        np.empty(cap, dtype=np.uint64),
        np.empty(cap, dtype=np.int64),
        np.full(cap, -1, dtype=np.int64),
    )


@njit(cache=True, nogil=True, inline="always")
def _sum_by_hash(
    rows: np.ndarray, stamp_id: int, rh: np.ndarray, diff: np.ndarray, out: Kept,
    table: Table, k: int, m: int,
) -> tuple[int, int]:  # fmt: skip
    """Sum the diffs of one group's ``rows`` (positions) with equal row hashes: pairwise up
    to 16 rows, else in ``table`` (slots marked with ``stamp_id``, unique per group, so the
    table is never cleared).  Appends one position per distinct hash with a non-zero sum to
    ``keep``/``sums`` from ``k`` (first occurrence order) and each summed pair to ``pa``/
    ``pb`` from ``m``; returns the new ``(k, m)``."""
    keep, sums, pa, pb = out
    slot_h, slot_q, stamp = table
    first = k
    small = rows.shape[0] <= 16
    mask = np.uint64(15)
    if not small:
        while mask + np.uint64(1) < np.uint64(2 * rows.shape[0]):
            mask = mask * np.uint64(2) + np.uint64(1)
    for x in rows:
        h = rh[x]
        q = -1
        if small:
            for u in range(first, k):
                if rh[keep[u]] == h:
                    q = u
                    break
        else:
            s = np.int64(h & mask)
            while stamp[s] == stamp_id and slot_h[s] != h:
                s = (s + 1) & np.int64(mask)
            if stamp[s] == stamp_id:
                q = slot_q[s]
            else:
                stamp[s] = stamp_id
                slot_h[s] = h
                slot_q[s] = k
        if q >= 0:
            sums[q] = add(sums[q], diff[x])
            pa[m] = keep[q]
            pb[m] = x
            m += 1
        else:
            keep[k] = x
            sums[k] = diff[x]
            k += 1
    w = first
    for q in range(first, k):
        if sums[q] != 0:
            keep[w] = keep[q]
            sums[w] = sums[q]
            w += 1
    return w, m


@njit(cache=True, nogil=True)
def consolidate_sorted(
    sk: np.ndarray, rh: np.ndarray, diff: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Consolidate updates of one time already sorted by sort key: equal rows have equal
    sort keys, so only the rows of a block of equal sort keys are compared by row hash
    (:func:`_sum_by_hash`: linear even for a hub's many rows, where sorting the block by
    row hash took ``m log m``).  Returns ``(keep, sums, pa, pb)``: the positions of the
    rows kept (in sort-key order; first occurrence within a block) with their summed diffs
    (none zero), and the pairs ``(pa[i], pb[i])`` whose diffs were summed on equal row
    hashes, for the caller to check that their columns are equal."""
    n = sk.shape[0]
    # block starts (a block: equal sort keys), then n
    starts = np.empty(n + 1, dtype=np.int64)
    nb = 0
    largest = 0
    for i in range(n):
        if i == 0 or sk[i] != sk[i - 1]:
            if nb:
                largest = max(largest, i - starts[nb - 1])
            starts[nb] = i
            nb += 1
    starts[nb] = n
    if nb:
        largest = max(largest, n - starts[nb - 1])
    out, table = _buffers(n, largest)
    rows = np.arange(n)
    k = 0
    m = 0
    for b in range(nb):
        i = starts[b]
        j = starts[b + 1]
        if j - i == 1:
            if diff[i] != 0:
                out[0][k] = i
                out[1][k] = diff[i]
                k += 1
        else:
            k, m = _sum_by_hash(rows[i:j], i, rh, diff, out, table, k, m)
    return out[0][:k], out[1][:k], out[2][:m], out[3][:m]


@njit(cache=True, nogil=True)
def consolidate_by_owner(
    owner: np.ndarray, rh: np.ndarray, diff: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Consolidate gathered rows per ``(owner, row)`` (owners: ints in ``[0, k)``), grouped
    by owner: a counting sort by owner, then each owner's rows summed by row hash
    (:func:`_sum_by_hash`), so the table a row probes is sized to its owner's rows and stays
    in cache, where one table over all rows (:func:`group_hashes`) misses on nearly every
    probe at 10^6 rows.  Returns ``(keep, sums, pa, pb)``: one position per distinct
    ``(owner, row)`` with a non-zero sum, in owner order (first occurrence within an owner),
    the sums, and the pairs of positions summed on equal row hashes, for the caller to check
    that their columns are equal."""
    n = owner.shape[0]
    starts = np.zeros(k + 1, dtype=np.int64)
    for i in range(n):
        starts[owner[i] + 1] += 1
    largest = 0
    for j in range(k):
        largest = max(largest, starts[j + 1])
        starts[j + 1] += starts[j]
    order = np.empty(n, dtype=np.int64)
    pos = starts[:k].copy()
    for i in range(n):
        x = owner[i]
        order[pos[x]] = i
        pos[x] += 1
    out, table = _buffers(n, largest)
    nk = 0
    m = 0
    for g in range(k):
        if starts[g + 1] > starts[g]:
            nk, m = _sum_by_hash(order[starts[g] : starts[g + 1]], g, rh, diff, out, table, nk, m)
    return out[0][:nk], out[1][:nk], out[2][:m], out[3][:m]


@njit(cache=True, nogil=True)
def take_concat(x: np.ndarray, y: np.ndarray, src: np.ndarray) -> np.ndarray:
    """``concatenate([x, y])[src]`` without building the concatenation (a merge's gather of
    one numeric column from its two runs)."""
    nx = x.shape[0]
    out = np.empty(src.shape[0], dtype=x.dtype)
    for r in range(src.shape[0]):
        s = src[r]
        out[r] = x[s] if s < nx else y[s - nx]
    return out


# the ahead-of-time compiled versions of these kernels, when built for this machine (ivm.aot)
_aot.install(__name__, globals())
