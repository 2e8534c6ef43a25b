"""Spark's ``xxhash64(...)``: XXH64 with seed 42, each argument hashed with the running hash
as its seed (NULL arguments skipped); values are read as :mod:`murmur3` reads them for
``hash`` (4 bytes for INT and narrower, 8 for BIGINT and DOUBLE, the UTF-8 bytes of a string,
the unscaled long of a DECIMAL of at most 18 digits ...). Per row in Python."""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

from sql_frontend.expressions.evaluate import OPS
from sql_frontend.expressions.vec import Vec, from_objects, objects
from sql_frontend.sql_types import SqlType

_M = 2**64 - 1
P1, P2, P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
P4, P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * P2) & _M, 31) * P1) & _M


def _merge(acc: int, v: int) -> int:
    return ((acc ^ _round(0, v)) * P1 + P4) & _M


def _avalanche(h: int) -> int:
    h = ((h ^ (h >> 33)) * P2) & _M
    h = ((h ^ (h >> 29)) * P3) & _M
    return h ^ (h >> 32)


def _mix_long(h: int, k: int) -> int:
    h ^= _round(0, k)
    return (_rotl(h, 27) * P1 + P4) & _M


def _mix_int(h: int, k: int) -> int:
    h ^= (k * P1) & _M
    return (_rotl(h, 23) * P2 + P3) & _M


def hash_long(v: int, seed: int) -> int:
    return _avalanche(_mix_long((seed + P5 + 8) & _M, v & _M))


def hash_int(v: int, seed: int) -> int:
    return _avalanche(_mix_int((seed + P5 + 4) & _M, v & 0xFFFFFFFF))


def hash_bytes(b: bytes, seed: int) -> int:
    n, i = len(b), 0
    if n >= 32:
        v1, v2 = (seed + P1 + P2) & _M, (seed + P2) & _M
        v3, v4 = seed, (seed - P1) & _M
        while i <= n - 32:
            a, b2, c, d = struct.unpack_from("<4Q", b, i)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b2), _round(v3, c), _round(v4, d)
            i += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + P5) & _M
    h = (h + n) & _M
    while i <= n - 8:
        h = _mix_long(h, struct.unpack_from("<Q", b, i)[0])
        i += 8
    if i <= n - 4:
        h = _mix_int(h, struct.unpack_from("<I", b, i)[0])
        i += 4
    while i < n:
        h ^= (b[i] * P5) & _M
        h = (_rotl(h, 11) * P1) & _M
        i += 1
    return _avalanche(h)


_EPOCH = dt.datetime(1970, 1, 1)


def _one(x: object, t: SqlType, seed: int) -> int:
    name = t.name
    if name in ("BOOLEAN", "TINYINT", "SMALLINT", "INT"):
        return hash_int(int(x), seed)  # type: ignore[call-overload]
    if name == "BIGINT":
        return hash_long(int(x), seed)  # type: ignore[call-overload]
    if name == "FLOAT":
        f = 0.0 if x == 0.0 else float(x)  # type: ignore[arg-type]
        bits = 0x7FC00000 if math.isnan(f) else struct.unpack("<i", struct.pack("<f", f))[0]
        return hash_int(bits, seed)
    if name == "DOUBLE":
        f = 0.0 if x == 0.0 else float(x)  # type: ignore[arg-type]
        bits = 0x7FF8000000000000 if math.isnan(f) else struct.unpack("<q", struct.pack("<d", f))[0]
        return hash_long(bits, seed)
    if isinstance(x, str):
        return hash_bytes(x.encode("utf-8"), seed)
    if isinstance(x, bytes):
        return hash_bytes(x, seed)
    if isinstance(x, Decimal):
        assert t.scale is not None and t.precision is not None
        unscaled = int(x.scaleb(t.scale))
        if t.precision <= 18:
            return hash_long(unscaled, seed)
        raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8 or 1, "big", signed=True)
        return hash_bytes(raw, seed)
    if isinstance(x, dt.datetime):
        return hash_long((x - _EPOCH) // dt.timedelta(microseconds=1), seed)
    if isinstance(x, dt.date):
        return hash_int((x - _EPOCH.date()).days, seed)
    raise TypeError(f"xxhash64 of {t}")


def _xxhash64(args: list[Vec], t: SqlType) -> Vec:
    n = len(args[0])
    cols = [objects(a) for a in args]
    out: list[object] = []
    for i in range(n):
        h = 42
        for a, c in zip(args, cols, strict=True):
            if c[i] is not None:
                h = _one(c[i], a.type, h)
        out.append(h - 2**64 if h >= 2**63 else h)
    return from_objects(out, t)


OPS["xxhash64"] = _xxhash64
