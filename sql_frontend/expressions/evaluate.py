"""Compilation of scalar expressions to vectorized functions, and the core operations
(arithmetic, comparison, logic, CASE, COALESCE, IN). Functions on strings, dates and CASTs live
in sibling modules and register themselves in :data:`OPS`."""

from __future__ import annotations

import decimal as pydecimal
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np

from sql_frontend.errors import (
    INTERNAL_GAPS,
    SqlError,
    SqlRuntimeError,
    UnsupportedSqlError,
    internal_message,
)
from sql_frontend.expressions.vec import (
    Vec,
    constant,
    from_column,
    from_objects,
    numpy_kind,
    objects,
    to_column,
    value_order,
)
from sql_frontend.scalar import Call, Lit, Native, Ref, Scalar
from sql_frontend.sql_types import SqlType

Op = Callable[[list[Vec], SqlType], Vec]
OPS: dict[str, Op] = {}

DECIMAL_CONTEXT = pydecimal.Context(prec=80, rounding=pydecimal.ROUND_HALF_UP)


def op(*names: str) -> Callable[[Op], Op]:
    def register(fn: Op) -> Op:
        for n in names:
            OPS[n] = fn
        return fn

    return register


def compile_scalar(e: Scalar) -> Callable[..., np.ndarray]:
    """``f(*columns) -> column`` evaluating ``e`` over engine columns (object result, None for
    NULL, Python values of the expression's SQL type)."""
    ev = compile_vec(e)

    def f(*cols: np.ndarray) -> np.ndarray:
        n = len(cols[0]) if cols else 0
        return to_column(ev(cols, n))

    return f


def compile_predicate(e: Scalar) -> Callable[..., np.ndarray]:
    """``f(*columns) -> bool array``: TRUE rows (NULL and FALSE are dropped)."""
    ev = compile_vec(e)

    def f(*cols: np.ndarray) -> np.ndarray:
        n = len(cols[0]) if cols else 0
        v = ev(cols, n)
        return v.data.astype(bool) & ~v.null

    return f


Evaluator = Callable[[Sequence[np.ndarray], int], Vec]


def compile_vec(e: Scalar) -> Evaluator:
    match e:
        case Ref(index, t):
            return lambda cols, n: from_column(cols[index], t)
        case Lit(value, t):
            return lambda cols, n: constant(value, t, n)
        case Call("lambda_var", (Lit(from_end), *_), t):
            # a lambda's variable: the last columns of the batch its body is evaluated over
            # (sql_frontend.expressions.higher_order)
            at = int(from_end)  # type: ignore[call-overload]
            return lambda cols, n: from_column(cols[len(cols) - 1 - at], t)
        case Call(name, args, t):
            if name not in OPS:
                raise UnsupportedSqlError(f"function {name}")
            fn = OPS[name]
            subs = [compile_vec(a) for a in args]
            if name in LAZY:
                lazy = LAZY[name]
                return guarded(e, lambda cols, n: lazy(subs, cols, n, t))
            return guarded(e, lambda cols, n: fn([s(cols, n) for s in subs], t))
        case Native():
            return _native(e)
    raise TypeError(e)


def _native(e: Native) -> Evaluator:
    """A front end's own operation: a row it leaves without a value reads as NULL."""
    idx = [a.index for a in e.args]

    def run(cols: Sequence[np.ndarray], n: int) -> Vec:
        values, valid = e.fn([cols[i] for i in idx], n)
        null = np.zeros(n, dtype=bool) if valid is None else ~np.asarray(valid, dtype=bool)
        return Vec(np.asarray(values), null, e.type)

    return run


def guarded(e: Call, ev: Evaluator) -> Evaluator:
    """``ev`` with every Python-level error turned into a typed :class:`SqlRuntimeError`.

    Operations raise Spark's error classes themselves (``DIVIDE_BY_ZERO``, ``CAST_INVALID_INPUT``
    ...); anything else escaping an operation (a ``TypeError``, ``decimal.InvalidOperation``,
    ``OverflowError`` ...) is a gap in this module, reported as Spark's ``INTERNAL_ERROR`` class
    naming the operation, so a refresh fails with a typed error and no state changes."""

    def run(cols: Sequence[np.ndarray], n: int) -> Vec:
        try:
            return ev(cols, n)
        except SqlError:
            raise
        except INTERNAL_GAPS as err:
            types = ", ".join(str(a.type) for a in e.args)
            raise SqlRuntimeError(
                internal_message(f"{e.op} over {types} failed", err), construct=e.op
            ) from err

    return run


