"""Spark's scalar sketch functions over sketch bytes that Spark's own aggregates wrote
(``hll_sketch_agg``, ``theta_sketch_agg``, ``kll_sketch_agg_double`` / ``_float``), through
Apache DataSketches' C++ library (the ``datasketches`` package): the binary formats are the
Java library's, so estimates, ranks and quantiles equal Spark's and the unions, intersections
and differences are the bytes Spark writes (HLL as an updatable HLL_8 sketch, Theta as a
compressed compact sketch). Per row; a sketch read once per distinct bytes value.

Not here: the ``_bigint`` KLL functions (the package has no KLL sketch of longs), KLL merges
(KLL compaction draws random bits, so merged bytes differ between libraries) and
``kll_sketch_to_string_*`` (the two libraries print differently)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error

_CLASSES = {
    "hll": ("hll_sketch", "HLL_INVALID_INPUT_SKETCH_BUFFER"),
    "theta": ("compact_theta_sketch", "THETA_INVALID_INPUT_SKETCH_BUFFER"),
    "kll_double": ("kll_doubles_sketch", "KLL_INVALID_INPUT_SKETCH_BUFFER"),
    "kll_float": ("kll_floats_sketch", "KLL_INVALID_INPUT_SKETCH_BUFFER"),
}


@lru_cache(maxsize=256)
def sketch(kind: str, data: bytes, fn: str) -> Any:
    """The sketch of ``kind`` in ``data``; Spark's error class where it is not one."""
    import datasketches as ds

    cls, error = _CLASSES[kind]
    try:
        return getattr(ds, cls).deserialize(data)
    except (RuntimeError, ValueError, IndexError):
        raise runtime_error(
            f"[{error}] Invalid call to `{fn}`; only valid {kind.split('_')[0].upper()} sketch "
            "buffers (such as those produced by Spark's sketch aggregates) are supported"
        ) from None


def _java_round(x: float) -> int:
    """Java's ``Math.round``: half up."""
    return math.floor(x + 0.5)


def _hll_union(a: bytes, b: bytes, allow: bool) -> bytes:
    import datasketches as ds

    x, y = sketch("hll", a, "hll_union"), sketch("hll", b, "hll_union")
    if x.lg_config_k != y.lg_config_k and not allow:
        raise runtime_error(
            f"[HLL_UNION_DIFFERENT_LG_K] Sketches have different `lgConfigK` values: "
            f"{x.lg_config_k} and {y.lg_config_k}; pass true as the third argument of hll_union"
        )
    u = ds.hll_union(min(x.lg_config_k, y.lg_config_k))
    u.update(x)
    u.update(y)
    return bytes(u.get_result(ds.tgt_hll_type.HLL_8).serialize_updatable())


def _theta_bytes(result: Any) -> bytes:
    """A compact Theta sketch as Java writes it: compressed; an empty one with a zero seed
    hash."""
    data = bytearray(result.serialize(True))
    if result.is_empty():
        data[6:8] = b"\x00\x00"
    return bytes(data)


def _theta_set(op: str) -> Callable[..., bytes]:
    def run(a: bytes, b: bytes, lg_k: int = 12) -> bytes:
        import datasketches as ds

        name = f"theta_{op}"
        x, y = sketch("theta", a, name), sketch("theta", b, name)
        if op == "difference":
            return _theta_bytes(ds.theta_a_not_b().compute(x, y))
        if op == "union":
            if not 4 <= lg_k <= 26:
                raise runtime_error(
                    f"[SKETCH_INVALID_LG_NOM_ENTRIES] theta_union: lgNomEntries {lg_k} is not "
                    "between 4 and 26"
                )
            if lg_k == 4:  # Spark's Java library takes it, the C++ one starts at 5
                raise runtime_error(
                    "[UNSUPPORTED_FEATURE] theta_union with lgNomEntries 4 is not supported by "
                    "this engine's sketch library; write 5 or more"
                )
            u: Any = ds.theta_union(lg_k)
        else:
            u = ds.theta_intersection()
        u.update(x)
        u.update(y)
        return _theta_bytes(u.get_result())

    return run


def _java_view(s: Any) -> tuple[list[float], list[int]]:
    """The sorted view Java's KLL sketch answers from: the retained items with cumulative
    weights, the sketch's min and max items included (weight 1, taken from their neighbours)
    where compaction dropped them; the C++ library leaves them out."""
    pairs = sorted(s)
    items = [float(x) for x, _ in pairs]
    cum: list[int] = []
    for _, w in pairs:
        cum.append((cum[-1] if cum else 0) + int(w))
    lo, hi = float(s.get_min_value()), float(s.get_max_value())
    if items and lo < items[0]:
        items.insert(0, lo)
        cum.insert(0, 1)
    if items and hi > items[-1]:
        cum[-1] -= 1
        items.append(hi)
        cum.append(int(s.n))
    return items, cum


def _kll(kind: str, what: str) -> Callable[..., object]:
    name = f"kll_sketch_get_{what}_{kind.removeprefix('kll_')}"

    def run(data: bytes, *arg: float) -> object:
        s = sketch(kind, data, name)
        if what == "n":
            return int(s.n)
        if s.is_empty():
            return None
        items, cum = _java_view(s)
        if what == "rank":  # Spark's INCLUSIVE search: the weight of items <= the value
            k = bisect.bisect_right(items, arg[0])
            return cum[k - 1] / s.n if k else 0.0
        if not 0.0 <= arg[0] <= 1.0:
            raise runtime_error(
                f"[KLL_SKETCH_INVALID_QUANTILE_RANGE] For function `{name}`, the quantile "
                "value must be between 0.0 and 1.0 (inclusive)"
            )
        natural = math.ceil(arg[0] * s.n)
        return items[min(bisect.bisect_left(cum, natural), len(items) - 1)]

    return run


def _reg(name: str, fn: Callable[..., object]) -> None:
    OPS[name] = lambda args, t: elementwise(lambda *xs: fn(*(_bytes(x) for x in xs)), args, t)


def _bytes(x: object) -> object:
    return bytes(x) if isinstance(x, (bytearray, memoryview)) else x


_reg(
    "hll_sketch_estimate",
    lambda b: _java_round(sketch("hll", b, "hll_sketch_estimate").get_estimate()),
)
_reg("hll_union", _hll_union)
_reg(
    "theta_sketch_estimate",
    lambda b: _java_round(sketch("theta", b, "theta_sketch_estimate").get_estimate()),
)
for _op in ("union", "intersection", "difference"):
    _reg(f"theta_{_op}", _theta_set(_op))
for _kind in ("kll_double", "kll_float"):
    for _what in ("n", "quantile", "rank"):
        _reg(f"kll_sketch_get_{_what}_{_kind.removeprefix('kll_')}", _kll(_kind, _what))
