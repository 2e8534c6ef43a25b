"""The analysed sqlglot AST → the relational plan (:mod:`sql_frontend.plan`).

One function per clause: FROM/JOIN build a relation and the scope that names its columns;
WHERE filters; GROUP BY / aggregates / HAVING make an :class:`~plan.Aggregate` between two
projections; window functions a :class:`~plan.Window`; SELECT a :class:`~plan.Project`;
DISTINCT, set operations, ORDER BY … LIMIT (a :class:`~plan.TopK`) and WITH [RECURSIVE]
follow. Whatever has no translation is refused by name with its position.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from sql_frontend import plan as p
from sql_frontend import scalar as sc
from sql_frontend import translate_generators as tg
from sql_frontend.coercion import common_type
from sql_frontend.completeness import Consumption
from sql_frontend.errors import SqlAnalysisError, UnsupportedSqlError
from sql_frontend.positions import analysis_error, unsupported
from sql_frontend.scalar import Call, Lit, Ref, Scalar
from sql_frontend.scc import is_recursive, strongly_connected_components
from sql_frontend.sql_types import (
    BIGINT,
    BOOLEAN,
    DOUBLE,
    SqlType,
    array_of,
    avg_type,
    sum_type,
)
from sql_frontend.translate_expr import ExprTranslator, cast_to
from sql_frontend.translate_nested import refuse_maps

_REFUSED_CLAUSES = (
    "qualify",
    "windows",
    "pivots",
    "sample",
    "connect",
    "into",
    "kind",
    "locks",
    "cluster",
    "distribute",
    "sort",
    "prewhere",
)
"""The clauses of a SELECT that views refuse, by name."""
_AGGS: dict[type[exp.Expr], str] = {
    exp.Count: "count",
    exp.Sum: "sum",
    exp.Min: "min",
    exp.Max: "max",
    exp.Avg: "avg",
}
_RANKING = {exp.RowNumber: "row_number"}


@dataclass(frozen=True)
class Field:
    alias: str  # table alias ("" for none)
    name: str


@dataclass
class Relation:
    """A plan and the names its columns answer to."""

    node: p.Node
    fields: list[Field]
    subqueries: dict[str, Ref] | None = None
    grouped: bool = False

    def lookup(self, node: exp.Expr) -> Scalar | None:
        if self.subqueries and isinstance(node, exp.Subquery):
            return self.subqueries.get(key_of(node))
        return None

    def resolve(self, col: exp.Column) -> Ref:
        if self.grouped:
            raise SqlAnalysisError(
                f"column {col.sql()} is neither grouped nor aggregated", construct=col.sql()
            )
        table, name = col.table, col.name
        hits = [
            i
            for i, f in enumerate(self.fields)
            if f.name.lower() == name.lower() and (not table or f.alias == table)
        ]
        if not hits:
            raise SqlAnalysisError(f"column {col.sql()} not found", construct=col.sql())
        i = hits[-1] if table else hits[0]
        t = self.node.schema[i][1]
        return Ref(i, t, name)


Env = Mapping[str, p.Node]


def key_of(node: exp.Expr) -> str:
    if isinstance(node, exp.WithinGroup):  # sqlglot writes it as PERCENTILE_APPROX for Spark
        return node.sql()
    if node.find(exp.ToChar):  # sqlglot writes to_char(x, f) as CAST(x AS STRING) for Spark
        return node.sql(dialect="databricks")
    return node.sql(dialect="spark")


class Translator:
    def __init__(self, catalog: Mapping[str, Mapping[str, SqlType]]):
        self.catalog = {k.lower(): v for k, v in catalog.items()}
        self.consumed = Consumption()
        """The clause arguments translated (:mod:`sql_frontend.completeness`)."""
        self.use = self.consumed.use

    # ------------------------------------------------------------ queries
    def query(self, q: exp.Expr, env: Env) -> p.Node:
        env = dict(env)
        with_ = q.args.get("with_")
        self.use(q, "with_")
        if with_ is not None:
            env.update(self.ctes(with_, env))
        if isinstance(q, exp.Subquery):
            self.use(q, "this", "alias")
            node = self.query(q.this, env)
            return self.order_limit(q, node, None, env)
        if isinstance(q, exp.SetOperation):
            return self.set_operation(q, env)
        if isinstance(q, exp.Select):
            return self.select(q, env)
        raise unsupported(type(q).__name__.upper(), q)

    def ctes(self, with_: exp.With, env: dict[str, p.Node]) -> dict[str, p.Node]:
        out: dict[str, p.Node] = {}
        ctes = list(with_.expressions)
        self.use(with_, "expressions", "recursive")
        for cte in ctes:  # MATERIALIZED is a hint: the rows are the same
            self.use(cte, "this", "alias", "materialized")
        if not with_.args.get("recursive"):
            for cte in ctes:
                out[cte.alias_or_name] = self.rename(self.query(cte.this, {**env, **out}), cte)
            return out
        names = [c.alias_or_name for c in ctes]
        refs = {
            c.alias_or_name: {
                t.name for t in c.this.find_all(exp.Table) if t.name in names and not t.db
            }
            for c in ctes
        }
        order = {n: sorted(r, key=names.index) for n, r in refs.items()}  # deterministic
        for component in strongly_connected_components(names, order):
            group = list(component)
            recursive = is_recursive(component, refs)
            if not recursive:
                cte = next(c for c in ctes if c.alias_or_name == group[0])
                out[group[0]] = self.rename(self.query(cte.this, {**env, **out}), cte)
                continue
            out.update(
                self.recursive(group, [c for c in ctes if c.alias_or_name in group], {**env, **out})
            )
        return out

    def recursive(self, names: list[str], ctes: list[exp.CTE], env: Env) -> dict[str, p.Node]:
        # First the seeds (parts that do not mention the group) fix every schema.
        seeds: dict[str, p.Node] = {}
        steps: dict[str, list[exp.Expr]] = {}
        distinct: dict[str, bool] = {}
        for cte in ctes:
            name = cte.alias_or_name
            parts, distinct[name] = self.union_parts(cte)
            seed_parts = [x for x in parts if not _mentions(x, names)]
            steps[name] = [x for x in parts if _mentions(x, names)]
            if seed_parts:
                seed = self.union_all([self.query(x, env) for x in seed_parts])
                seeds[name] = self.rename(seed, cte)
        # Relations defined only through others start empty; their schema is their step's.
        pending = [c for c in ctes if c.alias_or_name not in seeds]
        while pending:
            progress = False
            for cte in list(pending):
                env_known = dict(env)
                env_known.update({n: p.RecRef(n, seeds[n].schema) for n in seeds})
                try:
                    step = self.union_all(
                        [self.query(x, env_known) for x in steps[cte.alias_or_name]]
                    )
                except SqlAnalysisError:
                    continue
                seeds[cte.alias_or_name] = p.Empty(self.rename(step, cte).schema)
                pending.remove(cte)
                progress = True
            if not progress:
                raise unsupported("recursive CTE without a base case", pending[0])
        rec_env = dict(env)
        for name in names:
            rec_env[name] = p.RecRef(name, seeds[name].schema)
        bindings = []
        for cte in ctes:
            name = cte.alias_or_name
            step = self.union_all(
                [self.coerce(self.query(x, rec_env), seeds[name].schema) for x in steps[name]]
            )
            bindings.append(
                p.Binding(
                    name,
                    seeds[name].schema,
                    seeds[name],
                    self.rename(step, cte, seeds[name].schema),
                    distinct[name],
                )
            )
        group = tuple(bindings)
        return {b.name: p.Recursive(group, i) for i, b in enumerate(group)}

    def union_parts(self, cte: exp.CTE) -> tuple[list[exp.Expr], bool]:
        """The parts of a recursive CTE's ``UNION [ALL]`` chain, in order, and whether it is
        UNION (distinct); mixing UNION and UNION ALL is refused."""
        body = cte.this
        parts: list[exp.Expr] = []
        flags: set[bool] = set()
        while isinstance(body, exp.Union):
            self.use(body, "this", "expression", "distinct")
            parts.append(body.expression)
            flags.add(bool(body.args.get("distinct")))
            body = body.this
        parts.append(body)
        parts.reverse()
        if len(flags) > 1:
            raise unsupported("recursive CTE mixing UNION and UNION ALL", cte)
        return parts, flags.pop() if flags else False

    def union_all(self, nodes: list[p.Node]) -> p.Node:
        out = nodes[0]
        for n in nodes[1:]:
            out = p.SetOp(p.SetKind.UNION, True, out, self.coerce(n, out.schema))
        return out

    def coerce(self, node: p.Node, schema: p.Schema) -> p.Node:
        if len(node.schema) != len(schema):
            raise SqlAnalysisError(f"{len(node.schema)} columns where {len(schema)} expected")
        if all(a[1] == b[1] for a, b in zip(node.schema, schema, strict=True)):
            return node
        exprs = tuple(cast_to(Ref(i, t, n), schema[i][1]) for i, (n, t) in enumerate(node.schema))
        return p.Project(node, exprs, tuple(n for n, _ in node.schema))

    def rename(self, node: p.Node, cte: exp.CTE, schema: p.Schema | None = None) -> p.Node:
        alias = cte.args.get("alias")
        self.use(alias, "this", "columns")
        cols = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
        if schema is not None:
            node = self.coerce(node, schema)
        if not cols:
            return node
        if len(cols) != node.width:
            raise SqlAnalysisError(
                f"CTE {cte.alias_or_name} names {len(cols)} columns but has {node.width}"
            )
        return p.Project(
            node, tuple(Ref(i, t, n) for i, (n, t) in enumerate(node.schema)), tuple(cols)
        )

    def set_operation(self, q: exp.SetOperation, env: Env) -> p.Node:
        self.use(q, "this", "expression", "distinct")
        left = self.query(q.this, env)
        right = self.query(q.expression, env)
        if left.width != right.width:
            raise SqlAnalysisError(
                f"{type(q).__name__.upper()} of {left.width} and {right.width} columns"
            )
        kind = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}[type(q)]
        schema = tuple(
            (n, common_type([a, b], kind.upper()))
            for (n, a), (_, b) in zip(left.schema, right.schema, strict=True)
        )
        if kind != "union" or q.args.get("distinct"):
            refuse_maps([t for _, t in schema], kind.upper(), q)
        node: p.Node = p.SetOp(
            p.SetKind(kind),
            not q.args.get("distinct"),
            self.coerce(left, schema),
            self.coerce(right, schema),
        )
        return self.order_limit(q, node, None, env)

    # ------------------------------------------------------------ SELECT
    def select(self, s: exp.Select, env: Env) -> p.Node:
        for arg in _REFUSED_CLAUSES:
            if s.args.get(arg):
                raise unsupported(
                    arg.upper(), s.args[arg] if isinstance(s.args[arg], exp.Expr) else s
                )
        if s.args.get("distinct") is not None and s.args["distinct"].args.get("on"):
            raise unsupported("DISTINCT ON", s)
        if not s.args.get("from_"):
            raise unsupported("SELECT without FROM", s, "a view must read at least one table")
        for clause in ("where", "group", "having", "order"):
            if s.args.get(clause) is not None:
                tg.refuse_nested(s.args[clause], clause.upper().replace("GROUP", "GROUP BY"))
        self.use(s, "expressions", "from_", "joins", "where", "group", "having", "distinct", "hint")
        self.use(s.args.get("distinct"))
        rel = self.from_(s, env)
        where = s.args.get("where")
        self.use(where, "this")
        if where is not None:
            rel = self.attach_subqueries(rel, [where.this], env)
            pred = self.tr(rel).boolean(where.this)
            if not (isinstance(pred, Lit) and pred.value is True):
                rel = Relation(p.Filter(rel.node, pred), rel.fields)
        aggregated = bool(s.args.get("group")) or any(
            _aggregates(x) for x in [*s.selects, s.args.get("having")] if x is not None
        )
        lookup = None
        having = s.args.get("having")
        if aggregated:
            rel, lookup = self.aggregate(s, rel, env)
        elif having is not None:
            raise unsupported("HAVING without aggregation", having)
        self.use(having, "this")
        rel = self.attach_subqueries(rel, [*s.selects, *([having.this] if having else [])], env)
        if having is not None:
            pred = self.tr(rel, lookup).boolean(having.this)
            rel = Relation(p.Filter(rel.node, pred), rel.fields, rel.subqueries, rel.grouped)
        windows = [w for x in s.selects for w in x.find_all(exp.Window)]
        if windows:
            rel, lookup = self.window(rel, windows, lookup)
        below, exprs, names = self.select_list(s, rel, self.tr(rel, lookup))
        projected = p.Project(below, tuple(exprs), tuple(names))
        node: p.Node = projected
        if s.args.get("distinct") is not None:
            refuse_maps([e.type for e in exprs], "SELECT DISTINCT", s.args["distinct"])
            node = p.Distinct(node)
        if below is not rel.node:  # ORDER BY may read the generated columns too
            added = [Field("", n) for n, _ in below.schema[rel.node.width :]]
            rel = Relation(below, rel.fields + added, rel.subqueries, rel.grouped)
        return self.order_limit(s, node, (rel, lookup, tuple(exprs)), env)

    def select_list(
        self, s: exp.Select, rel: Relation, tr: ExprTranslator
    ) -> tuple[p.Node, list[Scalar], list[str]]:
        """The SELECT list's expressions and names over ``rel`` — or over the Generate nodes
        of its generators, whose columns a generator item stands for."""
        below, generated = self.select_generators(s, rel.node, tr)
        exprs: list[Scalar] = []
        names: list[str] = []
        for item in s.selects:
            star = _star_columns(item, rel)
            if id(item) in generated or star is not None:
                cols = generated.get(id(item)) or star or []
                exprs += [Ref(i, below.schema[i][1], below.schema[i][0]) for i in cols]
                names += [below.schema[i][0] for i in cols]
                continue
            exprs.append(tr(item))
            names.append(item.alias_or_name)
        return below, exprs, names

    def select_generators(
        self, s: exp.Select, node: p.Node, tr: ExprTranslator
    ) -> tuple[p.Node, dict[int, list[int]]]:
        """The SELECT list's generators as Generate nodes over ``node`` (the first outermost,
        as Spark nests them), and per generator item the positions of its columns."""
        generated: dict[int, list[int]] = {}
        for item in s.selects:
            found = tg.select_generator(item)
            tg.refuse_nested(item, "SELECT", found[0] if found else item)
            if found is not None:
                node = tg.generate(found[0], tr, node, found[1])
                generated[id(item)] = list(range(node.width - len(node.names), node.width))
        return node, generated

    def lateral_view(self, rel: Relation, lat: exp.Expr) -> Relation:
        """``LATERAL VIEW [OUTER] f(...) alias AS c1, c2``: a Generate over the FROM rows."""
        self.use(lat, "this", "view", "outer", "alias")
        if not isinstance(lat, exp.Lateral) or not lat.args.get("view"):
            raise unsupported(
                "LATERAL subquery", lat, "write LATERAL VIEW explode(...) t AS c, or a join"
            )
        alias = lat.args.get("alias")
        self.use(alias, "this", "columns")
        if not tg.is_generator(lat.this):
            raise unsupported(
                f"LATERAL VIEW {_function_name(lat.this)}(...)",
                lat.this,
                "LATERAL VIEW takes a generator: " + ", ".join(tg.GENERATOR_NAMES),
            )
        tg.refuse_nested(lat.this, "LATERAL VIEW", lat.this)
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else None
        outer = bool(lat.args.get("outer"))
        node = tg.generate(lat.this, self.tr(rel), rel.node, names, outer)
        table = alias.name if alias is not None else ""
        return Relation(node, rel.fields + [Field(table, n) for n in node.names])

    def order_limit(self, q: exp.Expr, node: p.Node, pre, env: Env) -> p.Node:
        order = q.args.get("order")
        limit = q.args.get("limit")
        offset = q.args.get("offset")
        self.use(q, "order", "limit", "offset")
        self.use(limit, "expression")
        self.use(offset, "expression")
        if order is not None:
            self.use(order, "expressions")
            for o in order.expressions:
                self.use(o, "this", "desc", "nulls_first")
        if limit is None and offset is None:
            return node  # a view is a multiset: ORDER BY alone does not change it
        k = _constant_int(limit.expression if limit is not None else None, limit)
        off = _constant_int(offset.expression if offset is not None else None, offset) or 0
        if order is None:
            return _limit_of_one_row(q, node, k, off, limit or offset)
        names = [n for n, _ in node.schema]
        keys: list[p.SortKey] = []
        hidden: list[Scalar] = []
        for o in order.expressions:
            desc = bool(o.args.get("desc"))
            nulls_first = o.args.get("nulls_first")
            nulls_first = (not desc) if nulls_first is None else bool(nulls_first)
            e = o.this
            idx = None
            if isinstance(e, exp.Column) and not e.table and e.name in names:
                idx = names.index(e.name)
            elif isinstance(e, exp.Literal) and not e.is_string:
                idx = int(e.this) - 1
            elif pre is not None:
                rel, lookup, exprs = pre
                s = self.tr(rel, _output_names_first(names, exprs, lookup))(e)
                if s in exprs:
                    idx = exprs.index(s)
                elif isinstance(node, p.Distinct):
                    raise unsupported("ORDER BY an expression not in SELECT DISTINCT", e)
                else:
                    idx = len(names) + len(hidden)
                    hidden.append(s)
            if idx is None:
                raise unsupported("ORDER BY expression", e)
            keys.append(p.SortKey(idx, desc, nulls_first))
        if hidden:
            assert isinstance(node, p.Project)
            node = p.Project(
                node.input,
                node.exprs + tuple(hidden),
                node.names + tuple(f"_order{i}" for i in range(len(hidden))),
            )
        top: p.Node = p.TopK(node, tuple(keys), k if k is not None else 2**62, off)
        if hidden:
            top = p.Project(
                top,
                tuple(Ref(i, t, n) for i, (n, t) in enumerate(top.schema[: len(names)])),
                tuple(names),
            )
        return top

    # ------------------------------------------------------------ FROM and JOIN
    def source(self, src: exp.Expr, env: Env, as_of_allowed: bool = False) -> Relation:
        if isinstance(src, exp.Table) and src.args.get("version") is not None:
            if not as_of_allowed:
                raise unsupported(
                    "AS OF on a table that is not the right side of a join",
                    src,
                    "write FROM l JOIN r FOR SYSTEM_TIME AS OF PROCTIME() ON ...",
                )
            _check_proctime(src.args["version"])
        if isinstance(src, exp.Table):
            if src.args.get("db") or src.args.get("catalog"):
                raise unsupported("qualified table name", src)
            self.use(src, "this", "alias", "version")
            name = src.name
            node: p.Node
            if name in env:
                node = env[name]
            elif name.lower() in self.catalog:
                node = p.Scan(name, tuple(self.catalog[name.lower()].items()))
            else:
                raise SqlAnalysisError(f"table {name} not found", construct=name)
            alias = src.alias_or_name
        elif isinstance(src, exp.Subquery):
            self.use(src, "this", "alias")
            node = self.query(src.this, env)
            alias = src.alias_or_name
        else:
            raise unsupported(f"{type(src).__name__} in FROM", src)
        self.use(src.args.get("alias"), "this", "columns")
        if isinstance(src.args.get("alias"), exp.TableAlias) and src.args["alias"].columns:
            cols = [c.name for c in src.args["alias"].columns]
            node = p.Project(
                node, tuple(Ref(i, t, n) for i, (n, t) in enumerate(node.schema)), tuple(cols)
            )
        return Relation(node, [Field(alias, n) for n, _ in node.schema])

    def from_(self, s: exp.Select, env: Env) -> Relation:
        self.use(s.args["from_"], "this")
        rel = self.source(s.args["from_"].this, env)
        for j in s.args.get("joins") or []:
            rel = self.join(rel, j, env)
        self.use(s, "laterals")
        for lat in s.args.get("laterals") or []:
            rel = self.lateral_view(rel, lat)
        return rel

    def join(self, left: Relation, j: exp.Join, env: Env) -> Relation:
        if j.text("method").upper() == "ASOF" and not j.args.get("match_condition"):
            return self.asof_join(left, j, env)
        right = self.source(j.this, env, as_of_allowed=True)
        arrival = isinstance(j.this, exp.Table) and j.this.args.get("version") is not None
        side = (j.args.get("side") or "").lower()
        kind = (j.args.get("kind") or "").lower()
        if j.args.get("method") or j.args.get("match_condition"):
            raise unsupported("join method", j)
        self.use(j, "this", "on", "side", "kind", "using")
        jk = _join_kind(side, kind, j)
        conds, cond, null_aware = self.join_conditions(left, right, j, jk)
        lw = left.node.width
        split = _JoinSplit(lw, right.node.width)
        for c in conds:
            split.add(c, jk, arrival)
        lkeys, rkeys, safe = split.key_columns()
        residual = split.residual
        extra_l, extra_r = split.extra
        lnode, rnode = left.node, right.node
        if split.filters[0]:
            lnode = p.Filter(lnode, sc.conjunction(split.filters[0]))  # type: ignore[arg-type]
        if split.filters[1]:
            rnode = p.Filter(rnode, sc.conjunction(split.filters[1]))  # type: ignore[arg-type]
        if null_aware and (len(lkeys) != 1 or residual):
            raise unsupported("correlated or multi-column NOT IN", cond)
        if extra_l:
            lnode = _extend(lnode, extra_l)
        if extra_r:
            rnode = _extend(rnode, extra_r)
        res = sc.conjunction(residual)
        if res is not None and extra_l:  # right columns moved by the extra left columns
            res = sc.remap(
                res, lambda r: Ref(r.index + len(extra_l), r.type, r.name) if r.index >= lw else r
            )
        if jk == "inner" and not lkeys and res is None:
            jk = "cross"
        node: p.Node
        if arrival:
            node = _arrival_join(j, jk, lnode, rnode, lkeys, rkeys, res)
        else:
            node = p.Join(
                lnode,
                rnode,
                p.JoinKind(jk),
                tuple(lkeys),
                tuple(rkeys),
                res,
                null_aware,
                tuple(safe) if any(safe) else (),
            )
        if extra_l or extra_r:
            keep = list(range(lw))
            if jk not in ("semi", "anti"):
                keep += [lnode.width + i for i in range(right.node.width)]
            node = _keep_columns(node, keep)
        fields = left.fields if jk in ("semi", "anti") else left.fields + right.fields
        return Relation(node, fields)

    def join_conditions(
        self, left: Relation, right: Relation, j: exp.Join, jk: str
    ) -> tuple[list[Scalar], exp.Expr | None, bool]:
        """The conjuncts of ``j``'s USING and ON over the concatenated row, its ON, and
        whether it is a null-aware anti join (NOT IN: ON is then ``x = v``)."""
        both = Relation(p.Join(left.node, right.node, p.JoinKind.CROSS), left.fields + right.fields)
        cond = j.args.get("on")
        conds: list[Scalar] = []
        tr = ExprTranslator(both.resolve)
        for ident in j.args.get("using") or []:
            name = ident.name
            li = max(i for i, f in enumerate(left.fields) if f.name == name)
            ri = next(i for i, f in enumerate(right.fields) if f.name == name)
            conds.append(
                tr.compare(
                    "eq",
                    Ref(li, left.node.schema[li][1], name),
                    Ref(left.node.width + ri, right.node.schema[ri][1], name),
                )
            )
        null_aware = False
        if cond is not None:
            if jk == "anti" and _is_null_aware(cond):
                null_aware = True
                cond = cond.this  # x = v
            conds += sc.conjuncts(tr.boolean(cond))
        return conds, cond, null_aware

    def asof_join(self, left: Relation, j: exp.Join, env: Env) -> Relation:
        """``l ASOF [LEFT] JOIN r ON l.k = r.k AND … AND l.t >= r.t`` (DuckDB's form): the
        equalities are the keys, the one ``>=`` (or ``r.t <= l.t``) the as-of condition."""
        right = self.source(j.this, env)
        side, kind = j.text("side").upper(), j.text("kind").upper()
        if not side and kind in ("", "INNER"):
            jk = "inner"
        elif side == "LEFT" and kind in ("", "OUTER"):
            jk = "left"
        else:
            raise unsupported(f"ASOF {side or kind} JOIN", j, "ASOF JOIN is INNER or LEFT")
        cond = j.args.get("on")
        if cond is None or j.args.get("using"):
            raise unsupported("ASOF JOIN without ON", j, "write ON l.k = r.k AND l.t >= r.t")
        self.use(j, "this", "on", "side", "kind", "method")
        both = Relation(p.Join(left.node, right.node, p.JoinKind.CROSS), left.fields + right.fields)
        lw = left.node.width
        conds = sc.conjuncts(ExprTranslator(both.resolve).boolean(cond))
        keys, times = _asof_conditions(conds, cond, lw)
        extra_l: list[Scalar] = []
        extra_r: list[Scalar] = []

        def column(e: Scalar, width: int, extra: list[Scalar]) -> int:
            if isinstance(e, Ref):
                return e.index
            extra.append(e)
            return width + len(extra) - 1

        rw = right.node.width
        lkeys = tuple(column(a, lw, extra_l) for a, _ in keys)
        rkeys = tuple(column(b, rw, extra_r) for _, b in keys)
        lt = column(times[0][0], lw, extra_l)
        rt = column(times[0][1], rw, extra_r)
        lnode = _extend(left.node, extra_l) if extra_l else left.node
        rnode = _extend(right.node, extra_r) if extra_r else right.node
        node: p.Node = p.AsofJoin(lnode, rnode, p.JoinKind(jk), lkeys, rkeys, lt, rt)
        if extra_l or extra_r:
            keep = [*range(lw), *(lnode.width + i for i in range(rw))]
            node = _keep_columns(node, keep)
        return Relation(node, left.fields + right.fields)

    # ------------------------------------------------------------ subqueries
    def tr(self, rel: Relation, lookup=None) -> ExprTranslator:
        """The expression translator of ``rel`` (plus grouped/windowed ``lookup``)."""

        def both(node: exp.Expr) -> Scalar | None:
            hit = lookup(node) if lookup is not None else None
            return hit if hit is not None else rel.lookup(node)

        return ExprTranslator(rel.resolve, both)

    def attach_subqueries(self, rel: Relation, exprs: list[exp.Expr], env: Env) -> Relation:
        """Uncorrelated scalar subqueries in ``exprs`` become columns of ``rel`` (a cross join
        with their single row)."""
        subs: dict[str, Ref] = dict(rel.subqueries or {})
        node, fields = rel.node, list(rel.fields)
        for e in exprs:
            for sq in e.find_all(exp.Subquery):
                if isinstance(sq.parent, exp.In | exp.Exists) or key_of(sq) in subs:
                    continue
                inner = sq.this
                if not (
                    isinstance(inner, exp.Select)
                    and len(inner.selects) == 1
                    and not inner.args.get("group")
                    and not inner.args.get("having")
                    and _aggregates(inner.selects[0])
                    and not inner.args.get("limit")
                ):
                    raise unsupported(
                        "scalar subquery",
                        sq,
                        "scalar subqueries must be global aggregates (one row)",
                    )
                self.use(sq, "this")
                sub = self.query(inner, env)
                subs[key_of(sq)] = Ref(node.width, sub.schema[0][1], "subquery")
                node = p.Join(node, sub, p.JoinKind.CROSS)
                fields.append(Field("", "\x00subquery"))
        if node is rel.node:
            return rel
        return Relation(node, fields, subs, rel.grouped)

    # ------------------------------------------------------------ GROUP BY
    def aggregate(self, s: exp.Select, rel: Relation, env: Env):
        """GROUP BY and the aggregates of ``s`` over ``rel``.

        Grouping sets (``CUBE``, ``ROLLUP``, ``GROUPING SETS``, standard or Hive form) are
        Spark's ``Expand``: the input once per set, with the grouping columns absent from the
        set replaced by NULL and the set's position as one more grouping column (so repeated
        sets give repeated rows and the empty set gives no row over an empty input, as in
        Spark), UNION ALL, then one ordinary aggregate — incremental like any other.
        ``grouping(x)`` and ``grouping_id(...)`` are functions of that position.
        """
        tr = self.tr(rel)
        group = s.args.get("group")
        group_nodes, sets = _grouping_sets(group, s, rel) if group is not None else ([], None)
        if group is not None:
            self.use(group, "expressions", "grouping_sets", "cube", "rollup", "all")
            for x in group.find_all(exp.Cube, exp.Rollup, exp.GroupingSets):
                self.use(x, "expressions")
        group_exprs = [tr(g) for g in group_nodes]
        for g, ge in zip(group_nodes, group_exprs, strict=True):
            refuse_maps([ge.type], "GROUP BY", g)
        n_keys = len(group_exprs) + (1 if sets is not None else 0)
        st = _AggState(list(group_exprs), n_keys)
        if sets is not None:
            st.column(Lit(0, INT_T))  # the set's position, set per branch below
        for a in _aggregate_calls(s):
            if not self.more_aggregates(a, tr, st):
                self.plain_aggregate(a, tr, st)
        pre = self.pre_aggregate(rel.node, sets, group_exprs, st.pre_exprs)
        names = tuple([f"_g{i}" for i in range(n_keys)] + [f"_a{i}" for i in range(len(st.aggs))])
        agg = p.Aggregate(pre, tuple(range(n_keys)), tuple(st.aggs), names)
        post: dict[str, Scalar] = {}
        for i, (g, ge) in enumerate(zip(group_nodes, group_exprs, strict=True)):
            post[key_of(g)] = Ref(
                i, ge.type, g.alias_or_name if isinstance(g, exp.Column) else f"_g{i}"
            )
        for k, e in st.agg_cols:
            post[k] = e
        group_index = {ge: i for i, ge in enumerate(group_exprs)}
        lookup = _GroupedLookup(tr, sets, group_nodes, group_index, len(group_exprs), post)
        out = Relation(agg, [Field("", n) for n in names], None, grouped=True)
        return out, lookup

    def plain_aggregate(self, a: exp.Expr, tr: ExprTranslator, st: _AggState) -> None:
        """COUNT/SUM/MIN/MAX/AVG, with DISTINCT or FILTER, added to ``st`` (AVG is SUM / COUNT)."""
        cond = None
        key = key_of(a)
        if isinstance(a, exp.Filter):
            cond, a = self.agg_filter(a, tr), a.this
        fname = _AGGS.get(type(a))
        if fname is None:
            what = a.sql_name() if isinstance(a, exp.Func) else type(a).__name__
            raise unsupported(f"aggregate {what}", a)
        arg_node = a.this
        distinct = isinstance(arg_node, exp.Distinct)
        if distinct:
            if len(arg_node.expressions) != 1:
                raise unsupported(f"{fname.upper()}(DISTINCT on several columns)", a)
            arg_node = arg_node.expressions[0]
        if fname == "count" and (isinstance(arg_node, exp.Star) or arg_node is None):
            if cond is None:
                st.agg_cols.append((key, st.call(p.AggFunc.COUNT_STAR, None, BIGINT)))
            else:
                col = st.column(_when(cond, Lit(1, INT_T)))
                st.agg_cols.append((key, st.call(p.AggFunc.COUNT, col, BIGINT)))
            return
        if fname == "count" and a.expressions:
            raise unsupported("COUNT of several columns", a, "write COUNT(DISTINCT a, b)")
        arg = tr(arg_node)
        if cond is not None:
            arg = _when(cond, arg)
        if distinct and fname in ("sum", "avg"):
            t = sum_type(arg.type) if fname == "sum" else avg_type(arg.type)
            if arg.type.name == "STRING":
                arg = cast_to(arg, sum_type(arg.type))
            ref = st.call(p.AggFunc(f"{fname}_distinct"), st.column(arg), t, True)
            st.agg_cols.append((key, ref))
            return
        if isinstance(arg, Lit) and fname == "count" and arg.value is not None and not distinct:
            st.agg_cols.append((key, st.call(p.AggFunc.COUNT_STAR, None, BIGINT)))
            return
        if arg.type.name == "STRING" and fname in ("sum", "avg"):
            arg = cast_to(arg, sum_type(arg.type))
        col = st.shared_column(arg)
        if fname == "count":
            st.agg_cols.append((key, st.call(p.AggFunc.COUNT, col, BIGINT, distinct)))
        elif fname in ("min", "max"):
            st.agg_cols.append((key, st.call(p.AggFunc(fname), col, arg.type)))
        elif fname == "sum":
            st.agg_cols.append((key, st.call(p.AggFunc.SUM, col, sum_type(arg.type))))
        else:  # avg = sum / count
            s_ref = st.call(p.AggFunc.SUM, col, sum_type(arg.type))
            c_ref = st.call(p.AggFunc.COUNT, col, BIGINT)
            st.agg_cols.append((key, Call("avg", (s_ref, c_ref), avg_type(arg.type))))

    def pre_aggregate(
        self,
        node: p.Node,
        sets: list[frozenset[int]] | None,
        group_exprs: list[Scalar],
        pre_exprs: list[Scalar],
    ) -> p.Node:
        """What the Aggregate reads: ``pre_exprs`` over ``node``; with grouping sets, Spark's
        ``Expand`` (one branch per set, absent keys NULL, the set's position, UNION ALL)."""
        pre_names = tuple(f"_g{i}" for i in range(len(pre_exprs)))
        if sets is None:
            return p.Project(node, tuple(pre_exprs), pre_names)
        n_keys = len(group_exprs) + 1
        branches: list[p.Node] = []
        for pos, members in enumerate(sets):
            exprs = [e if i in members else Lit(None, e.type) for i, e in enumerate(group_exprs)]
            exprs.append(Lit(pos, INT_T))
            exprs += pre_exprs[n_keys:]
            branches.append(p.Project(node, tuple(exprs), pre_names))
        return self.union_all(branches)

    def more_window(self, f: exp.Expr, tr: ExprTranslator, column_of) -> p.WindowCall:
        """LAG/LEAD, NTILE, FIRST_VALUE/LAST_VALUE, PERCENT_RANK, CUME_DIST: like every window
        function, recomputed per affected partition."""
        if isinstance(f, exp.Lag | exp.Lead):
            name = p.WindowFunc.LAG if isinstance(f, exp.Lag) else p.WindowFunc.LEAD
            x = tr(f.this)
            offset = _literal_int(f.args.get("offset"), f, f"{name.upper()} offset")
            offset = 1 if offset is None else offset
            default = f.args.get("default")
            d = cast_to(tr(default), x.type) if default is not None else Lit(None, x.type)
            if not isinstance(d, Lit):
                d = _fold_constant(d, f)
            if x.type.name == "NULL":
                x = cast_to(x, d.type)
            return p.WindowCall(name, column_of(x), x.type, (offset, d.value))
        if isinstance(f, exp.Ntile):
            n = _literal_int(f.this, f, "NTILE count")
            if n is None or n <= 0:
                raise unsupported("NTILE of a non-positive or non-constant count", f)
            return p.WindowCall(p.WindowFunc.NTILE, None, INT_T, n)
        if isinstance(f, exp.FirstValue | exp.LastValue):
            x = tr(f.this)
            name = (
                p.WindowFunc.FIRST_VALUE
                if isinstance(f, exp.FirstValue)
                else p.WindowFunc.LAST_VALUE
            )
            return p.WindowCall(name, column_of(x), x.type)
        if isinstance(f, exp.PercentRank | exp.CumeDist):
            name = (
                p.WindowFunc.PERCENT_RANK
                if isinstance(f, exp.PercentRank)
                else p.WindowFunc.CUME_DIST
            )
            return p.WindowCall(name, None, DOUBLE)
        if isinstance(f, exp.IgnoreNulls | exp.RespectNulls):
            raise unsupported("IGNORE NULLS / RESPECT NULLS", f)
        raise unsupported(
            f"window function {_agg_name(f)}",
            f,
            "see docs/sql-support.md for the window functions views support",
        )

    def agg_filter(self, f: exp.Filter, tr: ExprTranslator) -> Scalar:
        """The condition of ``agg(...) FILTER (WHERE cond)``."""
        where = f.expression
        self.use(where, "this")
        return tr.boolean(where.this if isinstance(where, exp.Where) else where)

    def more_aggregates(self, a: exp.Expr, tr: ExprTranslator, st: _AggState) -> bool:
        """Aggregates beyond COUNT/SUM/MIN/MAX/AVG, as Spark computes them; False for those
        five (without FILTER). Incremental where they are functions of sums and counts
        (count_if, bool_and/or, the variance family), recomputed per group otherwise."""
        cond: Scalar | None = None
        node = a
        if isinstance(a, exp.Filter):
            cond, node = self.agg_filter(a, tr), a.this
        multi = (
            isinstance(node, exp.Count)
            and isinstance(node.this, exp.Distinct)
            and len(node.this.expressions) > 1
        )
        if type(node) in _AGGS and not multi:
            return False
        key = key_of(a)
        agg_cols = st.agg_cols

        def arg(n: exp.Expr) -> Scalar:
            x = tr(n)
            return _when(cond, x) if cond is not None else x

        def add(func: str, e: Scalar, t: SqlType, extra: tuple[Scalar, ...] = (), param=None):
            col = st.column(e)
            more = tuple(st.column(x) for x in extra)
            distinct = func == "count_distinct_tuple"
            return st.call(p.AggFunc(func), col, t, distinct, more, param)

        name = _agg_name(node)
        one = Lit(1, INT_T)
        if multi:
            cols = [arg(e) for e in node.this.expressions]
            agg_cols.append((key, add("count_distinct_tuple", cols[0], BIGINT, tuple(cols[1:]))))
        elif name == "count_if":
            b = tr.boolean(node.this)
            agg_cols.append((key, add("count", _when(b, one if cond is None else cond), BIGINT)))
        elif name in ("bool_and", "bool_or", "every", "some"):
            agg_cols.append((key, _bool_aggregate(name, node, tr, cond, add)))
        elif name in _VARIANCE:
            first = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
            x = cast_to(arg(first), DOUBLE)
            total = add("sum", x, DOUBLE)
            squares = add("sum", Call("mul", (x, x), DOUBLE), DOUBLE)
            n = add("count", x, BIGINT)
            agg_cols.append((key, Call(_VARIANCE[name], (total, squares, n), DOUBLE)))
        elif name in ("max_by", "min_by"):
            x = tr(node.this)
            by = arg(node.expression)
            agg_cols.append((key, add(name, x, x.type, (by,))))
        elif name in ("collect_list", "collect_set", "array_agg"):
            agg_cols.append((key, _collect(name, node, arg(node.this), add)))
        elif name in ("percentile", "median", "percentile_cont"):
            x_node, fraction = self.percentile_args(node, name)
            xp = arg(x_node)
            if not xp.type.is_numeric and xp.type.name != "NULL":
                raise unsupported(f"{name} of {xp.type}", node, "percentiles need a numeric value")
            agg_cols.append((key, add("percentile", cast_to(xp, DOUBLE), DOUBLE, (), fraction)))
        else:
            raise _unsupported_aggregate(name, node)
        return True

    def percentile_args(self, node: exp.Expr, name: str) -> tuple[exp.Expr, float]:
        if name == "median":
            return node.this, 0.5
        if name == "percentile_cont":
            assert isinstance(node, exp.WithinGroup)
            order = node.expression
            self.use(order, "expressions")
            if not isinstance(order, exp.Order) or len(order.expressions) != 1:
                raise unsupported("percentile_cont without one ORDER BY column", node)
            o = order.expressions[0]
            self.use(o, "this", "desc", "nulls_first")
            frac = _fraction(node.this.this, node)
            return o.this, (1 - frac) if o.args.get("desc") else frac
        extra = [k for k in node.args if k not in ("this", "quantile") and node.args.get(k)]
        if extra:
            raise unsupported("percentile with a frequency", node)
        return node.this, _fraction(node.args.get("quantile"), node)

    # ------------------------------------------------------------ windows
    def window(self, rel: Relation, windows: list[exp.Window], lookup):
        tr = self.tr(rel, lookup)
        width = rel.node.width
        extra: list[Scalar] = []

        def column_of(e: Scalar) -> int:
            if isinstance(e, Ref):
                return e.index
            if e in extra:
                return width + extra.index(e)
            extra.append(e)
            return width + len(extra) - 1

        groups: dict[tuple, list[tuple[exp.Window, p.WindowCall]]] = {}
        for w in windows:
            part, order, call = self.window_spec(w, tr, column_of)
            groups.setdefault((part, order), []).append((w, call))
        node = rel.node
        if extra:
            node = _extend(node, extra)
        mapping: dict[str, Scalar] = {}
        for (part, order), calls in groups.items():
            start = node.width
            node = p.Window(
                node,
                part,
                order,
                tuple(c for _, c in calls),
                tuple(f"_w{start + i}" for i in range(len(calls))),
            )
            for i, (w, c) in enumerate(calls):
                mapping[key_of(w)] = Ref(start + i, c.type)
        fields = rel.fields + [Field("", n) for n, _ in node.schema[width:]]
        out = Relation(node, fields, rel.subqueries, rel.grouped)

        def new_lookup(n: exp.Expr) -> Scalar | None:
            hit = mapping.get(key_of(n))
            if hit is not None:
                return hit
            return lookup(n) if lookup is not None else None

        return out, new_lookup

    def window_spec(
        self, w: exp.Window, tr: ExprTranslator, column_of
    ) -> tuple[tuple[int, ...], tuple[p.SortKey, ...], p.WindowCall]:
        """The partition columns, sort keys and function of one ``OVER`` (columns in the order
        the window reads them: partition, order, then the function's argument)."""
        frame = _frame(w.args.get("spec"))
        self.use(w, "this", "partition_by", "order", "over", "spec")
        sorts = w.args["order"].expressions if w.args.get("order") is not None else []
        if w.args.get("order") is not None:
            self.use(w.args["order"], "expressions")
        for o in sorts:
            self.use(o, "this", "desc", "nulls_first")
        part = tuple(column_of(tr(x)) for x in (w.args.get("partition_by") or []))
        order = []
        for o in sorts:
            desc = bool(o.args.get("desc"))
            nf = o.args.get("nulls_first")
            first = (not desc) if nf is None else bool(nf)
            order.append(p.SortKey(column_of(tr(o.this)), desc, first))
        call = self.window_call(w.this, tr, column_of)
        if frame is not None:
            call = _with_frame(call, frame, w)
        if call.func in p.ORDERED_WINDOW_FUNCS and not order:
            raise unsupported(f"{call.func.upper()} without ORDER BY", w)
        return part, tuple(order), call

    def window_call(self, f: exp.Expr, tr: ExprTranslator, column_of) -> p.WindowCall:
        """The window function ``f`` (the part before ``OVER``)."""
        if isinstance(f, exp.RowNumber):
            return p.WindowCall(p.WindowFunc.ROW_NUMBER, None, BIGINT)
        if isinstance(f, exp.Anonymous) and str(f.name).lower() in ("rank", "dense_rank"):
            return p.WindowCall(p.WindowFunc(str(f.name).lower()), None, INT_T)
        if type(f).__name__ in ("Rank", "DenseRank"):
            rank = p.WindowFunc.RANK if type(f).__name__ == "Rank" else p.WindowFunc.DENSE_RANK
            return p.WindowCall(rank, None, INT_T)
        if type(f) in _AGGS:
            return self.window_aggregate(f, tr, column_of)
        return self.more_window(f, tr, column_of)

    def window_aggregate(self, f: exp.Expr, tr: ExprTranslator, column_of) -> p.WindowCall:
        """COUNT/SUM/MIN/MAX/AVG over a window, typed as Spark types the aggregate."""
        func = p.AggFunc(_AGGS[type(f)])
        arg_node = f.this
        if isinstance(arg_node, exp.Distinct):
            raise unsupported(f"{func.upper()}(DISTINCT) OVER", f)
        if func == p.AggFunc.COUNT and (arg_node is None or isinstance(arg_node, exp.Star)):
            return p.WindowCall(p.AggFunc.COUNT_STAR, None, BIGINT)
        arg = tr(arg_node)
        if func == p.AggFunc.COUNT:
            t = BIGINT
        elif func == p.AggFunc.SUM:
            t = sum_type(arg.type)
        elif func == p.AggFunc.AVG:
            t = avg_type(arg.type)
        else:
            t = arg.type
        return p.WindowCall(func, column_of(arg), t)


def _function_name(node: exp.Expr) -> str:
    """A function's name as Spark users write it (``abs``), or the construct's class."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower() if isinstance(node, exp.Func) else type(node).__name__


def _star_columns(item: exp.Expr, rel: Relation) -> list[int] | None:
    """The columns of a star the analyser left (over a LATERAL VIEW without column names,
    whose columns it does not know): ``*`` all of them, ``alias.*`` that relation's."""
    if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and item.is_star):
        table = item.table if isinstance(item, exp.Column) else ""
        return [
            i
            for i, f in enumerate(rel.fields)
            if not f.name.startswith("\x00") and (not table or f.alias == table)
        ]
    return None


