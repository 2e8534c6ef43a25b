"""Spark 4's implicit type coercion (ANSI mode, the default), in one place.

Every implicit cast the front end inserts is decided here; the translator only applies the
answer (``Call("cast", ...)``) so the evaluator never guesses. The rules were read off Spark
4.3 itself (the generated matrix test ``tests/sql_frontend/test_coercion_matrix.py`` keeps
them equal to Spark's answers):

* **Common type** (CASE / IF / COALESCE / NVL / NULLIF / IN / comparison / UNION / INTERSECT /
  EXCEPT): folded left to right over the operands. Integral types widen; FLOAT with an
  integral type or DOUBLE is DOUBLE; DECIMAL with an integral type is the DECIMAL holding both;
  DECIMAL with FLOAT/DOUBLE is DOUBLE; DATE with TIMESTAMP is TIMESTAMP. STRING yields to the
  other side: BIGINT next to an integral type, DOUBLE next to FLOAT/DOUBLE/DECIMAL, otherwise
  the other type itself (BOOLEAN, DATE, TIMESTAMP, BINARY). NULL yields to anything. Any other
  pair (BOOLEAN with a number, DATE with a number, BINARY with anything but STRING) is
  Spark's ``DATATYPE_MISMATCH``.
* **GREATEST / LEAST** use the same rule without the STRING promotion.
* **Arithmetic** (``+ - * / % div``): a STRING operand becomes BIGINT next to an integral type
  and DOUBLE next to a fractional or decimal one (DOUBLE alone, for unary ``-``/``abs``);
  NULL takes its partner's type; then :func:`arithmetic_type` gives the result (Spark's
  ``DecimalPrecision`` for decimals, ``/`` of non-decimals is DOUBLE).

>>> from sql_frontend.sql_types import parse_type as t
>>> str(common_type([t("string"), t("int")], "CASE"))
'BIGINT'
>>> str(common_type([t("string"), t("boolean")], "UNION"))
'BOOLEAN'
>>> str(arithmetic_type("div", t("decimal(10,2)"), t("int")))
'DECIMAL(21,13)'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sql_frontend import sql_types as T
from sql_frontend.errors import SqlAnalysisError

FLOAT = T.SqlType("FLOAT")


def mismatch(what: str, types: Sequence[T.SqlType]) -> SqlAnalysisError:
    """Spark's ``DATATYPE_MISMATCH``: ``what`` cannot take these operand types."""
    shown = ", ".join(str(t) for t in types)
    return SqlAnalysisError(
        f"[DATATYPE_MISMATCH] {what} cannot combine {shown}; add an explicit CAST",
        construct=what,
    )


def _numeric_common(a: T.SqlType, b: T.SqlType) -> T.SqlType:
    if a.is_integral and b.is_integral:
        return a if a.int_bits >= b.int_bits else b
    if a.is_fractional or b.is_fractional:
        if a.name == b.name == "FLOAT":
            return FLOAT
        return T.DOUBLE
    da, db = T.as_decimal(a), T.as_decimal(b)
    assert da.scale is not None and db.scale is not None
    assert da.precision is not None and db.precision is not None
    scale = max(da.scale, db.scale)
    int_digits = max(da.precision - da.scale, db.precision - db.scale)
    return T.decimal(int_digits + scale, scale)


def _common2(a: T.SqlType, b: T.SqlType, promote_strings: bool) -> T.SqlType | None:
    if a == b:
        return a
    if a == T.NULL:
        return b
    if b == T.NULL:
        return a
    if a.is_numeric and b.is_numeric:
        return _numeric_common(a, b)
    if a.is_nested or b.is_nested:
        return _nested_common(a, b, promote_strings)
    if {a.name, b.name} == {"DATE", "TIMESTAMP"}:
        return T.TIMESTAMP
    if promote_strings and T.STRING in (a, b):
        other = b if a == T.STRING else a
        if other.is_integral:
            return T.BIGINT
        if other.is_numeric:
            return T.DOUBLE
        if other.name in ("BOOLEAN", "DATE", "TIMESTAMP", "BINARY"):
            return other
    return None


