"""Correlated subqueries the one-level rules cannot take → joins with the domain of their
outer values (Neumann & Kemper, "Unnesting Arbitrary Queries", BTW 2015, §3).

The rules after this one (:mod:`.subquery_to_semijoin`, :mod:`.subquery_to_mark_join`,
sqlglot's ``unnest_subqueries``) take a subquery correlated with the query one level out by
conjuncts ``inner = outer`` of its WHERE (a semi join takes any correlated conjunct). This rule
takes every other correlated subquery ``q`` of a query ``s`` — a correlation that is not an
equality, a reference to a query two or more levels out, a correlated ``q`` that joins, groups
or aggregates — and turns it into one those rules take, as the paper's dependent join does:

1. the *domain* ``D`` of ``q``'s outer references ``o₁ … oₙ`` (columns of ``s``'s relations)::

       D = SELECT DISTINCT o₁ AS _d0, …, oₙ AS _d<n-1> FROM <s's FROM and joins>
           WHERE <the conjuncts of s's WHERE over s's own relations, without subqueries>

   a superset of the values the surviving outer rows bind (a row that fails one of those
   conjuncts is dropped whatever ``q`` gives; extra domain values find no outer row when
   joined back);
2. ``q`` evaluated once per domain value, by joining it with ``D`` (the dependent join pushed
   into ``q``): ``D`` becomes ``q``'s first relation, every ``oᵢ`` reads ``_dom._di``, and the
   domain columns are added to ``q``'s output (and to its GROUP BY, if it groups). ``q`` is then
   uncorrelated — ``q_D(d) = q(o := d)`` for every ``d`` in ``D``;
3. the result joined back on the domain columns with NULL-safe equality (``<=>``: an outer row
   whose ``oᵢ`` is NULL binds NULL, and finds its domain value):

   * ``EXISTS (q)`` → ``EXISTS (SELECT 1 FROM q_D AS _dj WHERE _dj._d0 <=> o₁ AND …)``;
   * ``x IN (q)``   → ``x IN (SELECT _dj._v0 FROM q_D AS _dj WHERE _dj._d0 <=> o₁ AND …)``;
   * ``(q)`` scalar → ``s LEFT JOIN q_D AS _dj ON o₁ <=> _dj._d0 AND …``, the value ``_dj._v0``.

   The first two are equality-correlated one level out, for the rules after this one; the
   third is an ordinary join.

A ``q`` that aggregates without GROUP BY has one row for every binding, also when no row of
its input matches: ``count`` over no rows is 0, ``max`` is NULL. Grouping by the domain loses
those empty groups, so ``q_D`` is the aggregate LEFT JOINed from ``D``, and a domain value
without a group takes ``q``'s value over no rows — each aggregate replaced by its value on
empty input (0 for the counts, NULL otherwise), HAVING likewise::

    q_D = SELECT _dom._d…, CASE WHEN _g._p IS NULL THEN <item over no rows> ELSE _g._v0 END
          FROM D AS _dom LEFT JOIN (SELECT _dom._d…, 1 AS _p, <item> AS _v0, <having> AS _h
                                    FROM D AS _dom CROSS JOIN … GROUP BY _dom._d…) AS _g
            ON _dom._d0 <=> _g._d0 AND …
          WHERE CASE WHEN _g._p IS NULL THEN <having over no rows> ELSE _g._h END

Every part is a join, a DISTINCT or a grouped aggregate, so the view stays incremental.
Queries are visited outermost first, so a reference two levels out is first made a reference to
a domain column one level out, and the inner subquery is then unnested against that. A
subquery of a grouping query that aggregates the outer query's columns (``HAVING EXISTS (…
WHERE x < min(outer.v))``) is left to :mod:`.aggregate_before_subquery`, which computes the
aggregate in the groups; the rule runs again after it (see ``analyze.RULES``).

Also taken: windows in ``q`` (partitioned by the domain first, computed in a derived table);
RIGHT / FULL joins in ``q`` (the domain joins after the last of them, before the first ON
that reads it); LIMIT / OFFSET in ``q`` (its rows numbered per binding in ORDER BY order, or
counted, for EXISTS); outer references inside one inner-joined derived table of ``q`` (the
domain joins that table instead, which outputs it — the dependent join pushed down, §3.2).

Refused by name: a correlated set operation; LIMIT / OFFSET without ORDER BY in a correlated
IN or scalar subquery (which rows they keep is not defined); an outer reference in the ON of,
or before, a RIGHT / FULL join of ``q``, or inside a derived table that is NULL-extended, has
LIMIT / OFFSET or a global aggregate; a correlated scalar subquery that does not aggregate
(Spark refuses it too; ``ORDER BY … LIMIT 1`` is taken) or that stands outside the aggregates
of a grouping query over columns that are not grouped; such subqueries in an outer join's ON.
The input must be qualified.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sqlglot import exp

from sql_frontend.positions import unsupported
from sql_frontend.rules.subquery_to_mark_join import move_to_where

_NOT_ONE_LEVEL = ("group", "having", "limit", "offset", "qualify", "windows", "with_", "laterals")
_ZERO_ON_EMPTY = (exp.Count, exp.CountIf, exp.ApproxDistinct)


@dataclass
class _Counter:
    n: int = 0

    def next(self) -> int:
        self.n += 1
        return self.n


def unnest_correlated(expression: exp.Expr) -> exp.Expr:
    counter = _Counter()
    for select in _child_selects(expression, None):
        _visit(select, counter)
    return expression


# ---------------------------------------------------------------- traversal
def _nearest_select(node: exp.Expr) -> exp.Select | None:
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Select):
        parent = parent.parent
    return parent


def _child_selects(root: exp.Expr, select: exp.Select | None) -> list[exp.Select]:
    found = [root] if isinstance(root, exp.Select) and select is None else []
    found += [
        s
        for s in root.find_all(exp.Select)
        if s is not root and _nearest_select(s) is (select if select is not None else None)
    ]
    return found


def _visit(select: exp.Select, counter: _Counter) -> None:
    if select.args.get("from_") is not None:
        _unnest_in(select, counter)
    for child in _child_selects(select, select):
        _visit(child, counter)


def _aliases(select: exp.Select) -> set[str]:
    out = set()
    from_ = select.args.get("from_")
    if from_ is not None:
        out.add(from_.this.alias_or_name)
    for j in select.args.get("joins") or []:
        out.add(j.this.alias_or_name)
    return out


def _subqueries(select: exp.Select) -> list[tuple[exp.Expr, exp.Expr, str]]:
    """``(node, query, kind)`` of every EXISTS, IN (subquery) and scalar subquery whose
    nearest enclosing SELECT is ``select``."""
    out: list[tuple[exp.Expr, exp.Expr, str]] = []
    for node in select.find_all(exp.Exists, exp.In, exp.Subquery):
        if _nearest_select(node) is not select:
            continue
        if isinstance(node, exp.Exists):
            out.append((node, node.this, "exists"))
        elif isinstance(node, exp.In):
            query = node.args.get("query")
            if query is not None:
                out.append((node, query.this if isinstance(query, exp.Subquery) else query, "in"))
        elif not isinstance(
            node.parent, exp.In | exp.Exists | exp.From | exp.Join | exp.SetOperation | exp.CTE
        ):
            out.append((node, node.this, "scalar"))
    return out


def _outer_refs(
    q: exp.Expr, select: exp.Select, aliases: set[str]
) -> tuple[list[exp.Column], list[exp.Column]]:
    """Columns under ``q`` that name a relation of ``select`` (not one of a query in between),
    and those that name a relation further out."""
    refs: list[exp.Column] = []
    beyond: list[exp.Column] = []
    for col in q.find_all(exp.Column):
        table = col.table
        if not table:
            continue
        parent = col.parent
        bound = False
        while parent is not None and parent is not select:
            if isinstance(parent, exp.Select) and table in _aliases(parent):
                bound = True
                break
            parent = parent.parent
        if not bound:
            (refs if table in aliases else beyond).append(col)
    return refs, beyond


def _outer_aggregate(q: exp.Expr, refs: list[exp.Column]) -> bool:
    """Whether ``q`` holds an aggregate over outer columns only (``HAVING EXISTS (… WHERE
    x < min(outer.v))``): Spark computes it in the outer query's groups."""
    ids = {id(r) for r in refs}
    for a in q.find_all(exp.AggFunc):
        cols = list(a.find_all(exp.Column))
        if cols and all(id(c) in ids for c in cols):
            return True
    return False


