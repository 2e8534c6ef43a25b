"""Typing a plain ndarray argument without importing ``numpy.ma``.

The first time a numba kernel receives an array of a new (dtype, ndim, layout), its
dispatcher falls back to :func:`numba.core.typing.typeof.typeof`, whose ndarray rule first
asks ``isinstance(val, np.ma.MaskedArray)``.  Since numpy 2, ``np.ma`` is imported on first
attribute access, and that import (its docstrings parsed by ``inspect``) costs ~15-25 ms: a
sixth to a quarter of a W2 initial load (150k edges, ~0.1 s) in a new process.  An exact
``np.ndarray`` is never a masked array, so :func:`install` gives exact ndarrays a rule that
skips the question and types them as numba's rule does; subclasses (a masked array among
them) still go to numba's own rule, which rejects masked arrays as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.core import errors, types
from numba.core.typing import typeof as numba_typeof
from numba.np import numpy_support

_installed = False


def install() -> None:
    """Register the exact-ndarray typing rule with numba (once per process)."""
    global _installed
    if _installed:
        return
    numba_rule = numba_typeof.typeof_impl.dispatch(np.ndarray)

    def typeof_ndarray(val: Any, c: Any) -> Any:
        if type(val) is np.ndarray:
            return typeof_plain_ndarray(val)
        return numba_rule(val, c)

    numba_typeof.typeof_impl.register(np.ndarray)(typeof_ndarray)
    _installed = True


def typeof_plain_ndarray(val: np.ndarray) -> types.Array:
    """numba's ndarray typing (``numba.core.typing.typeof._typeof_ndarray``) after its
    masked-array check: the dtype, dimensions, layout and whether it is read-only."""
    try:
        dtype = numpy_support.from_dtype(val.dtype)
    except errors.NumbaNotImplementedError:
        raise errors.NumbaValueError(f"Unsupported array dtype: {val.dtype}") from None
    layout = numpy_support.map_layout(val)
    return types.Array(dtype, val.ndim, layout, readonly=not val.flags.writeable)