def _nested_common(a: T.SqlType, b: T.SqlType, promote_strings: bool) -> T.SqlType | None:
    """Spark's ``findTypeForComplex``: two arrays, maps or structs (same field names, in
    order, matched case-insensitively) whose parts have a common type."""
    if a.name != b.name or len(a.children) != len(b.children):
        return None
    if a.name == "STRUCT" and [n.lower() for n in a.fields] != [n.lower() for n in b.fields]:
        return None
    parts = [_common2(x, y, promote_strings) for x, y in zip(a.children, b.children, strict=True)]
    if any(p is None for p in parts):
        return None
    return T.SqlType(a.name, children=tuple(p for p in parts if p is not None), fields=a.fields)


def common_type(types: Sequence[T.SqlType], what: str) -> T.SqlType:
    """The type all of ``types`` are cast to by ``what`` (CASE, COALESCE, UNION, IN, =, ...):
    Spark's wider common type, folded left to right."""
    return _fold(types, what, promote_strings=True)


def common_type_no_strings(types: Sequence[T.SqlType], what: str) -> T.SqlType:
    """GREATEST / LEAST: the common type without STRING promotion."""
    return _fold(types, what, promote_strings=False)


def _fold(types: Sequence[T.SqlType], what: str, *, promote_strings: bool) -> T.SqlType:
    out = T.NULL
    for t in types:
        nxt = _common2(out, t, promote_strings=promote_strings)
        if nxt is None:
            raise mismatch(what, types)
        out = nxt
    return out


def comparison_type(a: T.SqlType, b: T.SqlType, what: str = "comparison") -> T.SqlType:
    """The type both sides of ``=``, ``<``, ``<=>``, ``BETWEEN`` ... are compared in."""
    return common_type([a, b], what)


ARITHMETIC_OPS = ("add", "sub", "mul", "div", "mod", "intdiv")
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "intdiv": "div"}


@dataclass(frozen=True)
class Arithmetic:
    """How a binary arithmetic operator is computed: both operands cast to ``left`` and
    ``right``, the result of type ``result``."""

    left: T.SqlType
    right: T.SqlType
    result: T.SqlType


def _string_partner(s: T.SqlType, other: T.SqlType) -> T.SqlType | None:
    if other.is_integral:
        return T.BIGINT
    if other.is_numeric:
        return T.DOUBLE
    return None


def arithmetic(op: str, a: T.SqlType, b: T.SqlType) -> Arithmetic:
    """Operand and result types of ``a op b`` on numbers (date arithmetic is the caller's).

    Raises Spark's ``DATATYPE_MISMATCH`` (as :class:`SqlAnalysisError`) for other pairs."""
    what = f"operator {_SYMBOL[op]}"
    if a == T.NULL and b == T.NULL:
        return Arithmetic(T.DOUBLE, T.DOUBLE, T.BIGINT if op == "intdiv" else T.DOUBLE)
    if a == T.STRING or b == T.STRING:
        if a == T.STRING and b == T.STRING:
            raise mismatch(what, [a, b])
        if a == T.STRING:
            na = _string_partner(a, b)
            if na is None:
                raise mismatch(what, [a, b])
            a = na
        else:
            nb = _string_partner(b, a)
            if nb is None:
                raise mismatch(what, [a, b])
            b = nb
    if op == "div" and a == T.NULL:
        if not b.is_numeric:
            raise mismatch(what, [a, b])
        return Arithmetic(T.DOUBLE, T.DOUBLE, T.DOUBLE)
    if a == T.NULL:
        a = b
    if b == T.NULL:
        b = a
    if not (a.is_numeric and b.is_numeric):
        raise mismatch(what, [a, b])
    if op == "intdiv":
        if a.is_fractional or b.is_fractional:
            raise mismatch(what, [a, b])
        if a.is_decimal or b.is_decimal:
            return Arithmetic(T.as_decimal(a), T.as_decimal(b), T.BIGINT)
        return Arithmetic(T.BIGINT, T.BIGINT, T.BIGINT)
    t = arithmetic_type(op, a, b)
    if t.is_decimal:
        return Arithmetic(T.as_decimal(a), T.as_decimal(b), t)
    if op == "div":
        return Arithmetic(T.DOUBLE, T.DOUBLE, T.DOUBLE)
    return Arithmetic(t, t, t)