# ---------------------------------------------------------------- element-wise helpers


def elementwise(
    fn: Callable[..., object],
    args: list[Vec],
    t: SqlType,
    null_result: Callable[..., bool] | None = None,
) -> Vec:
    """Apply ``fn`` to the Python values of rows where no argument is NULL."""
    n = len(args[0]) if args else 0
    null = np.zeros(n, dtype=bool)
    for a in args:
        null |= a.null
    cols = [objects(a) for a in args]
    out: list[object] = [None] * n
    for i in np.flatnonzero(~null):
        out[i] = fn(*(c[i] for c in cols))
    return from_objects(out, t)


def _any_null(args: list[Vec]) -> np.ndarray:
    null = np.zeros(len(args[0]), dtype=bool)
    for a in args:
        null = null | a.null
    return null


def runtime_error(message: str) -> SqlRuntimeError:
    return SqlRuntimeError(message)


# ---------------------------------------------------------------- arithmetic

_BOUNDS = {"TINYINT": 2**7, "SMALLINT": 2**15, "INT": 2**31, "BIGINT": 2**63}


def _check_int_range(data: np.ndarray, null: np.ndarray, t: SqlType, what: str) -> None:
    bound = _BOUNDS[t.name]
    if t.name == "BIGINT":
        return
    bad = ((data >= bound) | (data < -bound)) & ~null
    if bad.any():
        raise runtime_error(f"[ARITHMETIC_OVERFLOW] {what} overflows {t}")


def by_zero(name: str) -> SqlRuntimeError:
    """Spark's error for a zero divisor: ``%`` and ``pmod`` have their own class."""
    if name == "mod":
        return runtime_error("[REMAINDER_BY_ZERO] Remainder by zero")
    return runtime_error("[DIVIDE_BY_ZERO] Division by zero")


def _int_binary(name: str, a: Vec, b: Vec, t: SqlType) -> Vec:
    x, y = a.data.astype(np.int64), b.data.astype(np.int64)
    null = a.null | b.null
    live = ~null
    with np.errstate(over="ignore"):
        if name == "add":
            r = x + y
            over = ((x ^ r) & (y ^ r)) < 0
        elif name == "sub":
            r = x - y
            over = ((x ^ y) & (x ^ r)) < 0
        elif name == "mul":
            r = x * y
            big = (np.abs(x.astype(np.float64)) * np.abs(y.astype(np.float64))) >= 2.0**62
            over = np.zeros(len(r), dtype=bool)
            for i in np.flatnonzero(big & live):
                exact = int(x[i]) * int(y[i])
                over[i] = not -(2**63) <= exact < 2**63
        elif name in ("mod", "intdiv"):
            zero = (y == 0) & live
            if zero.any():
                raise by_zero(name)
            ys = np.where(y == 0, 1, y)
            q = np.abs(x) // np.abs(ys)  # truncating division, as Java
            q = np.where((x < 0) != (ys < 0), -q, q)
            r = q if name == "intdiv" else x - q * ys
            over = np.zeros(len(r), dtype=bool)
        else:
            raise runtime_error(name)
    if (over & live).any():
        raise runtime_error(f"[ARITHMETIC_OVERFLOW] {name} overflows {t}")
    _check_int_range(r, null, t, name)
    return Vec(r, null, t)


def _decimal_result(value: Decimal, t: SqlType) -> Decimal:
    assert t.scale is not None and t.precision is not None
    if value != 0 and value.adjusted() >= t.precision - t.scale:
        raise runtime_error(f"[NUMERIC_VALUE_OUT_OF_RANGE] {value} does not fit {t}")
    q = value.quantize(Decimal(1).scaleb(-t.scale), context=DECIMAL_CONTEXT)
    if q.adjusted() >= t.precision - t.scale and q != 0:
        raise runtime_error(f"[NUMERIC_VALUE_OUT_OF_RANGE] {value} does not fit {t}")
    return q


