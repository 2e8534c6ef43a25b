"""Where a node stands in the sqlglot tree: the helpers several rewrite rules share."""

from __future__ import annotations

from sqlglot import exp


def enclosing_query(node: exp.Expr) -> exp.Expr | None:
    """The nearest SELECT or set operation above ``node`` (None at the root): the query whose
    clause ``node`` belongs to."""
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Select | exp.SetOperation):
        parent = parent.parent
    return parent
