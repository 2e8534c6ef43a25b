"""Typing rules of the UTF-8, collation, ``to_char`` and AES functions (a mixin of
:class:`sql_frontend.translate_expr.ExprTranslator`, as
:class:`sql_frontend.translate_functions.FunctionTyping` is)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from sql_frontend import coercion
from sql_frontend import sql_types as T
from sql_frontend.positions import analysis_error, unsupported
from sql_frontend.scalar import Call, Lit, Scalar, cast_to, refs

if TYPE_CHECKING:
    from sql_frontend.expressions.registry import Fn

UTF8_BINARY = "UTF8_BINARY"
BINARY = T.SqlType("BINARY")


def constant_text(node: exp.Expr, name: str, what: str, a: Scalar) -> str:
    """The value of a constant STRING argument, or Spark's error naming the argument."""
    if isinstance(a, Lit) and isinstance(a.value, str):
        return a.value
    raise analysis_error(
        f"[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] {name}: the {what} must be a constant string",
        node,
        name,
    )


class EncodingTyping:
    """``typing_<rule>(node, name, fn, args) -> Scalar`` for :class:`ExprTranslator`."""

    def typing_utf8(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """is_valid_utf8 / make_valid_utf8 / validate_utf8 / try_validate_utf8: a BINARY
        argument is read as the unchecked bytes of a string, as Spark reads it."""
        self._arity(node, name, args, 1, 1)  # type: ignore[attr-defined]
        a = args[0] if args[0].type == BINARY else cast_to(args[0], T.STRING)
        return Call(fn.op, (a,), fn.result or T.STRING)

    def typing_collation(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """collation(s) and collate(s, name): views compare strings by their bytes
        (UTF8_BINARY); a collation that changes comparison is refused by name."""
        n = 1 if fn.op == "collation" else 2
        self._arity(node, name, args, n, n)  # type: ignore[attr-defined]
        s = args[0]
        if s.type not in (T.STRING, T.NULL):
            raise coercion.mismatch(name, [s.type])
        if fn.op == "collation":
            return Lit(f"SYSTEM.BUILTIN.{UTF8_BINARY}", T.STRING)
        collation = constant_text(node, name, "collation name", args[1])
        if collation.upper() != UTF8_BINARY:
            raise unsupported(
                f"COLLATE {collation}",
                node,
                "views compare strings by their UTF-8 bytes (UTF8_BINARY); drop the COLLATE, "
                "or compare lower(x) / upper(x) for a case-insensitive match",
            )
        return cast_to(s, T.STRING)

    def typing_to_char(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """to_char / to_varchar(x, format): a number with a number format, a DATE or
        TIMESTAMP with a datetime pattern, BINARY as 'hex', 'base64' or 'utf-8'."""
        from sql_frontend.expressions.string_functions import number_format
        from sql_frontend.expressions.text_encoding import BINARY_FORMATS

        self._arity(node, name, args, 2, 2)  # type: ignore[attr-defined]
        x, f = args
        if f.type == T.NULL or x.type == T.NULL:
            return Lit(None, T.STRING)
        fmt = constant_text(node, name, "format", f)
        if x.type == BINARY:
            if fmt.lower() not in BINARY_FORMATS:
                raise analysis_error(
                    f"[INVALID_PARAMETER_VALUE.BINARY_FORMAT] {name}: the format {fmt!r} is not "
                    "one of 'base64', 'hex', 'utf-8'",
                    node,
                    name,
                )
            return Call("binary_to_char", (x, Lit(fmt, T.STRING)), T.STRING)
        if x.type in (T.DATE, T.TIMESTAMP):
            import sqlglot

            fake = sqlglot.parse_one(f"date_format(x, {exp.Literal.string(fmt).sql()})", "spark")
            fake.set("this", self._arg_nodes(node)[0].copy())  # type: ignore[attr-defined]
            return self._TimeToStr(fake)  # type: ignore[attr-defined]
        if x.type == T.STRING:  # Spark reads it as a DECIMAL(38,18)
            x = cast_to(x, T.decimal(38, 18))
        if not x.type.is_numeric:
            raise coercion.mismatch(name, [x.type])
        try:
            number_format(fmt)
        except ValueError as e:
            raise analysis_error(
                f"[INVALID_FORMAT] {name}: the format {fmt!r} has {e}", node, name
            ) from None
        if not x.type.is_decimal:
            x = cast_to(x, _decimal_for(x.type))
        return Call("number_to_char", (x, Lit(fmt, T.STRING)), T.STRING)

    def typing_xpath(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """xpath_<kind>(xml, path): the path a constant string, as Spark requires."""
        self._arity(node, name, args, 2, 2)  # type: ignore[attr-defined]
        wrong = [a.type for a in args if a.type not in (T.STRING, T.NULL)]
        if wrong:
            raise coercion.mismatch(name, wrong)
        xml, path = cast_to(args[0], T.STRING), cast_to(args[1], T.STRING)
        if not isinstance(path, Lit):
            raise analysis_error(
                f"[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] {name}: the path must be a constant "
                "string",
                node,
                name,
            )
        return Call(fn.op, (xml, path), fn.result or T.STRING)

    def typing_schema_of_csv(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """schema_of_csv(text): a constant string, inferred when the view is compiled; CSV
        options (a MAP) are refused by name."""
        from sql_frontend.expressions.csv_schema import schema_of_csv

        if len(args) == 2:
            raise unsupported(
                f"{name} with options", node, "write schema_of_csv(text) with Spark's defaults"
            )
        self._arity(node, name, args, 1, 1)  # type: ignore[attr-defined]
        text = args[0]
        if isinstance(text, Lit) and text.value is None:
            raise analysis_error(
                f"[DATATYPE_MISMATCH.UNEXPECTED_NULL] {name}: the csv must not be null", node, name
            )
        csv = constant_text(node, name, "csv", text)
        if not csv:
            raise analysis_error(f"[INVALID_PARAMETER_VALUE] {name}: the csv is empty", node, name)
        return Lit(schema_of_csv(csv), T.STRING)

    def typing_kll_constant(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """kll_sketch_get_quantile_* / get_rank_*(sketch, x) and theta_union(a, b[, lg]): the
        argument after the sketches a constant, as Spark requires."""
        sketches = 2 if fn.op == "theta_union" else 1
        self._arity(node, name, args, len(fn.args) - len(fn.defaults), len(fn.args))  # type: ignore[attr-defined]
        missing = len(fn.args) - len(args)
        args = [*args, *(Lit(d, T.INT) for d in fn.defaults[len(fn.defaults) - missing :])]
        if any(refs(a) for a in args[sketches:]):
            raise analysis_error(
                f"[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] {name}: the argument after the sketch must be a "
                "constant; pick the sketch per row instead (IF / CASE over constant sketches)",
                node,
                name,
            )
        typed = tuple(cast_to(a, t or a.type) for a, t in zip(args, fn.args, strict=True))
        return Call(fn.op, typed, fn.result or T.DOUBLE)

    def typing_aes(self, node: exp.Expr, name: str, fn: Fn, args: list[Scalar]) -> Scalar:
        """aes_encrypt(input, key[, mode[, padding[, iv[, aad]]]]) and (try_)aes_decrypt(input,
        key[, mode[, padding[, aad]]]): constant mode and padding; encryption only where it is
        deterministic (ECB, or a constant IV)."""
        from sql_frontend.expressions.aes import check_mode

        encrypting = fn.op == "aes_encrypt"
        most = 6 if encrypting else 5
        self._arity(node, name, args, 2, most)  # type: ignore[attr-defined]
        mode = constant_text(node, name, "mode", args[2]) if len(args) > 2 else "GCM"
        pad = constant_text(node, name, "padding", args[3]) if len(args) > 3 else "DEFAULT"
        wrong = check_mode(mode, pad)
        if wrong is not None:
            raise analysis_error(f"[UNSUPPORTED_FEATURE.AES_MODE] {name}: {wrong}", node, name)
        empty = Lit(b"", BINARY)
        rest = [cast_to(a, BINARY) for a in args[4:]]
        rest += [empty] * (most - 4 - len(rest))
        if encrypting and mode.upper() != "ECB":
            rest[0] = iv = _folded(rest[0])
            if not (isinstance(iv, Lit) and iv.value):
                raise unsupported(
                    f"{name} in {mode.upper()} mode without a constant IV",
                    node,
                    "Spark draws a random IV per row there, which a maintained view cannot repeat:"
                    " pass a constant IV (12 bytes for GCM, 16 for CBC) as the fifth argument,"
                    " or use mode 'ECB'",
                )
        fixed = (cast_to(args[0], BINARY), cast_to(args[1], BINARY))
        return Call(fn.op, (*fixed, Lit(mode, T.STRING), Lit(pad, T.STRING), *rest), BINARY)


def _folded(e: Scalar) -> Scalar:
    """A constant expression (no column) as its value, else itself."""
    if isinstance(e, Lit) or refs(e):
        return e
    import numpy as np

    from sql_frontend.expressions.evaluate import compile_scalar

    return Lit(compile_scalar(e)(np.zeros(1, dtype=object))[0], e.type)


def _decimal_for(t: T.SqlType) -> T.SqlType:
    """Spark's DecimalType.forType: the decimal a number is implicitly cast to."""
    if t.name == "DOUBLE":
        return T.decimal(30, 15)
    if t.name == "FLOAT":
        return T.decimal(14, 7)
    return T.decimal({"TINYINT": 3, "SMALLINT": 5, "INT": 10}.get(t.name, 20), 0)
