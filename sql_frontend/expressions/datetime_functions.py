"""Date and time functions of Spark 4 (ANSI mode, session time zone UTC as the engine's
TIMESTAMP values are UTC) beyond :mod:`functions`: ``months_between``, ``make_timestamp``
(and ``try_``), ``from_utc_timestamp`` / ``to_utc_timestamp``, seconds with their fraction for
EXTRACT, and strings read with a Java datetime pattern (``to_timestamp`` and its family:
:func:`java_pattern` tokenizes, :func:`parse_java` reads); per row in Python."""

from __future__ import annotations

import calendar
import datetime as dt
import math
from decimal import Decimal
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error

_EPOCH = dt.datetime(1970, 1, 1)


def _ts(v: object) -> dt.datetime:
    return v if isinstance(v, dt.datetime) else dt.datetime.combine(v, dt.time())  # type: ignore[arg-type]


def _months_between(a: object, b: object, round_off: bool) -> float:
    x, y = _ts(a), _ts(b)
    months = (x.year * 12 + x.month) - (y.year * 12 + y.month)
    last_x = x.day == calendar.monthrange(x.year, x.month)[1]
    last_y = y.day == calendar.monthrange(y.year, y.month)[1]
    if x.day == y.day or (last_x and last_y):
        return float(months)
    sec_x = x.hour * 3600 + x.minute * 60 + x.second
    sec_y = y.hour * 3600 + y.minute * 60 + y.second
    seconds = (x.day - y.day) * 86400 + sec_x - sec_y
    diff = months + seconds / (31 * 86400.0)
    return math.floor(diff * 1e8 + 0.5) / 1e8 if round_off else diff


_reg_months = lambda args, t: elementwise(_months_between, args, t)  # noqa: E731
OPS["months_between"] = _reg_months


def _zone(name: str) -> dt.tzinfo:
    try:
        if name.upper() in ("UTC", "Z", "GMT"):
            return dt.UTC
        if name[:1] and name[0] in "+-":
            sign = -1 if name[0] == "-" else 1
            h, _, m = name[1:].partition(":")
            return dt.timezone(sign * dt.timedelta(hours=int(h), minutes=int(m or 0)))
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, IndexError):
        raise runtime_error(f"[INVALID_TIMEZONE] The timezone {name!r} is invalid") from None


def _make_timestamp(
    y: int, mo: int, d: int, h: int, mi: int, sec: Decimal, tz: str | None, safe: bool
) -> dt.datetime | None:
    try:
        whole = int(sec)
        micros = int((sec - whole) * 1_000_000)
        if whole == 60 and micros != 0:
            if safe:
                return None
            raise runtime_error(
                f"[INVALID_FRACTION_OF_SECOND] make_timestamp: the seconds {sec} have a fraction "
                "with 60 whole seconds"
            )
        if sec < 0 or whole > 60:
            raise ValueError(f"invalid seconds {sec}")
        extra = whole == 60
        local = dt.datetime(y, mo, d, h, mi, 0 if extra else whole, micros)
        if extra:
            local += dt.timedelta(minutes=1)
        if tz is not None:
            local = local.replace(tzinfo=_zone(tz)).astimezone(dt.UTC).replace(tzinfo=None)
        return local
    except (ValueError, OverflowError) as e:
        if safe:
            return None
        raise runtime_error(
            f"[DATETIME_FIELD_OUT_OF_BOUNDS] make_timestamp({y}, {mo}, {d}, {h}, {mi}, {sec}): {e}"
        ) from None


def _parts(safe: bool):
    def one(*a: Any) -> dt.datetime | None:
        y, mo, d, h, mi, sec = a[:6]
        return _make_timestamp(y, mo, d, h, mi, sec, a[6] if len(a) > 6 else None, safe)

    return lambda args, t: elementwise(one, args, t)


OPS["make_timestamp"] = _parts(False)
OPS["try_make_timestamp"] = _parts(True)


def _from_utc(v: object, tz: str) -> dt.datetime:
    x = _ts(v).replace(tzinfo=dt.UTC)
    return x.astimezone(_zone(tz)).replace(tzinfo=None)


def _to_utc(v: object, tz: str) -> dt.datetime:
    x = _ts(v).replace(tzinfo=_zone(tz))
    return x.astimezone(dt.UTC).replace(tzinfo=None)


def _second_fraction(v: object) -> Decimal:
    x = _ts(v)
    return Decimal(x.second * 1_000_000 + x.microsecond).scaleb(-6)


OPS["second_fraction"] = lambda args, t: elementwise(_second_fraction, args, t)
OPS["from_utc_timestamp"] = lambda args, t: elementwise(_from_utc, args, t)
OPS["to_utc_timestamp"] = lambda args, t: elementwise(_to_utc, args, t)


# ---------------------------------------------------------------- Java datetime patterns

_NUMERIC = {"y": "year", "M": "month", "L": "month", "d": "day", "H": "hour", "k": "hour24"}
_NUMERIC |= {"h": "hour12", "K": "hour11", "m": "minute", "s": "second", "D": "doy"}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NAMES = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]