# ---------------------------------------------------------------- what the one-level rules take
def _conjuncts(where: exp.Expr | None) -> list[exp.Expr]:
    if where is None:
        return []
    cond = where.this
    return list(cond.flatten()) if isinstance(cond, exp.And) else [cond]


def _own_aggregates(part: exp.Expr, q: exp.Select) -> list[exp.AggFunc]:
    return [
        a
        for a in part.find_all(exp.AggFunc)
        if _nearest_select(a) is q and not a.find_ancestor(exp.Window)
    ]


def _windows(q: exp.Select) -> list[exp.Window]:
    return [w for e in q.expressions for w in e.find_all(exp.Window) if _nearest_select(w) is q]


def _aggregating(q: exp.Select) -> bool:
    having = q.args.get("having")
    return bool(
        q.args.get("group")
        or having is not None
        or any(_own_aggregates(e, q) for e in q.expressions)
    )


def _negated(node: exp.Expr) -> bool:
    parent = node.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    return isinstance(parent, exp.Not)


def _top_level_filter(node: exp.Expr, select: exp.Select) -> bool:
    """Whether ``node`` (or NOT ``node``) is a conjunct of ``select``'s WHERE."""
    target = node
    while isinstance(target.parent, exp.Paren | exp.Not):
        target = target.parent
    parent = target.parent
    while isinstance(parent, exp.And | exp.Paren):
        parent = parent.parent
    return isinstance(parent, exp.Where) and parent.parent is select


