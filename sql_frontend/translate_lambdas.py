"""Higher-order functions and their lambdas → scalar expressions (a mixin of the expression
translator).

A lambda ``(x, i) -> body`` is translated where it stands: its parameters are in scope while
its body is read, the body may read the row's columns too (Spark allows outer references), and
each parameter becomes a ``lambda_var`` call naming how many lambda variables are bound after
it (:mod:`sql_frontend.expressions.higher_order` appends them, in order, to the batch the body
is evaluated over). The function's call carries the body as an argument: a lambda is never a
value of its own. Types are Spark's: the element type for array lambdas, key and value types
for map lambdas, INT for an index; ``filter``/``exists``/``forall``/``map_filter`` need a
BOOLEAN body, ``aggregate``'s merge must keep the accumulator's type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from sql_frontend.positions import analysis_error, unsupported
from sql_frontend.scalar import Call, Lit, Scalar, cast_to
from sql_frontend.sql_types import BOOLEAN, INT, NULL, STRING, SqlType, array_of, map_of

_ANONYMOUS = (
    "exists",
    "forall",
    "zip_with",
    "map_filter",
    "transform_keys",
    "transform_values",
    "map_zip_with",
)
HIGHER_ORDER_NAMES = (
    "transform",
    "filter",
    "exists",
    "forall",
    "aggregate",
    "reduce",
    "zip_with",
    "array_sort",
    "map_filter",
    "transform_keys",
    "transform_values",
    "map_zip_with",
)


def _mismatch(name: str, what: str, node: exp.Expr, t: SqlType) -> Exception:
    return analysis_error(
        f"[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] {name} needs {what}, not {t}", node, name
    )


def _missing() -> exp.Expr:
    """A lambda argument that is not there."""
    null = exp.Null()
    null.meta["missing"] = True
    return null


def _arity(lam: exp.Expr | None, types: int) -> int:
    """How many variables a function binds for ``lam``: its parameters, or all ``types`` for
    an expression that is not a lambda (it ignores them)."""
    return len(lam.expressions) if isinstance(lam, exp.Lambda) else types


class HigherOrderFunctions:
    """Translation of higher-order functions (mixed into ``ExprTranslator``)."""

    if TYPE_CHECKING:

        def __call__(self, node: exp.Expr) -> Scalar: ...

    @property
    def lambda_scopes(self) -> list[list[tuple[str, SqlType]]]:
        """The parameters of the lambdas being read, outermost first."""
        return self.__dict__.setdefault("_lambda_scopes", [])

    def lambda_body(
        self, lam: exp.Expr | None, types: list[SqlType], name: str, least: int = 1
    ) -> Scalar:
        """The body of lambda ``lam`` whose parameters have ``types`` (it may name the first
        ``least`` to ``len(types)`` of them)."""
        if lam is None or (isinstance(lam, exp.Null) and lam.meta.get("missing")):
            raise analysis_error(
                f"[WRONG_NUM_ARGS] {name} takes a lambda function such as x -> ...", None, name
            )
        if not isinstance(lam, exp.Lambda):
            # Spark reads any other expression as a lambda that ignores its parameters
            self.lambda_scopes.append([("\x00", t) for t in types])
            try:
                return self(lam)
            finally:
                self.lambda_scopes.pop()
        params = [i.name for i in lam.expressions]
        if not least <= len(params) <= len(types):
            want = str(len(types)) if least == len(types) else f"{least} or {len(types)}"
            raise analysis_error(
                f"[INVALID_LAMBDA_FUNCTION_CALL.NUM_ARGS_MISMATCH] the lambda of {name} takes "
                f"{want} parameter(s), not {len(params)}",
                lam,
                name,
            )
        self.lambda_scopes.append(list(zip(params, types, strict=False)))
        try:
            return self(lam.this)
        finally:
            self.lambda_scopes.pop()

    def _Identifier(self, node: exp.Identifier) -> Scalar:
        after = 0
        for scope in reversed(self.lambda_scopes):
            for pname, t in reversed(scope):
                if pname.lower() == node.name.lower():
                    return Call("lambda_var", (Lit(after, INT), Lit(pname, STRING)), t)
                after += 1
        raise unsupported(f"name {node.name}", node, "a lambda variable is used outside its lambda")

    # ------------------------------------------------------------ the functions
    def higher_order_call(self, node: exp.Expr) -> Scalar | None:
        """A higher-order function call, or None when ``node`` is not one."""
        if isinstance(node, exp.Anonymous):
            name = str(node.name).lower()
            args = list(node.expressions)
            return getattr(self, f"hof_{name}")(node, args) if name in _ANONYMOUS else None
        if isinstance(node, exp.ArraySort) and "asc" in node.args:
            return None  # sort_array(a[, asc]): sqlglot's node for it too, a registry function
        if not isinstance(node, exp.Transform | exp.ArrayFilter | exp.Exists | exp.ArraySort):
            return self.hof_aggregate_of(node) if isinstance(node, exp.Reduce) else None
        lam: exp.Expr = node.args.get("expression") or _missing()
        if isinstance(node, exp.Transform):
            return self.hof_transform(node, [node.this, lam])
        if isinstance(node, exp.ArrayFilter):
            return self.hof_filter(node, [node.this, lam])
        if isinstance(node, exp.Exists) and node.args.get("expression") is not None:
            return self.hof_exists(node, [node.this, lam])
        if isinstance(node, exp.ArraySort):
            if not isinstance(lam, exp.Lambda):
                a = self.array_arg(node, node.this, "array_sort")
                return Call("array_sort_natural", (a,), a.type)
            return self.hof_array_sort(node, [node.this, lam])
        return None

    def hof_aggregate_of(self, node: exp.Reduce) -> Scalar:
        args = [node.this, node.args.get("initial"), node.args.get("merge")]
        return self.hof_aggregate(node, [*args, node.args.get("finish")])

    def array_arg(self, node: exp.Expr, arg: exp.Expr, name: str) -> Scalar:
        a = self(arg)
        if a.type == NULL:
            return cast_to(a, array_of(NULL))
        if a.type.name != "ARRAY":
            raise _mismatch(name, "an ARRAY", node, a.type)
        return a

    def map_arg(self, node: exp.Expr, arg: exp.Expr, name: str) -> Scalar:
        a = self(arg)
        if a.type.name != "MAP":
            raise _mismatch(name, "a MAP", node, a.type)
        return a

    def predicate(self, body: Scalar, node: exp.Expr, name: str) -> Scalar:
        if body.type not in (BOOLEAN, NULL):
            raise _mismatch(name, "a lambda returning BOOLEAN", node, body.type)
        return cast_to(body, BOOLEAN)

    def hof_transform(self, node: exp.Expr, args: list[exp.Expr]) -> Scalar:
        a = self.array_arg(node, args[0], "transform")
        lam = args[1] if len(args) > 1 else None
        body = self.lambda_body(lam, [a.type.element, INT], "transform")
        n = _arity(lam, 2)
        return Call("transform", (a, Lit(n, INT), body), array_of(body.type))

    def hof_filter(self, node: exp.Expr, args: list[exp.Expr]) -> Scalar:
        a = self.array_arg(node, args[0], "filter")
        lam = args[1] if len(args) > 1 else None
        body = self.predicate(
            self.lambda_body(lam, [a.type.element, INT], "filter"), node, "filter"
        )
        n = _arity(lam, 2)
        return Call("filter", (a, Lit(n, INT), body), a.type)

    def hof_exists(self, node: exp.Expr, args: list[exp.Expr]) -> Scalar:
        return self.quantified(node, args, "exists", "exists_lambda")

    def hof_forall(self, node: exp.Expr, args: list[exp.Expr]) -> Scalar:
        return self.quantified(node, args, "forall", "forall")

    def quantified(self, node: exp.Expr, args: list[exp.Expr], name: str, op: str) -> Scalar:
        if len(args) != 2:
            raise analysis_error(f"[WRONG_NUM_ARGS] {name} takes 2 arguments", node, name)
        a = self.array_arg(node, args[0], name)
        body = self.predicate(self.lambda_body(args[1], [a.type.element], name), node, name)
        return Call(op, (a, Lit(1, INT), body), BOOLEAN)

    def hof_aggregate(self, node: exp.Expr, args: list[exp.Expr | None]) -> Scalar:
        name = "aggregate"
        if args[0] is None or args[1] is None or args[2] is None:
            raise analysis_error(f"[WRONG_NUM_ARGS] {name} takes 3 or 4 arguments", node, name)
        a = self.array_arg(node, args[0], name)
        zero = self(args[1])
        merge = self.lambda_body(args[2], [zero.type, a.type.element], name, least=2)
        if merge.type != zero.type:
            raise analysis_error(
                f"[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] the merge lambda of {name} returns "
                f"{merge.type} but the start value is {zero.type}; write the start value as "
                f"CAST(... AS {merge.type})",
                node,
                name,
            )
        parts: tuple[Scalar, ...] = (a, zero, merge)
        t = zero.type
        if args[3] is not None:
            finish = self.lambda_body(args[3], [zero.type], name)
            parts, t = (*parts, finish), finish.type
        return Call("aggregate", parts, t)

    def hof_zip_with(self, node: exp.Expr, args: list[exp.Expr]) -> Scalar:
        if len(args) != 3:
            raise analysis_error("[WRONG_NUM_ARGS] zip_with takes 3 arguments", node, "zip_with")
        a = self.array_arg(node, args[0], "zip_with")
        b = self.array_arg(node, args[1], "zip_with")
        body = self.lambda_body(args[2], [a.type.element, b.type.element], "zip_with", least=2)
        return Call("zip_with", (a, b, body), array_of(body.type))

    def hof_array_sort(self, node: exp.Expr, args: list[exp.Expr]) -> Scalar:
        a = self.array_arg(node, args[0], "array_sort")
        el = a.type.element
        body = self.lambda_body(args[1], [el, el], "array_sort", least=2)
        if body.type != INT:
            raise analysis_error(
                f"[DATATYPE_MISMATCH.UNEXPECTED_RETURN_TYPE] the comparator of array_sort must "
                f"return INT, not {body.type}; write CAST(... AS INT)",
                node,
                "array_sort",
            )
        return Call("array_sort_lambda", (a, Lit(2, INT), body), a.type)

    def map_lambda(self, node: exp.Expr, args: list[exp.Expr], name: str) -> tuple[Scalar, Scalar]:
        if len(args) != 2:
            raise analysis_error(f"[WRONG_NUM_ARGS] {name} takes 2 arguments", node, name)
        m = self.map_arg(node, args[0], name)
        return m, self.lambda_body(args[1], [m.type.key, m.type.value], name, least=2)

    def hof_map_filter(self, node: exp.Expr, args: list[exp.Expr]) -> Scalar:
        m, body = self.map_lambda(node, args, "map_filter")
        body = self.predicate(body, node, "map_filter")
        return Call("map_filter", (m, Lit(2, INT), body), m.type)

    def hof_transform_keys(self, node: exp.Expr, args: list[exp.Expr]) -> Scalar:
        m, body = self.map_lambda(node, args, "transform_keys")
        return Call("transform_keys", (m, Lit(2, INT), body), map_of(body.type, m.type.value))

    def hof_transform_values(self, node: exp.Expr, args: list[exp.Expr]) -> Scalar:
        m, body = self.map_lambda(node, args, "transform_values")
        return Call("transform_values", (m, Lit(2, INT), body), map_of(m.type.key, body.type))

    def hof_map_zip_with(self, node: exp.Expr, args: list[exp.Expr]) -> Scalar:
        name = "map_zip_with"
        if len(args) != 3:
            raise analysis_error(f"[WRONG_NUM_ARGS] {name} takes 3 arguments", node, name)
        m1, m2 = self.map_arg(node, args[0], name), self.map_arg(node, args[1], name)
        if m1.type.key != m2.type.key:
            raise analysis_error(
                f"[DATATYPE_MISMATCH.MAP_ZIP_WITH_DIFF_TYPES] the maps of {name} have keys of "
                f"types {m1.type.key} and {m2.type.key}; cast one map's keys",
                node,
                name,
            )
        types = [m1.type.key, m1.type.value, m2.type.value]
        body = self.lambda_body(args[2], types, name, least=3)
        return Call(name, (m1, m2, body), map_of(m1.type.key, body.type))
