"""Spark's ``vector_*`` functions over ``ARRAY<FLOAT>`` vectors, in single precision as
Spark computes them (a float32 accumulator, element by element): NULL for a NULL vector or
element, ``VECTOR_DIMENSION_MISMATCH`` for vectors of different lengths. Per row (numpy
float32 arithmetic on each row's tuple)."""

from __future__ import annotations

import math

import numpy as np

from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error

F = np.float32


def _vector(v: tuple[object, ...]) -> np.ndarray | None:
    return None if any(x is None for x in v) else np.array(v, dtype=F)


def _pair(name: str, a: tuple[object, ...], b: tuple[object, ...]) -> tuple | None:
    if len(a) != len(b):
        raise runtime_error(
            f"[VECTOR_DIMENSION_MISMATCH] Vectors passed to `{name}` must have the same "
            f"dimension, but got {len(a)} and {len(b)}."
        )
    x, y = _vector(a), _vector(b)
    return None if x is None or y is None else (x, y)


def _sum(values: np.ndarray) -> np.float32:
    total = F(0)
    for v in values:
        total = F(total + v)
    return total


def _inner(a: tuple, b: tuple) -> float | None:
    p = _pair("vector_inner_product", a, b)
    return None if p is None else float(_sum(p[0] * p[1]))


def _cosine(a: tuple, b: tuple) -> float | None:
    p = _pair("vector_cosine_similarity", a, b)
    if p is None:
        return None
    x, y = p
    na, nb = F(math.sqrt(_sum(x * x))), F(math.sqrt(_sum(y * y)))
    if na == 0 or nb == 0:
        return None
    return float(F(_sum(x * y) / F(na * nb)))


def _l2(a: tuple, b: tuple) -> float | None:
    p = _pair("vector_l2_distance", a, b)
    if p is None:
        return None
    d = p[0] - p[1]
    return float(F(math.sqrt(_sum(d * d))))


def _norm_of(x: np.ndarray, degree: float) -> np.float32:
    if degree == math.inf:
        return F(np.max(np.abs(x))) if len(x) else F(0)
    if degree == 1:
        return _sum(np.abs(x))
    if degree == 2:
        return F(math.sqrt(_sum(x * x)))
    return F(float(_sum(np.abs(x) ** F(degree))) ** (1.0 / degree))


def _norm(v: tuple, degree: float) -> float | None:
    x = _vector(v)
    return None if x is None else float(_norm_of(x, degree))


def _normalize(v: tuple, degree: float) -> tuple | None:
    x = _vector(v)
    if x is None:
        return None
    n = _norm_of(x, degree)
    return None if n == 0 else tuple(float(F(e / n)) for e in x)


OPS["vector_inner_product"] = lambda args, t: elementwise(_inner, args, t)
OPS["vector_cosine_similarity"] = lambda args, t: elementwise(_cosine, args, t)
OPS["vector_l2_distance"] = lambda args, t: elementwise(_l2, args, t)
OPS["vector_norm"] = lambda args, t: elementwise(_norm, args, t)
OPS["vector_normalize"] = lambda args, t: elementwise(_normalize, args, t)
