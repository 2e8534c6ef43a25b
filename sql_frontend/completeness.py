"""Nothing of a query is dropped silently: every clause is consumed or refused by name.

The translator marks each argument of a clause node it reads (:meth:`Consumption.use`). Two
walks over the analysed sqlglot tree hold it to that:

* before translation, :func:`refuse_unknown` refuses any argument that the translator has no
  translation for at all (:data:`SUPPORTED` lists, per clause type, the ones it has) —
  ``TABLESAMPLE``, ``PIVOT``, ``LIMIT … WITH TIES``, ``DISTRIBUTE BY`` …;
* after translation, :func:`refuse_unconsumed` refuses any present argument the translator did
  not mark on the path it took (a clause it supports in general but skipped here).

Each refusal names the clause and the argument, with line and column. Expression nodes
(functions, operators) are the expression translator's: it refuses what it does not know by
name. A clause node is checked wherever it appears, including inside subqueries and CTEs.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from sql_frontend.analyze import unsupported

SUPPORTED: dict[type[exp.Expr], frozenset[str]] = {
    exp.Select: frozenset(
        {
            "with_",
            "expressions",
            "hint",  # hints never change the rows; the planner reads its own
            "distinct",
            "from_",
            "joins",
            "laterals",
            "where",
            "group",
            "having",
            "order",
            "limit",
            "offset",
        }
    ),
    exp.Union: frozenset({"with_", "this", "expression", "distinct", "order", "limit", "offset"}),
    exp.Intersect: frozenset(
        {"with_", "this", "expression", "distinct", "order", "limit", "offset"}
    ),
    exp.Except: frozenset({"with_", "this", "expression", "distinct", "order", "limit", "offset"}),
    exp.Subquery: frozenset({"this", "alias", "order", "limit", "offset"}),
    exp.From: frozenset({"this"}),
    exp.Join: frozenset({"this", "on", "side", "kind", "using", "method"}),
    exp.Lateral: frozenset({"this", "view", "outer", "alias"}),
    exp.Table: frozenset({"this", "alias", "version"}),
    exp.TableAlias: frozenset({"this", "columns"}),
    exp.With: frozenset({"expressions", "recursive"}),
    exp.CTE: frozenset({"this", "alias", "materialized"}),
    exp.Where: frozenset({"this"}),
    exp.Having: frozenset({"this"}),
    exp.Group: frozenset({"expressions", "grouping_sets", "cube", "rollup", "all"}),
    exp.Cube: frozenset({"expressions"}),
    exp.Rollup: frozenset({"expressions"}),
    exp.GroupingSets: frozenset({"expressions"}),
    exp.Order: frozenset({"expressions"}),
    exp.Ordered: frozenset({"this", "desc", "nulls_first"}),
    exp.Limit: frozenset({"expression"}),
    exp.Offset: frozenset({"expression"}),
    exp.Distinct: frozenset(),
    exp.Window: frozenset({"this", "partition_by", "order", "over", "spec"}),
}
"""Per clause type, the arguments the translator can consume; any other is refused."""

CLAUSES = tuple(SUPPORTED)


def present(node: exp.Expr, key: str) -> bool:
    """Whether ``node`` carries argument ``key`` (a flag set, a list non-empty, a node)."""
    v = node.args.get(key)
    return v is not None and v is not False and v != [] and v != ""


class Consumption:
    """The (node, argument) pairs the translator consumed."""

    def __init__(self) -> None:
        self._used: set[tuple[int, str]] = set()

    def use(self, node: exp.Expr | None, *keys: str) -> None:
        if node is not None:
            for k in keys:
                self._used.add((id(node), k))

    def used(self, node: exp.Expr, key: str) -> bool:
        return (id(node), key) in self._used


def _clauses(tree: exp.Expr) -> Iterable[exp.Expr]:
    # a hint's arguments (``BROADCAST(u)``) name tables without reading them
    for node in tree.walk(prune=lambda n: isinstance(n, exp.Hint)):
        if type(node) not in SUPPORTED:
            continue
        # Distinct inside COUNT(DISTINCT x) and Ordered inside a function's arguments are
        # expressions, the expression translator's to refuse.
        if isinstance(node, exp.Distinct) and node.arg_key != "distinct":
            continue
        if isinstance(node, exp.Ordered) and not isinstance(node.parent, exp.Order):
            continue
        if isinstance(node, exp.Tuple):
            continue
        yield node


NAMES: dict[tuple[type[exp.Expr], str], str] = {
    (exp.Window, "spec"): "window frame",
    (exp.Table, "db"): "qualified table name",
    (exp.Table, "catalog"): "qualified table name",
    (exp.Window, "alias"): "named window",
    (exp.Table, "sample"): "TABLESAMPLE",
    (exp.Table, "pivots"): "PIVOT / UNPIVOT",
    (exp.Table, "laterals"): "LATERAL VIEW",
    (exp.Limit, "limit_options"): "LIMIT ... WITH TIES / PERCENT",
    (exp.Ordered, "with_fill"): "ORDER BY ... WITH FILL",
    (exp.Distinct, "on"): "DISTINCT ON",
    (exp.Group, "totals"): "GROUP BY ... WITH TOTALS",
}
"""Readable names of refused arguments; others are named ``CLAUSE ARGUMENT``, and SELECT's
own by the argument (``QUALIFY``, ``WINDOWS``, ``LATERALS`` …)."""


def _name(node: exp.Expr, key: str) -> str:
    if (type(node), key) in NAMES:
        return NAMES[(type(node), key)]
    if isinstance(node, exp.Select):
        return key.rstrip("_").upper()
    return f"{type(node).__name__.upper()} {key.rstrip('_').upper()}"


def refuse_unknown(tree: exp.Expr) -> None:
    """Refuse any clause argument the translator has no translation for."""
    for node in _clauses(tree):
        for key in node.args:
            if present(node, key) and key not in SUPPORTED[type(node)]:
                value = node.args[key]
                where = value if isinstance(value, exp.Expr) else node
                raise unsupported(_name(node, key), where)


def refuse_unconsumed(tree: exp.Expr, consumed: Consumption) -> None:
    """Refuse any present clause argument the translator did not consume."""
    for node in _clauses(tree):
        for key in node.args:
            if present(node, key) and not consumed.used(node, key):
                value = node.args[key]
                where = value if isinstance(value, exp.Expr) else node
                raise unsupported(
                    _name(node, key), where, "the translator has no use for it in this position"
                )
