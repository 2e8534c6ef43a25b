"""``LATERAL VIEW f(...) t`` without column names gets Spark's default names, before names
are resolved (sqlglot's qualifier knows a lateral view's columns only by its ``AS`` list).

Spark's defaults: ``c0, c1, ...`` for ``json_tuple``, ``col0, col1, ...`` for ``stack``,
``col`` for ``explode`` (``key, value`` over a map) and ``pos`` before it for ``posexplode``.
A map is recognised by its constructor or the catalog type of a column; ``inline``'s names are
its structs' fields, known only after typing, so its columns must be named in the query when
they are referred to unqualified.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from sql_frontend.translate_generators import generator_of

_MAP_FUNCTIONS = frozenset(
    {"map", "map_from_arrays", "map_from_entries", "str_to_map", "map_concat", "map_filter"}
)


def _is_map(arg: exp.Expr, columns: Mapping[str, Mapping[str, str]]) -> bool:
    if isinstance(arg, exp.Column):
        types = [
            cols.get(arg.name) for t, cols in columns.items() if not arg.table or t == arg.table
        ]
        return any(t is not None and t.upper().startswith("MAP") for t in types)
    name = arg.name if isinstance(arg, exp.Anonymous) else type(arg).__name__
    return (
        isinstance(arg, exp.Map | exp.VarMap | exp.ToMap | exp.StrToMap | exp.MapFromEntries)
        or name.lower() in _MAP_FUNCTIONS
    )


def default_names(call: exp.Expr, columns: Mapping[str, Mapping[str, str]]) -> list[str] | None:
    """Spark's names of the columns generator ``call`` yields, where known before typing."""
    found = generator_of(call)
    if found is None:
        return None
    name, _, args = found
    if name == "json_tuple":
        return [f"c{i}" for i in range(len(args) - 1)]
    if name == "stack":
        if not args or not isinstance(args[0], exp.Literal) or args[0].is_string:
            return None
        rows = max(int(args[0].this), 1)
        return [f"col{i}" for i in range(-(-(len(args) - 1) // rows))]
    if name in ("explode", "posexplode") and args:
        cols = ["key", "value"] if _is_map(args[0], columns) else ["col"]
        return ["pos", *cols] if name == "posexplode" else cols
    return None


def lateral_view_names(tree: exp.Expr, columns: Mapping[str, Mapping[str, str]]) -> exp.Expr:
    """``tree`` with Spark's default column names on its unnamed LATERAL VIEWs."""
    lowered = {t.lower(): {c.lower(): ty for c, ty in cols.items()} for t, cols in columns.items()}
    for lat in tree.find_all(exp.Lateral):
        alias = lat.args.get("alias")
        if not lat.args.get("view") or not isinstance(alias, exp.TableAlias) or alias.columns:
            continue
        names = default_names(lat.this, lowered)
        if names:
            alias.set("columns", [exp.to_identifier(n) for n in names])
    return tree