def _one_level(
    node: exp.Expr, q: exp.Expr, kind: str, select: exp.Select, refs: list[exp.Column]
) -> bool:
    """Whether the rules after this one take ``node`` as it is."""
    if not isinstance(q, exp.Select) or _windows(q):
        return False
    conjuncts = _conjuncts(q.args.get("where"))
    owner: dict[int, exp.Expr] = {}
    for c in conjuncts:
        for col in c.find_all(exp.Column):
            owner[id(col)] = c
    correlated: list[exp.Expr] = []
    for r in refs:
        holder = owner.get(id(r))
        if holder is None or holder.find(exp.Select) is not None:
            return False  # outside WHERE, or inside a subquery nested in q
        if not any(holder is x for x in correlated):
            correlated.append(holder)
    if kind == "scalar":
        # sqlglot's unnest_subqueries: an aggregate correlated by equalities
        if any(q.args.get(k) for k in _NOT_ONE_LEVEL if k != "group"):
            return False
        if q.args.get("distinct") or not any(_own_aggregates(e, q) for e in q.expressions):
            return False
        return all(_equality(c, q, refs) for c in correlated)
    if any(q.args.get(k) for k in _NOT_ONE_LEVEL) or q.args.get("distinct"):
        return False
    if any(_own_aggregates(e, q) for e in q.expressions):
        return False
    if _top_level_filter(node, select) and not (kind == "in" and _negated(node)):
        return True  # a semi / anti join: any correlated conjunct
    if q.args.get("joins"):
        return False
    return all(_equality(c, q, refs) for c in correlated)


def _equality(c: exp.Expr, q: exp.Select, refs: list[exp.Column]) -> bool:
    if not isinstance(c, exp.EQ | exp.NullSafeEQ):
        return False
    ids = {id(r) for r in refs}

    def side(e: exp.Expr) -> str | None:
        cols = [e] if isinstance(e, exp.Column) else list(e.find_all(exp.Column))
        if not cols:
            return None
        outer = [id(col) in ids for col in cols]
        if all(outer):
            return "outer"
        if not any(outer):
            return "inner"
        return None

    sides = {side(c.this), side(c.expression)}
    return sides == {"inner", "outer"}


# ---------------------------------------------------------------- the rewrite
def _unnest_in(select: exp.Select, counter: _Counter) -> None:
    aliases = _aliases(select)
    todo = _to_unnest(select, aliases)
    # a subquery in a join's ON moves to WHERE first: the domain copies the joins
    for node, _, _, _ in todo:
        join = node.find_ancestor(exp.Join)
        in_on = join is not None and _nearest_select(join) is select
        if in_on and join is not None and not move_to_where(node, join, select):
            raise unsupported(
                "a correlated subquery that needs unnesting in an outer join's ON",
                node,
                "compute it in a derived table of one side first",
            )
    base = _outer_rows(select, aliases)
    for node, q, kind, refs in todo:
        _unnest(node, q, kind, refs, select, base, counter)


_Todo = tuple[exp.Expr, exp.Select, str, list[exp.Column]]
"""A subquery to unnest: its node, its query, its kind and its outer references."""


def _to_unnest(select: exp.Select, aliases: set[str]) -> list[_Todo]:
    """The subqueries of ``select`` this rule unnests, with their kind and outer references;
    EXISTS past an OFFSET, or over an uncorrelated grouping, first becomes a count compared
    with the offset (a scalar subquery, unnested in turn)."""
    todo: list[_Todo] = []
    work = [(node, q, kind, False) for node, q, kind in _subqueries(select)]
    while work:
        node, q, kind, ours = work.pop(0)  # ours: made by this rule, unnested here
        if kind == "exists" and isinstance(q, exp.Select) and q.args.get("offset") is not None:
            correlated = bool(_outer_refs(q, select, aliases)[0])
            if not (correlated and (_aggregating(q) or q.args.get("distinct"))):
                work.append((*_exists_past_offset(node, q), True))  # count(q) > n
                continue
            # its rows per binding are numbered, in _unnest
        limit = q.args.get("limit") if isinstance(q, exp.Select) else None
        if kind == "exists" and limit is not None:
            k = _literal_int(limit.expression)
            if k == 0:
                node.replace(exp.false())  # no row, whatever the binding
                continue
            if k is not None and k > 0:  # a positive LIMIT does not change whether a row exists
                q.set("limit", None)
                q.set("order", None)
        if (
            kind == "exists"
            and isinstance(q, exp.Select)
            and (_aggregating(q) or q.args.get("distinct") or _windows(q))
            and _top_level_filter(node, select)
            and not _outer_refs(q, select, aliases)[0]
        ):
            # an uncorrelated EXISTS filter over a grouping or windowed q (the semi join takes
            # no such q):
            # whether q has a row is one value, (SELECT count(*) FROM (q)) > 0
            q.set("offset", exp.Offset(expression=exp.Literal.number(0)))
            work.append((*_exists_past_offset(node, q), True))
            continue
        if kind != "scalar" and _clause(node, select) == "order":
            raise unsupported(
                f"{'EXISTS' if kind == 'exists' else 'IN (subquery)'} in ORDER BY",
                node,
                "Spark refuses it too (UNSUPPORTED_IN_EXISTS_SUBQUERY); compute it in the "
                "SELECT list",
            )
        refs, beyond = _outer_refs(q, select, aliases)
        if beyond:
            raise unsupported(
                f"a correlated reference to {beyond[0].sql()}, which is not in scope here",
                beyond[0],
                "a column of a grouping query must be grouped to be read by its subqueries",
            )
        if not refs:
            continue
        if _outer_aggregate(q, refs) and _aggregating(select):
            continue  # aggregate_before_subquery computes it in the groups; the next pass
        if not ours and _one_level(node, q, kind, select, refs):
            continue
        if not isinstance(q, exp.Select):
            raise unsupported("a correlated set operation", node)
        todo.append((node, q, kind, refs))
    return todo


