"""Shared helpers of the engine tests: multiset references and output comparison.

A reference is a plain-Python function of the accumulated inputs that returns a
``collections.Counter`` of rows.  ``check_output`` compares an ``ivm`` output against it the
way STYLE.md habit 13 asks: subtract, drop zeros, and print whatever is left over.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import ivm
from ivm.operators.prefix_cache import PrefixCache

# One profile for the whole engine suite: derandomized (failures replay exactly), no
# deadline (a first epoch can be slow), and a modest example count so the default run
# stays within a few minutes.  IVM_HYPOTHESIS_EXAMPLES scales it for longer soak runs.
EXAMPLES = int(os.environ.get("IVM_HYPOTHESIS_EXAMPLES", "0")) or None

settings.register_profile(
    "ivm-engine",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# Random graphs over N nodes, small enough that the plain references stay cheap: an edge
# (src, dst), a node, and a (node, label) seed of min-label propagation.
N = 8
edge_row = st.tuples(st.integers(0, N - 1), st.integers(0, N - 1))
node_row = st.tuples(st.integers(0, N - 1))
seed_row = st.tuples(st.integers(0, N - 1), st.integers(0, 2 * N))


def examples(n: int) -> settings:
    """Hypothesis settings for a test that runs ``n`` examples by default."""
    return settings(
        settings.get_profile("ivm-engine"),
        max_examples=EXAMPLES or n,
    )


def counter(rows: Iterable[tuple] | Mapping[tuple, int]) -> Counter:
    """A multiset of rows; a mapping is taken as row -> count.  Zero counts are dropped."""
    c: Counter = Counter()
    if isinstance(rows, Mapping):
        for r, n in rows.items():
            c[tuple(r)] += n
    else:
        for r in rows:
            c[tuple(r)] += 1
    return Counter({r: n for r, n in c.items() if n != 0})


def leftover(got: Mapping[tuple, int], want: Mapping[tuple, int]) -> dict[tuple, int]:
    """``got − want`` with zero entries dropped (negate, concat, consolidate)."""
    diff: dict[tuple, int] = {}
    for r, n in got.items():
        diff[r] = diff.get(r, 0) + n
    for r, n in want.items():
        diff[r] = diff.get(r, 0) - n
    return {r: n for r, n in diff.items() if n != 0}


def delta(new: Mapping[tuple, int], old: Mapping[tuple, int]) -> dict[tuple, int]:
    """The changes that take multiset ``old`` to ``new``."""
    return leftover(new, old)


def assert_same(got: Mapping[tuple, int], want: Mapping[tuple, int], what: str = "") -> None:
    left = leftover(got, want)
    if left:
        shown = sorted(left.items(), key=repr)[:20]
        raise AssertionError(f"{what}: output − reference is not empty ({len(left)} rows): {shown}")


def check_output(
    out: Any, want: Mapping[tuple, int], prev: Mapping[tuple, int] | None, what: str = ""
) -> None:
    """``out.counts()`` equals ``want`` and ``out.changed_counts()`` equals ``want − prev``."""
    assert_same(out.counts(), want, f"{what} contents")
    if prev is not None:
        assert_same(out.changed_counts(), delta(want, prev), f"{what} changes")


def apply_changes(state: Counter, changes: Iterable[tuple[tuple, int]]) -> None:
    """Add ``(row, diff)`` changes to a multiset in place (dropping zero counts)."""
    for r, d in changes:
        state[r] += d
        if state[r] == 0:
            del state[r]


def ref_paths(edges: Mapping[tuple, int]) -> Counter:
    """(x, y) joined by a directed walk of length >= 1 over the live edges."""
    e = {r for r, n in edges.items() if n > 0}
    closure = set(e)
    while True:
        more = closure | {(x, d) for (x, y) in closure for (s, d) in e if s == y}
        if more == closure:
            return Counter({r: 1 for r in closure})
        closure = more


def ref_reachable(edges: Mapping[tuple, int], roots: Iterable[int]) -> set[int]:
    """The roots and every node a directed walk over the live edges reaches from them."""
    succ: dict[int, set[int]] = {}
    for (s, d), n in edges.items():
        if n > 0:
            succ.setdefault(s, set()).add(d)
    seen = set(roots)
    todo = list(seen)
    while todo:
        for d in succ.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def ref_min_label(edges: Mapping[tuple, int], seeds: Mapping[tuple, int]) -> Counter:
    """(node, the least label of a live seed ``(n, label)`` that reaches the node)."""
    best: dict[int, int] = {}
    for (n, label), c in seeds.items():
        if c > 0:
            for m in ref_reachable(edges, [n]):
                best[m] = min(label, best.get(m, label))
    return Counter({(m, lab): 1 for m, lab in best.items()})


@contextmanager
def every_key_cached() -> Iterator[None]:
    """Make every key eligible for the prefix cache, so small inputs exercise it."""
    old = PrefixCache.MIN_ROWS
    PrefixCache.MIN_ROWS = 1
    try:
        yield
    finally:
        PrefixCache.MIN_ROWS = old


def reach_round(
    reach: ivm.Collection, edges: ivm.Collection, keep: ivm.Collection | None = None
) -> ivm.Collection:
    """One round of reachability: the successors of ``reach`` along ``edges``, with ``keep``
    (default: ``reach`` itself), as distinct ``(node,)`` rows."""
    step = reach.join(edges, on=[("node", "src")]).project("dst").rename(["node"])
    return step.concat(reach if keep is None else keep).distinct()


# -- change sequences ---------------------------------------------------------------------
@st.composite
def change_sequence(
    draw: st.DrawFn, row: st.SearchStrategy, epochs: int
) -> list[list[tuple[tuple, int]]]:
    """Per epoch, ``(row, diff)`` changes: inserts (multiplicity 1–3) and deletes of live
    rows (never more than are present, so every input stays a multiset)."""
    live: Counter = Counter()
    out = []
    for _ in range(epochs):
        changes = [(r, m) for r, m in draw(st.lists(st.tuples(row, st.integers(1, 3)), max_size=7))]
        apply_changes(live, changes)
        present = sorted(live, key=repr)
        if present:
            victims = draw(st.lists(st.sampled_from(present), max_size=5, unique=True))
            dels = [(r, -draw(st.integers(1, live[r]))) for r in victims]
            apply_changes(live, dels)
            changes += dels
        out.append(changes)
    return out


#: the push style of an epoch (see :func:`push`)
Style = Callable[[int], int]
#: one epoch's changes of one input: ``(row, diff)`` pairs
EpochChanges = list[tuple[tuple, int]]


def replay(
    g: ivm.Dataflow,
    feeds: Sequence[tuple[ivm.InputCollection, Sequence[EpochChanges], Style | int]],
) -> Iterator[tuple[int, list[Counter]]]:
    """Epoch by epoch: push each input's changes of the epoch (in its style: a number, or a
    function of the epoch), step ``g``, and yield the epoch with every input's accumulated
    multiset (in ``feeds`` order), for the test to compare the outputs with a reference."""
    state: list[Counter] = [Counter() for _ in feeds]
    per_epoch = zip(*(changes for _, changes, _ in feeds), strict=True)
    for epoch, changes in enumerate(per_epoch, 1):
        for (inp, _, style), ch, acc in zip(feeds, changes, state, strict=True):
            push(inp, ch, style(epoch) if callable(style) else style)
            apply_changes(acc, ch)
        g.step()
        yield epoch, state


def every_third(epoch: int) -> int:
    """A push style that cycles through the three input forms."""
    return epoch % 3


def push(inp: ivm.InputCollection, changes: list[tuple[tuple, int]], style: int) -> None:
    """Send changes through one of the input API's forms."""
    if not changes:
        return
    if style == 0:
        inp.send([r for r, _ in changes], [d for _, d in changes])
        return
    ins = [r for r, d in changes if d > 0 for _ in range(d)]
    dels = [r for r, d in changes if d < 0 for _ in range(-d)]
    names = inp.schema.names
    if style == 1:  # dicts of columns
        if ins:
            inp.insert({n: [r[i] for r in ins] for i, n in enumerate(names)})
        if dels:
            inp.delete({n: [r[i] for r in dels] for i, n in enumerate(names)})
    else:  # lists of tuples, deletes first (order within an epoch must not matter)
        if dels:
            inp.delete(dels)
        if ins:
            inp.insert(ins)
