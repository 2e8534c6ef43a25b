"""SQL text → relational plan: :func:`plan_sql` runs the analysis passes, translation and the
choice of plan for multiway joins (:func:`plan_joins`).

Multiway joins
--------------
A maximal tree of inner joins with three or more inputs (seen through the filters between
them) becomes one :class:`~sql_frontend.plan.MultiJoin`, planned one of two ways:

* ``binary``: left-deep binary joins. Each join arranges both of its inputs, so every join
  after the first arranges an intermediate result (for the triangle query, ``(a,b) ⋈ (a,c)``:
  a node of degree d contributes d² rows);
* ``delta``: a delta query (:func:`ivm.collection.delta_join`, the blog-post seed): one rule
  per input joins that input's changes with the other inputs' arrangements, with the alt/neu
  nudge so simultaneous changes count once. Only inputs are arranged, one arrangement per input
  and distinct key it is looked up by; nothing intermediate is kept.

The choice (``join_strategy="auto"``) compares the estimated rows held in arrangements:
``delta`` = Σ rows of each distinct (input, key) arrangement; ``binary`` = the arranged inputs
plus every arranged intermediate result, estimated as ``|L|·|R| / max(ndv(L.key), ndv(R.key))``
from ``stats`` (``{"table": rows, "table.column": distinct values}``; a table without
statistics counts 1000 rows, a column without one is taken as unique). The delta plan wins
ties: the binary plan's intermediate results are where estimates go wrong by orders of
magnitude. The delta plan is impossible inside a recursive CTE's loop (it needs every update of
a time to be simultaneous) and when the equalities do not connect every input; then the plan is
binary. A hint in the query, ``SELECT /*+ DELTA_JOIN */ …`` or ``/*+ BINARY_JOIN */``, or the
``join_strategy`` option (``"delta"``, ``"binary"``; it overrides hints) forces the choice.
EXPLAIN shows, on the ``MultiJoin`` line, the plan chosen, its expected arrangements (input and
key, estimated rows) and both estimates. Residual (non-equality) predicates are applied to the
joined rows (the binary plan applies each as soon as its columns are bound).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from sql_frontend import plan as p
from sql_frontend import scalar as sc
from sql_frontend.analyze import (
    CatalogLike,
    analyze,
    catalog_schema,
)
from sql_frontend.completeness import refuse_unconsumed, refuse_unknown
from sql_frontend.errors import SqlLimitError, UnsupportedSqlError
from sql_frontend.rules.spark_names import with_spark_names
from sql_frontend.scalar import Ref, Scalar
from sql_frontend.translate import Translator

JOIN_STRATEGIES = ("auto", "delta", "binary")
DEFAULT_ROWS = 1000
HINTS = {"DELTA_JOIN": "delta", "BINARY_JOIN": "binary"}
Estimates = list[tuple[str, float]]
"""The arrangements a join strategy builds, each described with its estimated rows."""


def plan_sql(
    sql: str,
    catalog: CatalogLike,
    *,
    join_strategy: str = "auto",
    stats: Mapping[str, float] | None = None,
) -> p.Node:
    """The relational plan of one Spark SQL query over ``catalog``.

    ``join_strategy`` (``auto``, ``delta``, ``binary``) and ``stats`` plan multiway joins
    (see the module docstring).

    >>> from sql_frontend.plan import explain
    >>> print(explain(plan_sql("SELECT a FROM t WHERE a > 1", {"t": [("a", "bigint")]})))
    Project #0:a [a:BIGINT]
      Filter gt(#0:a, cast(1 as BIGINT)) [a:BIGINT]
        Scan t [a:BIGINT]
    """
    if join_strategy not in JOIN_STRATEGIES:
        raise ValueError(f"join_strategy must be one of {JOIN_STRATEGIES}, not {join_strategy!r}")
    try:
        tree = analyze(sql, catalog)
        node = translate_checked(tree, catalog)
    except RecursionError:  # a safety net behind the limits of sql_frontend.limits
        raise SqlLimitError(
            "SQL too deeply nested for the front end; split it into views",
            construct="nesting",
        ) from None
    forced, why = join_strategy, f"join_strategy={join_strategy!r}"
    if join_strategy == "auto":
        hinted = _hinted_strategy(tree)
        if hinted is not None:
            forced, why = hinted, f"hint {next(k for k, v in HINTS.items() if v == hinted)}"
    return with_spark_names(plan_joins(node, forced, stats, why), sql, catalog)


def translate_checked(tree: exp.Expr, catalog: CatalogLike) -> p.Node:
    """The plan of the analysed ``tree``, every clause of which is consumed or refused by
    name (:mod:`sql_frontend.completeness`)."""
    refuse_unknown(tree)
    translator = Translator(catalog_schema(catalog))
    node = translator.query(tree, {})
    refuse_unconsumed(tree, translator.consumed)
    return node


def _hinted_strategy(tree: exp.Expr) -> str | None:
    found = set()
    for hint in tree.find_all(exp.Hint):
        for h in hint.expressions:
            name = (h.name if isinstance(h, exp.Var | exp.Anonymous) else h.sql()).upper()
            if name in HINTS:
                found.add(HINTS[name])
    if len(found) > 1:
        raise UnsupportedSqlError("both DELTA_JOIN and BINARY_JOIN hints")
    return found.pop() if found else None


# ---------------------------------------------------------------- multiway joins
@dataclass
class _Flat:
    leaves: list[p.Node]
    conds: list[tuple[int, int]] = field(default_factory=list)  # global column pairs
    residual: list[Scalar] = field(default_factory=list)  # over the global columns


def _flatten(node: p.Node) -> _Flat | None:
    """The inputs, equalities and residual conjuncts of a tree of inner joins (None if
    ``node`` is not a join)."""
    if isinstance(node, p.Filter):
        inner = _flatten(node.input)
        if inner is not None:
            inner.residual += sc.conjuncts(node.predicate)
        return inner
    if (
        not (isinstance(node, p.Join) and node.kind in ("inner", "cross"))
        or node.null_aware
        or any(node.null_safe)
    ):
        return None
    left = _flatten(node.left) or _Flat([node.left])
    right = _flatten(node.right) or _Flat([node.right])
    lw = node.left.width
    return _Flat(
        left.leaves + right.leaves,
        left.conds
        + [(a + lw, b + lw) for a, b in right.conds]
        + [(a, lw + b) for a, b in zip(node.left_keys, node.right_keys, strict=True)],
        left.residual + [sc.shift(r, lw) for r in right.residual] + sc.conjuncts(node.residual),
    )


def plan_joins(
    node: p.Node,
    strategy: str = "auto",
    stats: Mapping[str, float] | None = None,
    why: str = "",
) -> p.Node:
    """``node`` with every maximal inner-join tree of 3+ inputs made a ``MultiJoin``."""
    return _JoinPlanner(strategy, stats or {}, why or f"join_strategy={strategy!r}").rewrite(node)


class _JoinPlanner:
    def __init__(self, strategy: str, stats: Mapping[str, float], why: str) -> None:
        self.strategy = strategy
        self.stats = {k.lower(): v for k, v in stats.items()}
        self.why = why

    def rewrite(self, node: p.Node) -> p.Node:
        flat = _flatten(node)
        if flat is None or len(flat.leaves) < 3:
            return node.with_children(tuple(self.rewrite(c) for c in node.children()))
        leaves = [self.rewrite(x) for x in flat.leaves]
        offsets = [0]
        for x in leaves:
            offsets.append(offsets[-1] + x.width)

        def leaf_of(col: int) -> int:
            return max(i for i in range(len(leaves)) if offsets[i] <= col)

        # conjuncts over one input filter that input; the rest stay residual
        residual = []
        own: dict[int, list[Scalar]] = {}
        for c in flat.residual:
            used = sc.refs(c)
            ls = {leaf_of(i) for i in used}
            if len(ls) == 1:
                (k,) = ls
                own.setdefault(k, []).append(sc.shift(c, -offsets[k]))
            else:
                residual.append(c)
        for k, preds in own.items():
            leaves[k] = p.Filter(leaves[k], sc.conjunction(preds))  # type: ignore[arg-type]
        conds = []
        for a, b in flat.conds:  # a left column, b right: a's input comes first
            i, j = leaf_of(a), leaf_of(b)
            conds.append((i, a - offsets[i], j, b - offsets[j]))
        return self.choose(tuple(leaves), tuple(conds), sc.conjunction(residual))

    # ------------------------------------------------------------ the cost model
    def choose(
        self, leaves: tuple[p.Node, ...], conds: p.Equalities, residual: Scalar | None
    ) -> p.MultiJoin:
        rows = [self.rows(x) for x in leaves]
        delta_arr = self.delta_arrangements(leaves, conds, rows)
        binary_arr = self.binary_arrangements(leaves, conds, rows)
        d_cost = sum(r for _, r in delta_arr)
        b_cost = sum(r for _, r in binary_arr)
        impossible = None
        if any(isinstance(n, p.RecRef) for x in leaves for n in p.walk(x)):
            impossible = "inside a recursive loop"
        elif not _connected(len(leaves), conds):
            impossible = "the equalities do not connect every input"
        est = f"est. rows held: delta {_fmt(d_cost)}, binary {_fmt(b_cost)}"
        if impossible is not None:
            chosen, note = "binary", f"delta impossible: {impossible}; {est}"
        elif self.strategy != "auto":
            chosen, note = self.strategy, f"forced by {self.why}; {est}"
        else:
            chosen = "delta" if d_cost <= b_cost else "binary"
            note = f"chosen by cost; {est}"
        arr = delta_arr if chosen == "delta" else binary_arr
        return p.MultiJoin(
            leaves,
            conds,
            residual,
            chosen,
            tuple(f"{what} ~{_fmt(r)} rows" for what, r in arr),
            note,
        )

    def rows(self, node: p.Node) -> float:
        if isinstance(node, p.Scan):
            return float(self.stats.get(node.table.lower(), DEFAULT_ROWS))
        if isinstance(node, p.Aggregate) and not node.group:
            return 1.0
        if isinstance(node, p.TopK):
            return min(float(node.limit), self.rows(node.input))
        kids = node.children()
        return max((self.rows(c) for c in kids), default=float(DEFAULT_ROWS))

    def ndv(self, node: p.Node, col: int) -> float:
        """Distinct values of column ``col`` of ``node`` (statistics of its scan if known)."""
        n = self.rows(node)
        x = node
        while True:
            if isinstance(x, p.Scan):
                v = self.stats.get(f"{x.table.lower()}.{x.columns[col][0].lower()}")
                return min(n, float(v)) if v is not None else n
            if isinstance(x, p.Filter | p.Distinct | p.TopK):
                x = x.children()[0]
            elif isinstance(x, p.Project) and isinstance(x.exprs[col], Ref):
                col = x.exprs[col].index  # type: ignore[union-attr]
                x = x.input
            else:
                return n

    def key_ndv(self, node: p.Node, cols: list[int]) -> float:
        return min(self.rows(node), math.prod(self.ndv(node, c) for c in cols))

    def delta_arrangements(
        self, leaves: tuple[p.Node, ...], conds: p.Equalities, rows: list[float]
    ) -> Estimates:
        """The arrangements ``delta_join`` builds (its greedy order, shared when equal)."""
        seen: dict[tuple[p.Node, tuple[int, ...]], str] = {}
        out: Estimates = []
        for first in range(len(leaves)):
            bound = {first}
            while len(bound) < len(leaves):
                for j in range(len(leaves)):
                    if j in bound:
                        continue
                    keys = [cj for i, _, jj, cj in conds if jj == j and i in bound]
                    keys += [ci for i, ci, jj, _ in conds if i == j and jj in bound]
                    if keys:
                        break
                else:
                    return out  # not connected: no delta plan
                bound.add(j)
                k = (leaves[j], tuple(keys))
                if k not in seen:
                    seen[k] = _describe(leaves[j], j, keys)
                    out.append((seen[k], rows[j]))
        return out

    def binary_arrangements(
        self, leaves: tuple[p.Node, ...], conds: p.Equalities, rows: list[float]
    ) -> Estimates:
        """The arrangements of the left-deep plan, intermediate results estimated."""
        off = [0]
        for x in leaves:
            off.append(off[-1] + x.width)
        seen: set[tuple[object, tuple[int, ...]]] = set()
        out: Estimates = []
        acc_rows = rows[0]
        acc_ndv: dict[int, float] = {c: self.ndv(leaves[0], c) for c in range(leaves[0].width)}
        for k in range(1, len(leaves)):
            ks = [(off[i] + ci, cj) for i, ci, j, cj in conds if j == k]
            lcols, rcols = [a for a, _ in ks], [b for _, b in ks]
            lkey: tuple[object, tuple[int, ...]]
            if k == 1:
                lkey, ldesc = (leaves[0], tuple(lcols)), _describe(leaves[0], 0, lcols)
            else:
                lkey = (f"join{k}", tuple(lcols))
                names = [c for x in leaves[:k] for c, _ in x.schema]
                ldesc = f"⋈ of inputs 0-{k - 1} by [{', '.join(names[c] for c in lcols)}]"
            for key, desc, r in (
                (lkey, ldesc, acc_rows),
                ((leaves[k], tuple(rcols)), _describe(leaves[k], k, rcols), rows[k]),
            ):
                if key not in seen:
                    seen.add(key)
                    out.append((desc, r))
            if ks:
                l_ndv = min(acc_rows, math.prod(acc_ndv[a] for a in lcols))
                d = max(l_ndv, self.key_ndv(leaves[k], rcols), 1.0)
                new_rows = acc_rows * rows[k] / d
            else:
                new_rows = acc_rows * rows[k]
            for c in range(leaves[k].width):
                acc_ndv[off[k] + c] = self.ndv(leaves[k], c)
            acc_rows = max(new_rows, 1.0)
            acc_ndv = {c: min(v, acc_rows) for c, v in acc_ndv.items()}
        return out


def _connected(n: int, conds: p.Equalities) -> bool:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for i, _, j, _ in conds:
        parent[find(i)] = find(j)
    return len({find(x) for x in range(n)}) == 1


def _describe(leaf: p.Node, index: int, cols: list[int]) -> str:
    x = leaf
    while isinstance(x, p.Filter | p.Project) and not isinstance(x, p.Scan):
        x = x.input
    name = x.table if isinstance(x, p.Scan) else f"input {index}"
    return f"{name} by [{', '.join(leaf.schema[c][0] for c in cols)}]"


def _fmt(x: float) -> str:
    return f"{x:,.0f}"
