"""More of Spark's deterministic built-in functions (math, strings, hashes, regular
expressions, dates), registered in ``OPS``. Math is numpy over whole columns; functions
without a columnar kernel here run per row in Python (``elementwise``), and say so in
:data:`sql_frontend.expressions.registry.FUNCTIONS`."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import math
import re
import zlib
from functools import lru_cache

import numpy as np

from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error
from sql_frontend.expressions.vec import Vec
from sql_frontend.sql_types import SqlType

# ---------------------------------------------------------------- math (numpy)


def _doubles(a: Vec) -> np.ndarray:
    if a.data.dtype != object:
        return a.data.astype(np.float64)
    return np.array([float(v) if v is not None else 0.0 for v in a.data], dtype=np.float64)


def _numpy(fn, null_when=None):
    """A DOUBLE function of DOUBLE columns; ``null_when(*xs)`` marks rows Spark makes NULL."""

    def run(args: list[Vec], t: SqlType) -> Vec:
        xs = [_doubles(a) for a in args]
        null = np.zeros(len(args[0]), dtype=bool)
        for a in args:
            null |= a.null
        with np.errstate(all="ignore"):
            r = np.asarray(fn(*xs), dtype=np.float64)
            if null_when is not None:
                null = null | null_when(*xs)
        return Vec(r, null, t)

    return run


for _name, _fn in {
    "cbrt": np.cbrt,
    "expm1": np.expm1,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "degrees": np.degrees,
    "radians": np.radians,
    "cot": lambda x: 1.0 / np.tan(x),
    "atan2": np.arctan2,
    "hypot": np.hypot,
}.items():
    OPS[_name] = _numpy(_fn)
OPS["log10"] = _numpy(np.log10, lambda x: x <= 0)
OPS["log2"] = _numpy(lambda x: np.log(x) / np.log(2.0), lambda x: x <= 0)
OPS["log1p"] = _numpy(np.log1p, lambda x: x <= -1)
OPS["log_base"] = _numpy(lambda b, x: np.log(x) / np.log(b), lambda b, x: (b <= 0) | (x <= 0))


def _nanvl(args: list[Vec], t: SqlType) -> Vec:
    a, b = args
    x, y = _doubles(a), _doubles(b)
    nan = np.isnan(x) & ~a.null
    return Vec(np.where(nan, y, x), np.where(nan, b.null, a.null), t)


OPS["nanvl"] = _nanvl
_FACTORIALS = np.array([math.factorial(i) for i in range(21)], dtype=np.int64)


def _factorial(args: list[Vec], t: SqlType) -> Vec:
    (a,) = args
    n = a.data.astype(np.int64) if a.data.dtype != object else _doubles(a).astype(np.int64)
    bad = (n < 0) | (n > 20)
    return Vec(_FACTORIALS[np.where(bad, 0, n)], a.null | bad, t)


OPS["factorial"] = _factorial
OPS["identity"] = lambda args, t: args[0]

# ---------------------------------------------------------------- strings (per row)


def _reg(name: str, fn) -> None:
    OPS[name] = lambda args, t: elementwise(fn, args, t)


def _utf8(v: object) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode("utf-8")


_reg("ascii", lambda s: ord(s[0]) if s else 0)
_reg("chr", lambda n: "" if n < 0 else chr(n % 256))
_reg("bit_length", lambda s: len(_utf8(s)) * 8)
_reg("octet_length", lambda s: len(_utf8(s)))
_reg("space", lambda n: " " * max(n, 0))


def _translate(s: str, src: str, dst: str) -> str:
    table: dict[int, int | None] = {}
    for i, c in enumerate(src):
        if ord(c) not in table:
            table[ord(c)] = ord(dst[i]) if i < len(dst) else None
    return s.translate(table)


_reg("translate", _translate)


def _split_part(s: str, delim: str, n: int) -> str:
    if n == 0:
        raise runtime_error("[INVALID_INDEX_OF_ZERO] split_part: the part index must not be 0")
    parts = s.split(delim) if delim else [s]
    i = n - 1 if n > 0 else len(parts) + n
    return parts[i] if 0 <= i < len(parts) else ""


_reg("split_part", _split_part)


def _substring_index(s: str, delim: str, count: int) -> str:
    if count == 0 or not delim:
        return ""
    parts = s.split(delim)
    return delim.join(parts[:count] if count > 0 else parts[count:])


_reg("substring_index", _substring_index)


def _levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


_reg("levenshtein", _levenshtein)
_reg("md5", lambda v: hashlib.md5(_utf8(v)).hexdigest())
_reg("sha1", lambda v: hashlib.sha1(_utf8(v)).hexdigest())
_reg("crc32", lambda v: zlib.crc32(_utf8(v)))
_reg("base64", lambda v: base64.b64encode(_utf8(v)).decode("ascii"))
_SHA2 = {0: hashlib.sha256, 224: hashlib.sha224, 256: hashlib.sha256, 384: hashlib.sha384}
_SHA2[512] = hashlib.sha512


def _sha2(args: list[Vec], t: SqlType) -> Vec:
    def one(v: object, bits: int) -> object:
        h = _SHA2.get(bits)
        return None if h is None else h(_utf8(v)).hexdigest()

    return elementwise(one, args, t)


OPS["sha2"] = _sha2


def _hex(v: object) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return format(v & (2**64 - 1), "X")
    return _utf8(v).hex().upper()


_reg("hex", _hex)


@lru_cache(maxsize=256)
def java_regex(pattern: str) -> re.Pattern[str]:
    """A Java regular expression as Python's ``re`` reads it (the common subset)."""
    try:
        return re.compile(pattern)
    except re.error as e:
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE.PATTERN] invalid regex {pattern!r}: {e}"
        ) from None


