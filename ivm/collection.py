"""The user-facing collection API: build dataflows by chaining operators."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ivm import hierarchy
from ivm.aggregate_spec import Agg, AggFunction
from ivm.errors import ForeignCollectionError, PlanError
from ivm.lattice import ALTNEU, ITERATE
from ivm.operators import aggregates as K
from ivm.operators.accumulate import AccumulateReduce
from ivm.operators.arrange import Arrange
from ivm.operators.base import Operator
from ivm.operators.io import Input
from ivm.operators.iterate import Enter, Feedback, Leave, Retract, Variable
from ivm.operators.join import Join
from ivm.operators.linear import Concat, Consolidate, Filter, FlatMap, Map, Negate, Project
from ivm.operators.reduce import Reduce
from ivm.operators.value_counts import ValueCountsReduce
from ivm.reduce_plan import ReducePlan, ReduceStrategy, check_plan, plan_reduce
from ivm.schema import ColumnRef, Schema
from ivm.types import AggSpec, Diffs, GroupFn, RowFn, Rows, SchemaSpec

if TYPE_CHECKING:
    from ivm.dataflow import Dataflow, Scope

KeySpec = Sequence[ColumnRef] | ColumnRef


class Collection:
    """A multiset of rows that changes over time; the result of an operator."""

    def __init__(self, graph: Dataflow, op: Operator) -> None:
        self.graph = graph
        self.op = op

    # -- basics ------------------------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        return self.op.schema

    @property
    def scope(self) -> Scope:
        from ivm.dataflow import out_scope

        return out_scope(self.op)

    def __repr__(self) -> str:
        return f"Collection({self.op.name} {self.schema})"

    def _check_graph(self, graph: Dataflow) -> None:
        if self.graph is not graph:
            raise ForeignCollectionError(
                f"{self.op.name} belongs to dataflow {self.graph.name!r}, not {graph.name!r}"
            )

    def _other(self, other: Collection) -> Collection:
        if not isinstance(other, Collection):
            raise PlanError(f"expected a Collection, got {type(other).__name__}")
        other._check_graph(self.graph)
        return other

    def _deeper(self, *others: Collection) -> Scope:
        scope = self.scope
        for o in others:
            s = o.scope
            if s.is_within(scope):
                scope = s
            elif not scope.is_within(s):
                raise PlanError(
                    "collections from two different loops cannot be combined; "
                    "use the loops' results"
                )
        return scope

    def _unary(self, cls: type[Operator], schema: Schema, **kw: Any) -> Collection:
        return Collection(self.graph, cls(self.graph, self.scope, [self.op], schema, **kw))

    # -- linear operators ----------------------------------------------------------------
    def map(self, fn: RowFn, schema: SchemaSpec) -> Collection:
        """Apply a vectorized ``fn(*cols) -> tuple of arrays`` to every update."""
        return self._unary(Map, Schema.of(schema), fn=fn)

    def filter(self, fn: RowFn) -> Collection:
        """Keep the updates whose row satisfies a vectorized predicate."""
        return self._unary(Filter, self.schema, fn=fn)

    def flat_map(self, fn: RowFn, schema: SchemaSpec) -> Collection:
        """``fn(*cols) -> (parent_index, columns)``: any number of output rows per row."""
        return self._unary(FlatMap, Schema.of(schema), fn=fn)

    def project(self, *cols: ColumnRef, names: Sequence[str] | None = None) -> Collection:
        """Keep (and reorder) columns; ``names`` renames the result.

        Without ``names``, a column kept twice gets a fresh name (see :func:`distinct_names`).
        """
        idx = self.schema.indices(list(cols))
        if names is None:
            names = distinct_names([self.schema.names[i] for i in idx])
        schema = Schema(tuple(names), tuple(self.schema.dtypes[i] for i in idx))
        return self._unary(Project, schema, idx=idx)

    def rename(self, names: Sequence[str]) -> Collection:
        return self._unary(
            Project, self.schema.rename(list(names)), idx=tuple(range(len(self.schema)))
        )

    def concat(self, *others: Collection) -> Collection:
        others = tuple(self._other(o) for o in others)
        for o in others:
            if len(o.schema) != len(self.schema):
                raise PlanError(f"concat of {self.schema} and {o.schema}: arities differ")
        scope = self._deeper(*others)
        ops = [self.graph._enter(c.op, scope) for c in (self, *others)]
        return Collection(self.graph, Concat(self.graph, scope, ops, self.schema))

    def negate(self) -> Collection:
        return self._unary(Negate, self.schema)

    def consolidate(self) -> Collection:
        """The same collection with each batch's equal rows summed (fewer updates downstream)."""
        return self._unary(Consolidate, self.schema)

    # -- arrangements and joins ------------------------------------------------------------
    def arrange(self, key: KeySpec) -> Arrange:
        """The shared arrangement of this collection by ``key``."""
        idx = self.schema.indices(key)
        cache_key = (self.op.id, idx)
        arr = self.graph._arrangements.get(cache_key)
        if arr is None:
            src = self.graph.exchanged(self.op, idx)  # sharded: route rows by the key first
            arr = Arrange(self.graph, self.scope, [src], self.schema, key_idx=idx)
            self.graph._arrangements[cache_key] = arr
        return arr

    def join(
        self,
        other: Collection,
        on: Sequence[tuple[ColumnRef, ColumnRef]],
        select: Sequence[ColumnRef] | None = None,
        names: Sequence[str] | None = None,
    ) -> Collection:
        """Equi-join: all columns of ``self`` then all of ``other`` (clashes get ``_r``).

        ``on=[]`` is the cross product.  Keys compare as in grouping: NULL matches NULL
        (SQL front ends drop NULL keys first where SQL says they never match).
        ``select`` keeps only these columns of that result (and ``names`` renames them),
        as ``join(...).project(*select, names=names)`` does, but the pairs' other columns
        are never gathered and no projection runs after the join.
        """
        other = self._other(other)
        pairs = list(on)
        lk = self.schema.indices([a for a, _ in pairs])
        rk = other.schema.indices([b for _, b in pairs])
        if self.graph.shards > 1 and (self.op.id, lk) not in self.graph._arrangements:
            self.graph.exchanged(self.op, lk)  # both exchanges first: one round, not two
            other.graph.exchanged(other.op, rk)
        la, ra = self.arrange(lk), other.arrange(rk)
        scope = self._deeper(other)
        ls, rs = self.graph._enter(la, scope), self.graph._enter(ra, scope)
        schema = self.schema.concat(other.schema)
        keep: tuple[int, ...] | None = None
        if select is not None:
            keep = schema.indices(list(select))
            if names is None:
                names = distinct_names([schema.names[i] for i in keep])
            elif len(names) != len(keep):
                raise PlanError(f"join: {len(keep)} columns selected, {len(names)} names given")
            schema = Schema(tuple(names), tuple(schema.dtypes[i] for i in keep))
        elif names is not None:
            raise PlanError("join: names= renames the columns of select=; give both")
        op = Join(self.graph, scope, [ls, rs], schema, left=la, right=ra, select=keep)
        return Collection(self.graph, op)

    def semijoin(self, other: Collection, on: Sequence[tuple[ColumnRef, ColumnRef]]) -> Collection:
        """Rows whose key is present in ``other`` (``other``'s keys taken as a set)."""
        other = self._other(other)
        pairs = list(on)
        keys = other.project(*[b for _, b in pairs]).distinct()
        j = self.join(keys, [(a, i) for i, (a, _) in enumerate(pairs)])
        return j.project(*range(len(self.schema))).rename(self.schema.names)

    def antijoin(self, other: Collection, on: Sequence[tuple[ColumnRef, ColumnRef]]) -> Collection:
        """Rows whose key is absent from ``other``: ``self − semijoin(self, other)``."""
        return self.concat(self.semijoin(other, on).negate())

    # -- reductions ------------------------------------------------------------------------
    def _reduce(
        self, key_idx: tuple[int, ...], kernel: K.Kernel, plan: ReducePlan | None = None
    ) -> Collection:
        arr = self.arrange(key_idx)
        schema = Schema(
            tuple(self.schema.names[i] for i in key_idx) + kernel.out_names,
            tuple(self.schema.dtypes[i] for i in key_idx) + kernel.out_dtypes,
        )
        op = Reduce(self.graph, self.scope, [arr], schema, source=arr, kernel=kernel, plan=plan)
        return Collection(self.graph, op)

    def reduce(
        self,
        key: KeySpec,
        aggs: Iterable[AggSpec],
        names: Sequence[str] | None = None,
        plan: ReducePlan | ReduceStrategy | str | None = None,
        group_rows: float | None = None,
    ) -> Collection:
        """Per group of ``key``: ``[("count",), ("sum", col), ("min", col), ...]``.

        Default names are ``fn`` or ``fn_col``, made distinct from the key columns and each
        other by :func:`distinct_names`.  ``plan`` overrides the planner's choice of strategy
        (:func:`ivm.reduce_plan.plan_reduce`); a plan that cannot compute the aggregates
        raises :class:`PlanError`.  The chosen plan is the result operator's ``plan``.
        ``group_rows``: an estimate of the rows per group, if known (it chooses between
        the value-counts and hierarchical plans of MIN/MAX).
        """
        key_idx = self.schema.indices(key) if key != () else ()
        specs: list[Agg] = []
        auto: list[str] = []
        for a in aggs:  # the documented tuples become typed aggregates here, once
            fn = AggFunction.of(a[0])
            col = self.schema.index(a[1]) if len(a) > 1 and a[1] is not None else None
            specs.append(Agg(fn, col))
            auto.append(fn if col is None else f"{fn}_{self.schema.names[col]}")
        if names is None:
            keys = [self.schema.names[i] for i in key_idx]
            out_names = distinct_names([*keys, *auto])[len(keys) :]
        else:
            out_names = list(names)
        if len(out_names) != len(specs):
            raise PlanError("reduce: one name per aggregate")
        kernel = K.AggregateKernel(specs, self.schema.dtypes, out_names)
        depth = self.scope.depth
        if plan is None:
            chosen = plan_reduce(specs, self.schema.dtypes, depth, group_rows)
        else:
            chosen = ReducePlan.of(plan)
            check_plan(chosen, specs, self.schema.dtypes, depth)
        if chosen.strategy in (ReduceStrategy.ACCUMULABLE, ReduceStrategy.VALUE_COUNTS):
            # outside loops: count/sum updated from the change alone, no group re-reads;
            # min/max too, unless a change deletes a group's extreme
            schema = Schema(
                tuple(self.schema.names[i] for i in key_idx) + kernel.out_names,
                tuple(self.schema.dtypes[i] for i in key_idx) + kernel.out_dtypes,
            )
            op_class = (
                AccumulateReduce
                if chosen.strategy is ReduceStrategy.ACCUMULABLE
                else ValueCountsReduce
            )
            op = op_class(
                self.graph,
                self.scope,
                [self.graph.exchanged(self.op, key_idx)],
                schema,
                key_idx=key_idx,
                aggs=specs,
                in_dtypes=self.schema.dtypes,
            )
            return Collection(self.graph, op)
        if chosen.strategy is ReduceStrategy.HIERARCHICAL:
            # staged over hash buckets: a change re-reads its bucket, not its group
            return hierarchy.hierarchical_reduce(self, key_idx, specs, out_names, chosen)
        return self._reduce(key_idx, kernel, chosen)

    def count(self, key: KeySpec = ()) -> Collection:
        return self.reduce(key, [("count",)], names=["count"])

    def sum(self, key: KeySpec, col: ColumnRef) -> Collection:
        return self.reduce(key, [("sum", col)], names=["sum"])

    def min(self, key: KeySpec, col: ColumnRef) -> Collection:
        return self.reduce(key, [("min", col)], names=["min"])

    def max(self, key: KeySpec, col: ColumnRef) -> Collection:
        return self.reduce(key, [("max", col)], names=["max"])

    def distinct(self) -> Collection:
        """Each row with a positive count, once."""
        return self._reduce(tuple(range(len(self.schema))), K.DistinctKernel())

    def top_k(self, key: KeySpec, order_by: Sequence[tuple[ColumnRef, bool]], k: int) -> Collection:
        """Per group, the first ``k`` rows by ``order_by`` ((col, descending) pairs)."""
        key_idx = self.schema.indices(key) if key != () else ()
        rest = tuple(i for i in range(len(self.schema)) if i not in key_idx)
        order = [(self.schema.index(c), bool(d)) for c, d in order_by]
        kernel = K.TopKKernel(
            order,
            int(k),
            rest,
            [self.schema.names[i] for i in rest],
            [self.schema.dtypes[i] for i in rest],
        )
        out = self._reduce(key_idx, kernel)
        pos = {orig: j for j, orig in enumerate(key_idx + rest)}
        return out.project(*[pos[i] for i in range(len(self.schema))])

    def reduce_group(
        self,
        key: KeySpec,
        fn: GroupFn,
        schema: SchemaSpec,
    ) -> Collection:
        """General reduce: ``fn(key, rows, counts) -> [(value_row, count), ...]`` per group.

        The result has the key columns followed by the columns of ``schema``.
        """
        key_idx = self.schema.indices(key) if key != () else ()
        s = Schema.of(schema)
        return self._reduce(key_idx, K.GroupFunctionKernel(fn, key_idx, s.names, s.dtypes))

    # -- loops -----------------------------------------------------------------------------
    def iterate(
        self,
        body: Callable[[Collection], Collection],
        max_iterations: int | None = None,
        entry: RowFn | None = None,
    ) -> Collection:
        """The fixed point of ``body`` starting from this collection."""
        return iterate(
            [self], lambda vs: [body(vs[0])], max_iterations=max_iterations, entry=entry
        )[0]

    def enter_scope(self, scope: Scope) -> Collection:
        """This collection as seen inside ``scope`` (a loop this collection's scope encloses).

        ``iterate`` nests its loop in the deepest scope of its initial collections; enter
        them first to iterate inside a deeper loop whose collections the body uses.
        """
        return Collection(self.graph, self.graph._enter(self.op, scope))

    def enter_prioritized(self, loop: Collection, entry: RowFn) -> Collection:
        """This collection inside the loop of ``loop`` (a collection of a loop directly
        inside this collection's scope), each record entering at the iteration
        ``entry(*columns)`` gives it and present from then on (Foundations §5) — what
        ``iterate(entry=...)`` does for a loop variable's initial collection, for a
        collection the body reads."""
        scope = loop.scope
        if scope.parent is not self.scope:
            raise PlanError("enter_prioritized: the loop must be directly inside this scope")
        op = Enter(self.graph, scope, [self.op], self.schema, entry=entry, label="ingress")
        return Collection(self.graph, op)

    # -- as-of joins ------------------------------------------------------------------------
    def join_at_arrival(
        self, other: Collection, on: Sequence[tuple[ColumnRef, ColumnRef]]
    ) -> Collection:
        """Processing-time as-of join: each row joins ``other`` as it was when the row arrived.

        ``self.differentiate(lambda d: d.join(other, on))`` (the blog-post seed): a row's
        insertion is a blip that meets ``other`` at that moment only, so later changes of
        ``other`` never revise the result.  A *retraction* of a row is also a blip: it
        subtracts the row joined with ``other`` as it is at the retraction, which equals
        what the insertion added only if the matching rows of ``other`` did not change in
        between; otherwise the difference stays (this is the seed's semantics).
        """
        other = self._other(other)
        return self.differentiate(lambda d: d.join(other, on))

    def asof_join(
        self,
        other: Collection,
        on: Sequence[tuple[ColumnRef, ColumnRef]],
        left_time: ColumnRef,
        right_time: ColumnRef,
    ) -> Collection:
        """Event-time as-of join (DuckDB's ``ASOF JOIN``, pandas' ``merge_asof``).

        Each row of ``self`` is paired, among the rows of ``other`` with equal keys, with the
        one whose ``right_time`` is the greatest that is ``<= left_time`` (rows with no such
        match are dropped; if several share that time, the smallest row wins).  Built from
        join, filter and a per-row top-1, so it is maintained exactly under inserts and
        deletes on both sides.  The result has the columns of ``self`` then of ``other``.
        """
        other = self._other(other)
        nl = len(self.schema)
        lt = self.schema.index(left_time)
        rt = nl + other.schema.index(right_time)
        left_rows = self.distinct()
        pairs = left_rows.join(other, on).filter(lambda *cols: _le_not_null(cols[rt], cols[lt]))
        best = pairs.top_k(tuple(range(nl)), [(rt, True)], 1)
        matched = self.join(best, [(i, i) for i in range(nl)])
        return matched.project(
            *range(nl), *range(2 * nl, 2 * nl + len(other.schema)), names=pairs.schema.names
        )

    # -- alt/neu calculus ------------------------------------------------------------------
    def differentiate(self, body: Callable[[Collection], Collection]) -> Collection:
        """Run ``body`` on the changes of this collection, each a momentary blip.

        Inside an alt/neu scope every update ``(r, t, d)`` becomes ``(r, (t, alt), d)`` and
        ``(r, (t, neu), −d)`` (the blog-post seed: differentiate); ``body``'s result is
        integrated on the way out by keeping only its ``alt`` updates, so
        ``self.differentiate(lambda d: d) == self``.
        """
        from ivm.dataflow import Scope

        g = self.graph
        parent = self.scope
        mark = len(g.ops)
        try:
            inner = Scope(g, parent, ALTNEU)
            entered = Enter(g, inner, [self.op], self.schema, label="differentiate")
            blip = Collection(g, entered)
            retract = Collection(g, Retract(g, inner, [entered], self.schema, label="retract"))
            changes = blip.concat(retract)
            result = body(changes)
            result._check_graph(g)
            rop = g._enter(result.op, inner)
            leave = Leave(g, inner, [rop], result.schema, alt_only=True, label="integrate")
            inner.leaves.append(leave)
        except BaseException:
            g._rollback(mark)  # a failed body must not leave operators wired in
            raise
        parent.items.append(inner)
        g._invalidate()
        return Collection(g, leave)


