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

import numpy as np
import pyarrow as pa

#: the largest offset of a ``pa.string()`` array (32-bit offsets)
_MAX_STRING_BYTES = (1 << 31) - 1
#: the separator :func:`string_array` joins values with, and its one UTF-8 byte
_SEP = "\x00"
_SEP_BYTE = b"\x00"


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
    which decides (and raises) as before.

    The values are joined with NUL separators and encoded once; the separators' byte
    positions give the offsets (UTF-8 has no zero byte but U+0000's), so no Python call is
    made per value unless a value holds U+0000 or is NULL."""
    values = c.tolist()
    n = len(values)
    if n == 0:
        return pa.nulls(0)
    valid: np.ndarray | None = None
    try:
        joined = _SEP.join(values)
    except TypeError:  # a NULL (or a value that is not a string)
        valid = np.fromiter((v is not None for v in values), dtype=np.bool_, count=n)
        if not valid.any():
            return pa.nulls(n)
        values = [v if v is not None else "" for v in values]
        try:
            joined = _SEP.join(values)
        except TypeError:
            return None
    try:
        raw = joined.encode("utf-8")
    except UnicodeEncodeError:
        return None
    if len(raw) - (n - 1) > _MAX_STRING_BYTES:
        return None
    if joined.count(_SEP) == n - 1:
        # string i ends at the i-th separator; less the i separators before it
        ends = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 0)
        offsets = np.empty(n + 1, dtype=np.int32)
        offsets[0] = 0
        offsets[1:n] = ends - np.arange(n - 1)
        offsets[n] = len(raw) - (n - 1)
        data = raw.replace(_SEP_BYTE, b"")
    else:  # a value holds U+0000: lengths value by value
        encoded = [v.encode("utf-8") for v in values]
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=n), out=offsets[1:])
        data = b"".join(encoded)
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
        built = string_array(c)
        if built is not None:
            return built
        arr = pa.array(c, type=pa.string(), from_pandas=False)
        if arr.null_count < len(arr):
            return arr
    return pa.array(c.tolist())
