"""Date and time functions of Spark 4 (ANSI mode, session time zone UTC as the engine's
TIMESTAMP values are UTC) beyond :mod:`functions`: ``months_between``, ``make_timestamp``
(and ``try_``), ``from_utc_timestamp`` / ``to_utc_timestamp``; per row in Python."""

from __future__ import annotations

import calendar
import datetime as dt
import math
from decimal import Decimal
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
        if name[:1] in "+-":
            sign = -1 if name[0] == "-" else 1
            h, _, m = name[1:].partition(":")
            return dt.timezone(sign * dt.timedelta(hours=int(h), minutes=int(m or 0)))
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
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