def _java_replacement(rep: str) -> str:
    """Java's ``$n`` group references and ``\\`` escapes, in Python's replacement syntax."""
    out, i = [], 0
    while i < len(rep):
        c = rep[i]
        if c == "\\" and i + 1 < len(rep):
            out.append(rep[i + 1].replace("\\", "\\\\"))
            i += 2
        elif c == "$" and i + 1 < len(rep) and rep[i + 1].isdigit():
            j = i + 1
            while j < len(rep) and rep[j].isdigit():
                j += 1
            out.append(f"\\g<{rep[i + 1 : j]}>")
            i = j
        else:
            out.append("\\\\" if c == "\\" else c)
            i += 1
    return "".join(out)


_reg("regexp_replace", lambda s, p, r: java_regex(p).sub(_java_replacement(r), s))


def _regexp_extract(s: str, p: str, idx: int) -> str:
    rx = java_regex(p)
    if idx < 0 or idx > rx.groups:
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE.REGEX_GROUP_INDEX] regexp_extract: group {idx} of a "
            f"pattern with {rx.groups} groups"
        )
    m = rx.search(s)
    return (m.group(idx) or "") if m else ""


_reg("regexp_extract", _regexp_extract)

# ---------------------------------------------------------------- dates (per row)

_EPOCH = dt.datetime(1970, 1, 1)


def _ts(v: object) -> dt.datetime:
    return v if isinstance(v, dt.datetime) else dt.datetime.combine(v, dt.time())  # type: ignore[arg-type]


