"""Engine columns as Arrow arrays, built from their buffers.

``pa.array`` asks, on its first call in a process, whether its argument is a pandas object,
and so imports pandas: 0.5-0.75 s on our machines, paid by the first read of a view's
changes in a process that has not imported pandas itself (the engine's own API never
needs it).  An output column of the engine has a known dtype, so its Arrow array can be
assembled from buffers instead — a numeric column's data buffer as it is, a boolean
column's bits packed, a string column's UTF-8 bytes and offsets — with the same values
and type ``pa.array`` gives.  Other columns (and values a fast path does not expect) still
go through ``pa.array``.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa

#: the largest offset of a ``pa.string()`` array (32-bit offsets)
_MAX_STRING_BYTES = (1 << 31) - 1


def numeric_array(c: np.ndarray, dtype: np.dtype, typ: pa.DataType) -> pa.Array:
    """A column declared ``dtype`` as an Arrow array of type ``typ`` (``dtype``'s): a
    contiguous native int/float column is wrapped as Arrow's data buffer, with no copy or
    type inference (a step's changes are read every step, mostly a few rows)."""
    if c.dtype == dtype and dtype.kind in "if" and dtype.isnative and c.flags.c_contiguous:
        return pa.Array.from_buffers(typ, len(c), [None, pa.py_buffer(c)])
    return pa.array(c, type=typ)


def bool_array(c: np.ndarray) -> pa.Array:
    """A ``bool`` column as an Arrow boolean array (its values packed one bit each, least
    significant bit first, as Arrow stores them)."""
    bits = np.packbits(c, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(c), [None, pa.py_buffer(bits)])


def string_array(c: np.ndarray) -> pa.Array | None:
    """An object column of ``str`` values (``None`` for NULL) as an Arrow string array
    (a column without a single string: a null array, the type Arrow infers for it), or
    None when it cannot be built here (a value that is not a string, text that is not
    valid UTF-8, or more than 2 GiB of it): the caller then converts it with ``pa.array``,
    which decides (and raises) as before."""
    values = c.tolist()
    n = len(values)
    if n == 0:
        return pa.nulls(0)
    valid: np.ndarray | None = None
    if None in values:
        valid = np.fromiter((v is not None for v in values), dtype=np.bool_, count=n)
        if not valid.any():
            return pa.nulls(n)
        values = [v if v is not None else "" for v in values]
    try:
        text = "".join(values)
        data = text.encode("utf-8")
    except (TypeError, UnicodeEncodeError):
        return None
    if len(data) == len(text):  # every character one byte: lengths in bytes are in chars
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=n)
    else:
        encoded = [v.encode("utf-8") for v in values]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    if len(data) > _MAX_STRING_BYTES:
        return None
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    if valid is None:
        return pa.Array.from_buffers(pa.string(), n, buffers, null_count=0)
    buffers[0] = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), n, buffers, null_count=n - int(valid.sum()))


def column_array(c: np.ndarray, dtype: str) -> pa.Array:
    """An output column as Arrow: numbers, booleans and strings from their buffers (see
    the module's docstring), others by ``pa.array``'s inference from the values.  A
    ``str`` column without a single string keeps the inferred (null) type."""
    if c.dtype != object:
        if c.dtype.kind in "if" and c.dtype.isnative:
            return numeric_array(c, c.dtype, pa.from_numpy_dtype(c.dtype))
        if c.dtype.kind == "b":
            return bool_array(c)
        return pa.array(c)
    if dtype == "str":
        # once pandas is imported (by anything), ``pa.array`` is the faster of the two
        # (~2x on 10-500 strings); the buffers are for a process without pandas
        built = string_array(c) if "pandas" not in sys.modules else None
        if built is not None:
            return built
        arr = pa.array(c, type=pa.string(), from_pandas=False)
        if arr.null_count < len(arr):
            return arr
    return pa.array(c.tolist())
