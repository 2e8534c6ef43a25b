"""Spark's array and map functions over engine values (arrays and maps are tuples, see
:mod:`sql_frontend.expressions.nested`), with Spark 4's rules for NULLs and ANSI errors.

They run per row in Python (``elementwise``): each row's array is one Python tuple, and the
work per row is a pass over it. Set operations keep the first occurrence of each element in
order, and hold one NULL at most (Spark's ``array_distinct`` / ``array_union`` ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error
from sql_frontend.expressions.more_functions import java_regex
from sql_frontend.expressions.nested import check_keys
from sql_frontend.expressions.vec import Vec, from_objects, objects
from sql_frontend.sql_types import SqlType

Row = tuple[object, ...]
MAX_ELEMENTS = 2**31 - 15
"""Spark's largest array (``ByteArrayMethods.MAX_ROUNDED_ARRAY_LENGTH``)."""


def _reg(name: str, fn: Callable[..., object]) -> None:
    """``name`` computes ``fn`` on the values of rows without a NULL argument."""
    OPS[name] = lambda args, t: elementwise(fn, args, t)


def _distinct(items: Iterable[object]) -> Row:
    """Each element once, at its first place (one NULL at most)."""
    return tuple(dict.fromkeys(items))


def _contains(a: Row, v: object) -> bool | None:
    if v in a:
        return True
    return None if None in a else False


def _overlap(a: Row, b: Row) -> bool | None:
    if set(a) & set(b) - {None}:
        return True
    if a and b and (None in a or None in b):
        return None
    return False


def _except(a: Row, b: Row) -> Row:
    drop = set(b)
    return _distinct(x for x in a if x not in drop)


def _intersect(a: Row, b: Row) -> Row:
    keep = set(b)
    return _distinct(x for x in a if x in keep)


def _position(a: Row, v: object) -> int:
    for i, x in enumerate(a):
        if x == v and x is not None:
            return i + 1
    return 0


def _extreme(pick: Callable[..., object]) -> Callable[[Row], object]:
    def run(a: Row) -> object:
        present = [x for x in a if x is not None]
        return pick(present) if present else None

    return run


def _repeat(v: object, n: int) -> Row:
    if n > MAX_ELEMENTS:
        raise runtime_error(f"[COLLECTION_SIZE_LIMIT_EXCEEDED] array_repeat of {n} elements")
    return (v,) * max(n, 0)


def _insert(a: Row, pos: int, v: object) -> Row:
    """Spark 4's ``array_insert``: 1-based, negative counts from the end (-1 appends), a
    position past either end pads with NULLs."""
    if pos == 0:
        raise runtime_error("[INVALID_INDEX_OF_ZERO] The index 0 is invalid.")
    if pos > 0:
        i = pos - 1
        if i > len(a):
            return (*a, *([None] * (i - len(a))), v)
        return (*a[:i], v, *a[i:])
    i = len(a) + pos + 1
    if i < 0:
        return (v, *([None] * -i), *a)
    return (*a[:i], v, *a[i:])


def _flatten(a: Row) -> Row | None:
    if any(x is None for x in a):
        return None
    return tuple(y for x in a for y in x)  # type: ignore[attr-defined]


def _get(a: Row, i: int) -> object:
    return a[i] if 0 <= i < len(a) else None


def _slice(a: Row, start: int, length: int) -> Row:
    if start == 0:
        raise runtime_error(
            "[INVALID_PARAMETER_VALUE.START] slice: the start must not be 0 (the first element "
            "is 1)"
        )
    if length < 0:
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE.LENGTH] slice: the length must be >= 0, got {length}"
        )
    i = start - 1 if start > 0 else len(a) + start
    if i < 0:
        return ()
    return a[i : i + length]


def _sort(a: Row, asc: bool) -> Row:
    present = sorted((x for x in a if x is not None), reverse=not asc)  # type: ignore[type-var]
    nulls = (None,) * (len(a) - len(present))
    return (*nulls, *present) if asc else (*present, *nulls)


def _sequence(start: int, stop: int, step: int | None) -> Row:
    start, stop = int(start), int(stop)
    if step is None:
        step = 1 if stop >= start else -1
    if step == 0 or (stop - start) * step < 0:
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE.SEQUENCE_WRONG_INPUT_TYPES] sequence({start}, {stop}, "
            f"{step}): the step must be nonzero and go from start towards stop"
        )
    n = (stop - start) // step + 1
    if n > MAX_ELEMENTS:
        raise runtime_error(f"[COLLECTION_SIZE_LIMIT_EXCEEDED] sequence of {n} elements")
    return tuple(range(start, stop + (1 if step > 0 else -1), step))


def _join(a: Row, sep: str, null: str | None = None) -> str:
    """``array_join``: NULL elements skipped, or written as ``null`` when given."""
    texts = (str(x) if x is not None else null for x in a)
    return sep.join(x for x in texts if x is not None)


