"""Typing rules of registry functions whose argument and result types depend on the arguments
(:attr:`sql_frontend.expressions.registry.Fn.typing`): a mixin of
:class:`sql_frontend.translate_expr.ExprTranslator`, one ``typing_<rule>`` per rule, each
given the call node, the Spark name, its entry and the translated arguments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from sql_frontend import coercion
from sql_frontend import sql_types as T
from sql_frontend.positions import analysis_error
from sql_frontend.scalar import Call, Lit, Scalar, cast_to

if TYPE_CHECKING:
    from sql_frontend.expressions.registry import Fn

_TRY_NODES: dict[str, type[exp.Expr]] = {
    "add": exp.Add,
    "sub": exp.Sub,
    "mul": exp.Mul,
    "div": exp.Div,
    "mod": exp.Mod,
}


class FunctionTyping:
    """``typing_<rule>(node, name, fn, args) -> Scalar`` for :class:`ExprTranslator`."""

    def _arity(self, node: exp.Expr, name: str, args: list[Scalar], lo: int, hi: int) -> None:
        if not lo <= len(args) <= hi:
            raise self.arity(node, name, f"{lo}..{hi}" if lo != hi else str(lo))  # type: ignore[attr-defined]

    @staticmethod
    def _arg_nodes(node: exp.Expr) -> list[exp.Expr]:
        from sql_frontend.expressions import registry

        found = registry.call_of(node)
        assert found is not None
        return found[1]

    def typing_round(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        self._arity(node, name, args, 1, 2)
        nodes = self._arg_nodes(node)
        fake = exp.Round(this=nodes[0], decimals=nodes[1] if len(nodes) > 1 else None)
        r = self._Round(fake)  # type: ignore[attr-defined]
        return Call(fn.op, r.args, r.type)

    def typing_arith(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """``pmod`` and the ``try_`` arithmetic: typed as the operator is."""
        self._arity(node, name, args, 2, 2)
        base = fn.op.removeprefix("try_") if fn.op != "pmod" else "mod"
        a, b = self._arg_nodes(node)
        inner = self.arith(base, _TRY_NODES[base](this=a, expression=b))  # type: ignore[attr-defined]
        if not isinstance(inner, Call):
            return inner
        if fn.op == "pmod":
            return Call("pmod", inner.args, inner.type)
        args2 = tuple(
            Call("try_cast", c.args, c.type) if isinstance(c, Call) and c.op == "cast" else c
            for c in inner.args
        )
        return Call(f"try_{inner.op}", args2, inner.type)

    def typing_getbit(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        self._arity(node, name, args, 2, 2)
        a = args[0]
        if a.type.name not in T.INT_BITS and a.type != T.NULL:
            raise coercion.mismatch(name, [a.type])
        bits = Lit(T.INT_BITS.get(a.type.name, 32), T.INT)
        return Call(
            "getbit", (cast_to(a, T.BIGINT), cast_to(args[1], T.INT), bits), T.SqlType("TINYINT")
        )

    def typing_variadic(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """``xxhash64`` (any types), ``elt`` (an INT, then strings), ``format_string``."""
        if fn.op == "xxhash64":
            self._arity(node, name, args, 1, 10**6)
            return Call(fn.op, tuple(args), T.BIGINT)
        if fn.op == "elt":
            self._arity(node, name, args, 2, 10**6)
            rest = tuple(cast_to(a, T.STRING) for a in args[1:])
            return Call("elt", (cast_to(args[0], T.INT), *rest), T.STRING)
        self._arity(node, name, args, 1, 10**6)
        return Call(fn.op, (cast_to(args[0], T.STRING), *args[1:]), T.STRING)

    def typing_mask(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """mask(s[, upper[, lower[, digit[, other]]]]): replacements are constant characters."""
        self._arity(node, name, args, 1, 5)
        full = [*args, *(Lit(d, T.STRING) for d in ("X", "x", "n", None)[len(args) - 1 :])]
        for r in full[1:]:
            ok = isinstance(r, Lit) and (r.value is None or len(str(r.value)) == 1)
            if not ok:
                raise coercion.mismatch(f"{name} replacement (one constant character)", [r.type])
        return Call("mask", tuple(cast_to(a, T.STRING) for a in full), T.STRING)

    def typing_assert(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """assert_true(cond[, message]) and raise_error(message): NULL, or Spark's
        USER_RAISED_EXCEPTION (a condition must be BOOLEAN)."""
        if fn.op == "raise_error":
            self._arity(node, name, args, 1, 1)
            return Call("raise_error", (cast_to(args[0], T.STRING),), T.NULL)
        self._arity(node, name, args, 1, 2)
        if args[0].type not in (T.BOOLEAN, T.NULL):
            raise coercion.mismatch(name, [args[0].type])
        msg = [cast_to(args[1], T.STRING)] if len(args) > 1 else []
        return Call("assert_true", (cast_to(args[0], T.BOOLEAN), *msg), T.NULL)

    def typing_number_format(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """to_number / try_to_number(s, format): a constant format; DECIMAL(digits, scale)."""
        from sql_frontend.expressions.string_functions import number_format

        self._arity(node, name, args, 2, 2)
        f = args[1]
        if not (isinstance(f, Lit) and isinstance(f.value, str)):
            raise coercion.mismatch(f"{name} format (a constant string)", [f.type])
        try:
            _, precision, scale, _ = number_format(f.value)
        except ValueError as e:
            raise analysis_error(
                f"[INVALID_FORMAT] {name}: the format {f.value!r} has {e}", node, name
            ) from None
        return Call(fn.op, (cast_to(args[0], T.STRING), f), T.decimal(precision, scale))

    def typing_typeof(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        self._arity(node, name, args, 1, 1)
        t = args[0].type
        return Lit(t.simple, T.STRING)

    def typing_datepart(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        self._arity(node, name, args, 2, 2)
        field, source = self._arg_nodes(node)
        if not (isinstance(field, exp.Literal) and field.is_string):
            raise self.arity(node, f"{name} with a non-constant field", "a constant field")  # type: ignore[attr-defined]
        fake = exp.Extract(this=exp.Var(this=str(field.this)), expression=source)
        return self._Extract(fake)  # type: ignore[attr-defined]

    def typing_optional(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """Functions whose optional last argument selects another operation: ``locate`` from a
        position, ``levenshtein`` with a threshold, ``btrim`` of given characters."""
        ops: dict[str, tuple[tuple[T.SqlType, ...], str, tuple[T.SqlType, ...], T.SqlType]] = {
            "parse_url": ((T.STRING, T.STRING), "parse_url_key", (T.STRING,) * 3, T.STRING),
            "try_parse_url": ((T.STRING, T.STRING), "try_parse_url_key", (T.STRING,) * 3, T.STRING),
            "levenshtein": (
                (T.STRING, T.STRING),
                "levenshtein_max",
                (T.STRING, T.STRING, T.INT),
                T.INT,
            ),
            "trim": ((T.STRING,), "trim_chars", (T.STRING, T.STRING), T.STRING),
        }
        short, long_op, long_types, t = ops[fn.op]
        self._arity(node, name, args, len(short), len(long_types))
        if len(args) == len(short):
            return Call(fn.op, tuple(cast_to(a, s) for a, s in zip(args, short, strict=True)), t)
        return Call(long_op, tuple(cast_to(a, s) for a, s in zip(args, long_types, strict=True)), t)

    def typing_timestamp_parts(
        self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]
    ) -> Scalar:
        """make_timestamp(year, month, day, hour, min, sec DECIMAL(16,6)[, timezone])."""
        self._arity(node, name, args, 6, 7)
        types = (T.INT, T.INT, T.INT, T.INT, T.INT, T.decimal(16, 6), T.STRING)
        typed = tuple(cast_to(a, want) for a, want in zip(args, types, strict=False))
        return Call(fn.op, typed, T.TIMESTAMP)

    def typing_binary_args(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """decode(bin, charset) and to_binary(str[, fmt]): BINARY / STRING arguments."""
        if fn.op == "decode":
            self._arity(node, name, args, 2, 2)
            return Call(
                "decode", (cast_to(args[0], T.BINARY), cast_to(args[1], T.STRING)), T.STRING
            )
        self._arity(node, name, args, 1, 2)
        f = cast_to(args[1], T.STRING) if len(args) > 1 else Lit("hex", T.STRING)
        if not (isinstance(f, Lit) and str(f.value).lower() in ("hex", "utf-8", "utf8", "base64")):
            # Spark: the format must be a constant 'hex', 'utf-8' or 'base64'
            raise coercion.mismatch(f"{name} format", [f.type])
        return Call(fn.op, (cast_to(args[0], T.STRING), f), T.BINARY)

    def typing_bool_default(self, node: Any, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """months_between(t1, t2[, roundOff = true])."""
        self._arity(node, name, args, 2, 3)
        r = cast_to(args[2], T.BOOLEAN) if len(args) > 2 else Lit(True, T.BOOLEAN)
        return Call(
            fn.op, (cast_to(args[0], T.TIMESTAMP), cast_to(args[1], T.TIMESTAMP), r), T.DOUBLE
        )

    def typing_to_datetime(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """to_timestamp / try_to_timestamp / try_to_date / to_unix_timestamp(source[, format])."""
        self._arity(node, name, args, 1, 2)
        return self.to_datetime(node, name, fn.op, args)

    def to_datetime(self, node: exp.Expr, name: str, op: str, args: list[Scalar]) -> Scalar:
        """A string read with a Java datetime pattern (``parse_timestamp``, ``parse_date``,
        ``parse_unix``, each with a ``try_`` form that gives NULL where Spark fails); a DATE
        or TIMESTAMP source is converted and the pattern ignored, as Spark does."""
        from sql_frontend.analyze import unsupported
        from sql_frontend.expressions.datetime_functions import java_pattern

        safe = op.startswith("try_")
        kind = {"parse_timestamp": T.TIMESTAMP, "parse_date": T.DATE, "parse_unix": T.BIGINT}[
            op.removeprefix("try_")
        ]
        src = args[0]
        if src.type in (T.DATE, T.TIMESTAMP):
            if kind == T.BIGINT:
                return Call("unix_timestamp", (cast_to(src, T.TIMESTAMP),), T.BIGINT)
            return cast_to(src, kind)
        if src.type not in (T.STRING, T.NULL):
            raise coercion.mismatch(name, [src.type])
        src = cast_to(src, T.STRING)
        fmt = self._java_format(node, args)
        if fmt is None:
            if kind != T.BIGINT:
                return Call("try_cast" if safe else "cast", (src,), kind)
            fmt = "yyyy-MM-dd HH:mm:ss"
        try:
            java_pattern(fmt)
        except ValueError as e:
            raise unsupported(f"{name} with {e}", node) from None
        return Call(op, (src, Lit(fmt, T.STRING)), kind)

    @staticmethod
    def _java_format(node: exp.Expr, args: list[Scalar]) -> str | None:
        """The Java pattern as written: sqlglot rewrites the formats of its typed nodes to
        strftime, so those are written back in Spark's spelling."""
        from sql_frontend.analyze import unsupported

        if isinstance(node, exp.Anonymous):
            if len(args) < 2:
                return None
            f = args[1]
            if not (isinstance(f, Lit) and isinstance(f.value, str)):
                raise unsupported("a datetime pattern that is not a constant string", node)
            return f.value
        f_node = node.args.get("format")
        if f_node is None:
            return None
        if not (isinstance(f_node, exp.Literal) and f_node.is_string):
            raise unsupported("a datetime pattern that is not a constant string", node)
        import sqlglot
        from sqlglot.dialects.spark import Spark

        text = Spark().generator().format_time(node)
        assert text is not None
        back = sqlglot.parse_one(text, read="spark")
        return str(back.this)
