"""String, math and date functions (Spark semantics), registered in ``OPS``."""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Context, Decimal
from functools import lru_cache

import numpy as np

from sql_frontend.expressions.casts import to_str
from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error
from sql_frontend.expressions.vec import Vec, from_objects, objects
from sql_frontend.sql_types import INT_BITS, SqlType


def _reg(name: str, fn, nulls: bool = False) -> None:
    OPS[name] = lambda args, t: elementwise(fn, args, t)


# ---------------------------------------------------------------- strings


def _substring(s: str, pos: int, length: int | None = None) -> str:
    """Spark's 1-based substring; pos 0 acts as 1, negative counts from the end."""
    n = len(s)
    if pos > 0:
        start = pos - 1
    elif pos == 0:
        start = 0
    else:
        start = n + pos
    if length is None:
        end = n
    else:
        end = start + length if length > 0 else start
        if pos < 0 and start < 0:
            end = start + length
    start = max(start, 0)
    end = max(min(end, n), 0)
    return s[start:end] if end > start else ""


_reg("upper", lambda s: s.upper())
_reg("lower", lambda s: s.lower())
_reg("length", lambda s: len(s))
_reg("reverse", lambda s: s[::-1])
_reg("initcap", lambda s: " ".join(w[:1].upper() + w[1:].lower() for w in s.split(" ")))
_reg("substring", _substring)
_reg("left", lambda s, n: s[: max(n, 0)])
_reg("right", lambda s, n: s[max(len(s) - n, 0) :] if n > 0 else "")
_reg("trim", lambda s: s.strip(" "))
_reg("ltrim", lambda s: s.lstrip(" "))
_reg("rtrim", lambda s: s.rstrip(" "))
_reg("trim_chars", lambda s, c: s.strip(c))
_reg("replace", lambda s, a, b: s.replace(a, b) if a else s)
_reg("instr", lambda s, sub: s.find(sub) + 1)
_reg("startswith", lambda s, p: s.startswith(p))
_reg("endswith", lambda s, p: s.endswith(p))
_reg("contains", lambda s, p: p in s)
MAX_STRING = 2**31 - 1  # Spark's largest string, in bytes


def _repeat(s: str, n: int) -> str:
    if len(s) * max(n, 0) > MAX_STRING:
        raise runtime_error("[ARITHMETIC_OVERFLOW] repeat: integer overflow of the result length")
    return s * max(n, 0)


_reg("repeat", _repeat)


def _pad(s: str, n: int, fill: str, left: bool) -> str:
    if n <= 0:
        return ""
    if len(s) >= n:
        return s[:n]
    if not fill:
        return s
    need = n - len(s)
    pad = (fill * (need // len(fill) + 1))[:need]
    return pad + s if left else s + pad


_reg("lpad", lambda s, n, f: _pad(s, n, f, True))
_reg("rpad", lambda s, n, f: _pad(s, n, f, False))


def _concat(args: list[Vec], t: SqlType) -> Vec:
    return elementwise(lambda *xs: "".join(to_str(x, t) for x in xs), args, t)


def _concat_ws(args: list[Vec], t: SqlType) -> Vec:
    """concat_ws skips NULL arguments (but a NULL separator yields NULL)."""
    sep = objects(args[0])
    cols = [objects(a) for a in args[1:]]
    out: list[object] = []
    for i in range(len(sep)):
        if sep[i] is None:
            out.append(None)
        else:
            out.append(sep[i].join(to_str(c[i], t) for c in cols if c[i] is not None))
    return from_objects(out, t)


OPS["concat"] = _concat
OPS["concat_ws"] = _concat_ws


@lru_cache(maxsize=256)
def like_regex(pattern: str, escape: str = "\\") -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


_reg("like", lambda s, p: like_regex(p).fullmatch(s) is not None)
_reg("ilike", lambda s, p: like_regex(p.lower()).fullmatch(s.lower()) is not None)
_reg("rlike", lambda s, p: re.search(p, s) is not None)

# ---------------------------------------------------------------- math


def wide_context(rounding: str) -> Context:
    """A decimal context wide enough for any value Spark rounds, with ``rounding``."""
    return Context(prec=1000, rounding=rounding, Emax=10**6, Emin=-(10**6))


_HALF_UP = wide_context(ROUND_HALF_UP)


def round_to(x: object, d: int, t: SqlType, ctx: Context, fn: str) -> object:
    """``x`` (of type ``t``) rounded to ``d`` decimal places in ``ctx``'s rounding mode, as
    Spark's ROUND / BROUND (``fn``) do: a scale beyond what ``x`` holds leaves it unchanged;
    a double is rounded as its shortest decimal text (Java's
    ``BigDecimal(Double.toString(x))``)."""
    if isinstance(x, bool):
        return x
    if isinstance(x, int):
        if d >= 0:
            return x
        r = int(Decimal(x).quantize(Decimal(1).scaleb(-d), context=ctx))
        half = 2 ** (INT_BITS.get(t.name, 64) - 1)
        if not -half <= r < half:  # round(9223372036854775807, -1): Spark raises too
            raise runtime_error(f"[ARITHMETIC_OVERFLOW] {fn} overflows {t.name}")
        return r
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x) or d > 400:
            return x
        return float(Decimal(repr(x)).quantize(Decimal(1).scaleb(-max(d, -400)), context=ctx))
    if isinstance(x, Decimal):
        assert t.scale is not None
        q = x.quantize(Decimal(1).scaleb(-min(d, t.scale)), context=ctx)
        return q.quantize(Decimal(1).scaleb(-t.scale), context=ctx)
    raise runtime_error(f"{fn} of {x!r}")


OPS["round"] = lambda args, t: elementwise(
    lambda x, d: round_to(x, d, t, _HALF_UP, "round"), args, t
)


def _floor_ceil(x: object, up: bool) -> object:
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        if math.isnan(x):
            return 0  # Java's (long) NaN
        r = math.ceil(x) if up else math.floor(x) if not math.isinf(x) else 2**63
        if not -(2**63) <= r < 2**63:
            raise runtime_error("[ARITHMETIC_OVERFLOW] floor/ceil overflows BIGINT")
        return r
    if isinstance(x, Decimal):
        return x.to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR)
    raise runtime_error(f"floor/ceil of {x!r}")


