"""Translation of ARRAY, MAP and STRUCT constructors and accessors with Spark's typing: a
mixin of :class:`sql_frontend.translate_expr.ExprTranslator`.

``array(...)`` takes its elements' common type, ``map(k, v, ...)`` its keys' and values',
``struct``/``named_struct`` name their fields as Spark does (a column keeps its name, any other
expression is ``col<i>``); ``a[i]`` counts from 0 and ``element_at`` from 1 (from the end when
negative), ``m[k]`` is NULL for a missing key, ``s.f`` finds a field case-insensitively.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from sql_frontend import coercion
from sql_frontend import sql_types as T
from sql_frontend.errors import SqlAnalysisError
from sql_frontend.positions import analysis_error
from sql_frontend.scalar import Call, Lit, Scalar, cast_to

if TYPE_CHECKING:
    from sql_frontend.expressions.registry import Fn


def refuse_maps(types: list[T.SqlType], what: str, node: exp.Expr | None) -> None:
    """Spark compares, groups and deduplicates arrays and structs but no MAP: refuse one named
    by the user's words, saying what to write instead."""
    for t in types:
        if t.has_map:
            words = node.sql(dialect="spark") if node is not None else what
            err = (
                f"[DATATYPE_MISMATCH.INVALID_ORDERING_TYPE] {what} of {t} in {words}: maps "
                "cannot be compared, grouped or deduplicated in Spark; use map_entries(m) or "
                "sort_array(map_entries(m)) instead"
            )
            if node is None:
                raise SqlAnalysisError(err, construct=what)
            raise analysis_error(err, node, what)