def _outer_rows(select: exp.Select, aliases: set[str]) -> exp.Select:
    """The relations the outer rows come from, before this rule adds joins to them, and the
    conjuncts of WHERE without subqueries (a row that fails one is dropped whatever the
    subquery gives; applying them keeps the domain small when the joins' conditions are in
    WHERE)."""
    base = exp.Select(
        from_=select.args["from_"].copy(), joins=[j.copy() for j in select.args.get("joins") or []]
    )
    kept = [
        c
        for c in _conjuncts(select.args.get("where"))
        if c.find(exp.Select) is None
        and all(col.table in aliases for col in c.find_all(exp.Column))
    ]
    if kept:
        base.set("where", exp.Where(this=exp.and_(*[c.copy() for c in kept], copy=False)))
    return base


def _exists_past_offset(node: exp.Expr, q: exp.Select) -> tuple[exp.Expr, exp.Expr, str]:
    """``EXISTS (q [LIMIT k] OFFSET n)`` (``k > 0``) is ``(SELECT count(*) FROM q') > n``, ``q'``
    being ``q`` without ORDER BY / LIMIT / OFFSET: the offset leaves a row iff ``q`` has more
    than ``n``. Returns the new scalar subquery, to be unnested like any other."""
    n = _literal_int(q.args["offset"].expression)
    limit = q.args.get("limit")
    k = _literal_int(limit.expression) if limit is not None else 1
    if n is None or k is None:
        raise unsupported("EXISTS with a LIMIT or OFFSET that is not a number", q.args["offset"])
    for key in ("offset", "limit", "order"):
        q.set(key, None)
    if _aggregating(q) or q.args.get("distinct"):
        # the rows of a grouping or DISTINCT q (uncorrelated): counted over it as a derived
        # table; a correlated one has its rows numbered per binding instead (_unnest)
        body = exp.Select(
            expressions=[exp.Count(this=exp.Star())],
            from_=exp.From(
                this=exp.Subquery(
                    this=q.copy(), alias=exp.TableAlias(this=exp.to_identifier("_off"))
                )
            ),
        )
    else:
        body = q.copy()
        body.set("expressions", [exp.Count(this=exp.Star())])
    sub = exp.Subquery(this=body)
    value = exp.GT(this=sub, expression=exp.Literal.number(n)) if k > 0 else exp.false()
    node.replace(exp.paren(value, copy=False))
    return sub, body, "scalar"


