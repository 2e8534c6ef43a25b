"""Schemas: ordered, named, typed columns of a collection."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ivm.errors import PlanError, SchemaError

#: engine dtype name -> numpy dtype.  ``str`` and ``any`` are object arrays in which ``None``
#: is NULL; the fixed-width dtypes hold no NULLs.
DTYPES: dict[str, Any] = {
    "int64": np.dtype(np.int64),
    "float64": np.dtype(np.float64),
    "bool": np.dtype(np.bool_),
    "str": np.dtype(object),
    "any": np.dtype(object),
}

ColumnRef = str | int


@dataclass(frozen=True)
class Schema:
    """An ordered tuple of ``(name, dtype)`` pairs."""

    names: tuple[str, ...]
    dtypes: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.names) != len(self.dtypes):
            raise PlanError("schema needs one dtype per column name")
        for d in self.dtypes:
            if d not in DTYPES:
                raise PlanError(f"unknown dtype {d!r}; expected one of {sorted(DTYPES)}")
        if len(set(self.names)) != len(self.names):
            raise PlanError(f"duplicate column names in schema {self.names}")

    @staticmethod
    def of(spec: Schema | Iterable[tuple[str, str]] | dict[str, str]) -> Schema:
        """Build a schema from ``[(name, dtype), ...]`` or ``{name: dtype}``."""
        if isinstance(spec, Schema):
            return spec
        items = list(spec.items()) if isinstance(spec, dict) else list(spec)
        try:
            names = tuple(str(n) for n, _ in items)
            dtypes = tuple(str(d) for _, d in items)
        except (TypeError, ValueError) as exc:
            raise PlanError(f"a schema is a list of (name, dtype) pairs, got {spec!r}") from exc
        return Schema(names, dtypes)

    def __len__(self) -> int:
        return len(self.names)

    def index(self, ref: ColumnRef) -> int:
        """Position of a column given by name or position."""
        if isinstance(ref, bool):
            raise PlanError(f"bad column reference {ref!r}")
        if isinstance(ref, int | np.integer):
            i = int(ref)
            if not -len(self.names) <= i < len(self.names):
                raise PlanError(f"column {i} out of range for schema {self.names}")
            return i % len(self.names)
        try:
            return self.names.index(ref)
        except ValueError:
            raise PlanError(f"no column {ref!r} in {list(self.names)}") from None

    def indices(self, refs: Sequence[ColumnRef] | ColumnRef) -> tuple[int, ...]:
        if isinstance(refs, str | int):
            refs = (refs,)
        return tuple(self.index(r) for r in refs)

    def select(self, idx: Sequence[int]) -> Schema:
        return Schema(tuple(self.names[i] for i in idx), tuple(self.dtypes[i] for i in idx))

    def rename(self, names: Sequence[str]) -> Schema:
        if len(names) != len(self.names):
            raise PlanError(f"rename needs {len(self.names)} names, got {len(names)}")
        return Schema(tuple(names), self.dtypes)

    def concat(self, other: Schema, suffix: str = "_r") -> Schema:
        names = list(self.names)
        for n in other.names:
            m = n
            while m in names:
                m = m + suffix
            names.append(m)
        return Schema(tuple(names), self.dtypes + other.dtypes)

    def __str__(self) -> str:
        return (
            "(" + ", ".join(f"{n}: {d}" for n, d in zip(self.names, self.dtypes, strict=True)) + ")"
        )


_STR_TYPES = {str, type(None)}


def coerce_column(values: Any, dtype: str, name: str) -> np.ndarray:
    """Convert user values to the engine's array for ``dtype`` or raise :class:`SchemaError`."""
    target = DTYPES[dtype]
    if target == np.dtype(object):
        if isinstance(values, np.ndarray) and values.dtype == object:
            arr = values
        else:
            seq = values.tolist() if isinstance(values, np.ndarray) else list(values)
            arr = np.empty(len(seq), dtype=object)
            arr[:] = seq
        if dtype == "str":
            # the types present, found in one C loop; a value by value check only to
            # accept str subclasses or to name the bad value
            if not set(map(type, arr)) <= _STR_TYPES:
                for v in arr:
                    if v is not None and not isinstance(v, str):
                        raise SchemaError(f"column {name!r} is str, got {type(v).__name__} {v!r}")
        else:
            for v in arr:
                if v is not None:
                    try:
                        hash(v)
                    except TypeError:
                        raise SchemaError(
                            f"column {name!r} needs hashable values, got {type(v).__name__}"
                        ) from None
        return arr
    if isinstance(values, np.ndarray) and values.dtype == target:
        return values
    seq = values if isinstance(values, np.ndarray) else list(values)
    if isinstance(seq, list):
        for v in seq:
            if v is None:
                raise SchemaError(
                    f"column {name!r} is {dtype} and cannot hold NULL; declare it 'any'"
                )
            is_bool = isinstance(v, bool | np.bool_)
            if dtype == "int64":
                bad = is_bool or not isinstance(v, int | np.integer)
            elif dtype == "float64":
                bad = is_bool or not isinstance(v, int | float | np.integer | np.floating)
            else:
                bad = not is_bool
            if bad:
                raise SchemaError(f"column {name!r} is {dtype}, got {type(v).__name__} {v!r}")
    else:
        kind = seq.dtype.kind
        ok = {"int64": "iu", "float64": "iuf", "bool": "b"}[dtype]
        if kind not in ok:
            raise SchemaError(f"column {name!r} is {dtype}, got an array of {seq.dtype}")
    try:
        return np.asarray(seq, dtype=target)
    except (TypeError, ValueError, OverflowError) as exc:
        raise SchemaError(f"column {name!r}: cannot convert to {dtype}: {exc}") from None
