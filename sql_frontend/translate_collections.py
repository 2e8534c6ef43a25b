"""Typing of Spark's array and map functions (registry entries with ``typing="collection"``):
a mixin of :class:`sql_frontend.translate_expr.ExprTranslator`.

Elements compared with a value (``array_contains``, ``array_position``, ``array_remove``,
``array_append`` ...) and the arrays of set operations are brought to their common type
without STRING promotion, as Spark's ``findWiderTypeWithoutStringPromotion`` does.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sqlglot import exp

from sql_frontend import coercion
from sql_frontend import sql_types as T
from sql_frontend.errors import SqlAnalysisError
from sql_frontend.positions import analysis_error
from sql_frontend.scalar import Call, Lit, Scalar, cast_to

if TYPE_CHECKING:
    from sql_frontend.expressions.registry import Fn

ARITY: dict[str, tuple[int, int]] = {
    **dict.fromkeys(
        [
            "array_distinct",
            "array_max",
            "array_min",
            "array_compact",
            "flatten",
            "map_keys",
            "map_values",
            "map_entries",
            "map_from_entries",
        ],
        (1, 1),
    ),
    **dict.fromkeys(
        [
            "array_contains",
            "array_position",
            "array_remove",
            "array_append",
            "array_prepend",
            "array_except",
            "array_intersect",
            "array_union",
            "arrays_overlap",
            "array_repeat",
            "get",
            "map_contains_key",
            "map_from_arrays",
        ],
        (2, 2),
    ),
    "array_insert": (3, 3),
    "slice": (3, 3),
    "sort_array": (1, 2),
    "array_join": (2, 3),
    "sequence": (2, 3),
    "split": (2, 3),
    "regexp_extract_all": (2, 3),
    "str_to_map": (1, 3),
    "arrays_zip": (1, 1000),
    "vector_cosine_similarity": (2, 2),
    "vector_inner_product": (2, 2),
    "vector_l2_distance": (2, 2),
    "vector_norm": (1, 2),
    "vector_normalize": (1, 2),
    "get_json_object": (2, 2),
    "json_object_keys": (1, 1),
    "to_json": (1, 1),
    "from_json": (2, 2),
    "schema_of_json": (1, 1),
    "map_concat": (1, 1000),
}
_ELEMENT_AND_VALUE = {
    "array_contains": T.BOOLEAN,
    "array_position": T.BIGINT,
    "array_remove": None,
    "array_append": None,
    "array_prepend": None,
}
_SET_OPS = {
    "array_except": None,
    "array_intersect": None,
    "array_union": None,
    "arrays_overlap": T.BOOLEAN,
}


class CollectionTyping:
    """``typing_collection`` for :class:`ExprTranslator`."""

    if TYPE_CHECKING:

        def _arg_nodes(self, node: exp.Expr) -> list[exp.Expr]: ...

    def typing_collection(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        lo, hi = ARITY[name]
        if not lo <= len(args) <= hi:
            shown = str(lo) if lo == hi else f"{lo}..{hi}"
            raise analysis_error(f"[WRONG_NUM_ARGS] {name} takes {shown} arguments", node, name)
        if name in _ELEMENT_AND_VALUE:
            a, v = self._array(node, name, args[0]), args[1]
            if name == "array_contains" and v.type == T.NULL:
                raise coercion.mismatch(f"{name} (a NULL to look for)", [a.type, v.type])
            t = coercion.common_type_no_strings([a.type.element, v.type], name)
            a, v = cast_to(a, T.array_of(t)), cast_to(v, t)
            return Call(fn.op, (a, v), _ELEMENT_AND_VALUE[name] or a.type)
        if name in _SET_OPS:
            a, b = (self._array(node, name, x) for x in args)
            t = coercion.common_type_no_strings([a.type, b.type], name)
            return Call(fn.op, (cast_to(a, t), cast_to(b, t)), _SET_OPS[name] or t)
        if name.startswith("vector_"):
            return self._vectors(node, name, args)
        return getattr(self, f"_type_{name}")(node, name, args)

    @staticmethod
    def _vectors(node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        """``vector_*``: ARRAY<FLOAT> vectors only (as Spark: no implicit cast), the degree of
        a norm a FLOAT (default 2)."""
        float_array = T.array_of(T.SqlType("FLOAT"))
        two = name in ("vector_cosine_similarity", "vector_inner_product", "vector_l2_distance")
        vectors = args if two else args[:1]
        for v in vectors:
            if v.type not in (float_array, T.NULL):
                raise coercion.mismatch(f"{name} (it takes ARRAY<FLOAT>)", [v.type])
        rest: tuple[Scalar, ...] = ()
        if not two:
            degree = args[1] if len(args) > 1 else Lit(2.0, T.DOUBLE)
            if not (degree.type.is_numeric or degree.type == T.NULL):
                raise coercion.mismatch(name, [degree.type])
            rest = (cast_to(degree, T.DOUBLE),)
        typed = tuple(cast_to(v, float_array) for v in vectors) + rest
        result = float_array if name == "vector_normalize" else T.SqlType("FLOAT")
        return Call(name, typed, result)

    @staticmethod
    def _array(node: exp.Expr, name: str, a: Scalar) -> Scalar:
        if a.type == T.NULL:
            return cast_to(a, T.array_of(T.NULL))
        if a.type.name != "ARRAY":
            raise coercion.mismatch(name, [a.type])
        return a

    @staticmethod
    def _map(node: exp.Expr, name: str, m: Scalar) -> Scalar:
        if m.type == T.NULL:
            return cast_to(m, T.map_of(T.NULL, T.NULL))
        if m.type.name != "MAP":
            raise coercion.mismatch(name, [m.type])
        return m

    @staticmethod
    def _int(x: Scalar, name: str, null: bool = True) -> Scalar:
        if x.type.name not in ("TINYINT", "SMALLINT", "INT", *(["NULL"] if null else [])):
            raise coercion.mismatch(name, [x.type])
        return cast_to(x, T.INT)

    def _one_array(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        a = self._array(node, name, args[0])
        result = a.type.element if name in ("array_max", "array_min") else a.type
        return Call(name, (a,), result)

    _type_array_distinct = _type_array_max = _type_array_min = _one_array
    _type_array_compact = _one_array

    def _type_flatten(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        a = self._array(node, name, args[0])
        if a.type.element.name != "ARRAY":
            raise coercion.mismatch(name, [a.type])
        return Call(name, (a,), a.type.element)

    def _type_get(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        a = self._array(node, name, args[0])
        return Call(name, (a, self._int(args[1], name)), a.type.element)

    def _type_slice(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        a = self._array(node, name, args[0])
        return Call(name, (a, self._int(args[1], name), self._int(args[2], name)), a.type)

    def _type_array_insert(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        a, pos, v = self._array(node, name, args[0]), self._int(args[1], name, False), args[2]
        t = coercion.common_type_no_strings([a.type.element, v.type], name)
        a = cast_to(a, T.array_of(t))
        return Call(name, (a, pos, cast_to(v, t)), a.type)

    def _type_sort_array(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        a = self._array(node, name, args[0])
        asc = args[1] if len(args) > 1 else Lit(True, T.BOOLEAN)
        if not (isinstance(asc, Lit) and asc.type == T.BOOLEAN and asc.value is not None):
            raise analysis_error(
                "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] sort_array: the order must be a "
                "constant true (ascending) or false",
                node,
                name,
            )
        if a.type.element.is_nested and a.type.element.name == "MAP":
            raise coercion.mismatch(name, [a.type])
        return Call(name, (a, asc), a.type)

    def _type_array_join(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        a = self._array(node, name, args[0])
        if a.type.element not in (T.STRING, T.NULL):
            raise coercion.mismatch(name, [a.type])
        rest = [cast_to(x, T.STRING) for x in args[1:]]
        return Call(name, (cast_to(a, T.array_of(T.STRING)), *rest), T.STRING)

    def _type_array_repeat(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        return Call(name, (args[0], self._int(args[1], name)), T.array_of(args[0].type))

    def _type_sequence(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        if not all(a.type.is_integral or a.type == T.NULL for a in args):
            raise analysis_error(
                "sequence of dates or timestamps (with an INTERVAL step) is not supported; "
                "write sequence(start, stop[, step]) over integers",
                node,
                name,
            )
        t = coercion.common_type_no_strings([a.type for a in args[:2]], name)
        t = T.INT if t == T.NULL else t
        step = cast_to(args[2], t) if len(args) > 2 else Lit(None, t)
        return Call(name, (cast_to(args[0], t), cast_to(args[1], t), step), T.array_of(t))

    def _type_arrays_zip(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        arrays = [self._array(node, name, a) for a in args]
        nodes = self._arg_nodes(node)
        names = [n.name if isinstance(n, exp.Column) else str(i) for i, n in enumerate(nodes)]
        t = T.struct_of([(n, a.type.element) for n, a in zip(names, arrays, strict=True)])
        return Call(name, tuple(arrays), T.array_of(t))

    def _type_map_keys(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        m = self._map(node, name, args[0])
        return Call(name, (m,), T.array_of(m.type.key))

    def _type_map_values(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        m = self._map(node, name, args[0])
        return Call(name, (m,), T.array_of(m.type.value))

    def _type_map_entries(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        m = self._map(node, name, args[0])
        entry = T.struct_of([("key", m.type.key), ("value", m.type.value)])
        return Call(name, (m,), T.array_of(entry))

    def _type_map_contains_key(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        m = self._map(node, name, args[0])
        t = coercion.common_type_no_strings([m.type.key, args[1].type], name)
        m = cast_to(m, T.map_of(t, m.type.value))
        return Call(name, (m, cast_to(args[1], t)), T.BOOLEAN)

    def _type_map_concat(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        maps = [self._map(node, name, m) for m in args]
        t = coercion.common_type_no_strings([m.type for m in maps], name)
        return Call(name, tuple(cast_to(m, t) for m in maps), t)

    def _type_map_from_arrays(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        k, v = (self._array(node, name, a) for a in args)
        return Call(name, (k, v), T.map_of(k.type.element, v.type.element))

    def _type_map_from_entries(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        a = self._array(node, name, args[0])
        entry = a.type.element
        if entry.name != "STRUCT" or len(entry.children) != 2:
            raise coercion.mismatch(name, [a.type])
        return Call(name, (a,), T.map_of(*entry.children))

    def _type_str_to_map(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        full = [*args, Lit(",", T.STRING), Lit(":", T.STRING)][:3]
        typed = tuple(cast_to(a, T.STRING) for a in full)
        return Call(name, typed, T.map_of(T.STRING, T.STRING))

    def _type_split(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        s, p = (cast_to(a, T.STRING) for a in args[:2])
        limit = self._int(args[2], name) if len(args) > 2 else Lit(-1, T.INT)
        return Call(name, (s, p, limit), T.array_of(T.STRING))

    def _type_regexp_extract_all(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        s, p = (cast_to(a, T.STRING) for a in args[:2])
        idx = self._int(args[2], name) if len(args) > 2 else Lit(1, T.INT)
        return Call(name, (s, p, idx), T.array_of(T.STRING))

    def _type_get_json_object(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        return Call(name, tuple(cast_to(a, T.STRING) for a in args), T.STRING)

    def _type_json_object_keys(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        return Call(name, (cast_to(args[0], T.STRING),), T.array_of(T.STRING))

    def _type_to_json(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        if not args[0].type.is_nested:
            raise coercion.mismatch(name, [args[0].type])
        return Call(name, (args[0],), T.STRING)

    def _type_from_json(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        text = self._constant_text(node, name, args[1], "a schema such as 'a INT, b STRING'")
        nested = re.match(r"\s*(struct|array|map)\s*<", text, re.IGNORECASE)
        try:
            t = T.parse_type(text if nested else f"STRUCT<{text}>")
        except SqlAnalysisError:
            raise analysis_error(
                f"[INVALID_SCHEMA] from_json: cannot read the schema {text!r}; write "
                "'a INT, b STRING' or 'ARRAY<INT>'",
                node,
                name,
            ) from None
        return Call(name, (cast_to(args[0], T.STRING),), t)

    def _type_schema_of_json(self, node: exp.Expr, name: str, args: list[Scalar]) -> Scalar:
        self._constant_text(node, name, args[0], "a JSON literal")
        return Call(name, (args[0],), T.STRING)

    @staticmethod
    def _constant_text(node: exp.Expr, name: str, a: Scalar, what: str) -> str:
        if not (isinstance(a, Lit) and isinstance(a.value, str)):
            raise analysis_error(
                f"[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] {name} takes {what} as a constant string",
                node,
                name,
            )
        return a.value