def _unnest(
    node: exp.Expr,
    q: exp.Select,
    kind: str,
    refs: list[exp.Column],
    select: exp.Select,
    base: exp.Select,
    counter: _Counter,
) -> None:
    what = {"exists": "EXISTS", "in": "IN (subquery)", "scalar": "scalar subquery"}[kind]
    _refuse_shape(node, q, kind, what)
    windows = _windows(q)
    group = q.args.get("group")
    global_aggregate = _aggregating(q) and group is None
    limit = q.args.get("limit")
    if limit is not None and kind == "exists" and _literal_int(limit.expression) == 0:
        node.replace(exp.false())  # no row, whatever the binding
        return
    cut = _cut(q, kind, what, global_aggregate)
    if kind == "scalar" and not global_aggregate and (cut is None or cut.most != 1):
        raise unsupported(
            "a correlated scalar subquery that does not aggregate",
            node,
            "Spark requires correlated scalar subqueries to be aggregated (one row), or "
            "ORDER BY … LIMIT 1",
        )
    order = q.args.get("order")
    for key in ("order", "limit", "offset"):
        q.set(key, None)  # without LIMIT / OFFSET the order of q's rows has no effect
    if kind == "scalar" and _grouped_position(node, select):
        raise unsupported(
            "a correlated scalar subquery outside the aggregates of a grouping query",
            node,
            "Spark refuses it too: use it inside an aggregate, or group a derived table",
        )

    n = counter.next()
    dom, alias = f"_dom{n}", f"_dj{n}"
    keys = _domain_keys(refs)
    domain = functools.partial(_domain, keys, base, dom)
    d_cols = [exp.column(f"_d{i}", table=dom) for i in range(len(keys))]
    holders = {id(h): h for h in (_derived_table_between(r, q) for r in refs) if h is not None}
    if holders:  # the dependent join pushed further, into the derived table (§3.2)
        d_cols = _domain_in_derived_table(q, refs, list(holders.values()), d_cols, domain, what)
    else:
        _join_domain(q, refs, d_cols, domain, what)
    for w in windows:  # a window computed per binding: partitioned by the domain first
        w.set("partition_by", [c.copy() for c in d_cols] + list(w.args.get("partition_by") or []))
    aliased = {e.alias: e.unalias() for e in q.expressions if e.alias}
    items = [e.unalias() for e in q.expressions]
    if global_aggregate:
        body = _over_domain(q, items, d_cols, dom, domain)
        if cut is not None and (cut.skip > 0 or cut.most == 0):
            body.where(exp.false(), copy=False)  # OFFSET past, or LIMIT 0 on, its one row
    else:
        order = _resolved_order(order, aliased) if cut is not None else []
        body = _rows_per_binding(q, kind, n, cut, order, d_cols, items, bool(windows))
    _join_back(node, kind, body, keys, alias, select)


def _domain(keys: list[exp.Column], base: exp.Select, dom: str) -> exp.Subquery:
    """``(SELECT DISTINCT keys FROM base) AS dom``: the bindings of the outer columns (a fresh
    copy at each call)."""
    d = exp.Select(
        expressions=[exp.alias_(k.copy(), f"_d{i}") for i, k in enumerate(keys)],
        from_=base.args["from_"].copy(),
    )
    if base.args.get("joins"):
        d.set("joins", [j.copy() for j in base.args["joins"]])
    if base.args.get("where"):
        d.set("where", base.args["where"].copy())
    d.set("distinct", exp.Distinct())
    return exp.Subquery(this=d, alias=exp.TableAlias(this=exp.to_identifier(dom)))


def _rows_per_binding(
    q: exp.Select,
    kind: str,
    n: int,
    cut: _Cut | None,
    keys_order: list[exp.Expr],
    d_cols: list[exp.Column],
    items: list[exp.Expr],
    windowed: bool,
) -> exp.Select:
    """``q`` (not one global aggregate) per binding: grouped by the domain's columns too, its
    outputs the domain's columns then its value(s), its LIMIT / OFFSET applied per binding."""
    group = q.args.get("group")
    outputs = [exp.alias_(c.copy(), c.name) for c in d_cols]
    if group is not None:
        group.set("expressions", [c.copy() for c in d_cols] + list(group.expressions))
    if kind == "exists" and cut is not None:  # q's rows as they are, to be numbered
        q.set("expressions", [*outputs, *[exp.alias_(e, f"_v{i}") for i, e in enumerate(items)]])
    elif kind == "exists":
        q.set("expressions", outputs)
        if group is None:
            q.set("distinct", exp.Distinct())
    else:
        q.set("expressions", [*outputs, exp.alias_(items[0], "_v0")])
    if cut is not None:
        return _numbered(q, kind, n, cut, keys_order, d_cols, items)
    return _outputs_only(q, n) if windowed else q


def _refuse_shape(node: exp.Expr, q: exp.Select, kind: str, what: str) -> None:
    """Refuses, by name, the correlated subqueries whose shape this rule does not unnest."""
    for key in ("windows", "qualify", "with_", "laterals"):
        if q.args.get(key):
            raise unsupported(f"correlated {what} with {key.rstrip('_').upper()}", node)
    if kind == "in" and len(q.expressions) != 1:
        raise unsupported("IN (subquery) of several columns", node)
    group = q.args.get("group")
    if group is not None and any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        raise unsupported(f"correlated {what} with grouping sets", node)
    if group is not None and group.args.get("all"):
        raise unsupported(f"correlated {what} with GROUP BY ALL", node)
    if _windows(q) and _aggregating(q) and group is None:
        raise unsupported(f"correlated {what} with a window over its one aggregate row", node)


def _domain_keys(refs: list[exp.Column]) -> list[exp.Column]:
    """The distinct outer columns ``refs`` name, in order: the domain's columns ``_d<i>``
    (each reference is tagged with its own)."""
    keys: list[exp.Column] = []
    index: dict[str, int] = {}
    for r in refs:
        if r.sql() not in index:
            index[r.sql()] = len(keys)
            keys.append(r.copy())
        r.meta["_domain"] = f"_d{index[r.sql()]}"
    return keys


