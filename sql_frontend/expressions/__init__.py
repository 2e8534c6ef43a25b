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

# The function families register themselves in OPS when imported.  The package imports them
# (not evaluate.py), so evaluate does not import back the modules that import it; every import
# of a submodule runs this file first, so OPS is always complete.
from sql_frontend.expressions import casts as _casts  # noqa: F401  isort: skip
from sql_frontend.expressions import functions as _functions  # noqa: F401  isort: skip
from sql_frontend.expressions import more_functions as _more_functions  # noqa: F401  isort: skip
from sql_frontend.expressions import murmur3 as _murmur3  # noqa: F401  isort: skip
from sql_frontend.expressions import math_functions as _math  # noqa: F401  isort: skip
from sql_frontend.expressions import string_functions as _strings  # noqa: F401  isort: skip
from sql_frontend.expressions import datetime_functions as _datetimes  # noqa: F401  isort: skip
from sql_frontend.expressions import xxhash64 as _xxhash64  # noqa: F401  isort: skip
from sql_frontend.expressions import nested as _nested  # noqa: F401  isort: skip
from sql_frontend.expressions import collection_functions as _collections  # noqa: F401  isort: skip
from sql_frontend.expressions import json_functions as _json  # noqa: F401  isort: skip
from sql_frontend.expressions import vector_functions as _vectors  # noqa: F401  isort: skip
from sql_frontend.expressions import higher_order as _higher_order  # noqa: F401  isort: skip
from sql_frontend.expressions import text_encoding as _text_encoding  # noqa: F401  isort: skip
from sql_frontend.expressions import aes as _aes  # noqa: F401  isort: skip
from sql_frontend.expressions import xpath as _xpath  # noqa: F401  isort: skip
from sql_frontend.expressions import sketches as _sketches  # noqa: F401  isort: skip

__all__ = ["OPS", "compile_scalar", "from_column", "to_column"]
