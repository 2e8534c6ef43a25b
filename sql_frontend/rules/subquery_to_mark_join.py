"""IN / EXISTS subqueries anywhere in an expression → boolean columns from LEFT JOINs.

A semi or anti join (:mod:`.subquery_to_semijoin`) serves a top-level conjunct of WHERE.
Elsewhere — under OR, CASE, in the SELECT list or an inner join's ON — the predicate is a
value. Spark computes it as its ``RewritePredicateSubquery`` does (an ``ExistenceJoin``), after
:mod:`.push_not` has moved NOT down to the predicates, and so does this rule:

* ``x IN (q)`` is TRUE iff some row of ``q`` (for the row's correlation key) has ``v = x``,
  else FALSE — never NULL (Spark 4.3 gives ``NULL IN (q)`` = FALSE in these positions);
* ``NOT (x IN (q))`` is NOT of "some row has ``x = v`` or ``(x = v) IS NULL``": FALSE when
  ``q`` has a row and ``x`` is NULL or ``q`` has a NULL or a match, TRUE otherwise (TRUE for an
  empty ``q``) — NOT IN's NULL-aware meaning;
* ``EXISTS (q)`` is TRUE iff ``q`` has a row (for the correlation key).

The facts come from joins that keep every outer row exactly once:

* ``LEFT JOIN (SELECT DISTINCT c, v AS _v FROM q WHERE v IS NOT NULL) m ON x = m._v AND
  m.c = outer`` — did some value match;
* for NOT IN, ``LEFT JOIN (SELECT c, count(*) AS _n, max(CASE WHEN v IS NULL THEN 1 ELSE 0
  END) AS _nulls FROM q GROUP BY c) a ON a.c = outer`` (uncorrelated: ``CROSS JOIN`` the
  global aggregate, which has one row even for an empty ``q``);
* for EXISTS, a DISTINCT marker row per correlation key (uncorrelated: ``count(*)``).

Every part is an ordinary join or aggregate, so the view stays incremental. ``c = outer``
stands for the correlation: conjuncts of ``q``'s WHERE that equate (``=``, or ``<=>`` as
:mod:`.unnest_correlated` writes its join back to a domain) an expression of ``q``'s own columns
with one of the enclosing query's. Other correlations — with a query two levels out, by a
condition that is not such an equality, of a subquery with GROUP BY, LIMIT, joins or
aggregates — were unnested into this form by :mod:`.unnest_correlated` before this rule runs.
A subquery in GROUP BY or in the SELECT list of an aggregating query (which
:mod:`.aggregate_before_subquery` did not take) is refused by name and position. Positive
top-level WHERE conjuncts are left to the semi-join rules. The input must be qualified.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope, traverse_scope

from sql_frontend.positions import unsupported
from sql_frontend.rules.ancestors import enclosing_query

_FORBIDDEN_CORRELATED = (
    "group",
    "having",
    "limit",
    "offset",
    "qualify",
    "windows",
    "with_",
    "joins",
    "laterals",
)


def subquery_to_mark_join(expression: exp.Expr) -> exp.Expr:
    counter = [0]

    def fresh() -> int:
        counter[0] += 1
        return counter[0]

    for scope in traverse_scope(expression):
        select = scope.expression
        if not isinstance(select, exp.Select) or not select.args.get("from_"):
            continue
        for node in _predicates(select):
            _rewrite(node, select, scope, fresh)
    return expression


def _predicates(select: exp.Select) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    for node in select.find_all(exp.In, exp.Exists):
        if isinstance(node, exp.In) and not node.args.get("query"):
            continue
        if enclosing_query(node) is select:
            out.append(node)
    return out


def _top_level_conjunct(node: exp.Expr) -> bool:
    parent = node.parent
    while isinstance(parent, exp.And | exp.Paren):
        parent = parent.parent
    return isinstance(parent, exp.Where)


def _clause(node: exp.Expr, select: exp.Select) -> exp.Expr:
    """The child of ``select`` (an arg value) that holds ``node``."""
    child = node
    while child.parent is not select:
        assert child.parent is not None
        child = child.parent
    return child


def _negation(node: exp.Expr) -> exp.Not | None:
    parent = node.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    return parent if isinstance(parent, exp.Not) else None


def _rewrite(node: exp.Expr, select: exp.Select, scope: Scope, fresh) -> None:
    what = "IN (subquery)" if isinstance(node, exp.In) else "EXISTS"
    clause = _clause(node, select)
    negation = _negation(node)
    if isinstance(clause, exp.Where):
        if negation is None and _top_level_conjunct(node):
            return  # a filter: the semi-join rules (FALSE and NULL both drop the row)
    elif isinstance(clause, exp.Join):
        if not move_to_where(node, clause, select):
            _mark_one_side(node, negation, clause, select, scope, fresh, what)
            return
    elif clause.arg_key == "expressions":
        if (select.args.get("group") or _has_aggregate(select)) and not _in_aggregate(node, select):
            raise unsupported(f"{what} in the SELECT list of an aggregating query", node)
    else:
        raise unsupported(f"{what} in {str(clause.arg_key).upper()}", node)
    n = fresh()
    if isinstance(node, exp.In):
        replacement = _in_mark(node, select, scope, n, null_aware=negation is not None)
    else:
        assert isinstance(node, exp.Exists)
        replacement = _exists_mark(node, select, scope, n)
    node.replace(exp.paren(replacement, copy=False))


def _in_aggregate(node: exp.Expr, select: exp.Select) -> bool:
    """Whether ``node`` is inside an aggregate of ``select`` (its argument or FILTER): a value
    of each input row, which the mark joins (they keep every row once) give before grouping."""
    parent = node.parent
    while parent is not None and parent is not select:
        if isinstance(parent, exp.AggFunc | exp.Filter) and enclosing_query(parent) is select:
            return not parent.find_ancestor(exp.Window)
        parent = parent.parent
    return False


def _has_aggregate(select: exp.Select) -> bool:
    for e in select.expressions:
        for agg in e.find_all(exp.AggFunc):
            if enclosing_query(agg) is select and not agg.find_ancestor(exp.Window):
                return True
    return False


def move_to_where(node: exp.Expr, join: exp.Join, select: exp.Select) -> bool:
    """An inner join's ON conjunct holding ``node`` moves to WHERE (the same rows, as long as
    no later join preserves rows of the other side); False when it cannot."""
    joins = list(select.args.get("joins") or [])
    later = joins[joins.index(join) + 1 :] if join in joins else []
    on = join.args.get("on")
    if (
        join.side
        or join.text("kind").upper() not in ("", "INNER", "CROSS")
        or on is None
        or any(j.side in ("RIGHT", "FULL") for j in later)
    ):
        return False
    conjuncts = list(on.flatten()) if isinstance(on, exp.And) else [on]
    holder = next(c for c in conjuncts if node in c.find_all(type(node)))
    rest = [c for c in conjuncts if c is not holder]
    join.set("on", exp.and_(*rest, copy=False) if rest else exp.true())
    where = select.args.get("where")
    cond = holder if where is None else exp.and_(where.this, holder, copy=False)
    select.set("where", exp.Where(this=cond))
    return True


def _mark_one_side(
    node: exp.Expr,
    negation: exp.Not | None,
    join: exp.Join,
    select: exp.Select,
    scope: Scope,
    fresh,
    what: str,
) -> None:
    """A predicate subquery in an outer join's ON that reads one relation only — the join's
    own or the FROM relation — is computed as a column of that relation: ``y`` becomes
    ``(SELECT y.c…, <predicate> AS _m<n> FROM y) AS y`` (the SELECT-list form of this rule)
    and the ON reads ``y._m<n>``. The value is a function of ``y``'s row, so every join type
    keeps its meaning."""
    target = negation if negation is not None else node
    tables = {c.table for c in target.find_all(exp.Column) if c.table in scope.sources}
    from_ = select.args["from_"]
    rel = next((r for r in (join.this, from_.this) if tables and tables <= {r.alias_or_name}), None)
    if rel is None:
        raise unsupported(
            f"{what} in the ON clause of an outer join over columns of both sides",
            node,
            "compute it in a derived table of one side first",
        )
    alias = rel.alias_or_name
    cols = sorted({c.name for c in select.find_all(exp.Column) if c.table == alias})
    mark = f"_m{fresh()}"
    target.replace(exp.column(mark, table=alias))
    derived = exp.Select(
        expressions=[exp.column(c, table=alias) for c in cols]
        + [exp.alias_(target, mark, copy=False)],
        from_=exp.From(this=rel.copy()),
    )
    rel.replace(exp.Subquery(this=derived, alias=exp.TableAlias(this=exp.to_identifier(alias))))
    inner = build_scope(derived)
    assert inner is not None  # a SELECT always has a scope
    _rewrite(node, derived, inner, fresh)


_Pair = tuple[exp.Expr, exp.Expr, type[exp.EQ] | type[exp.NullSafeEQ]]
"""A correlation equality: the inner side, the outer side, and ``=`` or ``<=>``."""


def _sub_scope(sub: exp.Expr, scope: Scope) -> Scope | None:
    return next((s for s in scope.subquery_scopes if s.expression is sub), None)


def _correlation(
    node: exp.Expr, sub: exp.Select, scope: Scope
) -> tuple[list[_Pair], list[exp.Expr]] | None:
    """``(inner, outer, EQ or NullSafeEQ)`` of the correlation equalities and the local WHERE
    conjuncts of ``sub``; None when ``sub`` is not correlated."""
    s = _sub_scope(sub, scope)
    external = list(s.external_columns) if s is not None else []
    if not external:
        return None
    if any(c.table not in scope.sources for c in external):
        raise unsupported("a subquery correlated with a query two or more levels out", node)
    for key in _FORBIDDEN_CORRELATED:
        if sub.args.get(key):
            raise unsupported(f"correlated subquery with {key.rstrip('_').upper()}", node)
    if _has_aggregate(sub):
        raise unsupported("correlated subquery with aggregates", node)
    inner = set(s.sources) if s is not None else set()
    where = sub.args.get("where")
    conds = (
        (where.this.flatten() if isinstance(where.this, exp.And) else [where.this]) if where else []
    )
    local: list[exp.Expr] = []
    pairs: list[_Pair] = []
    for c in conds:
        tables = {col.table for col in c.find_all(exp.Column)}
        if not tables - inner:
            local.append(c)
            continue
        if isinstance(c, exp.EQ | exp.NullSafeEQ):
            a, b = c.this, c.expression
            ta = {col.table for col in a.find_all(exp.Column)}
            tb = {col.table for col in b.find_all(exp.Column)}
            if ta and tb and ta <= inner and not tb & inner:
                pairs.append((a, b, type(c)))
                continue
            if ta and tb and tb <= inner and not ta & inner:
                pairs.append((b, a, type(c)))
                continue
        raise unsupported("a correlated condition that is not an equality", c)
    outside = [
        col for col in external if where is None or col.find_ancestor(exp.Where) is not where
    ]
    if outside:
        raise unsupported("a correlated reference outside the subquery's WHERE", outside[0])
    return pairs, local


def _derived(
    sub: exp.Select,
    items: list[exp.Expr],
    local: list[exp.Expr],
    extra_where: exp.Expr | None = None,
    group: list[exp.Expr] | None = None,
    distinct: bool = False,
) -> exp.Select:
    out = exp.Select(expressions=items, from_=sub.args["from_"].copy())
    conds = [c.copy() for c in local] + ([extra_where] if extra_where is not None else [])
    if conds:
        out.set("where", exp.Where(this=exp.and_(*conds, copy=False)))
    if group:
        out.set("group", exp.Group(expressions=[g.copy() for g in group]))
    if distinct:
        out.set("distinct", exp.Distinct())
    return out


def _join(select: exp.Select, q: exp.Select, alias: str, on: exp.Expr | None) -> None:
    derived = exp.Subquery(this=q, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    if on is None:
        select.append("joins", exp.Join(this=derived, kind="CROSS"))
    else:
        select.append("joins", exp.Join(this=derived, side="LEFT", on=on))


def _wrapped(sub: exp.Expr, n: int) -> tuple[exp.Select, str]:
    """``SELECT * FROM (sub) AS _q<n>``'s FROM, and the name of ``sub``'s first column."""
    alias = f"_q{n}"
    inner = sub.this if isinstance(sub, exp.Subquery) else sub
    assert isinstance(inner, exp.Query)
    name = inner.selects[0].alias_or_name
    frm = exp.Select(
        expressions=[exp.Star()],
        from_=exp.From(
            this=exp.Subquery(
                this=inner.copy(), alias=exp.TableAlias(this=exp.to_identifier(alias))
            )
        ),
    )
    return frm, name


def _in_mark(
    node: exp.In, select: exp.Select, scope: Scope, n: int, *, null_aware: bool
) -> exp.Expr:
    """``x IN (q)`` as "some row of q equals x"; under NOT (``null_aware``) as "some row of q
    equals x or the equality is NULL", so that the enclosing NOT gives NOT IN's meaning."""
    query = node.args["query"]
    sub = query.this if isinstance(query, exp.Subquery) else query
    x = node.this
    if isinstance(x, exp.Tuple) or len(sub.selects) != 1:
        raise unsupported("IN (subquery) of several columns", node)
    mk, ma = f"_mk{n}", f"_ma{n}"
    base, v, pairs, local = _in_source(node, sub, scope, n)
    keys = [exp.alias_(a.copy(), f"_c{i}") for i, (a, _, _) in enumerate(pairs)]
    match = _derived(
        base,
        [*keys, exp.alias_(v.copy(), "_v")],
        local,
        exp.Not(this=exp.Is(this=v.copy(), expression=exp.Null())),
        distinct=True,
    )
    corr_on = [
        eq(this=exp.column(f"_c{i}", table=mk), expression=b.copy())
        for i, (_, b, eq) in enumerate(pairs)
    ]
    _join(
        select,
        match,
        mk,
        exp.and_(
            exp.EQ(this=x.copy(), expression=exp.column("_v", table=mk)), *corr_on, copy=False
        ),
    )
    matched = exp.Not(this=exp.Is(this=exp.column("_v", table=mk), expression=exp.Null()))
    if not null_aware:
        return matched
    _join_counts(select, base, [k.copy() for k in keys], v, local, pairs, ma)
    zero = exp.Literal.number(0)
    n_rows = exp.func("coalesce", exp.column("_n", table=ma), zero)
    has_null = exp.func("coalesce", exp.column("_nulls", table=ma), zero.copy())
    return exp.Case(
        ifs=[
            exp.If(this=exp.EQ(this=n_rows, expression=zero.copy()), true=exp.false()),
            exp.If(this=exp.Is(this=x.copy(), expression=exp.Null()), true=exp.true()),
            exp.If(this=matched, true=exp.true()),
            exp.If(this=exp.EQ(this=has_null, expression=exp.Literal.number(1)), true=exp.true()),
        ],
        default=exp.false(),
    )