def _join_kind(side: str, kind: str, j: exp.Join) -> str:
    """The plan's join kind of SQL's ``side`` and ``kind`` words (CROSS and OUTER read as
    INNER here; a join without condition becomes a cross join later)."""
    if kind in ("semi", "anti"):
        return kind
    if side in ("left", "right", "full"):
        return side
    if kind in ("", "inner", "cross", "outer"):
        return "inner"
    raise unsupported(f"{kind.upper()} JOIN", j)


@dataclass
class _JoinSplit:
    """A join's conjuncts sorted (over the concatenated row, ``lw`` left columns): filters of
    one side, equi-join keys (an expression key becomes an extra column of its side), and
    the residual."""

    lw: int
    right_width: int
    keys: list[tuple[int, int, bool]] = field(default_factory=list)
    """Per key: its left column, its right column, and whether it is ``<=>`` (NULL matches
    NULL)."""
    residual: list[Scalar] = field(default_factory=list)
    extra: tuple[list[Scalar], list[Scalar]] = field(default_factory=lambda: ([], []))
    """The expression keys computed as extra columns: of the left side, of the right side."""
    filters: tuple[list[Scalar], list[Scalar]] = field(default_factory=lambda: ([], []))
    """The conditions on one side only: the left's, the right's (over its own columns)."""

    def add(self, c: Scalar, jk: str, arrival: bool) -> None:
        lw = self.lw
        used = sc.refs(c)
        # A condition on one side only filters that side where the join kind allows it.
        if used and max(used) < lw and jk in ("inner", "right", "semi"):
            self.filters[0].append(c)
        elif used and min(used) >= lw and jk in ("inner", "left", "semi", "anti"):
            self.filters[1].append(sc.shift(c, -lw))
        elif isinstance(c, Call) and (c.op == "eq" or (c.op == "eq_null_safe" and not arrival)):
            self.add_equality(c)
        elif not (isinstance(c, Lit) and c.value is True):
            self.residual.append(c)

    def add_equality(self, c: Call) -> None:
        """``a = b`` (or ``<=>``): a key pair when one side reads only left columns and the
        other only right ones, else residual."""
        lw = self.lw
        a, b = c.args
        ra, rb = sc.refs(a), sc.refs(b)
        if ra and rb and max(rb) < lw <= min(ra):
            a, b = b, a
        elif not (ra and rb and max(ra) < lw <= min(rb)):
            self.residual.append(c)
            return
        left_col = self.column(0, a, lw)
        right_col = self.column(1, sc.shift(b, -lw), self.right_width)
        self.keys.append((left_col, right_col, c.op == "eq_null_safe"))

    def key_columns(self) -> tuple[list[int], list[int], list[bool]]:
        """The left key columns, the right ones, and per key whether it is ``<=>``."""
        return [k[0] for k in self.keys], [k[1] for k in self.keys], [k[2] for k in self.keys]

    def column(self, side: int, e: Scalar, width: int) -> int:
        """The column of a key ``e`` of one side (of ``width`` columns): its own, or an extra."""
        if isinstance(e, Ref):
            return e.index
        self.extra[side].append(e)
        return width + len(self.extra[side]) - 1