def arithmetic_type(op: str, a: T.SqlType, b: T.SqlType) -> T.SqlType:
    """Result type of ``a op b`` for numeric ``a``, ``b`` (Spark's ``DecimalPrecision`` for
    exact operands, bounded to 38 digits as Spark bounds them)."""
    if op == "intdiv":
        return T.BIGINT
    if a.is_fractional or b.is_fractional:
        if op != "div" and a.name == b.name == "FLOAT":
            return FLOAT
        return T.DOUBLE
    if a.is_integral and b.is_integral:
        if op == "div":
            return T.DOUBLE
        return a if a.int_bits >= b.int_bits else b
    da, db = T.as_decimal(a), T.as_decimal(b)
    p1, s1, p2, s2 = da.precision, da.scale, db.precision, db.scale
    assert p1 is not None and s1 is not None and p2 is not None and s2 is not None
    if op in ("add", "sub"):
        scale = max(s1, s2)
        return T.decimal(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "mul":
        return T.decimal(p1 + p2 + 1, s1 + s2)
    if op == "div":
        scale = max(6, s1 + p2 + 1)
        return T.decimal(p1 - s1 + s2 + scale, scale)
    if op == "mod":
        scale = max(s1, s2)
        return T.decimal(min(p1 - s1, p2 - s2) + scale, scale)
    raise SqlAnalysisError(f"unknown arithmetic {op}", construct=op)


def unary_numeric(a: T.SqlType, what: str) -> T.SqlType:
    """The type unary ``-`` / ``+`` / ``abs`` compute in: STRING and NULL become DOUBLE."""
    if a in (T.STRING, T.NULL):
        return T.DOUBLE
    if not a.is_numeric:
        raise mismatch(what, [a])
    return a


def date_arithmetic(op: str, a: T.SqlType, b: T.SqlType) -> str | T.SqlType | None:
    """``DATE ± integral`` is ``date_add``/``date_sub`` (returned by name); ``DATE``/
    ``TIMESTAMP + NULL`` is a NULL TIMESTAMP (returned as the type); None if neither."""
    if op == "add" and T.NULL in (a, b) and {a.name, b.name} & {"DATE", "TIMESTAMP"}:
        return T.TIMESTAMP
    small_int = ("TINYINT", "SMALLINT", "INT")
    if a == T.DATE and b.name in small_int and op in ("add", "sub"):
        return "date_add" if op == "add" else "date_sub"
    if b == T.DATE and a.name in small_int and op == "add":
        return "date_add"
    return None


def _check_nested_cast(src: T.SqlType, dst: T.SqlType) -> None:
    """An ARRAY casts to an ARRAY, a MAP to a MAP, a STRUCT to a STRUCT of as many fields
    (names may differ), each part as its own cast allows."""
    if src.name != dst.name or len(src.children) != len(dst.children):
        raise SqlAnalysisError(
            f"[DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION] cannot cast {src} to {dst}",
            construct=f"CAST to {dst}",
        )
    for a, b in zip(src.children, dst.children, strict=True):
        check_cast(a, b)


_CASTABLE_FROM_NUMBER = ("BOOLEAN", "STRING", "TIMESTAMP")


def check_cast(src: T.SqlType, dst: T.SqlType) -> None:
    """Refuse an explicit CAST / TRY_CAST that Spark's ANSI mode refuses at analysis
    (``DATATYPE_MISMATCH.CAST_...``): e.g. INT to DATE, BOOLEAN to BINARY, DATE to INT."""
    if src == dst or src == T.NULL:
        return
    if src.is_nested or dst.is_nested:
        if dst != T.STRING:  # arrays, maps and structs cast to STRING as Spark prints them
            _check_nested_cast(src, dst)
        return
    if src == T.STRING or dst == T.STRING:
        return
    if src.is_numeric and (dst.is_numeric or dst.name in _CASTABLE_FROM_NUMBER):
        return
    if src.name == "BOOLEAN" and dst.is_numeric:
        return
    if src.name == "TIMESTAMP" and (dst.is_numeric or dst == T.DATE):
        return
    if src == T.DATE and dst == T.TIMESTAMP:
        return
    raise SqlAnalysisError(
        f"[DATATYPE_MISMATCH.CAST] cannot cast {src} to {dst}", construct=f"CAST to {dst}"
    )