_reg("array_contains", _contains)
_reg("array_distinct", _distinct)
_reg("array_except", _except)
_reg("array_intersect", _intersect)
_reg("array_union", lambda a, b: _distinct((*a, *b)))
_reg("arrays_overlap", _overlap)
_reg("array_position", _position)
_reg("array_remove", lambda a, v: tuple(x for x in a if x != v or x is None))
_reg("array_max", _extreme(max))
_reg("array_min", _extreme(min))
_reg("array_compact", lambda a: tuple(x for x in a if x is not None))
_reg("flatten", _flatten)
_reg("get", _get)
_reg("slice", _slice)
_reg("map_keys", lambda m: tuple(k for k, _ in m))
_reg("map_values", lambda m: tuple(v for _, v in m))
_reg("map_entries", lambda m: tuple(m))
_reg("map_contains_key", lambda m, k: any(x == k for x, _ in m))
_reg("split", lambda s, p, n: _split(s, p, n))
_reg("regexp_extract_all", lambda s, p, i: _extract_all(s, p, i))


def _with_nulls(fn: Callable[..., object], required: tuple[int, ...]) -> Callable[..., Vec]:
    """An operation NULL only where an argument at ``required`` is NULL: the others reach
    ``fn`` as None (``array_append(a, NULL)`` appends a NULL)."""

    def run(args: list[Vec], t: SqlType) -> Vec:
        n = len(args[0])
        null = np.zeros(n, dtype=bool)
        for k in required:
            null |= args[k].null
        cols = [objects(a) for a in args]
        out: list[object] = [None] * n
        for i in np.flatnonzero(~null):
            out[i] = fn(*(c[i] for c in cols))
        return from_objects(out, t)

    return run


OPS["array_append"] = _with_nulls(lambda a, v: (*a, v), (0,))
OPS["array_prepend"] = _with_nulls(lambda a, v: (v, *a), (0,))
OPS["array_insert"] = _with_nulls(_insert, (0, 1))
OPS["array_repeat"] = _with_nulls(_repeat, (1,))
OPS["sequence"] = _with_nulls(_sequence, (0, 1))
OPS["sort_array"] = _with_nulls(_sort, (0, 1))
OPS["array_join"] = _with_nulls(_join, (0, 1))


def _zip(*arrays: Row | None) -> Row | None:
    if any(a is None for a in arrays):
        return None
    n = max((len(a) for a in arrays if a is not None), default=0)
    return tuple(
        tuple(a[i] if a is not None and i < len(a) else None for a in arrays) for i in range(n)
    )


OPS["arrays_zip"] = _with_nulls(_zip, ())


# ---------------------------------------------------------------- maps


def _checked(pairs: Row) -> Row:
    check_keys(pairs)  # type: ignore[arg-type]
    return pairs


_reg("map_concat", lambda *ms: _checked(tuple(p for m in ms for p in m)))


def _from_arrays(keys: Row, values: Row) -> Row:
    if len(keys) != len(values):
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE] map_from_arrays: {len(keys)} keys and {len(values)} "
            "values; the arrays must be as long"
        )
    return _checked(tuple(zip(keys, values, strict=True)))


def _from_entries(entries: Row) -> Row | None:
    if any(e is None for e in entries):
        return None
    return _checked(tuple(tuple(e) for e in entries))  # type: ignore[arg-type]


_reg("map_from_arrays", _from_arrays)
_reg("map_from_entries", _from_entries)


def _str_to_map(s: str, pair_delim: str, kv_delim: str) -> Row:
    pairs = []
    for item in java_regex(pair_delim).split(s):
        kv = java_regex(kv_delim).split(item, maxsplit=1)
        pairs.append((kv[0], kv[1] if len(kv) > 1 else None))
    return _checked(tuple(pairs))


_reg("str_to_map", _str_to_map)


# ---------------------------------------------------------------- strings to arrays


def _split(s: str, pattern: str, limit: int) -> Row:
    """Java's ``String.split(regex, limit)`` as Spark calls it (``limit <= 0``: no limit,
    trailing empty strings kept)."""
    if s == "":
        return ("",)
    rx = java_regex(pattern)
    parts: list[str] = []
    pos = 0
    for m in rx.finditer(s):
        if limit > 0 and len(parts) == limit - 1:
            break
        if m.end() == 0:  # a zero-width match at the start splits nothing (Java 8+)
            continue
        if m.start() == m.end() and m.start() >= len(s):
            break
        parts.append(s[pos : m.start()])
        pos = m.end()
    parts.append(s[pos:])
    return tuple(parts)


def _extract_all(s: str, pattern: str, idx: int) -> Row:
    rx = java_regex(pattern)
    matches = list(rx.finditer(s))
    if matches and (idx < 0 or idx > rx.groups):  # Spark checks the group on a match only
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE.REGEX_GROUP_INDEX] regexp_extract_all: group {idx} of a "
            f"pattern with {rx.groups} groups"
        )
    return tuple(m.group(idx) or "" for m in matches)