def _bool_aggregate(
    name: str, node: exp.Expr, tr: ExprTranslator, cond: Scalar | None, add: Callable
) -> Scalar:
    """bool_and/every and bool_or/some from two counts (incremental): NULL over no non-NULL
    value, else whether no row is FALSE (and) or some row is TRUE (or)."""
    args = node.expressions if isinstance(node, exp.Anonymous) else [node.this]
    if len(args) != 1:
        raise unsupported(f"{name} of {len(args)} arguments", node)
    b = tr.boolean(args[0])
    b = _when(cond, b) if cond is not None else b
    n = add("count", b, BIGINT)
    hit = b if name in ("bool_or", "some") else Call("not", (b,), BOOLEAN)
    k = add("count", _when(hit, Lit(1, INT_T)), BIGINT)
    zero = Lit(0, BIGINT)
    test = "eq" if name in ("bool_and", "every") else "gt"
    case = (Call("eq", (n, zero), BOOLEAN), Lit(None, BOOLEAN), Call(test, (k, zero), BOOLEAN))
    return Call("case", case, BOOLEAN)


def _collect(name: str, node: exp.Expr, x: Scalar, add) -> Scalar:
    """``collect_list`` / ``array_agg`` / ``collect_set`` of ``x`` (recomputed per group)."""
    if name == "collect_set" and x.type.name == "MAP":
        raise unsupported(f"collect_set of {x.type}", node, "maps are not comparable in Spark")
    return add("collect_set" if name == "collect_set" else "collect_list", x, array_of(x.type))