def _in_source(
    node: exp.In, sub: exp.Expr, scope: Scope, n: int
) -> tuple[exp.Select, exp.Expr, list[_Pair], list[exp.Expr]]:
    """What ``x IN (sub)`` compares ``x`` with: the query to read, its value, and for a
    correlated ``sub`` the correlation's equality pairs and its local conjuncts (an
    uncorrelated or complex ``sub`` is read whole, as a derived table)."""
    corr = _correlation(node, sub, scope) if isinstance(sub, exp.Select) else None
    if corr is None or not isinstance(sub, exp.Select):
        base, name = _wrapped(sub, n)
        return base, exp.column(name, table=f"_q{n}"), [], []
    pairs, local = corr
    return sub, sub.selects[0].unalias(), pairs, local


def _join_counts(
    select: exp.Select,
    base: exp.Select,
    keys: list[exp.Expr],
    v: exp.Expr,
    local: list[exp.Expr],
    pairs: list[_Pair],
    ma: str,
) -> None:
    """LEFT JOINs to ``select``, as ``ma``, per binding of the correlation: the number of rows
    of the subquery (``_n``) and whether one of its values is NULL (``_nulls``)."""
    nulls = exp.Max(
        this=exp.Case(
            ifs=[
                exp.If(
                    this=exp.Is(this=v.copy(), expression=exp.Null()),
                    true=exp.Literal.number(1),
                )
            ],
            default=exp.Literal.number(0),
        )
    )
    counts = _derived(
        base,
        [*keys, exp.alias_(exp.Count(this=exp.Star()), "_n"), exp.alias_(nulls, "_nulls")],
        local,
        group=[a for a, _, _ in pairs],
    )
    count_on = [
        eq(this=exp.column(f"_c{i}", table=ma), expression=b.copy())
        for i, (_, b, eq) in enumerate(pairs)
    ]
    _join(select, counts, ma, exp.and_(*count_on, copy=False) if count_on else None)


def _exists_mark(node: exp.Exists, select: exp.Select, scope: Scope, n: int) -> exp.Expr:
    sub = node.this
    ma = f"_ma{n}"
    corr = _correlation(node, sub, scope) if isinstance(sub, exp.Select) else None
    if corr is None:
        base, _ = _wrapped(sub, n)
        counts = _derived(base, [exp.alias_(exp.Count(this=exp.Star()), "_n")], [])
        _join(select, counts, ma, None)
        return exp.GT(this=exp.column("_n", table=ma), expression=exp.Literal.number(0))
    pairs, local = corr
    if not pairs:
        raise unsupported("a correlated condition that is not an equality", node)
    keys = [exp.alias_(a.copy(), f"_c{i}") for i, (a, _, _) in enumerate(pairs)]
    marker = _derived(sub, [*keys, exp.alias_(exp.Literal.number(1), "_e")], local, distinct=True)
    on = [
        eq(this=exp.column(f"_c{i}", table=ma), expression=b.copy())
        for i, (_, b, eq) in enumerate(pairs)
    ]
    _join(select, marker, ma, exp.and_(*on, copy=False))
    return exp.Not(this=exp.Is(this=exp.column("_e", table=ma), expression=exp.Null()))
