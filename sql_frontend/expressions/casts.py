"""CAST and TRY_CAST with Spark 4's ANSI rules: an invalid or out-of-range value fails the
refresh under CAST and is NULL under TRY_CAST."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

import numpy as np

from sql_frontend.errors import UnsupportedSqlError
from sql_frontend.expressions.evaluate import (
    DECIMAL_CONTEXT,
    OPS,
    _decimal_result,
    elementwise,
    runtime_error,
)
from sql_frontend.expressions.nested import cast_nested
from sql_frontend.expressions.vec import Vec
from sql_frontend.sql_types import STRING, TIMESTAMP, SqlType

_INT_BOUNDS = {"TINYINT": 2**7, "SMALLINT": 2**15, "INT": 2**31, "BIGINT": 2**63}


class _Invalid(Exception):
    """The value cannot be read as the target type (Spark's ``CAST_INVALID_INPUT``)."""

    error_class = "CAST_INVALID_INPUT"


class _Overflow(_Invalid):
    """A number outside the integral target type (Spark's ``CAST_OVERFLOW``)."""

    error_class = "CAST_OVERFLOW"


class _OutOfRange(_Invalid):
    """A number the DECIMAL target cannot hold (Spark's ``NUMERIC_VALUE_OUT_OF_RANGE``)."""

    error_class = "NUMERIC_VALUE_OUT_OF_RANGE"


def java_double_str(x: float) -> str:
    """Spark's (Java's) text of a double: ``1.0``, ``1.0E10``, ``1.0E-4``, ``NaN``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    a = abs(x)
    if 1e-3 <= a < 1e7:
        s = repr(x)
        if "e" in s or "E" in s:
            s = format(x, "f")
        return s if "." in s else s + ".0"
    # normalise to one digit before the point, as Java does
    d = Decimal(repr(x))
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    e10 = len(digits) + exponent - 1
    m = ds[0] + "." + (ds[1:] or "0")
    return f"{'-' if sign else ''}{m}E{e10}"


def timestamp_str(v: dt.datetime) -> str:
    s = v.strftime("%Y-%m-%d %H:%M:%S")
    if v.microsecond:
        s += ("." + f"{v.microsecond:06d}").rstrip("0")
    return s


def to_str(v: object, t: SqlType) -> str:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", errors="replace")
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return java_double_str(v)
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, dt.datetime):
        return timestamp_str(v)
    if isinstance(v, dt.date):
        return v.isoformat()
    return str(v)


_EPOCH = dt.datetime(1970, 1, 1)
_INT_RE = re.compile(r"^[+-]?\d+$")
_DATE_RE = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?:[ T].*)?$")
_TS_RE = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?$"
)


def _to_int(v: object, t: SqlType) -> int:
    if isinstance(v, bool):
        r = int(v)
    elif isinstance(v, int):
        r = v
    elif isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise _Overflow
        r = int(v)
    elif isinstance(v, Decimal):
        r = int(v)
    elif isinstance(v, str):
        s = v.strip()
        if not _INT_RE.match(s):  # Spark reads only integer syntax into an integral type
            raise _Invalid
        r = int(s)
    elif isinstance(v, dt.datetime):  # seconds since the epoch, rounded down
        r = math.floor((v - _EPOCH).total_seconds())
    else:
        raise _Invalid
    bound = _INT_BOUNDS[t.name]
    if not -bound <= r < bound:
        raise _Invalid if isinstance(v, str) else _Overflow
    return r


def _to_double(v: object, t: SqlType) -> float:
    if isinstance(v, str):
        s = v.strip()
        if s[-1:] in ("d", "D", "f", "F") and not s.lower().endswith("inf"):
            s = s[:-1]  # Java's double literal suffixes
        if "_" in s:
            raise _Invalid
        try:
            return float(s)
        except ValueError:
            raise _Invalid from None
    if isinstance(v, dt.datetime):
        return (v - _EPOCH).total_seconds()
    if isinstance(v, (int, float, Decimal)):
        return float(v)
    raise _Invalid


def _to_decimal(v: object, t: SqlType) -> Decimal:
    if isinstance(v, bool):
        d = Decimal(int(v))
    elif isinstance(v, int):
        d = Decimal(v)
    elif isinstance(v, float):
        if math.isnan(v):
            return None  # type: ignore[return-value]  # Spark: NaN as a DECIMAL is NULL
        if math.isinf(v):
            raise _OutOfRange
        d = Decimal(repr(v))
    elif isinstance(v, Decimal):
        d = v
    elif isinstance(v, str):
        try:
            d = Decimal(v.strip())
        except InvalidOperation:
            raise _Invalid from None
        if not d.is_finite():
            raise _Invalid
    else:
        raise _Invalid
    assert t.scale is not None and t.precision is not None
    if d != 0 and d.adjusted() >= t.precision - t.scale:
        raise _OutOfRange
    q = d.quantize(Decimal(1).scaleb(-t.scale), context=DECIMAL_CONTEXT)
    if q != 0 and q.adjusted() >= t.precision - t.scale:  # rounding carried a digit
        raise _OutOfRange
    return q


def _to_bool(v: object, t: SqlType) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float, Decimal)):
        return v != 0
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("t", "true", "y", "yes", "1"):
            return True
        if s in ("f", "false", "n", "no", "0"):
            return False
    raise _Invalid


def _to_date(v: object, t: SqlType) -> dt.date:
    if isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, dt.date):
        return v
    if isinstance(v, str):
        m = _DATE_RE.match(v.strip())
        if m:
            try:
                return dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
            except ValueError:
                raise _Invalid from None
    raise _Invalid


def _to_timestamp(v: object, t: SqlType) -> dt.datetime:
    if isinstance(v, dt.datetime):
        return v
    if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
        try:  # seconds since the epoch
            return _EPOCH + dt.timedelta(seconds=float(v))
        except (OverflowError, ValueError):
            raise _Invalid from None
    if isinstance(v, dt.date):
        return dt.datetime(v.year, v.month, v.day)
    if isinstance(v, str):
        m = _TS_RE.match(v.strip())
        if m:
            frac = (m.group(7) or "0")[:6].ljust(6, "0")
            try:
                return dt.datetime(
                    int(m.group(1)),
                    int(m.group(2)),
                    int(m.group(3)),
                    int(m.group(4) or 0),
                    int(m.group(5) or 0),
                    int(m.group(6) or 0),
                    int(frac),
                )
            except ValueError:
                raise _Invalid from None
    raise _Invalid


def _to_binary(v: object, t: SqlType) -> bytes:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    raise _Invalid


_TIME_RE = re.compile(r"^T?(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$")


def time_parts(v: str) -> dt.datetime:
    """A string read as Spark reads it for HOUR / MINUTE / SECOND: a timestamp, or a time of
    day alone (``'10:11:12'``, dated 1970-01-01 here: only its time is ever read)."""
    m = _TIME_RE.match(v.strip())
    if m:
        frac = (m.group(4) or "0")[:6].ljust(6, "0")
        try:
            return dt.datetime(
                1970, 1, 1, int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), int(frac)
            )
        except ValueError:
            pass
    else:
        try:
            return _to_timestamp(v, TIMESTAMP)
        except _Invalid:
            pass
    raise runtime_error(f"[CAST_INVALID_INPUT] cannot cast {v!r} of STRING to TIMESTAMP")


_CONVERT: dict[str, Callable[[object, SqlType], object]] = {
    "TINYINT": _to_int,
    "SMALLINT": _to_int,
    "INT": _to_int,
    "BIGINT": _to_int,
    "FLOAT": _to_double,
    "DOUBLE": _to_double,
    "DECIMAL": _to_decimal,
    "BOOLEAN": _to_bool,
    "DATE": _to_date,
    "TIMESTAMP": _to_timestamp,
    "STRING": to_str,
    "BINARY": _to_binary,
}


def reads_as(v: str, t: SqlType) -> bool:
    """Whether CAST(v AS t) succeeds."""
    try:
        _CONVERT[t.name](v, t)
    except _Invalid:
        return False
    return True


def _cast(args: list[Vec], t: SqlType, safe: bool) -> Vec:
    (a,) = args
    src = a.type
    if src == t:
        return a
    if src.name == "NULL":
        return elementwise(lambda v: None, args, t)
    if src.is_nested:
        return cast_nested(a, t, safe, lambda v, to, s: _cast([v], to, s))
    if t.name not in _CONVERT:
        raise UnsupportedSqlError(f"CAST to {t}")
    # Fast vectorized paths.
    if src.is_integral and t.is_integral and not safe:
        bound = _INT_BOUNDS[t.name]
        if t.name != "BIGINT":
            bad = ((a.data >= bound) | (a.data < -bound)) & ~a.null
            if bad.any():
                raise runtime_error(f"[CAST_OVERFLOW] value does not fit {t}")
        return Vec(a.data, a.null, t)
    if (src.is_integral or src.is_fractional) and t.is_fractional:
        return Vec(a.data.astype(np.float64), a.null, t)
    convert = _CONVERT[t.name]
    if src.is_decimal and t == STRING:  # Spark prints a decimal with its type's scale
        step = Decimal(1).scaleb(-(src.scale or 0))
        convert = lambda v, t: format(Decimal(v).quantize(step, context=DECIMAL_CONTEXT), "f")  # type: ignore[arg-type]  # noqa: E731

    def one(v: object) -> object:
        try:
            return convert(v, t)
        except _Invalid as e:
            if safe:
                return None
            raise runtime_error(f"[{e.error_class}] cannot cast {v!r} of {src} to {t}") from None

    return elementwise(one, args, t)


OPS["cast"] = lambda args, t: _cast(args, t, False)
OPS["try_cast"] = lambda args, t: _cast(args, t, True)
OPS["time_parts"] = lambda args, t: elementwise(time_parts, args, t)

__all__ = ["_decimal_result", "java_double_str", "reads_as", "timestamp_str", "to_str"]
