"""Math functions of Spark 4 (ANSI mode) beyond :mod:`more_functions`: ``bround``, ``pmod``,
``width_bucket``, ``getbit``, ``conv`` and the ``try_`` arithmetic (``try_add`` ...), which
runs the operation over the whole column and, only when it raises, again row by row with NULL
for the rows that raise; the bitmap position functions; and ``assert_true`` / ``raise_error``,
which fail with Spark's USER_RAISED_EXCEPTION (inside CASE only on the rows that take them,
as CASE evaluates its branches lazily)."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np

from sql_frontend.errors import SqlRuntimeError
from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error
from sql_frontend.expressions.functions import round_to, wide_context
from sql_frontend.expressions.vec import Vec, from_objects, objects
from sql_frontend.sql_types import INT_BITS, SqlType

_HALF_EVEN = wide_context(ROUND_HALF_EVEN)


def _bround(x: object, d: int, t: SqlType) -> object:
    """ROUND with HALF_EVEN (:func:`round_to`); an integral result must fit its type."""
    r = round_to(x, d, t, _HALF_EVEN, "bround")
    bits = INT_BITS.get(t.name)
    fits = bits is None or not isinstance(r, int) or -(2 ** (bits - 1)) <= r < 2 ** (bits - 1)
    if not fits:
        raise runtime_error(f"[ARITHMETIC_OVERFLOW] bround({x}, {d}) overflows {t}")
    return r


OPS["bround"] = lambda args, t: elementwise(lambda x, d: _bround(x, d, t), args, t)


def _pmod(args: list[Vec], t: SqlType) -> Vec:
    """pmod(a, n) = ((a % n) + n) % n where a % n < 0; ``%`` raises REMAINDER_BY_ZERO first."""
    r = OPS["mod"](args, t)
    n = objects(args[1])
    out = objects(r)
    bits = INT_BITS.get(t.name)
    for i, v in enumerate(out):
        if v is None or not v < 0:
            continue
        s = v + n[i]
        if bits is not None:  # Java int arithmetic wraps
            s = (s + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
        if isinstance(s, float):
            out[i] = math.fmod(s, n[i])
        elif isinstance(s, Decimal):
            out[i] = s % n[i]
        else:
            q = abs(s) % abs(n[i])
            out[i] = q if s >= 0 else -q
    return from_objects(out, t)


OPS["pmod"] = _pmod


def _width_bucket(args: list[Vec], t: SqlType) -> Vec:
    v, lo, hi, nb = args
    null = v.null | lo.null | hi.null | nb.null
    out: list[object] = [None] * len(v)
    xs, mins, maxs, ns = (objects(a) for a in args)
    for i in np.flatnonzero(~null):
        x, a, b, n = float(xs[i]), float(mins[i]), float(maxs[i]), int(ns[i])
        if n <= 0 or n == 2**63 - 1 or math.isnan(x) or a == b:
            continue
        if math.isnan(a) or math.isinf(a) or math.isnan(b) or math.isinf(b):
            continue
        lower, upper = min(a, b), max(a, b)
        if a < b:
            if x < lower:
                out[i] = 0
            elif x >= upper:
                out[i] = n + 1
            else:
                out[i] = int(n * (x - lower) / (upper - lower)) + 1
        else:
            if x > upper:
                out[i] = 0
            elif x <= lower:
                out[i] = n + 1
            else:
                out[i] = int(n * (upper - x) / (upper - lower)) + 1
    return from_objects(out, t)


OPS["width_bucket"] = _width_bucket


def _getbit(x: int, pos: int, size: int) -> int:
    if not 0 <= pos < size:
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE.BIT_POSITION_RANGE] getbit: the bit position {pos} is "
            f"out of range [0, {size})"
        )
    return (x >> pos) & 1


OPS["getbit"] = lambda args, t: elementwise(_getbit, args, t)

_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _conv(s: str, base: int, to: int) -> str | None:
    """Spark's ``conv``: the longest prefix of digits of ``base`` (after an optional '-'),
    read as an unsigned 64-bit number; a negative ``to`` writes it signed."""
    if not (2 <= abs(base) <= 36 and 2 <= abs(to) <= 36) or base < 0 or s == "":
        return None
    negative = s.startswith("-")
    v = 0
    for c in s[1:] if negative else s:
        d = _DIGITS.find(c.upper())
        if d < 0 or d >= base:
            break
        v = v * base + d
        if v >= 2**64:
            raise runtime_error(f"[ARITHMETIC_OVERFLOW] conv({s!r}, {base}, {to}): overflow")
    if negative:
        v = (-v) % 2**64
    if to < 0 and v >= 2**63:
        out, sign = 2**64 - v, "-"
    else:
        out, sign = v, ""
    digits = ""
    b = abs(to)
    while True:
        out, r = divmod(out, b)
        digits = _DIGITS[r] + digits
        if out == 0:
            break
    return sign + digits


OPS["conv"] = lambda args, t: elementwise(_conv, args, t)


def _row(a: Vec, i: int) -> Vec:
    return Vec(a.data[i : i + 1], a.null[i : i + 1], a.type)


def tried(op: str):
    """``op`` as Spark's ``try_`` form: NULL for the rows where it raises."""

    def run(args: list[Vec], t: SqlType) -> Vec:
        fn = OPS[op]
        try:
            return fn(args, t)
        except SqlRuntimeError:
            out: list[object] = []
            for i in range(len(args[0])):
                try:
                    out.append(objects(fn([_row(a, i) for a in args], t))[0])
                except SqlRuntimeError:
                    out.append(None)
            return from_objects(out, t)

    return run


TRIED = ("add", "sub", "mul", "div", "mod", "cast", "date_add", "date_sub", "ts_add_seconds")
for _op in TRIED:
    if _op != "cast":
        OPS[f"try_{_op}"] = tried(_op)

# ---------------------------------------------------------------- bitmaps (Spark's 32768-bit)

_BITMAP_BITS = 4096 * 8


def _bit_position(v: int) -> int:
    return (v - 1) % _BITMAP_BITS if v > 0 else (-v) % _BITMAP_BITS


def _bucket_number(v: int) -> int:
    return 1 + (v - 1) // _BITMAP_BITS if v > 0 else -((-v) // _BITMAP_BITS)


OPS["bitmap_bit_position"] = lambda args, t: elementwise(_bit_position, args, t)
OPS["bitmap_bucket_number"] = lambda args, t: elementwise(_bucket_number, args, t)
OPS["bitmap_count"] = lambda args, t: elementwise(
    lambda b: sum(bin(x).count("1") for x in bytes(b)), args, t
)


def _assert_true(args: list[Vec], t: SqlType) -> Vec:
    cond = args[0]
    msgs = objects(args[1]) if len(args) > 1 else None
    bad = cond.null | ~cond.data.astype(bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        text = msgs[i] if msgs is not None else "assert_true: the condition is not true"
        raise runtime_error(f"[USER_RAISED_EXCEPTION] {text}")
    return Vec(np.empty(len(cond), dtype=object), np.ones(len(cond), dtype=bool), t)


def _raise_error(args: list[Vec], t: SqlType) -> Vec:
    (msg,) = args
    if len(msg):
        raise runtime_error(f"[USER_RAISED_EXCEPTION] {objects(msg)[0]}")
    return Vec(np.empty(0, dtype=object), np.zeros(0, dtype=bool), t)


OPS["assert_true"] = _assert_true
OPS["raise_error"] = _raise_error