def _unsupported_aggregate(name: str, node: exp.Expr) -> UnsupportedSqlError:
    """The refusal of an aggregate views do not support, saying what to write instead."""
    if name in ("first", "last", "any_value", "first_value", "last_value"):
        return unsupported(
            name,
            node,
            f"{name} depends on the order rows arrive in, which Spark does not fix; "
            "write min(x) or max(x), or max_by(x, ordering) / min_by(x, ordering)",
        )
    return unsupported(
        f"aggregate {name}", node, "see docs/sql-support.md for the aggregates views support"
    )


def _arrival_join(
    j: exp.Join,
    jk: str,
    lnode: p.Node,
    rnode: p.Node,
    lkeys: list[int],
    rkeys: list[int],
    residual: Scalar | None,
) -> p.ArrivalJoin:
    """``JOIN r FOR SYSTEM_TIME AS OF PROCTIME()``: INNER or LEFT only."""
    if jk not in ("inner", "cross", "left"):
        raise unsupported(
            f"{jk.upper()} JOIN … FOR SYSTEM_TIME AS OF",
            j,
            "a processing-time as-of join is INNER or LEFT",
        )
    kind = p.JoinKind.LEFT if jk == "left" else p.JoinKind.INNER
    return p.ArrivalJoin(lnode, rnode, kind, tuple(lkeys), tuple(rkeys), residual)


