"""Spark's ``hash(...)``: Murmur3 x86 32-bit, seed 42, each argument hashed with the running
hash as its seed (NULL arguments skipped). Integral columns hash vectorized in numpy (uint32
arithmetic); strings, decimals and binary per row. Spark's string hash is its legacy
``hashUnsafeBytes`` (trailing bytes mixed one at a time, sign-extended)."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import numpy as np

from sql_frontend.expressions.evaluate import OPS
from sql_frontend.expressions.vec import Vec, objects
from sql_frontend.sql_types import SqlType

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
_M32 = 0xFFFFFFFF


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k1(k: np.ndarray) -> np.ndarray:
    return _rotl(k * _C1, 15) * _C2


def _mix_h1(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    return _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix(h: np.ndarray, length: int | np.ndarray) -> np.ndarray:
    h = h ^ np.asarray(length, dtype=np.uint32)
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def hash_int(v: np.ndarray, seed: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return _fmix(_mix_h1(seed, _mix_k1(v.astype(np.int64).astype(np.uint32))), 4)


def hash_long(v: np.ndarray, seed: np.ndarray) -> np.ndarray:
    u = v.astype(np.int64).view(np.uint64)
    low = (u & np.uint64(_M32)).astype(np.uint32)
    high = (u >> np.uint64(32)).astype(np.uint32)
    with np.errstate(over="ignore"):
        h = _mix_h1(seed, _mix_k1(low))
        return _fmix(_mix_h1(h, _mix_k1(high)), 8)


def hash_bytes(b: bytes, seed: int) -> int:
    one = np.zeros(1, dtype=np.uint32)
    h = np.array([seed], dtype=np.uint32)
    aligned = len(b) - len(b) % 4
    with np.errstate(over="ignore"):
        for i in range(0, aligned, 4):
            one[0] = struct.unpack_from("<I", b, i)[0]
            h = _mix_h1(h, _mix_k1(one))
        for i in range(aligned, len(b)):
            one[0] = (b[i] - 256 if b[i] > 127 else b[i]) & _M32
            h = _mix_h1(h, _mix_k1(one))
        return int(_fmix(h, len(b))[0])


_EPOCH = dt.datetime(1970, 1, 1)


def _hash_objects(v: Vec, seed: np.ndarray) -> np.ndarray:
    out = seed.copy()
    t = v.type
    for i, x in enumerate(objects(v)):
        if x is None:
            continue
        s = np.array([seed[i]], dtype=np.uint32)
        if isinstance(x, str | bytes):
            out[i] = hash_bytes(x.encode("utf-8") if isinstance(x, str) else x, int(seed[i]))
        elif isinstance(x, Decimal):
            assert t.scale is not None and t.precision is not None
            unscaled = int(x.scaleb(t.scale))
            if t.precision <= 18:
                out[i] = hash_long(np.array([unscaled]), s)[0]
            else:
                raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8 or 1, "big", signed=True)
                out[i] = hash_bytes(raw, int(seed[i]))
        elif isinstance(x, dt.datetime):
            micros = (x - _EPOCH) // dt.timedelta(microseconds=1)
            out[i] = hash_long(np.array([micros]), s)[0]
        elif isinstance(x, dt.date):
            out[i] = hash_int(np.array([(x - _EPOCH.date()).days]), s)[0]
        else:
            raise TypeError(f"hash of {t}")
    return out


def _murmur3(args: list[Vec], t: SqlType) -> Vec:
    n = len(args[0])
    h = np.full(n, 42, dtype=np.uint32)
    for a in args:
        name = a.type.name
        if name == "NULL":
            continue
        if name in ("BOOLEAN", "TINYINT", "SMALLINT", "INT"):
            new = hash_int(a.data.astype(np.int64), h)
        elif name == "BIGINT":
            new = hash_long(a.data, h)
        elif name in ("DOUBLE", "FLOAT"):
            d = a.data.astype(np.float64)
            d = np.where(d == 0.0, 0.0, d)  # -0.0 hashes as 0.0
            if name == "FLOAT":
                bits = d.astype(np.float32).view(np.int32).astype(np.int64)
                new = hash_int(bits, h)
            else:
                new = hash_long(d.view(np.int64), h)
        else:
            new = _hash_objects(a, h)
        h = np.where(a.null, h, new).astype(np.uint32)
    return Vec(h.view(np.int32).astype(np.int64), np.zeros(n, dtype=bool), t)


OPS["murmur3"] = _murmur3