def _numbered(
    q: exp.Select,
    kind: str,
    n: int,
    cut: _Cut,
    keys_order: list[exp.Expr],
    d_cols: list[exp.Column],
    items: list[exp.Expr],
) -> exp.Select:
    """``q``'s rows numbered per binding in ORDER BY order (for EXISTS only their count
    matters), those the LIMIT / OFFSET ``cut`` keeps."""
    part = [c.copy() for c in d_cols]
    if q.args.get("distinct"):  # numbered after DISTINCT: over q as a derived table
        q, keys_order = _distinct_rows(q, n, keys_order, items)
        part = [exp.column(c.name, table=f"_dq{n}") for c in d_cols]
    number = exp.Window(
        this=exp.Count(this=exp.Star()) if kind == "exists" else exp.RowNumber(),
        partition_by=part,
        order=exp.Order(expressions=keys_order) if kind != "exists" else None,
    )
    q.append("expressions", exp.alias_(number, "_rn"))
    return _numbered_rows(
        q, n, cut, [c.name for c in d_cols] + (["_v0"] if kind != "exists" else [])
    )


def _join_back(
    node: exp.Expr,
    kind: str,
    body: exp.Select,
    keys: list[exp.Column],
    alias: str,
    select: exp.Select,
) -> None:
    """Replaces the subquery ``node`` by ``body`` (its value per binding) joined to the outer
    row on the domain's columns with ``<=>``: EXISTS over the join, IN over it, or a LEFT JOIN
    of ``select`` for a scalar."""
    derived = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    on = exp.and_(
        *[
            exp.NullSafeEQ(this=exp.column(f"_d{i}", table=alias), expression=k.copy())
            for i, k in enumerate(keys)
        ],
        copy=False,
    )
    if kind == "exists":
        new = exp.Exists(
            this=exp.Select(
                expressions=[exp.Literal.number(1)],
                from_=exp.From(this=derived),
                where=exp.Where(this=on),
            )
        )
        node.replace(new)
    elif kind == "in":
        sub = exp.Select(
            expressions=[exp.column("_v0", table=alias)],
            from_=exp.From(this=derived),
            where=exp.Where(this=on),
        )
        node.set("query", exp.Subquery(this=sub))
    else:
        select.append("joins", exp.Join(this=derived, side="LEFT", on=on))
        value = exp.column("_v0", table=alias)
        node.replace(value)


@dataclass
class _Cut:
    """``OFFSET skip LIMIT most`` (``most`` None: no LIMIT)."""

    skip: int
    most: int | None


def _cut(q: exp.Select, kind: str, what: str, global_aggregate: bool) -> _Cut | None:
    """The LIMIT / OFFSET of a correlated ``q``, applied per binding (the rows of each binding
    numbered in ORDER BY order); refused where which rows they keep is not defined."""
    limit, offset = q.args.get("limit"), q.args.get("offset")
    if limit is None and offset is None:
        return None
    most = _literal_int(limit.expression) if limit is not None else None
    skip = _literal_int(offset.expression) if offset is not None else 0
    where = limit if limit is not None else offset
    if (limit is not None and most is None) or skip is None or (most is not None and most < 0):
        raise unsupported(f"a LIMIT or OFFSET that is not a number in a correlated {what}", where)
    if kind == "exists" and most is not None and most > 0:
        most = None  # whether a row is left does not depend on a positive LIMIT
    if kind != "exists" and not global_aggregate and not q.args.get("order"):
        raise unsupported(
            f"{'LIMIT' if limit is not None else 'OFFSET'} without ORDER BY in a correlated {what}",
            where,
            "which rows it keeps is not defined (Spark keeps arbitrary ones); add an ORDER BY",
        )
    return _Cut(skip, most)


