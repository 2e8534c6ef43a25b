"""Spark's generators (table functions): the rows each input row yields.

A generator is typed by :func:`output_columns` (Spark's default column names and types) and
run by :func:`run`: from its evaluated arguments (one :class:`~.vec.Vec` per argument, one
value per input row) to ``(parent, columns)`` — for each generated row the index of the input
row it came from, and the generated columns as engine columns. The plan node is
:class:`sql_frontend.plan.Generate` (a flat-map, so maintained per change).

Evaluation: ``stack`` with numpy (whole columns); ``explode`` & co flatten the arrays (maps)
of all rows into one column (:func:`~.nested.flatten`); ``json_tuple`` per row (a JSON
parse).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sql_frontend.expressions.casts import java_double_str
from sql_frontend.expressions.nested import flatten, parts
from sql_frontend.expressions.vec import Vec, from_objects, to_column
from sql_frontend.sql_types import NULL, SqlType

Columns = tuple[np.ndarray, list[np.ndarray]]


@dataclass(frozen=True)
class Generator:
    """A generator's evaluation (``kernel`` says how, for the support table)."""

    run: Callable[[list[Vec], int], Columns]
    kernel: str


def _stack(args: list[Vec], n: int) -> Columns:
    """``stack(k, v1, ..., vm)``: ``k`` rows of ``ceil(m / k)`` columns, filled row by row,
    missing cells NULL (Spark ``Stack``)."""
    k = int(args[0].data[0]) if n else 1
    values = [to_column(v) for v in args[1:]]
    width = -(-len(values) // k)
    nulls = np.full(n, None, dtype=object)
    cols = []
    for j in range(width):
        cells = [values[r * width + j] if r * width + j < len(values) else nulls for r in range(k)]
        cols.append(np.stack(cells, axis=1).reshape(-1))
    return np.repeat(np.arange(n, dtype=np.int64), k), cols


def _json_number(text: str) -> str:
    """A JSON number as Spark's json_tuple prints it (integers as written, the others as a
    Java double)."""
    if any(c in text for c in ".eE"):
        return java_double_str(float(text))
    return str(int(text))


def _json_text(value: object) -> str:
    """A parsed JSON value printed compactly (Jackson's ``copyCurrentStructure``)."""
    if isinstance(value, _Number):
        return value.text
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    assert isinstance(value, _Object)
    return "{" + ",".join(f"{_json_text(k)}:{_json_text(v)}" for k, v in value.pairs) + "}"


class _Number:
    """A JSON number, kept as Spark prints it."""

    def __init__(self, text: str) -> None:
        self.text = _json_number(text)


class _Object:
    """A JSON object, its members in order (duplicates kept, as Jackson streams them)."""

    def __init__(self, pairs: list[tuple[str, object]]) -> None:
        self.pairs = pairs


def _parse_object(text: str) -> _Object | None:
    """The top-level JSON object of ``text`` (trailing text ignored, as Jackson stops after
    the first value), or None if it is not one."""
    try:
        value, _ = json.JSONDecoder(
            object_pairs_hook=_Object,
            parse_float=_Number,
            parse_int=_Number,
            parse_constant=_Number,
        ).raw_decode(text.lstrip(" \t\r\n"))
    except (ValueError, OverflowError):
        return None
    return value if isinstance(value, _Object) else None


def _json_field(obj: _Object, name: str) -> str | None:
    """The last value of member ``name`` (Spark reads every member, the last one wins): a
    string as its text, JSON ``null`` as NULL, any other value as compact JSON."""
    found: object = _MISSING
    for k, v in obj.pairs:
        if k == name:
            found = v
    if found is _MISSING or found is None:
        return None
    return found if isinstance(found, str) else _json_text(found)


_MISSING = object()


def _json_tuple(args: list[Vec], n: int) -> Columns:
    """``json_tuple(json, f1, ..., fk)``: one row of ``k`` strings per input row — the
    top-level fields ``fi`` of the JSON object (NULL where absent; all NULL when the text is
    NULL or not a JSON object). Per row: a JSON parse."""
    texts = to_column(args[0])
    names = [to_column(a) for a in args[1:]]
    cols = [np.full(n, None, dtype=object) for _ in names]
    for i, text in enumerate(texts):
        obj = _parse_object(text) if text is not None else None
        if obj is None:
            continue
        for j, field in enumerate(names):
            if field[i] is not None:
                cols[j][i] = _json_field(obj, field[i])
    return np.arange(n, dtype=np.int64), cols


def elements(v: Vec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(flat, offsets, parent, position)`` of an array or map column's elements: all of
    them in one column, each row's offsets in it, each element's row and its position in
    the row (NULL and empty rows have none)."""
    flat, offsets = flatten(v)
    lengths = np.diff(offsets)
    parent = np.repeat(np.arange(len(v), dtype=np.int64), lengths)
    position = np.arange(len(flat), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    return flat, offsets, parent, position


def _explode(args: list[Vec], n: int) -> Columns:
    """``explode(array)``: a row per element; ``explode(map)``: a row per entry (key, value)."""
    flat, _, parent, _ = elements(args[0])
    if args[0].type.name == "MAP":
        return parent, parts(from_objects(flat, args[0].type), 2)
    return parent, [flat]


def _posexplode(args: list[Vec], n: int) -> Columns:
    """``posexplode``: ``explode`` with each element's position (from 0) first."""
    _, _, parent, position = elements(args[0])
    _, cols = _explode(args, n)
    pos = np.empty(len(position), dtype=object)
    pos[:] = position.tolist()
    return parent, [pos, *cols]


def _inline(args: list[Vec], n: int) -> Columns:
    """``inline(array of structs)``: a row per struct, a column per field (a NULL struct
    gives a row of NULLs)."""
    flat, _, parent, _ = elements(args[0])
    width = len(args[0].type.element.fields)
    return parent, parts(from_objects(flat, args[0].type.element), width)


GENERATORS: dict[str, Generator] = {
    "explode": Generator(_explode, "numpy (elements flattened)"),
    "posexplode": Generator(_posexplode, "numpy (elements flattened)"),
    "inline": Generator(_inline, "numpy (elements flattened, fields split per row)"),
    "stack": Generator(_stack, "numpy"),
    "json_tuple": Generator(_json_tuple, "python (a JSON parse per row)"),
}
"""Spark name → evaluation."""


def run(name: str, args: list[Vec], n: int, outer: bool) -> Columns:
    """The rows generator ``name`` yields from ``n`` input rows; ``outer``: an input row that
    yields none yields one row of NULLs instead (``explode_outer``, ``LATERAL VIEW OUTER``)."""
    parent, cols = GENERATORS[name].run(args, n)
    if not outer:
        return parent, cols
    missing = np.setdiff1d(np.arange(n, dtype=np.int64), parent)
    if not len(missing):
        return parent, cols
    order = np.argsort(np.concatenate([parent, missing]), kind="stable")
    parent = np.concatenate([parent, missing])[order]
    cols = [np.concatenate([c, np.full(len(missing), None, dtype=object)])[order] for c in cols]
    return parent, cols


def stack_types(values: list[SqlType], width: int) -> list[SqlType | None]:
    """Per column of ``stack``, the type its non-NULL values share (None: they differ)."""
    out: list[SqlType | None] = []
    for j in range(width):
        types = {t for t in values[j::width] if t != NULL}
        out.append(types.pop() if len(types) == 1 else (NULL if not types else None))
    return out
