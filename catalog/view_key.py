"""A view's key: output columns that no two of its rows share, derived from its SQL.

A view table's change data feed reports a changed row of a keyed view as an update
(``update_preimage`` + ``update_postimage``) instead of a ``delete`` + ``insert``
(catalog.change_feed).  That needs a key the view's rows are unique on, at every epoch; it is
read off the stored SQL with sqlglot, and the answer is conservative: ``None`` (no key)
whenever the query is not one of the two shapes below, or cannot be parsed.

* **Grouped**: a single ``SELECT … GROUP BY g1, …, gn`` (no set operation at the top, no
  ``ROLLUP`` / ``CUBE`` / ``GROUPING SETS`` / ``GROUP BY ALL``) whose every ``gi`` is projected
  as such — the same expression (structurally equal, same qualifier), or ``GROUP BY <ordinal>``
  — and whose select list has no ``*`` and no generator (``explode``, ``inline``, ``stack``, …).
  Why the projected ``gi`` are a key: ``GROUP BY`` yields one row per distinct value of
  ``(g1, …, gn)`` (NULLs forming one group), ``HAVING`` / ``QUALIFY`` / ``LIMIT`` / ``DISTINCT``
  only drop rows, and a window function adds a column to each row without adding rows; the
  output columns that carry ``(g1, …, gn)`` therefore differ between any two rows.
* **Global aggregate**: a single ``SELECT`` without ``GROUP BY`` whose select list has an
  aggregate outside any window: it yields at most one row, so the empty key ``()`` holds.

``SELECT DISTINCT`` alone gives no key (the key would be every column: a changed row is then
never "the same row").  Datalog views have no key.

>>> view_key("SELECT region AS r, sum(x) AS s FROM t GROUP BY region", ["r", "s"])
('r',)
>>> view_key("SELECT count(*) AS n FROM t", ["n"])
()
>>> view_key("SELECT a, b FROM t", ["a", "b"]) is None
True
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlglot import exp

Key = tuple[str, ...]

# Spark's generator functions (one input row -> many output rows), by name when sqlglot does
# not know them as a class
_GENERATORS = frozenset(
    {
        "explode",
        "explode_outer",
        "inline",
        "inline_outer",
        "posexplode",
        "posexplode_outer",
        "stack",
        "json_tuple",
        "variant_explode",
        "variant_explode_outer",
    }
)


def view_key(definition: str, columns: Sequence[str]) -> Key | None:
    """The key of the view ``definition`` whose output columns are ``columns``, or ``None``."""
    return _view_key(definition, tuple(columns))


@lru_cache(maxsize=256)
def _view_key(definition: str, columns: Key) -> Key | None:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(definition, dialect="spark")
    except (SqlglotError, ValueError, RecursionError):
        return None
    if not isinstance(tree, exp.Select):
        return None
    projections = list(tree.expressions)
    if len(projections) != len(columns) or len(set(columns)) != len(columns):
        return None
    if any(_expands(p) for p in projections):
        return None
    group = tree.args.get("group")
    if group is None:
        return () if any(_aggregates(p, tree) for p in projections) else None
    return _grouped_key(group, projections, columns)


def _grouped_key(group: exp.Group, projections: list[exp.Expression], columns: Key) -> Key | None:
    from sqlglot import exp

    others = {k: v for k, v in group.args.items() if k != "expressions" and v}
    exprs = list(group.expressions)
    if others or not exprs:
        return None
    bodies = [p.unalias() if isinstance(p, exp.Alias) else p for p in projections]
    chosen: list[int] = []
    for g in exprs:
        if isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets, exp.Tuple, exp.Paren)):
            return None
        if isinstance(g, exp.Literal) and not g.is_string:
            try:
                i = int(g.this) - 1
            except ValueError:
                return None
            if not 0 <= i < len(bodies):
                return None
            chosen.append(i)
            continue
        if isinstance(g, exp.Literal):  # GROUP BY 'a': one group, not a column
            return None
        hit = next((i for i, b in enumerate(bodies) if b == g), None)
        if hit is None:
            return None
        chosen.append(hit)
    return tuple(columns[i] for i in sorted(set(chosen)))


def _expands(node: exp.Expression) -> bool:
    """Whether a select-list item can make several rows of one (a ``*`` or a generator)."""
    from sqlglot import exp

    for n in node.walk():
        if isinstance(n, (exp.Star, exp.UDTF, exp.Stack, exp.Unnest)):
            if isinstance(n, exp.Star) and isinstance(n.parent, exp.Count):
                continue  # count(*)
            return True
        if isinstance(n, (exp.Explode, exp.Inline, exp.Posexplode)):
            return True
        if isinstance(n, exp.Anonymous) and str(n.name).lower() in _GENERATORS:
            return True
    return False


def _aggregates(node: exp.Expression, top: exp.Select) -> bool:
    """Whether a select-list item of ``top`` aggregates: an aggregate function of ``top``
    itself (not of a subquery), outside any window."""
    from sqlglot import exp

    for n in node.walk():
        if not isinstance(n, exp.AggFunc):
            continue
        if n.find_ancestor(exp.Window) is None and n.find_ancestor(exp.Select) is top:
            return True
    return False