def _as_decimal(v: object) -> Decimal:
    return v if isinstance(v, Decimal) else Decimal(int(v))  # type: ignore[call-overload]


def _make_arith(name: str) -> Op:
    def run(args: list[Vec], t: SqlType) -> Vec:
        a, b = args
        if name == "intdiv":
            if a.type.is_decimal or b.type.is_decimal:

                def idiv(x: object, y: object) -> int:
                    dy = _as_decimal(y)
                    if dy == 0:
                        raise runtime_error("[DIVIDE_BY_ZERO] Division by zero")
                    q = int(DECIMAL_CONTEXT.divide_int(_as_decimal(x), dy))
                    if not -(2**63) <= q < 2**63:
                        raise runtime_error(f"[NUMERIC_VALUE_OUT_OF_RANGE] {q} does not fit BIGINT")
                    return q

                return elementwise(idiv, args, t)
            return _int_binary(name, a, b, t)
        if t.is_integral:
            return _int_binary(name, a, b, t)
        if t.is_fractional:
            x, y = a.data.astype(np.float64), b.data.astype(np.float64)
            null = a.null | b.null
            if name in ("div", "mod") and ((y == 0) & ~null).any():
                raise by_zero(name)
            with np.errstate(all="ignore"):
                r = {
                    "add": np.add,
                    "sub": np.subtract,
                    "mul": np.multiply,
                    "div": np.divide,
                    "mod": np.fmod,
                }[name](x, y)
            return Vec(r, null, t)
        if t.is_decimal:

            def dec(x: object, y: object) -> Decimal:
                dx, dy = _as_decimal(x), _as_decimal(y)
                c = DECIMAL_CONTEXT
                if name == "add":
                    r = c.add(dx, dy)
                elif name == "sub":
                    r = c.subtract(dx, dy)
                elif name == "mul":
                    r = c.multiply(dx, dy)
                else:
                    if dy == 0:
                        raise by_zero(name)
                    r = c.divide(dx, dy) if name == "div" else c.remainder(dx, dy)
                return _decimal_result(r, t)

            return elementwise(dec, args, t)
        raise UnsupportedSqlError(f"{name} on {t}")

    return run


for _name in ("add", "sub", "mul", "div", "mod", "intdiv"):
    OPS[_name] = _make_arith(_name)


@op("neg")
def _neg(args: list[Vec], t: SqlType) -> Vec:
    (a,) = args
    if t.is_integral:
        _check_int_range(-a.data, a.null, t, "negation")
        if t.name == "BIGINT" and ((a.data == np.iinfo(np.int64).min) & ~a.null).any():
            raise runtime_error("[ARITHMETIC_OVERFLOW] negation overflows BIGINT")
        return Vec(-a.data, a.null, t)
    if t.is_fractional:
        return Vec(-a.data, a.null, t)
    return elementwise(lambda x: -x, args, t)


@op("abs")
def _abs(args: list[Vec], t: SqlType) -> Vec:
    (a,) = args
    if a.data.dtype != object:
        return Vec(np.abs(a.data), a.null, t)
    return elementwise(abs, args, t)


@op("avg")
def _avg(args: list[Vec], t: SqlType) -> Vec:
    """AVG from SUM and COUNT columns: NULL when the count is 0."""
    s, c = args
    null = s.null | c.null | (c.data == 0) if c.data.dtype != object else s.null | c.null
    if t.is_decimal:

        def dec(x: object, n: object) -> object:
            if not n:
                return None
            return _decimal_result(DECIMAL_CONTEXT.divide(_as_decimal(x), Decimal(int(n))), t)  # type: ignore[call-overload]

        return elementwise(dec, args, t)
    x = (
        s.data.astype(np.float64)
        if s.data.dtype != object
        else np.array([float(v) if v is not None else 0.0 for v in s.data])
    )
    cnt = (
        c.data.astype(np.float64)
        if c.data.dtype != object
        else np.array([float(v) if v is not None else 0.0 for v in c.data])
    )
    with np.errstate(all="ignore"):
        r = x / np.where(cnt == 0, 1, cnt)
    return Vec(r, null | (cnt == 0), t)


