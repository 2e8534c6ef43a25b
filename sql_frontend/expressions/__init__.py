"""Vectorized evaluation of scalar expressions with Spark's semantics.

:func:`compile_scalar` turns a :mod:`sql_frontend.scalar` expression into a function of numpy
columns. Semantics are Spark 4's defaults (ANSI mode on): NULL propagates, AND/OR/NOT use
three-valued logic, integer ``/`` yields DOUBLE, division or modulo by zero, integer overflow
and invalid CASTs raise :class:`~sql_frontend.errors.SqlRuntimeError` (``try_cast`` yields
NULL), decimals are exact and rounded HALF_UP to their result scale.

>>> import numpy as np
>>> from sql_frontend.scalar import Call, Lit, Ref
>>> from sql_frontend.sql_types import BIGINT
>>> f = compile_scalar(Call("add", (Ref(0, BIGINT), Lit(1, BIGINT)), BIGINT))
>>> f(np.array([1, None, 3], dtype=object)).tolist()
[2, None, 4]
"""

from sql_frontend.expressions.evaluate import OPS, compile_scalar, from_column, to_column

__all__ = ["OPS", "compile_scalar", "from_column", "to_column"]