def _distinct_rows(
    q: exp.Select, n: int, keys: list[exp.Expr], items: list[exp.Expr]
) -> tuple[exp.Select, list[exp.Expr]]:
    """``SELECT <q's outputs> FROM (q) AS _dqN`` and the ORDER BY keys over those outputs
    (under DISTINCT an ORDER BY key is one of the SELECT list's expressions)."""
    alias = f"_dq{n}"
    names = [e.alias_or_name for e in q.expressions]
    out = []
    for k in keys:
        match = [i for i, e in enumerate(items) if e.sql() == k.this.sql()]
        if not match:
            raise unsupported("an ORDER BY key outside the SELECT DISTINCT list", k)
        k = k.copy()
        k.set("this", exp.column(f"_v{match[0]}", table=alias))
        out.append(k)
    wrapper = exp.Select(
        expressions=[exp.column(name, table=alias) for name in names],
        from_=exp.From(
            this=exp.Subquery(this=q, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        ),
    )
    return wrapper, out


def _resolved_order(order: exp.Expr | None, aliased: dict[str, exp.Expr]) -> list[exp.Expr]:
    """The ORDER BY keys of ``q``, a name of its SELECT list replaced by the expression."""
    keys = []
    for o in order.expressions if order is not None else []:
        o = o.copy()
        if isinstance(o.this, exp.Column) and not o.this.table and o.this.name in aliased:
            o.set("this", aliased[o.this.name].copy())
        keys.append(o)
    return keys


def _numbered_rows(q: exp.Select, n: int, cut: _Cut, names: list[str]) -> exp.Select:
    """The rows of ``q`` (numbered per binding in ``_rn``) that the cut keeps."""
    alias = f"_r{n}"
    rn = exp.column("_rn", table=alias)
    keep: exp.Expr = exp.GT(this=rn, expression=exp.Literal.number(cut.skip))
    if cut.most is not None:
        last = exp.LTE(this=rn.copy(), expression=exp.Literal.number(cut.skip + cut.most))
        keep = exp.and_(keep, last, copy=False)
    return exp.Select(
        expressions=[exp.column(name, table=alias) for name in names],
        from_=exp.From(
            this=exp.Subquery(this=q, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        ),
        where=exp.Where(this=keep),
    )


def _outputs_only(q: exp.Select, n: int) -> exp.Select:
    """``SELECT <q's output columns> FROM (q)``: the windows stay inside, where the rules after
    this one (which move the values into WHERE and ON) do not see them."""
    alias = f"_w{n}"
    return exp.Select(
        expressions=[exp.column(e.alias_or_name, table=alias) for e in q.expressions],
        from_=exp.From(
            this=exp.Subquery(this=q, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        ),
    )


def _join_domain(
    sel: exp.Select, refs: list[exp.Column], d_cols: list[exp.Column], domain, what: str
) -> None:
    """The dependent join pushed into ``sel``: every outer reference reads the domain, which
    joins ``sel``'s relations before the first ON that reads it, after every RIGHT / FULL join
    (which would NULL-extend it)."""
    at = _domain_position(sel, refs, what)
    names = {c.name: c for c in d_cols}
    for r in refs:
        r.replace(names[r.meta["_domain"]].copy())
    relations = [exp.Join(this=sel.args["from_"].this)] if sel.args.get("from_") else []
    relations += list(sel.args.get("joins") or [])
    relations.insert(at, exp.Join(this=domain()))
    sel.set("from_", exp.From(this=relations[0].this))
    sel.set("joins", [_cross(j) for j in relations[1:]])


def _domain_in_derived_table(
    q: exp.Select,
    refs: list[exp.Column],
    holders: list[exp.Subquery],
    d_cols: list[exp.Column],
    domain,
    what: str,
) -> list[exp.Column]:
    """All outer references of ``q`` lie in one derived table ``x`` of it (inner-joined): the
    domain joins ``x``'s relations instead, ``x`` outputs the domain columns (and groups and
    partitions its windows by them first), and ``q`` reads them from ``x``. Returns the domain
    columns as ``q`` sees them."""
    x = holders[0]
    inner = x.this
    refuse = (
        len(holders) > 1
        or any(_derived_table_between(r, q) is not x for r in refs)
        or not isinstance(inner, exp.Select)
        or any(inner.args.get(k) for k in ("limit", "offset", "qualify", "windows"))
        or (_aggregating(inner) and inner.args.get("group") is None)
        or any(_derived_table_between(r, inner) is not None for r in refs)
        or (isinstance(x.parent, exp.Join) and x.parent.side in ("LEFT", "RIGHT", "FULL"))
        or any(j.side in ("RIGHT", "FULL") for j in q.args.get("joins") or [])
    )
    if refuse:
        raise unsupported(
            f"correlated {what} reading an outer column inside a derived table",
            refs[0],
            "the domain join is pushed into one inner-joined derived table without LIMIT "
            "or OFFSET or a global aggregate; move the outer reference to the "
            "subquery's WHERE",
        )
    assert isinstance(inner, exp.Select)
    _join_domain(inner, refs, d_cols, domain, what)
    for w in _windows(inner):
        w.set("partition_by", [c.copy() for c in d_cols] + list(w.args.get("partition_by") or []))
    group = inner.args.get("group")
    if group is not None:
        group.set("expressions", [c.copy() for c in d_cols] + list(group.expressions))
    for c in d_cols:
        inner.append("expressions", exp.alias_(c.copy(), c.name))
    return [exp.column(c.name, table=x.alias_or_name) for c in d_cols]


def _derived_table_between(col: exp.Column, q: exp.Select) -> exp.Subquery | None:
    """The derived table (a subquery in a FROM or JOIN) between ``col`` and ``q``, if any: the
    domain joined to ``q`` is not visible in it."""
    parent = col.parent
    while parent is not None and parent is not q:
        if isinstance(parent, exp.Subquery) and isinstance(parent.parent, exp.From | exp.Join):
            return parent
        parent = parent.parent
    return None


def _cross(j: exp.Join) -> exp.Join:
    return j if j.args.get("on") or j.args.get("using") else exp.Join(this=j.this, kind="CROSS")


def _domain_position(q: exp.Select, refs: list[exp.Column], what: str) -> int:
    """Where the domain joins ``q``'s relations (0: before the first): after the last RIGHT /
    FULL join, so that no row of it is NULL-extended, and before the first join whose ON reads
    the outer values. Refused when no place is both."""
    joins = list(q.args.get("joins") or [])
    ids = {id(r) for r in refs}
    reads = [
        i + 1
        for i, j in enumerate(joins)
        if any(id(c) in ids for c in (j.args.get("on") or exp.null()).find_all(exp.Column))
    ]
    outer = [i + 1 for i, j in enumerate(joins) if j.side in ("RIGHT", "FULL")]
    at = outer[-1] + 1 if outer else 0
    if reads and reads[0] < at:
        bad = joins[outer[-1] - 1]
        raise unsupported(
            f"correlated {what} reading an outer column in an ON before its {bad.side} JOIN",
            bad,
            "move the outer reference to the subquery's WHERE",
        )
    return at


def _literal_int(e: exp.Expr | None) -> int | None:
    return int(e.this) if isinstance(e, exp.Literal) and e.is_int else None


def _over_domain(q: exp.Select, items: list[exp.Expr], d_cols, dom: str, domain) -> exp.Select:
    """``q`` (a global aggregate bound to the domain ``dom``) with one row per domain value,
    that of an empty group taking the aggregate's value over no rows."""
    having = q.args.get("having")
    empty_items = [_over_no_rows(e, q) for e in items]
    empty_having = _over_no_rows(having.this, q) if having is not None else None
    g = "_g"
    q.set(
        "expressions",
        [exp.alias_(c.copy(), c.name) for c in d_cols]
        + [exp.alias_(exp.Literal.number(1), "_p")]
        + [exp.alias_(e, f"_v{i}") for i, e in enumerate(items)]
        + ([exp.alias_(having.this, "_h")] if having is not None else []),
    )
    q.set("having", None)
    q.set("group", exp.Group(expressions=[c.copy() for c in d_cols]))
    q.set("distinct", None)
    absent = exp.Is(this=exp.column("_p", table=g), expression=exp.Null())

    def pick(empty: exp.Expr, name: str) -> exp.Expr:
        return exp.Case(ifs=[exp.If(this=absent.copy(), true=empty)], default=exp.column(name, g))

    on = exp.and_(
        *[
            exp.NullSafeEQ(this=exp.column(c.name, table=dom), expression=exp.column(c.name, g))
            for c in d_cols
        ],
        copy=False,
    )
    out = exp.Select(
        expressions=[exp.alias_(exp.column(c.name, table=dom), c.name) for c in d_cols]
        + [exp.alias_(pick(e, f"_v{i}"), f"_v{i}") for i, e in enumerate(empty_items)],
        from_=exp.From(this=domain()),
        joins=[
            exp.Join(
                this=exp.Subquery(this=q, alias=exp.TableAlias(this=exp.to_identifier(g))),
                side="LEFT",
                on=on,
            )
        ],
    )
    if empty_having is not None:
        out.set("where", exp.Where(this=pick(empty_having, "_h")))
    return out


def _over_no_rows(e: exp.Expr, q: exp.Select) -> exp.Expr:
    """``e`` (an expression of the aggregate ``q``) evaluated over no rows: each of ``q``'s own
    aggregates replaced by its value on empty input."""
    out = e.copy()
    if isinstance(out, exp.AggFunc):
        return _empty_value(out)
    for a in list(out.find_all(exp.AggFunc)):
        if not a.find_ancestor(exp.Window) and not _inside_select(a, out):
            a.replace(_empty_value(a))
    return out


def _empty_value(a: exp.AggFunc) -> exp.Expr:
    return exp.Literal.number(0) if isinstance(a, _ZERO_ON_EMPTY) else exp.Null()


def _inside_select(node: exp.Expr, root: exp.Expr) -> bool:
    parent = node.parent
    while parent is not None and parent is not root:
        if isinstance(parent, exp.Select):
            return True
        parent = parent.parent
    return False


def _clause(node: exp.Expr, select: exp.Select) -> str:
    """The argument of ``select`` that holds ``node``."""
    child = node
    while child.parent is not select:
        assert child.parent is not None
        child = child.parent
    return str(child.arg_key)


def _grouped_position(node: exp.Expr, select: exp.Select) -> bool:
    """Whether ``node`` is evaluated per group of an aggregating ``select`` (its SELECT list,
    HAVING or ORDER BY, outside an aggregate)."""
    if not _aggregating(select):
        return False
    agg = node.find_ancestor(exp.AggFunc)
    if agg is not None and _nearest_select(agg) is select:
        return False
    return _clause(node, select) in ("expressions", "having", "order")