def distinct_names(names: Sequence[str]) -> list[str]:
    """Default column names made distinct, deterministically.

    Every name keeps its first occurrence; each later occurrence of ``n`` becomes ``n_k``
    for the smallest ``k >= 1`` such that ``n_k`` is none of the names (given or already
    chosen).  So ``(a, a, a_1)`` becomes ``(a, a_2, a_1)``.
    """
    taken = set(names)
    seen: set[str] = set()
    out: list[str] = []
    for n in names:
        if n not in seen:
            seen.add(n)
            out.append(n)
            continue
        k = 1
        while f"{n}_{k}" in taken:
            k += 1
        fresh = f"{n}_{k}"
        taken.add(fresh)
        out.append(fresh)
    return out


def _le_not_null(a: Any, b: Any) -> Any:
    """``a <= b`` element-wise, False where either side is NULL."""
    import numpy as np

    if a.dtype != object and b.dtype != object:
        return a <= b
    return np.fromiter(
        (x is not None and y is not None and x <= y for x, y in zip(a, b, strict=True)),
        dtype=bool,
        count=len(a),
    )


def iterate(
    inits: Sequence[Collection],
    body: Callable[[list[Collection]], list[Collection]],
    max_iterations: int | None = None,
    entry: RowFn | None = None,
) -> list[Collection]:
    """Mutually recursive fixed point: ``body([v1, ...]) -> [r1, ...]``.

    Each variable starts as its initial collection; each iteration sets it to the body's
    result for it.  Returns the results at the fixed point (or after ``max_iterations``).
    """
    from ivm.dataflow import Scope

    if not inits:
        raise PlanError("iterate needs at least one collection")
    g = inits[0].graph
    for c in inits:
        c._check_graph(g)
    parent = inits[0]._deeper(*inits[1:])
    if max_iterations is not None and max_iterations < 1:
        raise PlanError("max_iterations must be at least 1")
    mark = len(g.ops)
    try:
        inner = Scope(g, parent, ITERATE)
        variables = []
        for c in inits:
            e = Enter(g, inner, [g._enter(c.op, parent)], c.schema, entry=entry, label="ingress")
            v = Variable(g, inner, [e], c.schema, label="variable")
            v.nports = 2
            variables.append((v, e))
        results = body([Collection(g, v) for v, _ in variables])
        if len(results) != len(inits):
            raise PlanError(f"iterate body returned {len(results)} collections for {len(inits)}")
        outs = []
        for (v, e), r in zip(variables, results, strict=True):
            r._check_graph(g)
            if len(r.schema) != len(v.schema):
                raise PlanError(f"iterate: body result {r.schema} does not match {v.schema}")
            rop = g._enter(r.op, inner)
            Feedback(g, inner, [rop, e], v.schema, variable=v, max_iterations=max_iterations)
            leave = Leave(g, inner, [rop], v.schema, label="egress")
            inner.leaves.append(leave)
            outs.append(Collection(g, leave))
    except BaseException:
        g._rollback(mark)  # a failed body must not leave operators wired in
        raise
    parent.items.append(inner)
    g._invalidate()
    return outs