def _asof_conditions(
    conds: list[Scalar], cond: exp.Expr, lw: int
) -> tuple[list[tuple[Scalar, Scalar]], list[tuple[Scalar, Scalar]]]:
    """The key equalities and the as-of condition(s) of an ASOF JOIN's ON, each as a (left,
    right) pair of expressions over their own side; refused where ON is anything else."""
    keys: list[tuple[Scalar, Scalar]] = []
    times: list[tuple[Scalar, Scalar]] = []
    flip = {"eq": "eq", "ge": "le", "le": "ge", "gt": "lt", "lt": "gt"}
    for c in conds:
        if not (isinstance(c, Call) and c.op in flip):
            raise unsupported(
                "ASOF JOIN condition",
                cond,
                "the ON clause of an ASOF JOIN is equalities and one l.t >= r.t",
            )
        a, b = c.args
        op = c.op
        ra, rb = sc.refs(a), sc.refs(b)
        if ra and rb and max(rb) < lw <= min(ra):
            a, b, op = b, a, flip[op]
        elif not (ra and rb and max(ra) < lw <= min(rb)):
            raise unsupported(
                "ASOF JOIN condition",
                cond,
                "each condition of an ASOF JOIN compares the left side with the right side",
            )
        if op == "eq":
            keys.append((a, sc.shift(b, -lw)))
        elif op == "ge":
            times.append((a, sc.shift(b, -lw)))
        else:
            raise unsupported(
                "ASOF JOIN condition",
                cond,
                "only l.t >= r.t is supported (the latest right row at or before the left row)",
            )
    if len(times) != 1:
        raise unsupported(
            "ASOF JOIN condition", cond, "an ASOF JOIN needs exactly one l.t >= r.t condition"
        )
    return keys, times