# ---------------------------------------------------------------- comparison


def _compare_values(name: str, a: Vec, b: Vec) -> np.ndarray:
    if a.data.dtype != object and b.data.dtype != object:
        x, y = a.data, b.data
    else:
        x, y = objects(a), objects(b)
        if a.type.is_nested and name not in ("eq", "neq"):  # arrays, structs: Spark's order
            x = np.fromiter((value_order(v) for v in x), dtype=object, count=len(x))
            y = np.fromiter((value_order(v) for v in y), dtype=object, count=len(y))
        live = ~(a.null | b.null)
        out = np.zeros(len(x), dtype=bool)
        f = _PY_CMP[name]
        for i in np.flatnonzero(live):
            out[i] = f(x[i], y[i])
        return out
    return {
        "eq": np.equal,
        "neq": np.not_equal,
        "lt": np.less,
        "le": np.less_equal,
        "gt": np.greater,
        "ge": np.greater_equal,
    }[name](x, y)


_PY_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda x, y: x == y,
    "neq": lambda x, y: x != y,
    "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y,
    "gt": lambda x, y: x > y,
    "ge": lambda x, y: x >= y,
}


def _make_cmp(name: str) -> Op:
    def run(args: list[Vec], t: SqlType) -> Vec:
        a, b = args
        return Vec(_compare_values(name, a, b), a.null | b.null, t)

    return run


for _name in ("eq", "neq", "lt", "le", "gt", "ge"):
    OPS[_name] = _make_cmp(_name)


@op("eq_null_safe")
def _eq_null_safe(args: list[Vec], t: SqlType) -> Vec:
    a, b = args
    eq = _compare_values("eq", a, b) & ~a.null & ~b.null
    return Vec(eq | (a.null & b.null), np.zeros(len(a), dtype=bool), t)


# ---------------------------------------------------------------- logic


def _bool(v: Vec) -> np.ndarray:
    return v.data.astype(bool)


@op("and")
def _and(args: list[Vec], t: SqlType) -> Vec:
    a, b = args
    av, bv = _bool(a), _bool(b)
    false = (~a.null & ~av) | (~b.null & ~bv)
    true = (~a.null & av) & (~b.null & bv)
    return Vec(true, ~(true | false), t)


@op("or")
def _or(args: list[Vec], t: SqlType) -> Vec:
    a, b = args
    av, bv = _bool(a), _bool(b)
    true = (~a.null & av) | (~b.null & bv)
    false = (~a.null & ~av) & (~b.null & ~bv)
    return Vec(true, ~(true | false), t)


@op("not")
def _not(args: list[Vec], t: SqlType) -> Vec:
    (a,) = args
    return Vec(~_bool(a), a.null, t)


@op("is_null")
def _is_null(args: list[Vec], t: SqlType) -> Vec:
    return Vec(args[0].null.copy(), np.zeros(len(args[0]), dtype=bool), t)


@op("is_not_null")
def _is_not_null(args: list[Vec], t: SqlType) -> Vec:
    return Vec(~args[0].null, np.zeros(len(args[0]), dtype=bool), t)


OPS["is_true"] = lambda args, t: Vec(
    ~args[0].null & _bool(args[0]), np.zeros(len(args[0]), dtype=bool), t
)
OPS["is_false"] = lambda args, t: Vec(
    ~args[0].null & ~_bool(args[0]), np.zeros(len(args[0]), dtype=bool), t
)


@op("in")
def _in(args: list[Vec], t: SqlType) -> Vec:
    """``x IN (v1, ...)``: TRUE if some vi = x; else NULL if x or some vi is NULL; else FALSE."""
    x, rest = args[0], args[1:]
    n = len(x)
    true = np.zeros(n, dtype=bool)
    some_null = x.null.copy()
    for v in rest:
        true |= _compare_values("eq", x, v) & ~x.null & ~v.null
        some_null |= v.null
    return Vec(true, ~true & some_null, t)


# ---------------------------------------------------------------- conditionals