def _trunc_ts(unit: str, v: object) -> dt.datetime | None:
    x = _ts(v)
    u = unit.upper()
    if u in ("YEAR", "YYYY", "YY"):
        return dt.datetime(x.year, 1, 1)
    if u == "QUARTER":
        return dt.datetime(x.year, 3 * ((x.month - 1) // 3) + 1, 1)
    if u in ("MONTH", "MM", "MON"):
        return dt.datetime(x.year, x.month, 1)
    if u == "WEEK":
        d = x.date() - dt.timedelta(days=x.weekday())
        return dt.datetime(d.year, d.month, d.day)
    if u in ("DAY", "DD"):
        return dt.datetime(x.year, x.month, x.day)
    if u == "HOUR":
        return x.replace(minute=0, second=0, microsecond=0)
    if u == "MINUTE":
        return x.replace(second=0, microsecond=0)
    if u == "SECOND":
        return x.replace(microsecond=0)
    return None


_reg("date_trunc", _trunc_ts)


def _trunc_date(v: object, unit: str) -> dt.date | None:
    if unit.upper() not in ("YEAR", "YYYY", "YY", "QUARTER", "MONTH", "MM", "MON", "WEEK"):
        return None
    r = _trunc_ts(unit, v)
    return r.date() if r is not None else None


_reg("trunc", _trunc_date)
_reg("date_format", lambda v, f: _ts(v).strftime(f))
_reg(
    "from_unixtime",
    lambda n, f: _in_range(lambda s: _EPOCH + dt.timedelta(seconds=s))(int(n)).strftime(f),
)
_reg("unix_timestamp", lambda v: int((_ts(v) - _EPOCH).total_seconds() // 1))
_reg("weekofyear", lambda v: (v.date() if isinstance(v, dt.datetime) else v).isocalendar()[1])


def _make_date(y: int, m: int, d: int) -> dt.date:
    try:
        return dt.date(y, m, d)
    except ValueError as e:
        raise runtime_error(
            f"[DATETIME_FIELD_OUT_OF_BOUNDS] make_date({y}, {m}, {d}): {e}"
        ) from None


_reg("make_date", _make_date)

# ---------------------------------------------------------------- more math (numpy)

OPS["asinh"] = _numpy(np.arcsinh)
OPS["acosh"] = _numpy(np.arccosh)
OPS["atanh"] = _numpy(np.arctanh)
OPS["sec"] = _numpy(lambda x: 1.0 / np.cos(x))
OPS["csc"] = _numpy(lambda x: 1.0 / np.sin(x))
OPS["rint"] = _numpy(np.rint)


def _isnan(args: list[Vec], t: SqlType) -> Vec:
    (a,) = args
    return Vec(np.isnan(_doubles(a)) & ~a.null, np.zeros(len(a), dtype=bool), t)


OPS["isnan"] = _isnan


def _ints(a: Vec) -> np.ndarray:
    if a.data.dtype != object:
        return a.data.astype(np.int64)
    return np.array([int(v) if v is not None else 0 for v in a.data], dtype=np.int64)


def _shift(kind: str):
    """Java's shifts: the count is taken modulo the width, the result wraps."""

    def run(args: list[Vec], t: SqlType) -> Vec:
        a, n = args
        x, k = _ints(a), _ints(n)
        null = a.null | n.null
        if t.name == "BIGINT":
            k = k & 63
            u = x.view(np.uint64)
            if kind == "left":
                r = (u << k.astype(np.uint64)).view(np.int64)
            elif kind == "right":
                r = x >> k
            else:
                r = (u >> k.astype(np.uint64)).view(np.int64)
        else:
            k = k & 31
            x32 = x.astype(np.int32)
            if kind == "left":
                r = (x32.view(np.uint32) << k.astype(np.uint32)).view(np.int32).astype(np.int64)
            elif kind == "right":
                r = (x32 >> k.astype(np.int32)).astype(np.int64)
            else:
                r = (x32.view(np.uint32) >> k.astype(np.uint32)).astype(np.int64)
        return Vec(r, null, t)

    return run


OPS["shiftleft"] = _shift("left")
OPS["shiftright"] = _shift("right")
OPS["shiftrightunsigned"] = _shift("unsigned")


def _bit_count(args: list[Vec], t: SqlType) -> Vec:
    (a,) = args
    # Spark counts the bits of the value sign-extended to 64 bits, whatever its width
    u = _ints(a).view(np.uint64)
    counts = np.zeros(len(u), dtype=np.int64)
    for b in range(64):
        counts += ((u >> np.uint64(b)) & np.uint64(1)).astype(np.int64)
    return Vec(counts, a.null, t)


OPS["bit_count"] = _bit_count
_reg("bin", lambda v: format(int(v) & (2**64 - 1), "b"))

# ---------------------------------------------------------------- more strings and dates

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_reg("weekday", lambda d: d.weekday())
_reg("dayname", lambda d: _DAYS[d.weekday()])
_reg("monthname", lambda d: dt.date(2000, d.month, 1).strftime("%b"))
_reg("unix_date", lambda d: (_date_of(d) - _EPOCH.date()).days)
_reg("unix_seconds", lambda v: (_ts(v) - _EPOCH) // dt.timedelta(seconds=1))
_reg("unix_millis", lambda v: (_ts(v) - _EPOCH) // dt.timedelta(milliseconds=1))
_reg("unix_micros", lambda v: (_ts(v) - _EPOCH) // dt.timedelta(microseconds=1))


def _in_range(fn):
    """``fn`` with Python's date range errors as Spark's DATETIME_OVERFLOW."""

    def run(n: int) -> object:
        try:
            return fn(n)
        except OverflowError:
            raise runtime_error(f"[DATETIME_OVERFLOW] {n} is out of the date range") from None

    return run


_reg("timestamp_seconds", _in_range(lambda n: _EPOCH + dt.timedelta(seconds=int(n))))
_reg("timestamp_millis", _in_range(lambda n: _EPOCH + dt.timedelta(milliseconds=int(n))))
_reg("timestamp_micros", _in_range(lambda n: _EPOCH + dt.timedelta(microseconds=int(n))))
_reg("date_from_unix_date", _in_range(lambda n: _EPOCH.date() + dt.timedelta(days=int(n))))


def _date_of(v: object) -> dt.date:
    return v.date() if isinstance(v, dt.datetime) else v  # type: ignore[return-value]


_DOW = {
    **{d[:2].upper(): i for i, d in enumerate(_DAYS)},
    **{d.upper(): i for i, d in enumerate(_DAYS)},
    **{
        n: i
        for i, n in enumerate(
            ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")
        )
    },
}


def _next_day(d: object, dow: str) -> dt.date:
    want = _DOW.get(dow.strip().upper())
    if want is None:
        raise runtime_error(f"[ILLEGAL_DAY_OF_WEEK] Illegal input for day of week: {dow}")
    x = _date_of(d)
    return x + dt.timedelta(days=(want - x.weekday() - 1) % 7 + 1)


_reg("next_day", _next_day)


def _find_in_set(s: str, items: str) -> int:
    if "," in s:
        return 0
    parts = items.split(",")
    return parts.index(s) + 1 if s in parts else 0


_reg("find_in_set", _find_in_set)
_reg("regexp_count", lambda s, p: len(java_regex(p).findall(s)))


def _regexp_substr(s: str, p: str) -> str | None:
    m = java_regex(p).search(s)
    return m.group(0) if m else None


OPS["regexp_substr"] = lambda args, t: elementwise(_regexp_substr, args, t)


def _regexp_instr(s: str, p: str) -> int:
    m = java_regex(p).search(s)
    return m.start() + 1 if m else 0


_reg("regexp_instr", _regexp_instr)


def _unhex(s: str) -> bytes | None:
    text = s if len(s) % 2 == 0 else "0" + s
    try:
        return bytes.fromhex(text)
    except ValueError:
        return None


_reg("unhex", _unhex)


def _url_encode(s: str) -> str:
    from urllib.parse import quote_plus

    return quote_plus(s, safe="*").replace("~", "%7E")


_reg("url_encode", _url_encode)


def _luhn(s: str) -> bool:
    if not s or not s.isdigit():
        return False
    total = 0
    for i, c in enumerate(reversed(s)):
        d = int(c)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_reg("luhn_check", _luhn)
