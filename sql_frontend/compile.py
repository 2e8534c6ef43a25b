"""The relational plan → an ``ivm`` dataflow.

Each plan node becomes a few engine operators; every intermediate collection names its
columns ``c0, c1, ...`` by position, so plan column positions and engine columns agree.
Equal subplans are compiled once (nodes are values), so a table read twice is one input and a
subquery used twice is one dataflow fragment. Identities used (SQL semantics, NULL-correct):

* inner join = ``join`` on non-NULL keys, then the residual as a filter;
* left outer join = inner join ∪ (left rows without a match, padded with NULLs), where
  "without a match" is ``antijoin`` on the keys (no residual) or, with a residual, on the whole
  left row against the distinct left rows that matched;
* semi/anti join = ``semijoin``/``antijoin`` likewise; NOT IN (null-aware anti join on x = v) =
  (left rows with x NULL, kept iff the right is empty) ∪ (left rows with x not NULL and no
  equal v, kept iff the right has no NULL v);
* a global aggregate = the ``reduce`` result ∪ (its empty-input row unless the result has a row);
* INTERSECT / EXCEPT ALL = a per-row ``reduce_group`` of min(l, r) / max(l − r, 0);
* ORDER BY … LIMIT and window functions = ``reduce_group`` per partition (CIDR 2013 §3.4);
* WITH RECURSIVE = ``ivm.iterate`` of ``seed ∪ step(relations)`` (``distinct`` for UNION);
* a multiway inner join (3+ inputs) = a delta query (``ivm.collection.delta_join``: only the
  inputs are arranged) or left-deep binary joins, as :mod:`.planner` chose; residual
  predicates filter the joined rows.

As-of joins
-----------
**Processing time** — ``l [LEFT] JOIN r FOR SYSTEM_TIME AS OF PROCTIME() [AS a] ON …`` (Flink
SQL's lookup-join form; sqlglot's Spark dialect parses it, and prints it as Spark's
``TIMESTAMP AS OF PROCTIME()``, which is accepted too). Each row of ``l`` joins ``r`` as ``r``
is at the epoch in which the row arrives, and later changes of ``r`` never revise that result
(``l.join_at_arrival(r)`` = ``l.differentiate(lambda d: d ⋈ r)``, the blog-post seed). ``LEFT``
pads a row that has no match on arrival with NULLs, and a match appearing later does not
revise it. A **retraction** of a left row is also an arrival: it subtracts the row joined with
``r`` *as it is at the retraction*. That cancels what the insertion added only when the row's
matches in ``r`` did not change in between; otherwise the difference remains (e.g. order 2
joined price 10 on arrival, the price became 12, deleting order 2 leaves ``(2, 10): +1`` and
``(2, 12): −1``). The view is then a log of "what was joined when", not a function of the
current inputs. Only ``PROCTIME()`` may follow ``AS OF``: an ``AS OF`` column is event time.

**Event time** — ``l ASOF [LEFT] JOIN r ON l.k = r.k [AND …] AND l.t >= r.t`` (DuckDB's form,
which sqlglot's Spark dialect parses; ``r.t <= l.t`` is the same). Each left row is paired,
among the right rows with equal keys (NULL keys never match), with the one with the greatest
``r.t <= l.t``; if several rows share that time the smallest row wins (DuckDB leaves it
unspecified). ``LEFT`` keeps left rows without a match, padded with NULLs. The view is
maintained exactly under inserts and deletes on both sides (``Collection.asof_join``). The ON
clause holds only equalities and the one ``>=``; strict ``>`` and the forward directions are
refused. WHERE conditions of a query with an ASOF JOIN are not pushed into the ON clause (they
filter the matched rows; :func:`sql_frontend.planner.plan_sql`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

import ivm
from ivm.collection import delta_join as ivm_delta_join
from ivm.errors import PlanError
from ivm.schema import DTYPES
from sql_frontend import plan as p
from sql_frontend.errors import UnsupportedSqlError
from sql_frontend.expressions import generators
from sql_frontend.expressions.evaluate import compile_predicate, compile_vec
from sql_frontend.expressions.vec import to_column
from sql_frontend.scalar import Native, Ref, Scalar
from sql_frontend.sql_types import SqlType

if TYPE_CHECKING:
    from sql_frontend.analyze import CatalogLike

Collection = Any  # ivm.Collection (kept loose: the engine is typed dynamically)


def _names(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


@dataclass(frozen=True)
class _Sides:
    """The two inputs of a join: whole, without the rows whose keys are NULL (``lnn``/``rnn``;
    possibly with a constant key column added), and their key columns."""

    left: Collection
    right: Collection
    lnn: Collection
    rnn: Collection
    lkeys: tuple[int, ...]
    rkeys: tuple[int, ...]

    def on(self) -> list[tuple[str, str]]:
        """The equi-join condition, as column-name pairs (left's name, right's name)."""
        return [(f"c{a}", f"c{b}") for a, b in zip(self.lkeys, self.rkeys, strict=True)]

    def flipped(self) -> _Sides:
        """The same join seen from the right side."""
        return _Sides(self.right, self.left, self.rnn, self.lnn, self.rkeys, self.lkeys)


@dataclass(frozen=True)
class CompiledView:
    """A SQL view compiled into a dataflow.

    ``collection`` is the view's rows (engine columns named as ``schema``), ``schema`` its
    columns with Spark SQL types, ``plan`` the relational plan, ``tables`` the inputs it reads.
    """

    collection: Collection
    schema: tuple[tuple[str, SqlType], ...]
    plan: p.Node
    explain: str
    tables: tuple[str, ...]

    @property
    def engine_schema(self) -> list[tuple[str, str]]:
        return list(zip(self.collection.schema.names, self.collection.schema.dtypes, strict=True))


def output_names(schema: p.Schema) -> list[str]:
    """Unique column names for the view (``x``, ``x_1``, ... for repeats)."""
    seen: dict[str, int] = {}
    out = []
    for n, _ in schema:
        base = n or "col"
        k = seen.get(base, 0)
        name = base if k == 0 else f"{base}_{k}"
        while name in seen:
            k += 1
            name = f"{base}_{k}"
        seen[base] = k + 1
        seen.setdefault(name, 1)
        out.append(name)
    return out


def compile_view(
    sql: str,
    catalog: CatalogLike,
    dataflow: ivm.Dataflow,
    inputs: Mapping[str, Collection],
    *,
    join_strategy: str = "auto",
    stats: Mapping[str, float] | None = None,
) -> CompiledView:
    """Compile the view ``sql`` over ``catalog`` into ``dataflow`` reading ``inputs``.

    >>> import ivm
    >>> g = ivm.Dataflow()
    >>> t = g.input("t", [("a", "any")])
    >>> v = compile_view("SELECT a, count(*) AS n FROM t GROUP BY a", {"t": [("a", "bigint")]},
    ...                  g, {"t": t})
    >>> out = g.output(v.collection, "v")
    >>> t.insert([(1,), (1,), (None,)]); _ = g.step()
    >>> sorted(out.counts().items(), key=str)
    [((1, 2), 1), ((None, 1), 1)]

    ``join_strategy`` and ``stats`` choose the plan of multiway joins (:mod:`.planner`).
    """
    from sql_frontend.planner import plan_sql  # sqlglot: not loaded for Datalog's plans

    node = plan_sql(sql, catalog, join_strategy=join_strategy, stats=stats)
    coll = compile_plan(node, dataflow, inputs)
    names = output_names(node.schema)
    coll = coll.rename(names)
    schema = tuple((n, t) for n, (_, t) in zip(names, node.schema, strict=True))
    return CompiledView(coll, schema, node, explain_text(node), p.tables(node))


def explain_text(node: p.Node) -> str:
    return "== Relational plan ==\n" + p.explain(node)


def explain(
    sql: str,
    catalog: CatalogLike,
    *,
    join_strategy: str = "auto",
    stats: Mapping[str, float] | None = None,
) -> str:
    """EXPLAIN of a view: its relational plan and the dataflow it compiles to."""
    from sql_frontend.planner import plan_sql

    node = plan_sql(sql, catalog, join_strategy=join_strategy, stats=stats)
    g = ivm.Dataflow("explain")
    inputs = {}
    for scan in {n for n in p.walk(node) if isinstance(n, p.Scan)}:
        if scan.table not in inputs:
            inputs[scan.table] = g.input(scan.table, [(c, t.engine_dtype) for c, t in scan.columns])
    coll = compile_plan(node, g, inputs)
    g.output(coll, "view")
    return explain_text(node) + "\n== Dataflow ==\n" + g.explain()


def compile_plan(
    node: p.Node, dataflow: ivm.Dataflow, inputs: Mapping[str, Collection]
) -> Collection:
    """The collection computing ``node`` (columns ``c0..``)."""
    return _Compiler(dataflow, inputs).compile(node, {})


def compile_plans(
    nodes: Sequence[p.Node], dataflow: ivm.Dataflow, inputs: Mapping[str, Collection]
) -> list[Collection]:
    """The collections computing ``nodes``; equal subplans of different nodes compile once
    (a Datalog program's relations share their strata)."""
    compiler = _Compiler(dataflow, inputs)
    return [compiler.compile(n, {}) for n in nodes]


def _column_fn(e: Scalar) -> Callable[..., tuple[np.ndarray, np.ndarray | None]]:
    """``f(*columns) -> (column, valid or None)`` computing ``e`` as an engine column."""
    if isinstance(e, Ref):
        i = e.index
        return lambda *cols: (cols[i], None)
    if isinstance(e, Native):
        idx, fn = [a.index for a in e.args], e.fn
        return lambda *cols: fn([cols[i] for i in idx], len(cols[0]) if cols else 0)
    ev = compile_vec(e)
    return lambda *cols: (to_column(ev(cols, len(cols[0]) if cols else 0)), None)


def _has_recref(node: p.Node) -> bool:
    return any(isinstance(n, p.RecRef) for n in p.walk(node))


class _Compiler:
    def __init__(self, g: ivm.Dataflow, inputs: Mapping[str, Collection]) -> None:
        self.g = g
        self.inputs = inputs
        self.memo: dict[p.Node, Collection] = {}
        self.loops: dict[tuple[p.Binding, ...], list[Collection]] = {}

    def compile(self, node: p.Node, rec: dict[str, Collection]) -> Collection:
        inner = bool(rec) and _has_recref(node)
        memo = self.memo if not inner else self._loop_memo(rec)
        hit = memo.get(node)
        if hit is not None:
            return hit
        method: Callable[[Any, dict[str, Collection]], Collection] | None = getattr(
            self, f"_{type(node).__name__}", None
        )
        if method is None:
            raise UnsupportedSqlError(f"plan node {type(node).__name__}")
        out = method(node, rec if inner else {})
        if len(out.schema) != node.width:
            raise PlanError(
                f"{type(node).__name__} compiled to {len(out.schema)} columns, "
                f"expected {node.width}"
            )
        memo[node] = out
        return out

    def _loop_memo(self, rec: dict[str, Collection]) -> dict[p.Node, Collection]:
        key = ("__loop__", tuple(id(c) for c in rec.values()))
        return self.__dict__.setdefault(str(key), {})

    # ------------------------------------------------------------ helpers
    def named(self, c: Collection) -> Collection:
        names = _names(len(c.schema))
        return c if tuple(c.schema.names) == tuple(names) else c.rename(names)

    def map_exprs(
        self, c: Collection, exprs: tuple[Scalar, ...], drop_failed: bool = False
    ) -> Collection:
        """``c`` mapped to one column per expression (``drop_failed``: rows where a partial
        expression has no value are dropped, see :class:`.plan.Project`)."""
        idx = [e.index for e in exprs if isinstance(e, Ref)]
        if len(idx) == len(exprs) and len(set(idx)) == len(idx):
            return self.named(c.project(*idx))
        in_dtypes = list(c.schema.dtypes)
        fns: list[Callable[..., tuple[np.ndarray, np.ndarray | None]]] = []
        dtypes: list[str] = []
        for e in exprs:
            fns.append(_column_fn(e))
            dtypes.append(in_dtypes[e.index] if isinstance(e, Ref) else e.type.engine_dtype)
        schema = list(zip(_names(len(exprs)), dtypes, strict=True))
        if not drop_failed:

            def fn(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
                return tuple(f(*cols)[0] for f in fns)

            return c.map(fn, schema)

        def fn_partial(*cols: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
            valid = np.ones(len(cols[0]) if cols else 0, dtype=bool)
            values = []
            for f in fns:
                v, ok = f(*cols)
                values.append(v)
                if ok is not None:
                    valid &= ok
            keep = np.nonzero(valid)[0]
            return keep, tuple(v[keep] for v in values)

        return c.flat_map(fn_partial, schema)

    def _Generate(self, node: p.Generate, rec: dict[str, Collection]) -> Collection:
        """A flat-map: each row's generated rows carry the row's difference."""
        c = self.compile(node.input, rec)
        evs = [compile_vec(a) for a in node.args]
        name, outer = node.generator, node.outer
        schema = list(
            zip(
                _names(node.width),
                [*c.schema.dtypes, *(t.engine_dtype for t in node.types)],
                strict=True,
            )
        )

        def fn(*cols: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
            n = len(cols[0]) if cols else 0
            parent, made = generators.run(name, [ev(cols, n) for ev in evs], n, outer)
            return parent, (*(col[parent] for col in cols), *made)

        return c.flat_map(fn, schema)

    def drop_null_keys(self, c: Collection, keys: tuple[int, ...]) -> Collection:
        obj = [k for k in keys if c.schema.dtypes[k] in ("any", "str")]
        if not obj:
            return c

        def keep(*cols: np.ndarray) -> np.ndarray:
            m = np.ones(len(cols[0]), dtype=bool)
            for k in obj:
                m &= np.fromiter((v is not None for v in cols[k]), dtype=bool, count=len(cols[k]))
            return m

        return c.filter(keep)

    def pad_nulls(
        self, c: Collection, left_width: int, right_dtypes: list[str], pad_right: bool
    ) -> Collection:
        """Rows of one side padded with NULL columns for the other side."""
        in_dtypes = list(c.schema.dtypes)
        n_in = len(in_dtypes)
        pad = ["any" if d not in ("str",) else "str" for d in right_dtypes]

        def fn(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
            n = len(cols[0]) if cols else 0
            nulls = tuple(np.full(n, None, dtype=object) for _ in pad)
            return (*cols, *nulls) if pad_right else (*nulls, *cols)

        dtypes = in_dtypes + pad if pad_right else pad + in_dtypes
        del left_width, n_in
        return c.map(fn, list(zip(_names(len(dtypes)), dtypes, strict=True)))

    def const_col(self, c: Collection, value: int = 1) -> Collection:
        width = len(c.schema)

        def fn(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
            n = len(cols[0]) if cols else 0
            return (*cols, np.full(n, value, dtype=np.int64))

        return c.map(
            fn, [*zip(c.schema.names, c.schema.dtypes, strict=True), (f"c{width}", "int64")]
        )

    def nullable(self, c: Collection, may_be_null: Sequence[bool]) -> Collection:
        """``c`` with each flagged fixed-width column (which holds no NULL) widened to
        ``any``, so that a NULL can join it — e.g. MAX of a NOT NULL column over no rows."""
        old = list(c.schema.dtypes)
        new = [
            "any" if flag and DTYPES[d] != np.dtype(object) else d
            for d, flag in zip(old, may_be_null, strict=True)
        ]
        if new == old:
            return c

        def widen(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
            return tuple(
                col.astype(object) if n != o else col
                for col, n, o in zip(cols, new, old, strict=True)
            )

        return self.named(c.map(widen, list(zip(c.schema.names, new, strict=True))))

    def marker(self, c: Collection) -> Collection:
        """One row ``(1,)`` if ``c`` is not empty, else nothing."""

        def fn(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
            n = len(cols[0]) if cols else 0
            return (np.ones(n, dtype=np.int64),)

        return c.map(fn, [("m", "int64")]).distinct()

    def unify_dtypes(self, a: Collection, b: Collection) -> tuple[Collection, Collection]:
        """Make both sides' engine dtypes equal (object where they differ)."""
        da, db = list(a.schema.dtypes), list(b.schema.dtypes)
        if da == db:
            return a, b
        target = [x if x == y else "any" for x, y in zip(da, db, strict=True)]
        return self.retype(a, target), self.retype(b, target)

    def retype(self, c: Collection, dtypes: list[str]) -> Collection:
        if list(c.schema.dtypes) == dtypes:
            return c
        src = list(c.schema.dtypes)

        def fn(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
            out = []
            for col, s, d in zip(cols, src, dtypes, strict=True):
                if s == d:
                    out.append(col)
                else:
                    o = np.empty(len(col), dtype=object)
                    o[:] = col.tolist()
                    out.append(o)
            return tuple(out)

        return c.map(fn, list(zip(_names(len(dtypes)), dtypes, strict=True)))

    # ------------------------------------------------------------ nodes
    def _Scan(self, node: p.Scan, rec: dict[str, Collection]) -> Collection:
        # table names are case-insensitive, as in Spark (the catalog may spell them upper case)
        found = [n for n in self.inputs if n == node.table] or [
            n for n in self.inputs if n.lower() == node.table.lower()
        ]
        if len(found) != 1:
            raise PlanError(
                f"view reads {node.table!r} but no input of that name was given; "
                f"inputs: {sorted(self.inputs)}"
            )
        c = self.inputs[found[0]]
        names = list(c.schema.names)
        lower = [n.lower() for n in names]
        idx = []
        for col, _ in node.columns:
            if col in names:
                idx.append(names.index(col))
            elif col.lower() in lower:
                idx.append(lower.index(col.lower()))
            else:
                raise PlanError(f"input {node.table!r} has no column {col!r}; it has {names}")
        return self.named(c.project(*idx))

    def _Filter(self, node: p.Filter, rec: dict[str, Collection]) -> Collection:
        c = self.compile(node.input, rec)
        return c.filter(compile_predicate(node.predicate))

    def _Project(self, node: p.Project, rec: dict[str, Collection]) -> Collection:
        return self.map_exprs(self.compile(node.input, rec), node.exprs, node.drop_failed)

    def _Values(self, node: p.Values, rec: dict[str, Collection]) -> Collection:
        dtypes = [t.engine_dtype for _, t in node.columns]
        return self.g.constant(
            list(node.rows), list(zip(_names(node.width), dtypes, strict=True)), name=node.name
        )

    def _Distinct(self, node: p.Distinct, rec: dict[str, Collection]) -> Collection:
        return self.compile(node.input, rec).distinct()

    def _Empty(self, node: p.Empty, rec: dict[str, Collection]) -> Collection:
        return self.g.empty([(f"c{i}", t.engine_dtype) for i, (_, t) in enumerate(node.columns)])

    def _RecRef(self, node: p.RecRef, rec: dict[str, Collection]) -> Collection:
        if node.name not in rec:
            raise PlanError(f"recursive relation {node.name} used outside its loop")
        return rec[node.name]

    def _Recursive(self, node: p.Recursive, rec: dict[str, Collection]) -> Collection:
        group = node.bindings
        if group not in self.loops:
            seeds = [self.compile(b.seed, rec) for b in group]
            # Every relation keeps one dtype per column across iterations: object, unless the
            # column is NOT NULL (then the type's fixed-width dtype).
            seeds = [
                self.retype(
                    s,
                    [
                        t.engine_dtype if t.not_null else "str" if d == "str" else "any"
                        for d, (_, t) in zip(s.schema.dtypes, b.columns, strict=True)
                    ],
                )
                for s, b in zip(seeds, group, strict=True)
            ]

            def body(vs: list[Collection]) -> list[Collection]:
                env = dict(rec)
                env.update({b.name: v for b, v in zip(group, vs, strict=True)})
                outs = []
                for b, v, seed in zip(group, vs, seeds, strict=True):
                    step = self.retype(self.compile(b.step, env), list(v.schema.dtypes))
                    r = self.named(step).concat(seed)
                    outs.append(r.distinct() if b.distinct else r)
                return outs

            self.loops[group] = ivm.iterate(seeds, body, max_iterations=node.max_iterations)
        return self.loops[group][node.index]

    # ------------------------------------------------------------ joins
    def _Join(self, node: p.Join, rec: dict[str, Collection]) -> Collection:
        return self.join_collections(
            node, self.compile(node.left, rec), self.compile(node.right, rec)
        )

    def join_collections(self, node: p.Join, left: Collection, right: Collection) -> Collection:
        """``node`` over the compiled ``left`` and ``right``."""
        lw, rw = node.left.width, node.right.width
        if node.kind == "cross":
            lk = self.const_col(left)
            rk = self.const_col(right)
            j = lk.join(rk, on=[(f"c{lw}", f"c{rw}")])
            keep = list(range(lw)) + [lw + 1 + i for i in range(rw)]
            return self.named(j.project(*keep))
        if node.null_aware:
            return self.null_aware_anti(node, left, right)
        if not node.left_keys and node.kind != "inner":
            # no equi keys: join on a constant (every pair is a candidate)
            left2, right2 = self.const_col(left), self.const_col(right)
            return self.outer_like(node, _Sides(left, right, left2, right2, (lw,), (rw,)))
        lkeys, rkeys = node.left_keys, node.right_keys
        # <=> keys keep their NULLs; a NOT NULL column has none to drop
        safe = node.null_safe or (False,) * len(lkeys)
        lnull = [not node.left.schema[k][1].not_null for k in lkeys]
        rnull = [not node.right.schema[k][1].not_null for k in rkeys]
        lnn = self.drop_null_keys(
            left, tuple(k for k, s, n in zip(lkeys, safe, lnull, strict=True) if n and not s)
        )
        rnn = self.drop_null_keys(
            right, tuple(k for k, s, n in zip(rkeys, safe, rnull, strict=True) if n and not s)
        )
        return self.outer_like(node, _Sides(left, right, lnn, rnn, lkeys, rkeys))

    def inner(self, s: _Sides, lw: int, rw: int, residual: Scalar | None) -> Collection:
        lcols = len(s.lnn.schema)
        j = s.lnn.join(s.rnn, on=s.on())
        keep = list(range(lw)) + [lcols + i for i in range(rw)]
        j = (
            self.named(j.project(*keep))
            if lcols != lw or len(s.rnn.schema) != rw
            else self.named(j)
        )
        if residual is not None:
            j = j.filter(compile_predicate(residual))
        return j

    def outer_like(self, node: p.Join, s: _Sides) -> Collection:
        lw, rw = node.left.width, node.right.width
        if not node.left_keys and node.kind == "inner":
            s = _Sides(
                s.left, s.right, self.const_col(s.left), self.const_col(s.right), (lw,), (rw,)
            )
        inner = self.inner(s, lw, rw, node.residual)
        if node.kind == "inner":
            return inner
        if node.kind in ("semi", "anti"):
            return self.semi_anti(node, s, inner)
        parts = [inner]
        if node.kind in ("left", "full"):
            unmatched_l = self.unmatched(s, inner, 0, lw, node.residual)
            parts.append(self.pad_nulls(unmatched_l, lw, list(s.right.schema.dtypes), True))
        if node.kind in ("right", "full"):
            unmatched_r = self.unmatched(s.flipped(), inner, lw, rw, node.residual)
            parts.append(
                self.pad_nulls(self.named(unmatched_r), rw, list(s.left.schema.dtypes), False)
            )
        out = self.named(parts[0])
        target = [
            a if all(x.schema.dtypes[i] == a for x in parts) else "any"
            for i, a in enumerate(out.schema.dtypes)
        ]
        parts = [self.retype(self.named(x), target) for x in parts]
        return parts[0].concat(*parts[1:])

    def semi_anti(self, node: p.Join, s: _Sides, inner: Collection) -> Collection:
        """The left rows with (semi) or without (anti) a match: on the keys when there is no
        residual, else against the distinct left rows of the inner join."""
        lw = node.left.width
        semi = node.kind == "semi"
        if node.residual is None:
            keys = s.on()
            src = s.lnn if semi else s.left
            if len(s.lnn.schema) != lw:  # constant key column added
                src = self.const_col(s.left)
                out = src.semijoin(s.rnn, keys) if semi else src.antijoin(s.rnn, keys)
                return self.named(out.project(*range(lw)))
            return src.semijoin(s.rnn, keys) if semi else src.antijoin(s.rnn, keys)
        matched = self.named(inner.project(*range(lw))).distinct()
        on = [(f"c{i}", f"c{i}") for i in range(lw)]
        return s.left.semijoin(matched, on) if semi else s.left.antijoin(matched, on)

    def unmatched(
        self, s: _Sides, inner: Collection, first: int, width: int, residual: Scalar | None
    ) -> Collection:
        """The rows of ``s.left`` (columns ``first`` to ``first + width`` of ``inner``) that
        match no row of ``s.right``: the rows an outer join pads with NULLs."""
        if residual is None and len(s.lnn.schema) == width:
            return s.left.antijoin(s.rnn, s.on())
        matched = self.named(inner.project(*range(first, first + width))).distinct()
        return s.left.antijoin(matched, [(f"c{i}", f"c{i}") for i in range(width)])

    def null_aware_anti(self, node: p.Join, left: Collection, right: Collection) -> Collection:
        lw = node.left.width
        (x,), (v,) = node.left_keys, node.right_keys
        lnull = left.filter(
            lambda *cols: np.fromiter((c is None for c in cols[x]), dtype=bool, count=len(cols[x]))
        )
        lval = self.drop_null_keys(left, (x,))
        rvals = self.drop_null_keys(right, (v,))
        rnulls = right.filter(
            lambda *cols: np.fromiter((c is None for c in cols[v]), dtype=bool, count=len(cols[v]))
        )
        nonempty = self.marker(right)
        has_null = self.marker(rnulls)
        # x NULL: kept iff the right side is empty
        a = self.named(
            self.const_col(lnull).antijoin(nonempty, [(f"c{lw}", "m")]).project(*range(lw))
        )
        # x not NULL: kept iff no v = x and no v is NULL
        b = lval.antijoin(rvals, [(f"c{x}", f"c{v}")])
        b = self.named(self.const_col(b).antijoin(has_null, [(f"c{lw}", "m")]).project(*range(lw)))
        a, b = self.unify_dtypes(a, b)
        return a.concat(b)

    def _ArrivalJoin(self, node: p.ArrivalJoin, rec: dict[str, Collection]) -> Collection:
        left = self.compile(node.left, rec)
        right = self.compile(node.right, rec)
        if rec and _has_recref(node):
            raise UnsupportedSqlError("FOR SYSTEM_TIME AS OF inside a recursive CTE")
        join = node.as_join()
        dtypes = self._join_dtypes(join, left, right)
        # Each left change is a blip (differentiate) put through the ordinary join with the
        # right side as it is at that moment; only the blip's start is kept (integrate).
        return left.differentiate(
            lambda d: self.retype(self.join_collections(join, self.named(d), right), dtypes)
        )

    def _join_dtypes(self, join: p.Join, left: Collection, right: Collection) -> list[str]:
        """The engine dtypes of ``join`` over ``left`` and ``right`` (outer padding: object)."""
        ld, rd = list(left.schema.dtypes), list(right.schema.dtypes)
        if join.kind == "left":
            rd = ["str" if d == "str" else "any" for d in rd]
        return ld + rd

    def _AsofJoin(self, node: p.AsofJoin, rec: dict[str, Collection]) -> Collection:
        left = self.compile(node.left, rec)
        right = self.compile(node.right, rec)
        lw = node.left.width
        lnn = self.drop_null_keys(left, node.left_keys)
        rnn = self.drop_null_keys(right, node.right_keys)
        on = [(f"c{a}", f"c{b}") for a, b in zip(node.left_keys, node.right_keys, strict=True)]
        matched = self.named(lnn.asof_join(rnn, on, f"c{node.left_time}", f"c{node.right_time}"))
        if node.kind == "inner":
            return matched
        hit = self.named(matched.project(*range(lw))).distinct()
        unmatched = left.antijoin(hit, [(f"c{i}", f"c{i}") for i in range(lw)])
        pad = self.pad_nulls(unmatched, lw, list(right.schema.dtypes), True)
        target = [
            a if a == b else "any"
            for a, b in zip(matched.schema.dtypes, pad.schema.dtypes, strict=True)
        ]
        return self.retype(matched, target).concat(self.retype(pad, target))

    def _MultiJoin(self, node: p.MultiJoin, rec: dict[str, Collection]) -> Collection:
        if node.strategy == "binary":
            return self.compile(node.as_binary(), rec)
        inputs = [self.compile(x, rec) for x in node.inputs]
        if any(c.scope is not self.g.root for c in inputs):
            return self.compile(node.as_binary(), rec)  # loops: no delta plan
        # NULL keys never match: drop them from each occurrence (shared when equal)
        keyed: dict[tuple[p.Node, tuple[int, ...]], Collection] = {}
        for k, (x, c) in enumerate(zip(node.inputs, inputs, strict=True)):
            cols = tuple(
                sorted(
                    {ci for i, ci, _, _ in node.conds if i == k}
                    | {cj for _, _, j, cj in node.conds if j == k}
                )
            )
            if (x, cols) not in keyed:
                keyed[x, cols] = self.drop_null_keys(c, cols)
            inputs[k] = keyed[x, cols]
        on = [((i, f"c{ci}"), (j, f"c{cj}")) for i, ci, j, cj in node.conds]
        out = self.named(ivm_delta_join(inputs, on))
        if node.residual is not None:
            out = out.filter(compile_predicate(node.residual))
        return out

    # ------------------------------------------------------------ aggregation
    def _Aggregate(self, node: p.Aggregate, rec: dict[str, Collection]) -> Collection:
        c = self.compile(node.input, rec)
        if any(a.func in p.HOLISTIC_AGGS for a in node.aggs):
            return self.holistic_aggregate(node, c)
        specs: list[tuple] = []
        for a in node.aggs:
            if a.func == "count_star":
                specs.append(("count",))
            elif a.func == "count":
                specs.append(("count_distinct" if a.distinct else "count", f"c{a.arg}"))
            elif a.func in ("sum", "min", "max"):
                specs.append((a.func, f"c{a.arg}"))
            else:
                raise UnsupportedSqlError(f"aggregate {a.func}")
        names = _names(node.width)
        key = [f"c{g}" for g in node.group]
        out = c.reduce(key if key else (), specs, names=names[len(key) :])
        out = self.named(out)
        if node.group:
            return out
        # Global aggregate: one row even over an empty input.
        default = tuple(0 if a.func in ("count", "count_star") else None for a in node.aggs)
        out = self.nullable(out, [v is None for v in default])
        dtypes = list(out.schema.dtypes)
        const = self.g.constant(
            [(*default, 1)],
            [*zip(names, dtypes, strict=True), ("m", "int64")],
            name="empty_aggregate",
        )
        missing = const.antijoin(self.marker(out), [("m", "m")]).project(*range(len(names)))
        return out.concat(self.named(missing))

    def holistic_aggregate(self, node: p.Aggregate, c: Collection) -> Collection:
        """An Aggregate with an aggregate that has no incremental form: every aggregate of
        the node is recomputed per affected group (``reduce_group``)."""
        from sql_frontend.expressions.aggregates import group_value

        names = _names(node.width)
        calls = [
            (
                a.func,
                (a.arg, *a.extra) if a.arg is not None else (),
                "distinct" if a.distinct or a.func == "count_distinct_tuple" else a.param,
                a.type,
            )
            for a in node.aggs
        ]

        def fn(key: tuple, rows: list[tuple], counts: list[int]) -> list[tuple[tuple, int]]:
            expanded = [r for r, n in zip(rows, counts, strict=True) for _ in range(max(n, 0))]
            if not expanded:
                return []
            return [(tuple(group_value(f, cols, prm, t, expanded) for f, cols, prm, t in calls), 1)]

        key = [f"c{g}" for g in node.group]
        schema = [
            (n, a.type.engine_dtype) for n, a in zip(names[len(key) :], node.aggs, strict=True)
        ]
        out = self.named(c.reduce_group(key if key else (), fn, schema))
        if node.group:
            return out
        empty: dict[str, object] = {"count": 0, "count_star": 0, "count_distinct_tuple": 0}
        empty |= {"collect_list": (), "collect_set": ()}  # Spark: [] over no rows
        default = tuple(empty.get(a.func) for a in node.aggs)
        const = self.g.constant(
            [(*default, 1)],
            [*zip(names, out.schema.dtypes, strict=True), ("m", "int64")],
            name="empty_aggregate",
        )
        missing = const.antijoin(self.marker(out), [("m", "m")]).project(*range(len(names)))
        return out.concat(self.named(missing))

    # ------------------------------------------------------------ set operations
    def _SetOp(self, node: p.SetOp, rec: dict[str, Collection]) -> Collection:
        left, right = self.unify_dtypes(self.compile(node.left, rec), self.compile(node.right, rec))
        w = node.width
        on = [(f"c{i}", f"c{i}") for i in range(w)]
        if node.kind == "union":
            u = left.concat(right)
            return u if node.all else u.distinct()
        if not node.all:
            ld = left.distinct()
            return ld.semijoin(right, on) if node.kind == "intersect" else ld.antijoin(right, on)
        # ALL variants: per row, counts of each side.
        tag_l = self.const_col(left, 0)
        tag_r = self.const_col(right, 1)
        both = tag_l.concat(tag_r)
        is_intersect = node.kind == "intersect"

        def fn(key: tuple, rows: list[tuple], counts: list[int]) -> Iterable[tuple[tuple, int]]:
            nl = sum(c for r, c in zip(rows, counts, strict=True) if r[w] == 0)
            nr = sum(c for r, c in zip(rows, counts, strict=True) if r[w] == 1)
            n = min(nl, nr) if is_intersect else max(nl - nr, 0)
            return [((), n)] if n else []

        out = both.reduce_group([f"c{i}" for i in range(w)], fn, [])
        return self.named(out)

    # ------------------------------------------------------------ order
    def _TopK(self, node: p.TopK, rec: dict[str, Collection]) -> Collection:
        c = self.compile(node.input, rec)
        order, limit, offset, width = node.order, node.limit, node.offset, node.width
        group = node.group
        cmp = functools.cmp_to_key(_row_comparator(order))

        def fn(key: tuple, rows: list[tuple], counts: list[int]) -> Iterable[tuple[tuple, int]]:
            items = sorted(zip(rows, counts, strict=True), key=lambda rc: cmp(rc[0]))
            out = []
            skip, take = offset, limit
            for r, n in items:
                if n <= 0:
                    continue
                s = min(skip, n)
                skip -= s
                n -= s
                t = min(take, n)
                if t > 0:
                    out.append((tuple(r[i] for i in range(width) if i not in group), t))
                    take -= t
                if take == 0:
                    break
            return out

        rest = [i for i in range(width) if i not in group]
        out = c.reduce_group(
            [f"c{g}" for g in group] if group else (),
            fn,
            [(f"v{i}", c.schema.dtypes[i]) for i in rest],
        )
        if group:
            pos = {orig: j for j, orig in enumerate([*group, *rest])}
            out = out.project(*[pos[i] for i in range(width)])
        return self.named(out)

    def _Window(self, node: p.Window, rec: dict[str, Collection]) -> Collection:
        c = self.compile(node.input, rec)
        width = node.input.width
        funcs, order, part = node.funcs, node.order, node.partition
        cmp = functools.cmp_to_key(_row_comparator(order)) if order else None
        order_cols = [k.index for k in order]

        def fn(key: tuple, rows: list[tuple], counts: list[int]) -> Iterable[tuple[tuple, int]]:
            expanded: list[tuple] = []
            for r, n in zip(rows, counts, strict=True):
                expanded.extend([r] * max(n, 0))
            if cmp is not None:
                expanded.sort(key=cmp)
            values = [_window_values(f, expanded, order_cols) for f in funcs]
            out: dict[tuple, int] = {}
            for i, r in enumerate(expanded):
                row = r + tuple(v[i] for v in values)
                out[row] = out.get(row, 0) + 1
            return list(out.items())

        dtypes = list(c.schema.dtypes) + [f.type.engine_dtype for f in funcs]
        out = c.reduce_group(
            [f"c{i}" for i in part] if part else (),
            fn,
            list(zip([f"v{i}" for i in range(width + len(funcs))], dtypes, strict=True)),
        )
        return self.named(out.project(*range(len(part), len(part) + width + len(funcs))))


def _sort_value(v: object) -> object:
    return v


def _row_comparator(order: tuple[p.SortKey, ...]) -> Callable[[tuple, tuple], int]:
    """Spark's ordering of rows; ties broken by the whole row, so results are deterministic."""

    def cmp(a: tuple, b: tuple) -> int:
        for k in order:
            x, y = a[k.index], b[k.index]
            if x is None or y is None:
                if x is None and y is None:
                    continue
                first = -1 if k.nulls_first else 1
                return first if x is None else -first
            if x == y:
                continue
            if isinstance(x, float) and x != x:
                c = 1
            elif isinstance(y, float) and y != y:
                c = -1
            else:
                c = -1 if x < y else 1
            return -c if k.descending else c
        ra, rb = repr(a), repr(b)
        return (ra > rb) - (ra < rb)

    return cmp


def _window_values(f: p.WindowCall, rows: list[tuple], order_cols: list[int]) -> list[object]:
    n = len(rows)
    if f.func == p.WindowFunc.ROW_NUMBER:
        return list(range(1, n + 1))
    peers = [tuple(r[i] for i in order_cols) for r in rows]
    if f.func in (p.WindowFunc.RANK, p.WindowFunc.DENSE_RANK):
        out: list[object] = []
        rank = dense = 0
        for i in range(n):
            if i == 0 or peers[i] != peers[i - 1]:
                rank = i + 1
                dense += 1
            out.append(rank if f.func == p.WindowFunc.RANK else dense)
        return out
    if f.func not in p.INCREMENTAL_AGGS or f.frame is not None:
        from sql_frontend.expressions.windows import window_values

        return window_values(f.func, f.arg, f.param, f.frame, f.type, rows, peers, _aggregate)
    # aggregates: whole partition without ORDER BY, else running up to the last peer
    vals = [None if f.arg is None else r[f.arg] for r in rows]
    ends = list(range(n))
    if order_cols:
        j = n - 1
        for i in range(n - 1, -1, -1):
            if i < n - 1 and peers[i] != peers[i + 1]:
                j = i
            ends[i] = j
    else:
        ends = [n - 1] * n
    results: list[object] = []
    cache: dict[int, object] = {}
    for i in range(n):
        e = ends[i]
        if e not in cache:
            cache[e] = _aggregate(f, vals[: e + 1])
        results.append(cache[e])
    return results


def _aggregate(f: p.WindowCall, vals: list[object]) -> object:
    from decimal import Decimal

    if f.func == p.AggFunc.COUNT_STAR:
        return len(vals)
    live = [v for v in vals if v is not None]
    if f.func == p.AggFunc.COUNT:
        return len(live)
    if not live:
        return None
    if f.func == p.AggFunc.MIN:
        return min(live)  # type: ignore[type-var]
    if f.func == p.AggFunc.MAX:
        return max(live)  # type: ignore[type-var]
    total = sum(live)  # type: ignore[arg-type]
    if f.func == p.AggFunc.SUM:
        if f.type.is_fractional:
            return float(total)
        return total
    if f.type.is_decimal:
        from sql_frontend.expressions.evaluate import DECIMAL_CONTEXT, _decimal_result

        return _decimal_result(DECIMAL_CONTEXT.divide(Decimal(total), Decimal(len(live))), f.type)
    return float(total) / len(live)