def _keep_columns(node: p.Node, keep: list[int]) -> p.Project:
    """The columns ``keep`` of ``node``, names kept (dropping a join's extra key columns)."""
    return p.Project(
        node,
        tuple(Ref(i, node.schema[i][1], node.schema[i][0]) for i in keep),
        tuple(node.schema[i][0] for i in keep),
    )


def _aggregate_calls(s: exp.Select) -> list[exp.Expr]:
    """The distinct aggregate calls of the SELECT list, HAVING and ORDER BY of ``s``, in order
    (``grouping``/``grouping_id`` are functions of the grouping set, not aggregates)."""
    calls: list[exp.Expr] = []
    seen: set[str] = set()
    for x in [
        *s.selects,
        s.args.get("having"),
        *(s.args["order"].expressions if s.args.get("order") else []),
    ]:
        if x is None:
            continue
        for a in _aggregates(x):
            if not isinstance(a, exp.Grouping | exp.GroupingId) and key_of(a) not in seen:
                seen.add(key_of(a))
                calls.append(a)
    return calls


@dataclass
class _AggState:
    """An Aggregate built call by call: the expressions it reads (the grouping keys first,
    ``base`` of them), its calls, and per aggregate of the query (by key) the scalar over the
    Aggregate's output that answers it."""

    pre_exprs: list[Scalar]
    base: int
    aggs: list[p.AggCall] = field(default_factory=list)
    agg_cols: list[tuple[str, Scalar]] = field(default_factory=list)

    def column(self, e: Scalar) -> int:
        """Read ``e``: its column of the Aggregate's input."""
        self.pre_exprs.append(e)
        return len(self.pre_exprs) - 1

    def shared_column(self, e: Scalar) -> int:
        """Read ``e``, sharing a column: a column reference already read after the grouping
        keys is read again (``min(v), max(v)`` read one column, so a reduce keeps one copy
        of it; grouping sets null only the keys); anything else gets its own column."""
        if isinstance(e, Ref):
            for i in range(self.base, len(self.pre_exprs)):
                r = self.pre_exprs[i]
                if isinstance(r, Ref) and r.index == e.index and r.type == e.type:
                    return i
        return self.column(e)

    def call(
        self,
        func: p.AggFunc,
        col: int | None,
        t: SqlType,
        distinct: bool = False,
        extra: tuple[int, ...] = (),
        param: object = None,
    ) -> Ref:
        """Compute ``func`` of column ``col``: its column of the Aggregate's output."""
        self.aggs.append(p.AggCall(func, col, distinct, t, extra, param))
        return Ref(self.base + len(self.aggs) - 1, t)


