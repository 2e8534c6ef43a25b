"""Vectorized evaluation of Datalog terms and constraints over engine columns.

A compiled term is a function of the batch's columns (numpy arrays, one per variable of the
binding) returning ``(values, valid)``: ``values`` is an array of the batch's length and
``valid`` a boolean array, or None when every row is valid. A row is *invalid* when a partial
operation fails on it; such a binding produces no fact (the rule does not fire for it):

* integer ``/`` and ``%`` by zero; ``/`` truncates toward zero and ``%`` takes the sign of the
  dividend (C semantics, as Soufflé); float division follows IEEE (``x / 0.0`` is ``inf``);
* ``^`` with a negative integer exponent; ``bshl``/``bshr`` by a count outside 0..63;
* ``to_number``/``to_unsigned``/``to_float`` of a symbol that is not a number.

Integers are signed 64-bit: ``+ - * ^``, negation, ``/`` (of the smallest number by -1),
constants and ``to_number`` that leave that range raise :class:`DatalogOverflowError` (with
the operator's line and column) instead of wrapping; the refresh is then rolled back. Bitwise
operators and shifts work on the 64 bits and never overflow. ``land``/``lor``/``lnot`` return 0 or 1. ``substr(s, i,
n)`` takes ``n`` characters from index ``i`` (clamped to the string). ``contains(a, b)`` holds
when ``b`` contains ``a``; ``match(p, s)`` when the regular expression ``p`` matches all of
``s``. Symbols order lexicographically (by code point).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from datalog import ast
from datalog.check import TypeClass
from datalog.errors import DatalogOverflowError

Columns = Sequence[np.ndarray]
Evaluated = tuple[np.ndarray, np.ndarray | None]

_NP_DTYPE: Mapping[TypeClass, type] = {"int": np.int64, "float": np.float64, "symbol": object}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class CompiledTerm:
    """A term compiled against a column layout: ``fn(columns, n) -> (values, valid)``."""

    fn: Callable[[Columns, int], Evaluated]
    cls: TypeClass
    partial: bool  # whether some rows may be invalid

    def __call__(self, cols: Columns, n: int) -> Evaluated:
        return self.fn(cols, n)


def as_array(values: np.ndarray, cls: TypeClass) -> np.ndarray:
    """``values`` converted to the engine's array type for ``cls``."""
    dtype = _NP_DTYPE[cls]
    if values.dtype == dtype:
        return values
    return np.asarray(values, dtype=dtype)