_reg("floor", lambda x: _floor_ceil(x, False))
_reg("ceil", lambda x: _floor_ceil(x, True))


def _double_fn(fn):
    def run(args: list[Vec], t: SqlType) -> Vec:
        xs = [
            np.array([float(v) if v is not None else 0.0 for v in objects(a)])
            if a.data.dtype == object
            else a.data.astype(np.float64)
            for a in args
        ]
        null = np.zeros(len(args[0]), dtype=bool)
        for a in args:
            null |= a.null
        with np.errstate(all="ignore"):
            r = fn(*xs)
        return Vec(np.asarray(r, dtype=np.float64), null, t)

    return run


OPS["sqrt"] = _double_fn(np.sqrt)
OPS["exp"] = _double_fn(np.exp)
OPS["power"] = _double_fn(np.power)


def _ln(args: list[Vec], t: SqlType) -> Vec:
    v = _double_fn(np.log)(args, t)
    x = args[0]
    xs = (
        x.data.astype(np.float64)
        if x.data.dtype != object
        else np.array([float(y) if y is not None else 1.0 for y in x.data])
    )
    return Vec(v.data, v.null | (xs <= 0), t)  # Spark: ln of a non-positive number is NULL


OPS["ln"] = _ln
OPS["sign"] = _double_fn(np.sign)

# ---------------------------------------------------------------- dates


def _date(v: object) -> dt.date:
    return v.date() if isinstance(v, dt.datetime) else v  # type: ignore[return-value]


def add_months(d: dt.date, n: int) -> dt.date:
    """Spark's add_months: the day is clamped to the target month's length."""
    m = d.month - 1 + n
    y, m = d.year + m // 12, m % 12 + 1
    return dt.date(y, m, min(d.day, calendar.monthrange(y, m)[1]))


_reg("year", lambda d: d.year)
_reg("month", lambda d: d.month)
_reg("day", lambda d: d.day)
_reg("quarter", lambda d: (d.month - 1) // 3 + 1)
_reg("dayofweek", lambda d: d.isoweekday() % 7 + 1)
_reg("dayofyear", lambda d: d.timetuple().tm_yday)
_reg("hour", lambda d: d.hour if isinstance(d, dt.datetime) else 0)
_reg("minute", lambda d: d.minute if isinstance(d, dt.datetime) else 0)
_reg("second", lambda d: d.second if isinstance(d, dt.datetime) else 0)


def _date_add(d: object, n: int) -> dt.date:
    try:
        return _date(d) + dt.timedelta(days=int(n))
    except OverflowError:
        raise runtime_error(f"[DATETIME_OVERFLOW] {d} + {n} days is out of range") from None


_reg("date_add", _date_add)
_reg("date_sub", lambda d, n: _date_add(d, -n))
_reg("datediff", lambda a, b: (_date(a) - _date(b)).days)


def _add_months(d: object, n: int) -> dt.date:
    try:
        return add_months(_date(d), int(n))
    except ValueError:
        raise runtime_error(f"[DATETIME_OVERFLOW] {d} + {n} months is out of range") from None


_reg("add_months", _add_months)
_reg("last_day", lambda d: dt.date(d.year, d.month, calendar.monthrange(d.year, d.month)[1]))
_reg("to_date", lambda d: _date(d))
_reg("ts_add_seconds", lambda d, n: d + dt.timedelta(seconds=int(n)))
_reg("ts_add_months", lambda d, n: dt.datetime.combine(add_months(d.date(), int(n)), d.time()))

# ---------------------------------------------------------------- variance family


def _moments(kind: str):
    """var/stddev from the incremental moments (Σx, Σx², n): NULL over no value, and for
    the sample forms over one value (Spark 4: ``spark.sql.legacy.statisticalAggregate``
    off). The centred sum of squares is clamped at 0 against rounding."""

    def run(args: list[Vec], t: SqlType) -> Vec:
        s, ss, n = (
            a.data.astype(np.float64) if a.data.dtype != object else _floats(a) for a in args
        )
        dof = n - 1 if kind.endswith("samp") else n
        null = args[2].null | args[0].null | (dof <= 0)
        with np.errstate(all="ignore"):
            m2 = ss - s * s / np.where(n == 0, 1, n)
            m2 = np.where(m2 < 0, 0.0, m2)
            r = m2 / np.where(dof <= 0, 1, dof)
            if kind.startswith("stddev"):
                r = np.sqrt(r)
        if kind.endswith("pop"):
            null = args[2].null | (n <= 0)
        return Vec(np.asarray(r, dtype=np.float64), null, t)

    return run


def _floats(a: Vec) -> np.ndarray:
    return np.array([float(v) if v is not None else 0.0 for v in a.data], dtype=np.float64)


for _kind in ("var_samp", "var_pop", "stddev_samp", "stddev_pop"):
    OPS[_kind] = _moments(_kind)