@dataclass(frozen=True)
class _GroupedLookup:
    """Resolves an expression above a GROUP BY: a grouping key or aggregate (``post``), a
    ``grouping``/``grouping_id`` call, or a grouped column; a column neither grouped nor
    aggregated is refused."""

    tr: ExprTranslator
    sets: list[frozenset[int]] | None
    group_nodes: list[exp.Expr]
    group_index: dict[Scalar, int]
    """Each grouping key's position."""
    n_group: int
    post: dict[str, Scalar]

    def __call__(self, node: exp.Expr) -> Scalar | None:
        hit = self.post.get(key_of(node))
        if hit is not None:
            return hit
        if isinstance(node, exp.Grouping | exp.GroupingId):
            return self.grouping(node)
        if isinstance(node, exp.Column):
            try:
                e = self.tr(node)
            except SqlAnalysisError:
                return None
            if e in self.group_index:
                return Ref(self.group_index[e], e.type, node.name)
            raise SqlAnalysisError(
                f"column {node.sql()} is neither grouped nor aggregated", construct=node.sql()
            )
        return None

    def grouping(self, node: exp.Grouping | exp.GroupingId) -> Scalar:
        """``grouping(x)`` / ``grouping_id(...)``: a bit per argument absent from the row's
        grouping set, a CASE over the set's position."""
        if self.sets is None:
            raise unsupported(node.sql_name(), node, "GROUPING and GROUPING_ID need grouping sets")
        args = list(node.expressions) or (
            list(self.group_nodes) if isinstance(node, exp.GroupingId) else []
        )
        if isinstance(node, exp.Grouping) and len(args) != 1:
            raise unsupported("GROUPING of several columns", node)
        idx = [self.grouping_index(a) for a in args]
        pos = Ref(self.n_group, INT_T)
        t = TINYINT if isinstance(node, exp.Grouping) else BIGINT
        case: list[Scalar] = []
        for k, members in enumerate(self.sets):
            bits = sum(1 << (len(idx) - 1 - j) for j, i in enumerate(idx) if i not in members)
            case += [Call("eq", (pos, Lit(k, INT_T)), BOOLEAN), Lit(bits, t)]
        return Call("case", (*case, Lit(None, t)), t)

    def grouping_index(self, x: exp.Expr) -> int:
        i = self.group_index.get(self.tr(x))
        if i is None:
            raise SqlAnalysisError(
                f"{x.sql(dialect='spark')} in GROUPING / GROUPING_ID is not a grouping column",
                construct=x.sql(dialect="spark"),
            )
        return i


INT_T = SqlType("INT")
TINYINT = SqlType("TINYINT")


def _extend(node: p.Node, extra: list[Scalar]) -> p.Node:
    exprs = tuple(Ref(i, t, n) for i, (n, t) in enumerate(node.schema)) + tuple(extra)
    names = tuple(n for n, _ in node.schema) + tuple(f"_k{i}" for i in range(len(extra)))
    return p.Project(node, exprs, names)


def _grouping_sets(
    group: exp.Group, s: exp.Select, rel: Relation
) -> tuple[list[exp.Expr], list[frozenset[int]] | None]:
    """The grouping expressions of ``group`` and its grouping sets (as sets of their
    positions; None for a plain GROUP BY), as Spark reads them.

    ``GROUP BY a, b WITH CUBE|ROLLUP`` and ``GROUP BY a, b GROUPING SETS (...)`` (Hive) group
    by ``a, b``; in the standard form each item is a list of sets (a plain expression is one
    set of itself, ``CUBE`` every subset, ``ROLLUP`` every prefix, ``GROUPING SETS`` its
    elements) and the query's sets are their cross product. ``GROUP BY ALL`` groups by every
    SELECT item without an aggregate, unless the input has a column named ``all``.
    """
    if group.args.get("totals"):
        raise unsupported("GROUP BY ... WITH TOTALS", group)
    items = list(group.expressions)
    if group.args.get("all"):
        return _group_by_all(group, s, rel), None
    exprs: list[exp.Expr] = []
    keys: list[str] = []

    def index(e: exp.Expr) -> int:
        e = e.this if isinstance(e, exp.Paren) else e
        k = key_of(e)
        if k not in keys:
            keys.append(k)
            exprs.append(e)
        return keys.index(k)

    def members(e: exp.Expr) -> frozenset[int]:
        """One element of a set list: ``(a, b)``, ``()`` or ``a``."""
        if isinstance(e, exp.Tuple):
            return frozenset(index(x) for x in e.expressions)
        if isinstance(e, exp.Cube | exp.Rollup | exp.GroupingSets):
            raise unsupported(f"{type(e).__name__.upper()} inside a grouping set", e)
        return frozenset([index(e)])

    hive = [(k, v) for k in ("cube", "rollup", "grouping_sets") for v in group.args.get(k) or []]
    if hive:
        if len(hive) > 1:
            raise unsupported("several WITH CUBE / WITH ROLLUP / GROUPING SETS", group)
        kind, node = hive[0]
        base = [frozenset([index(x)]) for x in items]
        if kind == "grouping_sets":
            return exprs, [members(x) for x in node.expressions]
        parts = [members(x) for x in node.expressions] or base
        return exprs, _expand(kind, parts)
    if not any(isinstance(x, exp.Cube | exp.Rollup | exp.GroupingSets) for x in items):
        return [x.this if isinstance(x, exp.Paren) else x for x in items], None
    product: list[frozenset[int]] = [frozenset()]
    for x in items:
        if isinstance(x, exp.GroupingSets):
            options = [members(y) for y in x.expressions]
        elif isinstance(x, exp.Cube | exp.Rollup):
            kind = "cube" if isinstance(x, exp.Cube) else "rollup"
            options = _expand(kind, [members(y) for y in x.expressions])
        else:
            options = [members(x)]
        product = [a | b for a in product for b in options]
    return exprs, product


def _group_by_all(group: exp.Group, s: exp.Select, rel: Relation) -> list[exp.Expr]:
    """``GROUP BY ALL``: every SELECT item without an aggregate, unless the input has a column
    named ``all`` (Spark resolves that column first)."""
    if group.expressions:
        raise unsupported("GROUP BY ALL with expressions", group)
    if any(f.name.lower() == "all" for f in rel.fields):
        return [exp.column("all")]
    return [x.unalias() for x in s.selects if not _aggregates(x)]


def _expand(kind: str, parts: list[frozenset[int]]) -> list[frozenset[int]]:
    """CUBE: every subset of ``parts``; ROLLUP: every prefix, longest first."""
    if kind == "rollup":
        return [frozenset().union(*parts[:n]) for n in range(len(parts), -1, -1)]
    out = []
    for mask in range(2 ** len(parts) - 1, -1, -1):
        out.append(frozenset().union(*(x for j, x in enumerate(parts) if mask >> j & 1)))
    return out


_VARIANCE = {
    "stddev": "stddev_samp",
    "stddev_samp": "stddev_samp",
    "stddev_pop": "stddev_pop",
    "std": "stddev_samp",
    "variance": "var_samp",
    "var_samp": "var_samp",
    "var_pop": "var_pop",
}
_AGG_NAMES = {
    exp.CountIf: "count_if",
    exp.LogicalAnd: "bool_and",
    exp.LogicalOr: "bool_or",
    exp.Stddev: "stddev",
    exp.StddevSamp: "stddev_samp",
    exp.StddevPop: "stddev_pop",
    exp.Variance: "variance",
    exp.VariancePop: "var_pop",
    exp.ArgMax: "max_by",
    exp.ArgMin: "min_by",
    exp.Quantile: "percentile",
    exp.Median: "median",
    exp.WithinGroup: "percentile_cont",
    exp.First: "first",
    exp.Last: "last",
    exp.AnyValue: "any_value",
    exp.FirstValue: "first_value",
    exp.LastValue: "last_value",
    exp.ArrayAgg: "collect_list",
    exp.ArrayUniqueAgg: "collect_set",
}
_ANON_AGGS = frozenset({"every", "some", "bool_and", "bool_or", "count_if", "std"})