def _and(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def compile_term(
    term: ast.Term,
    columns: Mapping[str, int],
    types: Mapping[str, TypeClass],
    want: TypeClass | None = None,
) -> CompiledTerm:
    """Compile ``term``; ``columns`` maps variable name -> column index.

    ``want`` coerces integer constants to float where a float is expected.
    """
    match term:
        case ast.Var(name=name):
            idx = columns[name]
            cls = types[name]
            return CompiledTerm(lambda cols, n: (cols[idx], None), cls, False)
        case ast.Const(value=value, type=t):
            cls = "int" if t in ("number", "unsigned") else ("float" if t == "float" else "symbol")
            if want == "float" and cls == "int":
                cls, value = "float", float(value)
            if cls == "int" and not INT64_MIN <= int(value) <= INT64_MAX:
                raise _overflow(term, f"the constant {value}")
            dtype = _NP_DTYPE[cls]
            return CompiledTerm(lambda cols, n: (np.full(n, value, dtype=dtype), None), cls, False)
        case ast.UnaryOp(op=op, operand=operand):
            inner = compile_term(operand, columns, types, want)
            return _unary(op, inner, term)
        case ast.BinOp(op=op, left=left, right=right):
            lt = compile_term(left, columns, types, want)
            rt = compile_term(right, columns, types, want)
            if lt.cls != rt.cls:  # an int constant beside a float
                lt = compile_term(left, columns, types, "float")
                rt = compile_term(right, columns, types, "float")
            return _binary(op, lt, rt, term)
        case ast.Functor(name=name, args=args):
            compiled = [compile_term(a, columns, types, want) for a in args]
            if name in ("min", "max") and len({c.cls for c in compiled}) > 1:
                compiled = [compile_term(a, columns, types, "float") for a in args]
            return _functor(name, compiled, term)
    raise AssertionError(f"cannot evaluate {term}")


def _overflow(term: ast.Term, what: str) -> DatalogOverflowError:
    pos = getattr(term, "pos", None)
    op = getattr(term, "op", None) or getattr(term, "name", None)
    return DatalogOverflowError(
        f"{what} does not fit a 64-bit number (-2^63 .. 2^63-1); Datalog numbers never wrap",
        line=getattr(pos, "line", None),
        column=getattr(pos, "column", None),
        construct=op,
    )


def _raise_if(bad: np.ndarray, valid: np.ndarray | None, term: ast.Term, what: str) -> None:
    """Raise for the first row where ``bad`` holds (rows already invalid do not count)."""
    if valid is not None:
        bad = bad & valid
    if bad.any():
        raise _overflow(term, what)


def _checked_mul(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a * b`` of int64 arrays and where it overflowed (exact, Python ints near the edge)."""
    with np.errstate(all="ignore"):
        r = a * b
        estimate = np.abs(a.astype(np.float64) * b.astype(np.float64))
    bad = estimate >= 2.0**63 * 1.01
    for i in np.flatnonzero((estimate >= 2.0**62) & ~bad):
        bad[i] = not INT64_MIN <= int(a[i]) * int(b[i]) <= INT64_MAX
    return r, bad


def _checked_pow(a: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a ** e`` (``e >= 0``) of int64 arrays and where it overflowed."""
    with np.errstate(all="ignore"):
        r = np.power(a, e)
        estimate = np.abs(a.astype(np.float64)) ** e.astype(np.float64)
    bad = (estimate >= 2.0**63 * 1.01) & (np.abs(a) > 1)
    for i in np.flatnonzero((estimate >= 2.0**62) & ~bad & (np.abs(a) > 1)):
        bad[i] = not INT64_MIN <= int(a[i]) ** int(e[i]) <= INT64_MAX
    return r, bad


def _unary(op: str, inner: CompiledTerm, term: ast.Term) -> CompiledTerm:
    f = inner.fn
    if op == "-":
        is_int = inner.cls == "int"

        def neg(cols: Columns, n: int) -> Evaluated:
            v, valid = f(cols, n)
            if is_int:
                _raise_if(v == INT64_MIN, valid, term, "the negation of -2^63")
            with np.errstate(all="ignore"):
                return np.negative(v), valid

        return CompiledTerm(neg, inner.cls, inner.partial)
    if op == "bnot":
        return CompiledTerm(lambda cols, n: _map1(f(cols, n), np.invert), "int", inner.partial)
    return CompiledTerm(
        lambda cols, n: _map1(f(cols, n), lambda v: (v == 0).astype(np.int64)), "int", inner.partial
    )


def _map1(ev: Evaluated, fn: Callable[[np.ndarray], np.ndarray]) -> Evaluated:
    return fn(ev[0]), ev[1]


def _binary(op: str, lt: CompiledTerm, rt: CompiledTerm, term: ast.Term) -> CompiledTerm:
    # kept whole: one match over the operators, each case one operator's semantics
    cls = lt.cls
    lf, rf = lt.fn, rt.fn
    is_int = cls == "int"
    partial = lt.partial or rt.partial or (is_int and op in ("/", "%", "^", "bshl", "bshr"))

    def run(cols: Columns, n: int) -> Evaluated:
        a, av = lf(cols, n)
        b, bv = rf(cols, n)
        valid = _and(av, bv)
        with np.errstate(all="ignore"):
            match op:
                case "+" if is_int:
                    r = a + b
                    _raise_if(((a ^ r) & (b ^ r)) < 0, valid, term, "a sum")
                    return r, valid
                case "-" if is_int:
                    r = a - b
                    _raise_if(((a ^ b) & (a ^ r)) < 0, valid, term, "a difference")
                    return r, valid
                case "*" if is_int:
                    r, bad = _checked_mul(a, b)
                    _raise_if(bad, valid, term, "a product")
                    return r, valid
                case "+":
                    return a + b, valid
                case "-":
                    return a - b, valid
                case "*":
                    return a * b, valid
                case "/" if is_int:
                    ok = b != 0
                    safe = np.where(ok, b, 1)
                    _raise_if((a == INT64_MIN) & (safe == -1), _and(valid, ok), term, "-2^63 / -1")
                    q = (a - np.fmod(a, safe)) // safe  # exact: truncation toward zero
                    return q, _and(valid, ok)
                case "/":
                    return a / b, valid
                case "%":
                    ok = b != 0
                    return np.fmod(a, np.where(ok, b, 1)), _and(valid, ok)
                case "^" if is_int:
                    ok = b >= 0
                    r, bad = _checked_pow(a, np.where(ok, b, 0))
                    _raise_if(bad, _and(valid, ok), term, "a power")
                    return r, _and(valid, ok)
                case "^":
                    return np.power(a, b), valid
                case "band":
                    return a & b, valid
                case "bor":
                    return a | b, valid
                case "bxor":
                    return a ^ b, valid
                case "bshl" | "bshr":
                    ok = (b >= 0) & (b < 64)
                    s = np.where(ok, b, 0)
                    return (a << s if op == "bshl" else a >> s), _and(valid, ok)
                case "land":
                    return ((a != 0) & (b != 0)).astype(np.int64), valid
                case "lor":
                    return ((a != 0) | (b != 0)).astype(np.int64), valid
        raise AssertionError(op)

    return CompiledTerm(run, cls, partial)


def _parse_number(text: object, kind: type) -> tuple[object, bool]:
    try:
        if kind is float:
            return float(text), True  # type: ignore[arg-type]
        if isinstance(text, str):
            try:
                return int(text), True
            except ValueError:
                return int(text.strip(), 0), True  # 0x.., 0b..
        return int(text), True  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return 0, False


def _evaluate(
    args: Sequence[CompiledTerm], cols: Columns, n: int
) -> tuple[list[np.ndarray], np.ndarray | None]:
    """The values of every argument, and the rows where all are valid."""
    values: list[np.ndarray] = []
    valid: np.ndarray | None = None
    for a in args:
        v, ok = a.fn(cols, n)
        values.append(v)
        valid = _and(valid, ok)
    return values, valid


def _objects(values: list[object]) -> np.ndarray:
    arr: np.ndarray = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def _substr(vs: list[np.ndarray], n: int) -> np.ndarray:
    return _objects([s[max(i, 0) : max(i, 0) + max(k, 0)] for s, i, k in zip(*vs, strict=True)])


#: The total functors: name -> (result class, None for the first argument's; the values of
#: the arguments and the row count -> the result).
_TOTAL_FUNCTORS: Mapping[
    str, tuple[TypeClass | None, Callable[[list[np.ndarray], int], np.ndarray]]
] = {
    "cat": ("symbol", lambda vs, n: _objects(["".join(p) for p in zip(*vs, strict=True)])),
    "strlen": ("int", lambda vs, n: np.fromiter((len(s) for s in vs[0]), np.int64, n)),
    "substr": ("symbol", _substr),
    "to_string": ("symbol", lambda vs, n: _objects([str(x) for x in vs[0]])),
    "min": (None, lambda vs, n: functools.reduce(np.minimum, vs)),
    "max": (None, lambda vs, n: functools.reduce(np.maximum, vs)),
}


def _functor(name: str, args: list[CompiledTerm], term: ast.Term) -> CompiledTerm:
    partial = any(a.partial for a in args)
    if name in ("to_number", "to_unsigned", "to_float"):
        return _conversion(name, args, term)
    if name not in _TOTAL_FUNCTORS:
        raise AssertionError(f"unknown function {name}")
    cls, fn = _TOTAL_FUNCTORS[name]

    def run(cols: Columns, n: int) -> Evaluated:
        vs, ok = _evaluate(args, cols, n)
        return fn(vs, n), ok

    return CompiledTerm(run, args[0].cls if cls is None else cls, partial)


def _conversion(name: str, args: list[CompiledTerm], term: ast.Term) -> CompiledTerm:
    """``to_number``/``to_unsigned``/``to_float``: of a number, a conversion (a float that does
    not fit 64 bits raises); of a symbol, a parse (rows that are no number are invalid)."""
    kind: type = float if name == "to_float" else int
    cls: TypeClass = "float" if kind is float else "int"
    if args[0].cls != "symbol":

        def convert(cols: Columns, n: int) -> Evaluated:
            vs, ok = _evaluate(args, cols, n)
            if kind is float or vs[0].dtype != np.float64:
                return as_array(vs[0], cls), ok
            t = np.trunc(vs[0])
            fits = (t >= -(2.0**63)) & (t < 2.0**63)  # False for NaN and infinities
            _raise_if(~fits, ok, term, f"{name} of a float")
            return np.where(fits, t, 0).astype(np.int64), ok

        return CompiledTerm(convert, cls, any(a.partial for a in args))

    def parse_(cols: Columns, n: int) -> Evaluated:
        vs, ok = _evaluate(args, cols, n)
        parsed = [_parse_number(s, kind) for s in vs[0]]
        if kind is int:
            big = [
                v
                for (v, good) in parsed
                if good and not INT64_MIN <= v <= INT64_MAX  # type: ignore[operator]
            ]
            if big:
                raise _overflow(term, f"{name} of {big[0]}")
        nums: np.ndarray = np.array([p[0] for p in parsed], dtype=_NP_DTYPE[cls])
        good = np.fromiter((p[1] for p in parsed), bool, n)
        return nums.reshape(n), _and(ok, good)

    return CompiledTerm(parse_, cls, True)


_COMPARE: Mapping[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "=": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def compile_condition(
    literal: ast.Comparison | ast.Constraint,
    columns: Mapping[str, int],
    types: Mapping[str, TypeClass],
) -> Callable[[Columns, int], np.ndarray]:
    """Compile a comparison or constraint to ``fn(columns, n) -> bool array``."""
    if isinstance(literal, ast.Constraint) and literal.name in ("true", "false"):
        truth = literal.name == "true"
        return lambda cols, n: np.full(n, truth, dtype=bool)
    if isinstance(literal, ast.Comparison):
        left, right, op = literal.left, literal.right, literal.op
    else:
        left, right, op = literal.args[0], literal.args[1], literal.name
    lt = compile_term(left, columns, types)
    rt = compile_term(right, columns, types)
    if lt.cls != rt.cls:
        lt = compile_term(left, columns, types, "float")
        rt = compile_term(right, columns, types, "float")

    def run(cols: Columns, n: int) -> np.ndarray:
        a, av = lt(cols, n)
        b, bv = rt(cols, n)
        if op == "contains":
            out = np.fromiter((x in y for x, y in zip(a, b, strict=True)), bool, n)
        elif op == "match":
            out = np.fromiter(
                (
                    bool(r.fullmatch(y)) if (r := _regex(x)) else False
                    for x, y in zip(a, b, strict=True)
                ),
                bool,
                n,
            )
        else:
            out = np.asarray(_COMPARE[op](a, b), dtype=bool)
        valid = _and(av, bv)
        return out if valid is None else out & valid

    return run