def _select_into(out: Vec, mask: np.ndarray, v: Vec) -> None:
    if out.data.dtype == object or v.data.dtype == object:
        if out.data.dtype != object:
            out.data = out.data.astype(object)
        src = objects(v)
        out.data[mask] = src[mask]
    else:
        out.data[mask] = v.data[mask]
    out.null[mask] = v.null[mask]


def _empty(t: SqlType, n: int) -> Vec:
    return constant(None, t, n)


def _case_lazy(subs: list[Evaluator], cols: Sequence[np.ndarray], n: int, t: SqlType) -> Vec:
    """CASE WHEN c1 THEN v1 ... ELSE e END; branches are only evaluated on their rows, so a
    branch that would fail (say, divide by zero) on rows it does not take does not fail."""
    out = _empty(t, n)
    remaining = np.ones(n, dtype=bool)
    pairs = len(subs) // 2
    for i in range(pairs):
        if not remaining.any():
            break
        cond = subs[2 * i](cols, n)
        hit = remaining & _bool(cond) & ~cond.null
        if hit.any():
            val = _eval_on(subs[2 * i + 1], cols, hit)
            _scatter(out, hit, val)
        remaining &= ~hit
    if len(subs) % 2 == 1 and remaining.any():
        _scatter(out, remaining, _eval_on(subs[-1], cols, remaining))
    return _retype(out, t)


def _eval_on(ev: Evaluator, cols: Sequence[np.ndarray], mask: np.ndarray) -> Vec:
    sub = [np.asarray(c)[mask] for c in cols]
    return ev(sub, int(mask.sum()))


def _scatter(out: Vec, mask: np.ndarray, v: Vec) -> None:
    if out.data.dtype == object or v.data.dtype == object:
        if out.data.dtype != object:
            out.data = out.data.astype(object)
        out.data[mask] = objects(v)
    else:
        out.data[mask] = v.data
    out.null[mask] = v.null


def _retype(v: Vec, t: SqlType) -> Vec:
    kind = numpy_kind(t)
    if kind is not None and v.data.dtype == object:
        return from_column(to_column(v), t)
    return v


def _coalesce_lazy(subs: list[Evaluator], cols: Sequence[np.ndarray], n: int, t: SqlType) -> Vec:
    out = _empty(t, n)
    remaining = np.ones(n, dtype=bool)
    for s in subs:
        if not remaining.any():
            break
        v = _eval_on(s, cols, remaining)
        idx = np.flatnonzero(remaining)
        take = ~v.null
        mask = np.zeros(n, dtype=bool)
        mask[idx[take]] = True
        if mask.any():
            sub = Vec(v.data[take], v.null[take], v.type)
            _scatter(out, mask, sub)
        remaining &= ~mask
    return _retype(out, t)


LAZY: dict[str, Callable[[list[Evaluator], Sequence[np.ndarray], int, SqlType], Vec]] = {
    "case": _case_lazy,
    "coalesce": _coalesce_lazy,
}


def lazy_only(args: list[Vec], t: SqlType) -> Vec:
    raise AssertionError("evaluated through LAZY")


OPS["case"] = lazy_only
OPS["coalesce"] = lazy_only


@op("nullif")
def _nullif(args: list[Vec], t: SqlType) -> Vec:
    a, b = args
    eq = _compare_values("eq", a, b) & ~a.null & ~b.null
    out = Vec(a.data.copy(), a.null | eq, t)
    if out.data.dtype == object:
        out.data[out.null] = None
    return out


def _extreme(args: list[Vec], t: SqlType, pick_greater: bool) -> Vec:
    def f(*vals: object) -> object:
        live = [v for v in vals if v is not None]
        if not live:
            return None
        return max(live) if pick_greater else min(live)  # type: ignore[type-var]

    n = len(args[0])
    cols = [objects(a) for a in args]
    return from_objects([f(*(c[i] for c in cols)) for i in range(n)], t)


OPS["greatest"] = lambda args, t: _extreme(args, t, True)
OPS["least"] = lambda args, t: _extreme(args, t, False)

__all__ = [
    "OPS",
    "compile_predicate",
    "compile_scalar",
    "compile_vec",
    "elementwise",
    "from_column",
    "to_column",
]
