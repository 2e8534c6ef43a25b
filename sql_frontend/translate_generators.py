"""Generators in a query → :class:`sql_frontend.plan.Generate` nodes.

Spark runs a generator (``explode``, ``stack``, ``json_tuple`` ...) in two places: in the SELECT
list (``SELECT k, explode(a) AS x``; several generators there nest, the first outermost) and
in ``LATERAL VIEW [OUTER] f(...) alias AS c1, c2`` after FROM (before WHERE). Both become a
``Generate`` over the query's rows; the generator's columns are then ordinary columns. A
generator nested inside an expression, or outside SELECT and LATERAL VIEW, is refused, as
Spark refuses it. Column names are Spark's (``col``, ``pos``, ``key``/``value``, ``col0``...
for stack, ``c0``... for json_tuple) unless the query names them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
from sqlglot import exp

from sql_frontend import plan as p
from sql_frontend import scalar as sc
from sql_frontend.expressions.generators import stack_types
from sql_frontend.positions import analysis_error, unsupported
from sql_frontend.scalar import Lit, Scalar
from sql_frontend.sql_types import INT, STRING

_NODES: dict[type[exp.Expr], tuple[str, bool]] = {
    exp.Explode: ("explode", False),
    exp.Posexplode: ("posexplode", False),
    exp.PosexplodeOuter: ("posexplode", True),
    exp.Inline: ("inline", False),
    exp.Stack: ("stack", False),
}
_NODES[getattr(exp, "_ExplodeOuter", exp.ExplodeOuter)] = ("explode", True)
_NODES[exp.ExplodeOuter] = ("explode", True)
_ANONYMOUS = {"inline_outer": ("inline", True), "json_tuple": ("json_tuple", False)}

GENERATOR_NAMES = (
    "explode",
    "explode_outer",
    "posexplode",
    "posexplode_outer",
    "inline",
    "inline_outer",
    "stack",
    "json_tuple",
)
"""The generators views accept (Spark's ``generator_funcs``)."""


def generator_of(node: exp.Expr) -> tuple[str, bool, list[exp.Expr]] | None:
    """``(generator, outer, argument nodes)`` of a generator call, or None."""
    if isinstance(node, exp.Anonymous):
        hit = _ANONYMOUS.get(str(node.name).lower())
        return (hit[0], hit[1], list(node.expressions)) if hit else None
    spec = _NODES.get(type(node))
    if spec is None:
        return None
    args = [node.this] if node.this is not None else []
    return spec[0], spec[1], args + list(node.expressions or [])


def is_generator(node: exp.Expr) -> bool:
    return generator_of(node) is not None


def select_generator(item: exp.Expr) -> tuple[exp.Expr, list[str] | None] | None:
    """A SELECT item that is a generator (possibly aliased): its call and the names given."""
    if isinstance(item, exp.Aliases):
        names = [i.name for i in item.expressions]
        return (item.this, names) if is_generator(item.this) else None
    if isinstance(item, exp.Alias):
        if not is_generator(item.this):
            return None
        # the analyser names an unnamed item ``_col_<i>``: Spark's defaults apply then
        return item.this, None if re.fullmatch(r"_col_\d+", item.alias) else [item.alias]
    return (item, None) if is_generator(item) else None


def refuse_nested(item: exp.Expr, where: str, top: exp.Expr | None = None) -> None:
    """Refuse a generator inside ``item`` other than ``top`` (the SELECT item's or LATERAL
    VIEW's own generator), as Spark refuses it."""
    for node in item.walk():
        found = generator_of(node) if node is not top else None
        if found is None:
            continue
        name = found[0]
        if top is not None:
            raise unsupported(
                f"generator {name} nested in an expression",
                node,
                f"[UNSUPPORTED_GENERATOR.NESTED_IN_EXPRESSIONS] apply {name} as a SELECT "
                f"item of its own or in LATERAL VIEW {name}(...) t AS c, then use c in the "
                "expression",
            )
        raise unsupported(
            f"generator {name} in {where}",
            node,
            f"[UNSUPPORTED_GENERATOR.OUTSIDE_SELECT] write LATERAL VIEW {name}(...) t AS c "
            f"after FROM and use c in {where}",
        )


def generate(
    node: exp.Expr,
    translate: Callable[[exp.Expr], Scalar],
    below: p.Node,
    names: list[str] | None,
    outer: bool = False,
) -> p.Generate:
    """The Generate of the generator call ``node`` over ``below`` (``translate`` reads its
    arguments there); ``names`` name its columns (Spark's defaults otherwise)."""
    found = generator_of(node)
    assert found is not None
    name, outer_call, arg_nodes = found
    args = [translate(a) for a in arg_nodes]
    typer = _TYPING[name]
    args, default_names, types = typer(node, args)
    if names is not None and len(names) != len(types):
        raise analysis_error(
            f"[UDTF_ALIAS_NUMBER_MISMATCH] {name} yields {len(types)} column(s) but "
            f"{len(names)} name(s) are given; name each of {', '.join(default_names)}",
            node,
            name,
        )
    return p.Generate(
        below, name, tuple(args), tuple(names or default_names), tuple(types), outer or outer_call
    )


Typed = tuple[list[Scalar], list[str], list]


def _stack(node: exp.Expr, args: list[Scalar]) -> Typed:
    if len(args) < 2:
        raise analysis_error(
            f"[WRONG_NUM_ARGS] stack takes 2 or more arguments, not {len(args)}", node, "stack"
        )
    k = args[0]
    if sc.refs(k) or not k.type.is_integral:
        raise analysis_error(
            f"[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] stack's row count must be a constant INT, "
            f"not {k}; write stack(2, ...)",
            node,
            "stack",
        )
    count = _constant(k)
    if count is None or not 0 < int(count) <= 2**31 - 1:  # type: ignore[call-overload]
        raise analysis_error(
            f"[DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE] stack's row count must be between 1 and "
            f"2147483647, not {count}",
            node,
            "stack",
        )
    values = args[1:]
    width = -(-len(values) // int(count))  # type: ignore[call-overload]
    types = stack_types([v.type for v in values], width)
    for j, t in enumerate(types):
        if t is None:
            shown = ", ".join(str(v.type) for v in values[j::width])
            raise analysis_error(
                f"[DATATYPE_MISMATCH.STACK_COLUMN_DIFF_TYPES] column {j} of stack has values "
                f"of types {shown}; cast them to one type",
                node,
                "stack",
            )
    return [Lit(int(count), k.type), *values], [f"col{j}" for j in range(width)], types  # type: ignore[call-overload]


def _json_tuple(node: exp.Expr, args: list[Scalar]) -> Typed:
    if len(args) < 2:
        raise analysis_error(
            f"[WRONG_NUM_ARGS] json_tuple takes 2 or more arguments, not {len(args)}",
            node,
            "json_tuple",
        )
    bad = [str(a.type) for a in args if a.type != STRING]
    if bad:
        raise analysis_error(
            f"[DATATYPE_MISMATCH.NON_STRING_TYPE] all arguments of json_tuple must be strings, "
            f"not {', '.join(bad)}; cast them to STRING",
            node,
            "json_tuple",
        )
    return args, [f"c{j}" for j in range(len(args) - 1)], [STRING] * (len(args) - 1)


def _collection(node: exp.Expr, args: list[Scalar], name: str, maps: bool = True) -> Scalar:
    if len(args) != 1:
        raise analysis_error(f"[WRONG_NUM_ARGS] {name} takes 1 argument", node, name)
    a = args[0]
    if a.type.name == "ARRAY" or (maps and a.type.name == "MAP"):
        return a
    want = "an ARRAY or a MAP" if maps else "an ARRAY of STRUCTs"
    raise analysis_error(
        f"[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] {name} needs {want}, not {a.type}",
        node,
        name,
    )


def _explode(node: exp.Expr, args: list[Scalar]) -> Typed:
    a = _collection(node, args, "explode")
    if a.type.name == "MAP":
        return [a], ["key", "value"], [a.type.key, a.type.value]
    return [a], ["col"], [a.type.element]


def _posexplode(node: exp.Expr, args: list[Scalar]) -> Typed:
    _collection(node, args, "posexplode")
    _, names, types = _explode(node, args)
    return args, ["pos", *names], [INT, *types]


def _inline(node: exp.Expr, args: list[Scalar]) -> Typed:
    a = _collection(node, args, "inline", maps=False)
    if a.type.element.name != "STRUCT":
        raise analysis_error(
            f"[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] inline needs an ARRAY of STRUCTs, "
            f"not {a.type}",
            node,
            "inline",
        )
    return [a], list(a.type.element.fields), list(a.type.element.children)


_TYPING: dict[str, Callable[[exp.Expr, list[Scalar]], Typed]] = {
    "explode": _explode,
    "posexplode": _posexplode,
    "inline": _inline,
    "stack": _stack,
    "json_tuple": _json_tuple,
}


def _constant(e: Scalar) -> object:
    """The value of a constant expression."""
    from sql_frontend.expressions.evaluate import compile_scalar

    return compile_scalar(e)(np.zeros(1, dtype=object))[0]