class InputCollection(Collection):
    """An input: push changes, then ``Dataflow.step()``."""

    op: Input

    def insert(self, rows: Rows) -> None:
        self.op.send(rows, 1)

    def delete(self, rows: Rows) -> None:
        self.op.send(rows, -1)

    def update(self, old_rows: Rows, new_rows: Rows) -> None:
        from ivm.operators.io import rows_to_columns

        rows_to_columns(self.op, new_rows)  # validate both before changing anything
        self.op.send(old_rows, -1)
        self.op.send(new_rows, 1)

    def send(self, rows: Rows, diffs: Diffs) -> None:
        self.op.send(rows, diffs)


def delta_join(
    inputs: Sequence[Collection], on: Sequence[tuple[tuple[int, ColumnRef], tuple[int, ColumnRef]]]
) -> Collection:
    """A multiway equi-join as a delta query: no intermediate result is arranged.

    ``inputs`` are joined on the equalities ``((i, col_i), (j, col_j))``; the result has
    the columns of every input in order (clashing names get ``_r`` suffixes).  One rule per
    input looks its changes up in the other inputs' arrangements, with the alt/neu nudge
    so simultaneous changes count once (see :mod:`ivm.operators.delta_join`).  The same
    collection may appear several times (e.g. the three edge roles of triangles).
    """
    conds = _delta_join_conditions(inputs, on)
    schema = inputs[0].schema
    for c in inputs[1:]:
        schema = schema.concat(c.schema)
    rules = [_delta_rule(inputs, conds, first).rename(schema.names) for first in range(len(inputs))]
    return rules[0].concat(*rules[1:])


