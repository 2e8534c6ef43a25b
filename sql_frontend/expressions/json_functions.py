"""JSON to and from nested values, as Spark's Jackson-based functions give them:
``get_json_object``, ``json_object_keys``, ``to_json``, ``from_json``, ``schema_of_json``.

Integers keep the text they were written with, fractions are read as Java doubles
(``get_json_object`` returns ``2.50`` as ``2.5``, ``1e2`` as ``100.0``); malformed JSON is NULL (Spark's PERMISSIVE mode). Per row in Python: the json module.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal

from sql_frontend.expressions.casts import java_double_str, timestamp_str
from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error
from sql_frontend.expressions.vec import Vec
from sql_frontend.sql_types import SqlType


class _Number(str):
    """A JSON number as written."""


def _loads(text: str) -> object:
    """The JSON value of ``text`` (numbers as :class:`_Number`), or raises ValueError."""

    def refuse(name: str) -> object:
        raise ValueError(name)

    def double(text: str) -> _Number:  # Jackson reads a fraction as a Java double
        return _Number(java_double_str(float(text)))

    return json.loads(text, parse_float=double, parse_int=_Number, parse_constant=refuse)


def _dumps(v: object) -> str:
    """Compact JSON as Jackson writes it (numbers as read)."""
    if isinstance(v, _Number):
        return str(v)
    if isinstance(v, dict):
        return (
            "{"
            + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_dumps(x)}" for k, x in v.items())
            + "}"
        )
    if isinstance(v, list):
        return "[" + ",".join(_dumps(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


_STEP = re.compile(r"\.([^.\[]+)|\['([^']*)'\]|\[(\d+)\]")


def _path(path: str) -> list[str | int] | None:
    """The steps of a JSONPath Spark accepts (``$``, ``.name``, ``['name']``, ``[n]``), or
    None (a path Spark answers with NULL, including the ``[*]`` wildcard, not supported)."""
    if not path.startswith("$"):
        return None
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _STEP.match(path, pos)
        if not m:
            return None
        steps.append(int(m.group(3)) if m.group(3) is not None else (m.group(1) or m.group(2)))
        pos = m.end()
    return steps


def _get_json_object(text: str, path: str) -> str | None:
    steps = _path(path)
    if steps is None:
        return None
    try:
        v = _loads(text)
    except ValueError:
        return None
    for s in steps:
        if (isinstance(s, int) and isinstance(v, list) and s < len(v)) or (
            isinstance(s, str) and isinstance(v, dict) and s in v
        ):
            v = v[s]  # type: ignore[index]
        else:
            return None
    if v is None:  # a JSON null: NULL as an object's field, the text null as an element
        return "null" if steps and isinstance(steps[-1], int) else None
    return v if isinstance(v, str) and not isinstance(v, _Number) else _dumps(v)


def _json_object_keys(text: str) -> tuple[str, ...] | None:
    try:
        v = _loads(text)
    except ValueError:
        return None
    return tuple(v) if isinstance(v, dict) else None


def to_json_value(v: object, t: SqlType) -> object:
    """A value as Spark's JSON writer gives it, in Python's json types (a struct's NULL fields
    left out)."""
    if v is None:
        return None
    if t.name == "ARRAY":
        return [to_json_value(x, t.element) for x in v]  # type: ignore[attr-defined]
    if t.name == "MAP":
        return {_key_text(k, t.key): to_json_value(x, t.value) for k, x in v}  # type: ignore[attr-defined]
    if t.name == "STRUCT":
        return {
            n: to_json_value(x, c)
            for n, c, x in zip(t.fields, t.children, v, strict=True)  # type: ignore[call-overload]
            if x is not None
        }
    if isinstance(v, float):
        return (
            _Number(java_double_str(v)) if v == v and abs(v) != float("inf") else java_double_str(v)
        )
    if isinstance(v, Decimal):
        return _Number(format(v.quantize(Decimal(1).scaleb(-(t.scale or 0))), "f"))
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, bytes):
        import base64

        return base64.b64encode(v).decode("ascii")
    return v


def _key_text(k: object, t: SqlType) -> str:
    if isinstance(k, str):
        return k
    if isinstance(k, dt.datetime):
        return timestamp_str(k)
    out = to_json_value(k, t)
    return out if isinstance(out, str) else _dumps(out)


def _to_json(args: list[Vec], t: SqlType) -> Vec:
    (a,) = args
    return elementwise(lambda v: _dumps(to_json_value(v, a.type)), args, t)


def from_json_value(v: object, t: SqlType) -> object:
    """A parsed JSON value as a value of ``t`` (a value of another kind: NULL)."""
    if v is None:
        return None
    if t.name == "STRUCT":
        if not isinstance(v, dict):
            return None
        return tuple(
            from_json_value(v.get(n), c) for n, c in zip(t.fields, t.children, strict=True)
        )
    if t.name == "ARRAY":
        return tuple(from_json_value(x, t.element) for x in v) if isinstance(v, list) else None
    if t.name == "MAP":
        if not isinstance(v, dict):
            return None
        return tuple((k, from_json_value(x, t.value)) for k, x in v.items())
    if isinstance(v, bool):
        return v if t.name == "BOOLEAN" else None
    if isinstance(v, _Number):
        if t.is_integral:
            return int(v) if re.fullmatch(r"-?\d+", v) else None
        if t.is_fractional:
            return float(v)
        if t.is_decimal:
            return Decimal(v)
        return str(v) if t.name == "STRING" else None
    if isinstance(v, str):
        return v if t.name == "STRING" else None
    return _dumps(v) if t.name == "STRING" else None


def _from_json(text: str, t: SqlType) -> object:
    try:
        v = _loads(text)
    except ValueError:
        return tuple(None for _ in t.children) if t.name == "STRUCT" else None
    return from_json_value(v, t)


def schema_of(v: object) -> str:
    """Spark's inferred type of a JSON value, as ``schema_of_json`` prints it."""
    if isinstance(v, dict):
        inner = ", ".join(f"{k}: {schema_of(x)}" for k, x in sorted(v.items()))
        return f"STRUCT<{inner}>"
    if isinstance(v, list):
        kinds = {schema_of(x) for x in v if x is not None}
        elem = kinds.pop() if len(kinds) == 1 else "STRING"
        return f"ARRAY<{elem}>"
    if isinstance(v, bool):
        return "BOOLEAN"
    if isinstance(v, _Number):
        return "BIGINT" if re.fullmatch(r"-?\d+", v) else "DOUBLE"
    return "STRING"


OPS["get_json_object"] = lambda args, t: elementwise(_get_json_object, args, t)
OPS["json_object_keys"] = lambda args, t: elementwise(_json_object_keys, args, t)
OPS["to_json"] = _to_json
OPS["from_json"] = lambda args, t: elementwise(lambda s: _from_json(s, t), args, t)


def _schema_of_json(text: str) -> str:
    """``schema_of_json(text)``: Spark types an empty text as STRING and fails on a text that
    is not JSON (a typed error here)."""
    if not text.strip():
        return "STRING"
    try:
        value = _loads(text)
    except ValueError as exc:  # json.JSONDecodeError included
        raise runtime_error(f"schema_of_json: {text!r} is not a JSON value ({exc})") from exc
    return schema_of(value)


OPS["schema_of_json"] = lambda args, t: elementwise(_schema_of_json, args, t)