def _agg_name(node: exp.Expr) -> str:
    """The aggregate's Spark name (the user's own spelling where sqlglot keeps it)."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    if isinstance(node, exp.WithinGroup) and not isinstance(node.this, exp.PercentileCont):
        return node.this.sql_name().lower() if isinstance(node.this, exp.Func) else "within group"
    return _AGG_NAMES.get(type(node)) or (
        node.sql_name().lower() if isinstance(node, exp.Func) else type(node).__name__.lower()
    )


def _with_frame(call: p.WindowCall, frame: tuple, w: exp.Window) -> p.WindowCall:
    """``call`` over the explicit ``frame`` of ``w``, refused where Spark has a fixed frame or
    where the engine supports no RANGE offset."""
    if call.func not in p.FRAMED_WINDOW_FUNCS:
        raise unsupported(f"a window frame for {call.func}", w, f"{call.func} has a fixed frame")
    if frame[0] == "range" and any(b not in (None, 0) for b in frame[1:]):
        raise unsupported(
            "RANGE BETWEEN with an offset",
            w,
            "write ROWS BETWEEN n PRECEDING ..., or RANGE with UNBOUNDED / CURRENT ROW",
        )
    return p.WindowCall(call.func, call.arg, call.type, call.param, frame)


def _frame(spec: exp.Expr | None) -> tuple | None:
    """``(kind, start, end)`` of an explicit window frame: a bound is None for UNBOUNDED, 0
    for CURRENT ROW, -n for n PRECEDING, n for n FOLLOWING."""
    if spec is None:
        return None

    def bound(value: object, side: object, default: int | None) -> int | None:
        if value is None:
            return default
        text = value.sql().upper() if isinstance(value, exp.Expr) else str(value).upper()
        if text == "UNBOUNDED":
            return None
        if text == "CURRENT ROW":
            return 0
        n = _literal_int(value if isinstance(value, exp.Expr) else None, spec, "frame bound")
        if n is None:
            raise unsupported(f"window frame bound {text}", spec)
        return -n if str(side).upper() == "PRECEDING" else n

    kind = str(spec.args.get("kind") or "rows").lower()
    start = bound(spec.args.get("start"), spec.args.get("start_side"), None)
    end = bound(spec.args.get("end"), spec.args.get("end_side"), 0)
    return (kind, start, end)


def _literal_int(e: exp.Expr | None, where: exp.Expr, what: str) -> int | None:
    if e is None:
        return None
    if isinstance(e, exp.Literal) and not e.is_string and e.this.lstrip("-").isdigit():
        return int(e.this)
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and e.this.this.isdigit():
        return -int(e.this.this)
    raise unsupported(f"a non-constant {what}", where, f"write the {what} as an integer literal")


def _fold_constant(e: Scalar, where: exp.Expr) -> Lit:
    """A constant expression's value (LAG's default)."""
    import numpy as np

    from sql_frontend.expressions.evaluate import compile_scalar

    if sc.refs(e):
        raise unsupported("a LAG / LEAD default that is not a constant", where)
    return Lit(compile_scalar(e)(np.zeros(1, dtype=object))[0], e.type)


def _output_names_first(names: list[str], exprs: tuple[Scalar, ...], lookup):
    """ORDER BY resolves a bare name against the SELECT list first, inside expressions too
    (Spark's Sort sits above the Project): ``ORDER BY CASE WHEN lochierarchy = 0 ...`` reads
    the alias ``lochierarchy``; other names go on to ``lookup``."""
    outputs = dict(zip(names, exprs, strict=False))

    def resolve(node: exp.Expr) -> Scalar | None:
        if isinstance(node, exp.Column) and not node.table and node.name in outputs:
            return outputs[node.name]
        return lookup(node) if lookup is not None else None

    return resolve


def _when(cond: Scalar, value: Scalar) -> Scalar:
    """``CASE WHEN cond THEN value END``."""
    return Call("case", (cond, value, Lit(None, value.type)), value.type)


def _fraction(node: exp.Expr | None, where: exp.Expr) -> float:
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        v = -float(node.this.this)
    elif isinstance(node, exp.Literal) and not node.is_string:
        v = float(node.this)
    else:
        raise unsupported("a percentile that is not one constant number", where)
    if not 0.0 <= v <= 1.0:
        raise analysis_error(
            f"[INVALID_PARAMETER_VALUE] the percentile {v} must be between 0.0 and 1.0",
            where,
            "percentile",
        )
    return v


def _aggregate_nodes(node: exp.Expr) -> list[exp.Expr]:
    out: list[exp.Expr] = list(node.find_all(exp.AggFunc))
    out += [x for x in node.find_all(exp.Anonymous) if str(x.name).lower() in _ANON_AGGS]
    wrapped: list[exp.Expr] = []
    for x in out:
        parent = x.parent
        wrapped.append(
            parent
            if isinstance(parent, exp.Filter | exp.WithinGroup) and x.arg_key == "this"
            else x
        )
    return wrapped


def _limit_of_one_row(
    q: exp.Expr, node: p.Node, k: int | None, off: int, where: exp.Expr | None
) -> p.Node:
    """LIMIT without ORDER BY: ``node`` itself where ``q`` has at most one row and the limit
    keeps it (a global aggregate: TPC-DS q28, q97), a top-k of ``node`` where every row it
    can have is the same constant row (TPC-DS q32's ``SELECT 1 ... LIMIT 100``: which rows are
    kept cannot matter); otherwise the rows kept are arbitrary."""
    if k is not None and k >= 1 and off == 0 and _at_most_one_row(q):
        return node
    if k is not None and _constant_rows(node):
        order = tuple(p.SortKey(i, False, True) for i in range(node.width))
        return p.TopK(node, order, k, off)
    raise unsupported("LIMIT without ORDER BY", where, "the rows kept would be arbitrary")


def _constant_rows(node: p.Node) -> bool:
    """Every row of ``node`` is the same: a projection of literals (DISTINCT or not)."""
    inner = node.input if isinstance(node, p.Distinct) else node
    return isinstance(inner, p.Project) and all(isinstance(e, Lit) for e in inner.exprs)


def _at_most_one_row(q: exp.Expr) -> bool:
    """``q`` has at most one row: it aggregates without GROUP BY (HAVING may drop the row),
    or it reads only inner/cross joins of such queries (TPC-DS q28)."""
    if not isinstance(q, exp.Select) or q.args.get("group") is not None:
        return False
    if any(_aggregates(x) for x in q.selects):
        return True
    joins = q.args.get("joins") or []
    if q.args.get("from_") is None or any(j.args.get("side") for j in joins):
        return False
    sources = [q.args["from_"].this, *(j.this for j in joins)]
    return all(_one_row_source(q, x) for x in sources)


def _one_row_source(q: exp.Expr, x: exp.Expr) -> bool:
    """Source ``x`` of ``q`` has at most one row: a derived table, or a CTE (the optimizer
    turns derived tables into CTEs), whose query has."""
    if isinstance(x, exp.Subquery):
        return _at_most_one_row(x.this)
    if not isinstance(x, exp.Table) or x.args.get("db"):
        return False
    scope: exp.Expr | None = q
    while scope is not None:
        with_ = scope.args.get("with_") if isinstance(scope, exp.Query) else None
        for cte in with_.expressions if with_ is not None else []:
            if cte.alias_or_name == x.name:
                return _at_most_one_row(cte.this)
        scope = scope.parent
    return False


def _aggregates(node: exp.Expr) -> list[exp.Expr]:
    """Aggregate calls in ``node`` outside nested queries, other than a window's own function:
    ``sum(sum(x)) OVER (...)`` and ``rank() OVER (ORDER BY sum(x))`` read the group's
    ``sum(x)``, as in Spark, where windows are evaluated after the aggregation."""
    out = []
    for x in _aggregate_nodes(node):
        anc = x.parent
        inside = False
        while anc is not None and anc is not node:
            if isinstance(anc, exp.Select | exp.Subquery):
                inside = True
                break
            anc = anc.parent
        if not inside and not isinstance(x.parent, exp.Window):
            out.append(x)
    return out


def _constant_int(e: exp.Expr | None, where: exp.Expr | None) -> int | None:
    if e is None:
        return None
    if isinstance(e, exp.Literal) and not e.is_string:
        return int(e.this)
    raise unsupported("non-constant LIMIT/OFFSET", where)


def _check_proctime(version: exp.Expr) -> None:
    """``FOR SYSTEM_TIME AS OF PROCTIME()`` (sqlglot reads it, like Spark's ``TIMESTAMP AS OF``,
    as a Version node): the processing-time as-of join; any other AS OF is refused."""
    e = version.args.get("expression")
    if (
        version.text("kind").upper() == "AS OF"
        and isinstance(e, exp.Anonymous)
        and str(e.name).upper() == "PROCTIME"
        and not e.expressions
    ):
        return
    raise unsupported(
        f"{version.sql(dialect='spark')}",
        version,
        "only FOR SYSTEM_TIME AS OF PROCTIME() (a processing-time as-of join) "
        "is supported; for event time write ASOF JOIN ... ON l.k = r.k AND "
        "l.t >= r.t",
    )


def _is_null_aware(cond: exp.Expr) -> bool:
    """``x = v OR (x = v) IS NULL``, as :mod:`subquery_to_semijoin` writes NOT IN."""
    if not isinstance(cond, exp.Or) or not isinstance(cond.this, exp.EQ):
        return False
    rhs = cond.expression
    if not isinstance(rhs, exp.Is) or not isinstance(rhs.expression, exp.Null):
        return False
    inner = rhs.this.this if isinstance(rhs.this, exp.Paren) else rhs.this
    return key_of(inner) == key_of(cond.this)


def _mentions(node: exp.Expr, names: list[str]) -> bool:
    return any(t.name in names and not t.db for t in node.find_all(exp.Table))


__all__ = ["BOOLEAN", "Relation", "Translator"]