def _delta_join_conditions(
    inputs: Sequence[Collection], on: Sequence[tuple[tuple[int, ColumnRef], tuple[int, ColumnRef]]]
) -> list[tuple[int, int, int, int]]:
    """The equalities of :func:`delta_join` as ``(i, column of i, j, column of j)``, checked."""
    if len(inputs) < 2:
        raise PlanError("delta_join needs at least two inputs")
    g = inputs[0].graph
    for c in inputs:
        c._check_graph(g)
        if c.scope is not g.root:
            raise PlanError("delta_join is planned outside loops; use join() inside iterate")
    conds = []
    for (i, a), (j, b) in on:
        if not (0 <= i < len(inputs) and 0 <= j < len(inputs)) or i == j:
            raise PlanError(f"delta_join: bad condition {((i, a), (j, b))}")
        conds.append((i, inputs[i].schema.index(a), j, inputs[j].schema.index(b)))
    return conds


def _delta_rule(
    inputs: Sequence[Collection], conds: list[tuple[int, int, int, int]], first: int
) -> Collection:
    """The rule of :func:`delta_join` for the changes of input ``first``: they look up the
    other inputs' arrangements one by one, each joined on the columns bound so far; the
    result's columns are put back in input order."""
    from ivm.operators.delta_join import HalfJoin

    g = inputs[first].graph
    # the stream's columns: the bound inputs' columns, in binding order
    layout = {first: 0}
    width = len(inputs[first].schema)
    stream = inputs[first]
    while len(layout) < len(inputs):
        nxt = None
        for j in range(len(inputs)):
            if j in layout:
                continue
            keys = [(layout[i] + ci, cj) for i, ci, jj, cj in conds if jj == j and i in layout]
            keys += [(layout[i] + ci, cj) for jj, cj, i, ci in conds if jj == j and i in layout]
            if keys:
                nxt = (j, keys)
                break
        if nxt is None:
            raise PlanError("delta_join: the join conditions do not connect every input")
        j, keys = nxt
        arr = inputs[j].arrange(tuple(cj for _, cj in keys))
        op = HalfJoin(
            g,
            g.root,
            [g.exchanged(stream.op, tuple(s for s, _ in keys))],
            stream.schema.concat(inputs[j].schema),
            arrangement=arr,
            stream_key=tuple(s for s, _ in keys),
            inclusive=j < first,
        )
        stream = Collection(g, op)
        layout[j] = width
        width += len(inputs[j].schema)
    return stream.project(
        *[layout[k] + c for k in range(len(inputs)) for c in range(len(inputs[k].schema))]
    )