class NestedTranslation:
    """``_Array``, ``_VarMap``, ``_Struct``, ``_Bracket``, ``_Dot`` ... for ExprTranslator."""

    if TYPE_CHECKING:

        def __call__(self, node: exp.Expr) -> Scalar: ...

    def typing_nested(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """Registry functions on nested values that sqlglot leaves anonymous."""
        if fn.op == "size":
            if len(args) != 1:
                raise analysis_error(f"[WRONG_NUM_ARGS] {name} takes 1 argument", node, name)
            return self.size_of(args[0], node, name)
        raise analysis_error(f"{name} is not available here", node, name)

    def _Array(self, node: exp.Array) -> Scalar:
        return self.array_of([self(e) for e in node.expressions])

    def array_of(self, items: list[Scalar]) -> Scalar:
        t = coercion.common_type([e.type for e in items], "array")
        if not items:
            return Lit((), T.array_of(t))
        return Call("array", tuple(cast_to(e, t) for e in items), T.array_of(t))

    def _VarMap(self, node: exp.VarMap) -> Scalar:
        keys, values = node.args.get("keys"), node.args.get("values")
        ks = [self(k) for k in keys.expressions] if isinstance(keys, exp.Array) else []
        vs = [self(v) for v in values.expressions] if isinstance(values, exp.Array) else []
        return self.map_of(ks, vs, node)

    def _Map(self, node: exp.Expr) -> Scalar:
        """``map(...)`` of constants, or ``map_from_arrays(keys, values)``."""
        keys, values = node.args.get("keys"), node.args.get("values")
        if (isinstance(keys, exp.Array) and isinstance(values, exp.Array)) or keys is None:
            return self._VarMap(node)  # type: ignore[arg-type]
        from sql_frontend.expressions.registry import FUNCTIONS

        args = [self(keys), self(values)]  # type: ignore[arg-type]
        fn = FUNCTIONS["map_from_arrays"]
        return self.typing_collection(node, "map_from_arrays", fn, args)  # type: ignore[attr-defined]

    def map_of(self, keys: list[Scalar], values: list[Scalar], node: exp.Expr) -> Scalar:
        if len(keys) != len(values):
            raise analysis_error(
                "[WRONG_NUM_ARGS] map takes an even number of arguments (key, value, ...)",
                node,
                "map",
            )
        kt = coercion.common_type([k.type for k in keys], "map keys")
        vt = coercion.common_type([v.type for v in values], "map values")
        if kt.name == "MAP":
            raise analysis_error(
                "[DATATYPE_MISMATCH.INVALID_MAP_KEY_TYPE] a map cannot be a map's key",
                node,
                "map",
            )
        if not keys:
            return Lit((), T.map_of(kt, vt))
        args: list[Scalar] = []
        for k, v in zip(keys, values, strict=True):
            args += [cast_to(k, kt), cast_to(v, vt)]
        return Call("map", tuple(args), T.map_of(kt, vt))

    def _Struct(self, node: exp.Struct) -> Scalar:
        fields: list[tuple[str, Scalar]] = []
        for i, e in enumerate(node.expressions):
            if isinstance(e, exp.PropertyEQ):
                fields.append((e.this.name, self(e.expression)))
            elif isinstance(e, exp.Alias):
                fields.append((e.alias, self(e.this)))
            elif isinstance(e, exp.Column):
                fields.append((e.name, self(e)))
            else:
                fields.append((f"col{i + 1}", self(e)))
        t = T.struct_of([(n, v.type) for n, v in fields])
        if not fields:
            return Lit((), t)
        return Call("struct", tuple(v for _, v in fields), t)

    def _Bracket(self, node: exp.Bracket) -> Scalar:
        if len(node.expressions) != 1:
            raise analysis_error("a subscript takes one index or key", node, "[]")
        base, key = self(node.this), self(node.expressions[0])
        one_based = node.args.get("offset") == 1
        safe = bool(node.args.get("safe"))
        if base.type.name == "MAP":
            coercion.comparison_type(base.type.key, key.type, "map key")
            return Call("map_value", (base, cast_to(key, base.type.key)), base.type.value)
        if base.type.name != "ARRAY":
            what = "element_at" if one_based else "[]"
            raise coercion.mismatch(what, [base.type, key.type])
        small = ("TINYINT", "SMALLINT", "INT")  # element_at takes no BIGINT (nor NULL) index
        if not (key.type.name in small or (not one_based and key.type.name in ("BIGINT", "NULL"))):
            raise coercion.mismatch("element_at" if one_based else "array index", [key.type])
        op = ("try_element_at" if safe else "element_at") if one_based else "array_index"
        return Call(op, (base, cast_to(key, T.INT)), base.type.element)

    def _Dot(self, node: exp.Dot) -> Scalar:
        base = self(node.this)
        name = node.expression.name
        words = node.sql(dialect="spark")
        if base.type.name != "STRUCT":
            raise analysis_error(
                f"[INVALID_EXTRACT_BASE_FIELD_TYPE] {words}: {base.type} has no fields (only a "
                "STRUCT has; read an ARRAY's elements with a[i] or element_at, a MAP's with m[key])",
                node,
                words,
            )
        found = base.type.field_type(name)
        if found is None:
            raise analysis_error(
                f"[FIELD_NOT_FOUND] {words}: no field {name!r} in {base.type}; write one of "
                + ", ".join(base.type.fields),
                node,
                words,
            )
        pos, t = found
        return Call("struct_field", (base, Lit(pos, T.INT)), t)

    def _JSONPath(self, node: exp.JSONPath) -> Scalar:
        """A JSON path sqlglot has parsed (``get_json_object``'s): its text again."""
        text = node.sql(dialect="spark")
        return Lit(text[1:-1] if text.startswith("'") else text, T.STRING)

    def _ArraySize(self, node: exp.ArraySize) -> Scalar:
        return self.size_of(self(node.this), node, "size")

    def size_of(self, a: Scalar, node: exp.Expr, name: str) -> Scalar:
        allowed = ("ARRAY",) if name == "array_size" else ("ARRAY", "MAP")
        if a.type == T.NULL:
            return Lit(None, T.INT)
        if a.type.name not in allowed:
            raise coercion.mismatch(name, [a.type])
        return Call("size", (a,), T.INT)