@lru_cache(maxsize=128)
def java_pattern(pattern: str) -> tuple[tuple[str, int | str], ...]:
    """A Java DateTimeFormatter pattern as tokens: ``(letter, count)`` for a field,
    ``("'", text)`` for literal text. Letters this engine does not parse raise
    :class:`ValueError` naming them (time zones, eras, week fields ...)."""
    out: list[tuple[str, int | str]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            j = pattern.find("'", i + 1)
            if j < 0:
                raise ValueError("an unterminated quote")
            out.append(("'", "'" if j == i + 1 else pattern[i + 1 : j]))
            i = j + 1
        elif c.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            n = j - i
            ok = (
                (c in _NUMERIC and (n <= 2 or c in "yD" or (c in "ML" and n <= 4)))
                or (c == "S" and n <= 9)
                or (c == "a" and n == 1)
            )
            if not ok:
                raise ValueError(f"the pattern letters {c * n!r}")
            out.append((c, n))
            i = j
        else:
            out.append(("'", c))
            i += 1
    return tuple(out)


def _digits(text: str, pos: int, lo: int, hi: int) -> tuple[int, int] | None:
    j = pos
    while j < len(text) and j - pos < hi and text[j].isdigit() and text[j].isascii():
        j += 1
    return (int(text[pos:j]), j) if j - pos >= lo else None


def parse_java(text: str, pattern: str) -> dt.datetime | None:
    """``text`` read with the Java ``pattern`` (Spark's parser: fields must fill the whole
    text, missing fields default to 1970-01-01 00:00:00), or None where it does not fit."""
    fields = _read_fields(text, java_pattern(pattern))
    return None if fields is None else _assemble(fields)


def _read_fields(text: str, tokens: tuple[tuple[str, int | str], ...]) -> dict[str, int] | None:
    """The fields the pattern's ``tokens`` read from the whole of ``text``, or None."""
    f: dict[str, int] = {}
    pos = 0
    for k, (c, n) in enumerate(tokens):
        if c == "'":
            lit = str(n)
            if text[pos : pos + len(lit)].lower() != lit.lower():
                return None
            pos += len(lit)
            continue
        assert isinstance(n, int)
        if c in "ML" and n >= 3:
            names = _MONTHS if n == 3 else _MONTH_NAMES
            low = text[pos:].lower()
            hit = next((i for i, m in enumerate(names) if low.startswith(m)), None)
            if hit is None:
                return None
            f["month"] = hit + 1
            pos += len(names[hit])
        elif c == "a":
            mark = text[pos : pos + 2].upper()
            if mark not in ("AM", "PM"):
                return None
            f["pm"] = mark == "PM"
            pos += 2
        elif c == "S":
            got = _digits(text, pos, 1, n)
            if got is None:
                return None
            f["micro"] = int((text[pos : got[1]] + "000000")[:6])
            pos = got[1]
        else:
            # two letters: exactly two digits; else at least n, at most n next to another field
            adjacent = k + 1 < len(tokens) and tokens[k + 1][0] != "'"
            lo, hi = (2, 2) if n == 2 else (n, n if adjacent else 10)
            got = _digits(text, pos, lo, hi)
            if got is None:
                return None
            value, pos = got
            f[_NUMERIC[c]] = value + 2000 if c == "y" and n == 2 else value
    return f if pos == len(text) else None


def _assemble(f: dict[str, int]) -> dt.datetime | None:
    """The timestamp of the read fields (defaults 1970-01-01 00:00:00), or None where they
    name no valid time (an hour past 12 on a 12-hour clock, a day past the month's end)."""
    hour = f.get("hour", f.get("hour24", 0) % 24 if "hour24" in f else 0)
    if "hour12" in f or "hour11" in f:
        h = f["hour12"] % 12 if "hour12" in f else f["hour11"]
        if f.get("hour12", 1) > 12 or f.get("hour11", 0) > 11:
            return None
        hour = h + (12 if f.get("pm") else 0)
    try:
        if "doy" in f:
            day0 = dt.date(f.get("year", 1970), 1, 1) + dt.timedelta(days=f["doy"] - 1)
            if day0.year != f.get("year", 1970):
                return None
            date = day0
        else:
            date = dt.date(f.get("year", 1970), f.get("month", 1), f.get("day", 1))
        return dt.datetime.combine(
            date, dt.time(hour, f.get("minute", 0), f.get("second", 0), f.get("micro", 0))
        )
    except ValueError:
        return None


def _parsed(kind: str, safe: bool):
    def one(text: str, pattern: str) -> object:
        v = parse_java(text, pattern)
        if v is None:
            if safe:
                return None
            raise runtime_error(
                f"[CANNOT_PARSE_TIMESTAMP] Text {text!r} could not be parsed with the pattern "
                f"{pattern!r}"
            )
        if kind == "date":
            return v.date()
        if kind == "unix":
            return (v - _EPOCH) // dt.timedelta(seconds=1)
        return v

    return lambda args, t: elementwise(one, args, t)


for _kind in ("timestamp", "date", "unix"):
    OPS[f"parse_{_kind}"] = _parsed(_kind, False)
    OPS[f"try_parse_{_kind}"] = _parsed(_kind, True)
