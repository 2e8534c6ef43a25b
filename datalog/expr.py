"""Vectorized evaluation of Datalog terms and constraints over engine columns.

A compiled term is a function of the batch's columns (numpy arrays, one per variable of the
binding) returning ``(values, valid)``: ``values`` is an array of the batch's length and
``valid`` a boolean array, or None when every row is valid. A row is *invalid* when a partial
operation fails on it; such a binding produces no fact (the rule does not fire for it):

* integer ``/`` and ``%`` by zero; ``/`` truncates toward zero and ``%`` takes the sign of the
  dividend (C semantics, as Soufflé); float division follows IEEE (``x / 0.0`` is ``inf``);
* ``^`` with a negative integer exponent; ``bshl``/``bshr`` by a count outside 0..63;
* ``to_number``/``to_unsigned``/``to_float`` of a symbol that is not a number.

Integer arithmetic wraps at 64 bits. ``land``/``lor``/``lnot`` return 0 or 1. ``substr(s, i,
n)`` takes ``n`` characters from index ``i`` (clamped to the string). ``contains(a, b)`` holds
when ``b`` contains ``a``; ``match(p, s)`` when the regular expression ``p`` matches all of
``s``. Symbols order lexicographically (by code point).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from datalog import ast
from datalog.check import TypeClass

Columns = Sequence[np.ndarray]
Evaluated = tuple[np.ndarray, np.ndarray | None]

_NP_DTYPE: Mapping[TypeClass, type] = {"int": np.int64, "float": np.float64, "symbol": object}


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
            dtype = _NP_DTYPE[cls]
            return CompiledTerm(lambda cols, n: (np.full(n, value, dtype=dtype), None), cls, False)
        case ast.UnaryOp(op=op, operand=operand):
            inner = compile_term(operand, columns, types, want)
            return _unary(op, inner)
        case ast.BinOp(op=op, left=left, right=right):
            lt = compile_term(left, columns, types, want)
            rt = compile_term(right, columns, types, want)
            if lt.cls != rt.cls:  # an int constant beside a float
                lt = compile_term(left, columns, types, "float")
                rt = compile_term(right, columns, types, "float")
            return _binary(op, lt, rt)
        case ast.Functor(name=name, args=args):
            compiled = [compile_term(a, columns, types, want) for a in args]
            if name in ("min", "max") and len({c.cls for c in compiled}) > 1:
                compiled = [compile_term(a, columns, types, "float") for a in args]
            return _functor(name, compiled)
    raise AssertionError(f"cannot evaluate {term}")


def _unary(op: str, inner: CompiledTerm) -> CompiledTerm:
    f = inner.fn
    if op == "-":
        return CompiledTerm(
            lambda cols, n: _map1(f(cols, n), np.negative), inner.cls, inner.partial
        )
    if op == "bnot":
        return CompiledTerm(lambda cols, n: _map1(f(cols, n), np.invert), "int", inner.partial)
    return CompiledTerm(
        lambda cols, n: _map1(f(cols, n), lambda v: (v == 0).astype(np.int64)), "int", inner.partial
    )


def _map1(ev: Evaluated, fn: Callable[[np.ndarray], np.ndarray]) -> Evaluated:
    return fn(ev[0]), ev[1]


def _binary(op: str, lt: CompiledTerm, rt: CompiledTerm) -> CompiledTerm:
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
                case "+":
                    return a + b, valid
                case "-":
                    return a - b, valid
                case "*":
                    return a * b, valid
                case "/" if is_int:
                    ok = b != 0
                    safe = np.where(ok, b, 1)
                    q = np.abs(a) // np.abs(safe)
                    q = np.where((a < 0) != (safe < 0), -q, q)
                    return q, _and(valid, ok)
                case "/":
                    return a / b, valid
                case "%":
                    ok = b != 0
                    return np.fmod(a, np.where(ok, b, 1)), _and(valid, ok)
                case "^" if is_int:
                    ok = b >= 0
                    return np.power(a, np.where(ok, b, 0)), _and(valid, ok)
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


def _functor(name: str, args: list[CompiledTerm]) -> CompiledTerm:
    fns = [a.fn for a in args]
    partial = any(a.partial for a in args)

    def evaluate(cols: Columns, n: int) -> tuple[list[np.ndarray], np.ndarray | None]:
        values: list[np.ndarray] = []
        valid: np.ndarray | None = None
        for f in fns:
            v, ok = f(cols, n)
            values.append(v)
            valid = _and(valid, ok)
        return values, valid

    def objects(values: list[object], dtype: type = object) -> np.ndarray:
        arr: np.ndarray = np.empty(len(values), dtype=dtype)
        arr[:] = values
        return arr

    match name:
        case "cat":

            def cat(cols: Columns, n: int) -> Evaluated:
                vs, ok = evaluate(cols, n)
                return objects(["".join(parts) for parts in zip(*vs, strict=True)]), ok

            return CompiledTerm(cat, "symbol", partial)
        case "strlen":

            def strlen(cols: Columns, n: int) -> Evaluated:
                vs, ok = evaluate(cols, n)
                return np.fromiter((len(s) for s in vs[0]), np.int64, n), ok

            return CompiledTerm(strlen, "int", partial)
        case "substr":

            def substr(cols: Columns, n: int) -> Evaluated:
                vs, ok = evaluate(cols, n)
                return objects(
                    [s[max(i, 0) : max(i, 0) + max(k, 0)] for s, i, k in zip(*vs, strict=True)]
                ), ok

            return CompiledTerm(substr, "symbol", partial)
        case "to_string":

            def to_string(cols: Columns, n: int) -> Evaluated:
                vs, ok = evaluate(cols, n)
                return objects([str(x) for x in vs[0]]), ok

            return CompiledTerm(to_string, "symbol", partial)
        case "to_number" | "to_unsigned" | "to_float":
            kind: type = float if name == "to_float" else int
            cls: TypeClass = "float" if kind is float else "int"
            if args[0].cls != "symbol":

                def convert(cols: Columns, n: int) -> Evaluated:
                    vs, ok = evaluate(cols, n)
                    return as_array(vs[0], cls) if kind is float else np.trunc(vs[0]).astype(
                        np.int64
                    ), ok

                return CompiledTerm(convert, cls, partial)

            def parse_(cols: Columns, n: int) -> Evaluated:
                vs, ok = evaluate(cols, n)
                parsed = [_parse_number(s, kind) for s in vs[0]]
                nums: np.ndarray = np.array([p[0] for p in parsed], dtype=_NP_DTYPE[cls])
                good = np.fromiter((p[1] for p in parsed), bool, n)
                return nums.reshape(n), _and(ok, good)

            return CompiledTerm(parse_, cls, True)
        case "min" | "max":
            reduce = np.minimum if name == "min" else np.maximum

            def minmax(cols: Columns, n: int) -> Evaluated:
                vs, ok = evaluate(cols, n)
                out = vs[0]
                for v in vs[1:]:
                    out = reduce(out, v)
                return out, ok

            return CompiledTerm(minmax, args[0].cls, partial)
    raise AssertionError(f"unknown function {name}")


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
