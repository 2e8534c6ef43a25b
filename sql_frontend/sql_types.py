"""SQL types of the front end, with Spark's rules, and their engine column dtypes.

A :class:`SqlType` is Spark's type of a column (``BIGINT``, ``DECIMAL(12,2)``, ``STRING``, ...).
Every SQL value is nullable, so columns the front end computes are held by the engine as
``"any"`` (numpy object arrays, ``None`` is NULL) or ``"str"``; engine inputs declared
``"int64"``/``"float64"``/``"bool"`` are read as non-null columns of ``BIGINT``/``DOUBLE``/
``BOOLEAN``.

>>> parse_type("decimal(10, 2)")
SqlType(name='DECIMAL', precision=10, scale=2)

The rules that combine types (implicit casts, arithmetic result types) are in
:mod:`sql_frontend.coercion`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from sql_frontend.errors import SqlAnalysisError

INTEGRAL = ("TINYINT", "SMALLINT", "INT", "BIGINT")
FRACTIONAL = ("FLOAT", "DOUBLE")
#: the width of each integral type
INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
# Digits an integral type needs as a decimal (Spark's DecimalType.forType).
_INT_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 20}
MAX_PRECISION = 38
#: the nested types: ARRAY<T>, MAP<K, V>, STRUCT<name: T, ...>
NESTED = ("ARRAY", "MAP", "STRUCT")
#: how many type parameters each nested type has (STRUCT: any number, one per field)
_ARITY = {"ARRAY": 1, "MAP": 2}

_ALIASES = {
    "BYTE": "TINYINT",
    "SHORT": "SMALLINT",
    "INTEGER": "INT",
    "LONG": "BIGINT",
    "REAL": "FLOAT",
    "BOOL": "BOOLEAN",
    "VARCHAR": "STRING",
    "CHAR": "STRING",
    "TEXT": "STRING",
    "NUMERIC": "DECIMAL",
    "DEC": "DECIMAL",
    "VOID": "NULL",
    "TIMESTAMP_LTZ": "TIMESTAMP",
    "TIMESTAMP_NTZ": "TIMESTAMP",
    "DATETIME": "TIMESTAMP",
}
_KNOWN = {
    *INTEGRAL,
    *FRACTIONAL,
    "DECIMAL",
    "BOOLEAN",
    "STRING",
    "DATE",
    "TIMESTAMP",
    "NULL",
    "BINARY",
    *NESTED,
}
ENGINE_TO_SQL = {"int64": "BIGINT", "float64": "DOUBLE", "bool": "BOOLEAN", "str": "STRING"}
_SQL_TO_ENGINE = {sql: engine for engine, sql in ENGINE_TO_SQL.items()}


@dataclass(frozen=True)
class SqlType:
    """A Spark SQL type; ``precision``/``scale`` only for DECIMAL.

    ``not_null`` marks a column that never holds NULL (a Datalog relation's column, whose
    values are facts): BIGINT, DOUBLE, STRING and BOOLEAN ones are then held by the engine in
    their fixed-width dtypes (``int64``/``float64``/``str``/``bool``), like declared inputs."""

    name: str
    precision: int | None = None
    scale: int | None = None
    not_null: bool = field(default=False, repr=False)
    children: tuple[SqlType, ...] = field(default=(), repr=False)
    """The element type of an ARRAY, the key and value types of a MAP, a STRUCT's field types."""
    fields: tuple[str, ...] = field(default=(), repr=False)
    """A STRUCT's field names (one per child)."""

    def __post_init__(self) -> None:
        if self.name not in _KNOWN:
            raise SqlAnalysisError(f"unknown SQL type {self.name!r}", construct=self.name)
        if self.name == "DECIMAL" and (self.precision is None or self.scale is None):
            raise SqlAnalysisError("DECIMAL needs precision and scale", construct="DECIMAL")
        want = _ARITY.get(self.name, len(self.fields) if self.name == "STRUCT" else 0)
        if len(self.children) != want or (self.name != "STRUCT" and self.fields):
            raise SqlAnalysisError(f"{self.name} needs {want} type parameters", construct=self.name)

    def __str__(self) -> str:
        if self.name == "DECIMAL":
            text = f"DECIMAL({self.precision},{self.scale})"
        elif self.name == "STRUCT":
            inner = ", ".join(
                f"{_quoted(n)}: {t}" for n, t in zip(self.fields, self.children, strict=False)
            )
            text = f"STRUCT<{inner}>"
        elif self.children:
            text = f"{self.name}<{', '.join(map(str, self.children))}>"
        else:
            text = self.name
        return text + (" NOT NULL" if self.not_null else "")

    @property
    def simple(self) -> str:
        """Spark's ``simpleString`` (what ``typeof`` answers): ``array<int>``,
        ``map<string,int>``, ``struct<a:int,b:string>``, ``decimal(10,2)``."""
        if self.name == "STRUCT":
            inner = ",".join(
                f"{n}:{t.simple}" for n, t in zip(self.fields, self.children, strict=False)
            )
            return f"struct<{inner}>"
        if self.children:
            return f"{self.name.lower()}<{','.join(t.simple for t in self.children)}>"
        if self.name == "NULL":
            return "void"
        return str(replace(self, not_null=False)).lower()

    @property
    def is_nested(self) -> bool:
        return self.name in NESTED

    @property
    def element(self) -> SqlType:
        """An ARRAY's element type."""
        assert self.name == "ARRAY", self
        return self.children[0]

    @property
    def key(self) -> SqlType:
        """A MAP's key type."""
        assert self.name == "MAP", self
        return self.children[0]

    @property
    def value(self) -> SqlType:
        """A MAP's value type."""
        assert self.name == "MAP", self
        return self.children[1]

    @property
    def has_map(self) -> bool:
        """Whether values of this type hold a MAP (which Spark neither compares nor groups)."""
        return self.name == "MAP" or any(c.has_map for c in self.children)

    def field_type(self, name: str) -> tuple[int, SqlType] | None:
        """A STRUCT field's position and type, its name matched case-insensitively as Spark
        does; None when there is no such field."""
        for i, n in enumerate(self.fields):
            if n.lower() == name.lower():
                return i, self.children[i]
        return None

    @property
    def is_integral(self) -> bool:
        return self.name in INTEGRAL

    @property
    def is_fractional(self) -> bool:
        return self.name in FRACTIONAL

    @property
    def is_decimal(self) -> bool:
        return self.name == "DECIMAL"

    @property
    def is_numeric(self) -> bool:
        return self.is_integral or self.is_fractional or self.is_decimal

    @property
    def int_bits(self) -> int:
        return INT_BITS[self.name]

    @property
    def engine_dtype(self) -> str:
        """The engine dtype of a column of this type (``any`` when it may hold NULL)."""
        if self.not_null and self.name in _SQL_TO_ENGINE:
            return _SQL_TO_ENGINE[self.name]
        return "str" if self.name == "STRING" else "any"

    def without_nulls(self) -> SqlType:
        """This type, for a column that never holds NULL."""
        return replace(self, not_null=True)


BOOLEAN = SqlType("BOOLEAN")
INT = SqlType("INT")
BIGINT = SqlType("BIGINT")
DOUBLE = SqlType("DOUBLE")
STRING = SqlType("STRING")
DATE = SqlType("DATE")
TIMESTAMP = SqlType("TIMESTAMP")
NULL = SqlType("NULL")
BINARY = SqlType("BINARY")


def array_of(element: SqlType) -> SqlType:
    """``ARRAY<element>``."""
    return SqlType("ARRAY", children=(_nullable(element),))


def map_of(key: SqlType, value: SqlType) -> SqlType:
    """``MAP<key, value>``."""
    return SqlType("MAP", children=(_nullable(key), _nullable(value)))


def struct_of(fields: list[tuple[str, SqlType]] | tuple[tuple[str, SqlType], ...]) -> SqlType:
    """``STRUCT<name: type, ...>``."""
    return SqlType(
        "STRUCT",
        children=tuple(_nullable(t) for _, t in fields),
        fields=tuple(n for n, _ in fields),
    )


def _nullable(t: SqlType) -> SqlType:
    return replace(t, not_null=False) if t.not_null else t


def _quoted(name: str) -> str:
    return (
        name
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
        else "`" + name.replace("`", "``") + "`"
    )


def decimal(precision: int, scale: int) -> SqlType:
    """DECIMAL(precision, scale) bounded as Spark bounds it (adjusting the scale down, keeping
    at least 6 fractional digits, when precision exceeds 38)."""
    if precision > MAX_PRECISION:
        int_digits = precision - scale
        min_scale = min(scale, 6)
        scale = max(MAX_PRECISION - int_digits, min_scale)
        precision = MAX_PRECISION
    return SqlType("DECIMAL", precision, scale)


_TYPE_RE = re.compile(r"^\s*([A-Za-z_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")


def parse_type(text: str) -> SqlType:
    """A SQL type name (``"bigint"``, ``"decimal(10,2)"``, ``"array<struct<a: int>>"``) or an
    engine dtype (``"int64"``)."""
    if text in ENGINE_TO_SQL:
        return SqlType(ENGINE_TO_SQL[text])
    if "<" in text:
        return _TypeParser(text).whole()
    m = _TYPE_RE.match(text)
    if not m:
        raise SqlAnalysisError(f"cannot read SQL type {text!r}", construct=text)
    name = m.group(1).upper()
    name = _ALIASES.get(name, name)
    if name == "DECIMAL":
        precision = int(m.group(2)) if m.group(2) else 10
        scale = int(m.group(3)) if m.group(3) else 0
        return SqlType("DECIMAL", precision, scale)
    return SqlType(name)


def as_decimal(t: SqlType) -> SqlType:
    """The decimal type that holds every value of an integral or decimal type."""
    if t.is_decimal:
        return t
    if t.is_integral:
        return SqlType("DECIMAL", _INT_DIGITS[t.name], 0)
    raise SqlAnalysisError(f"{t} is not exact numeric")


def sum_type(t: SqlType) -> SqlType:
    """Spark's type of SUM over ``t``."""
    if t.is_integral:
        return BIGINT
    if t.is_decimal:
        assert t.precision is not None and t.scale is not None
        # Spark: DecimalType.bounded(p + 10, s), which caps at 38 digits keeping the scale
        return SqlType("DECIMAL", min(t.precision + 10, MAX_PRECISION), t.scale)
    if t.is_fractional or t.name in ("STRING", "NULL"):
        return DOUBLE
    raise SqlAnalysisError(f"SUM of {t}", construct="SUM")


def avg_type(t: SqlType) -> SqlType:
    """Spark's type of AVG over ``t``."""
    if t.is_decimal:
        assert t.precision is not None and t.scale is not None
        # Spark: DecimalType.bounded(p + 4, s + 4)
        return SqlType("DECIMAL", min(t.precision + 4, MAX_PRECISION), min(t.scale + 4, 38))
    if t.is_numeric or t.name in ("STRING", "NULL"):
        return DOUBLE
    raise SqlAnalysisError(f"AVG of {t}", construct="AVG")


_TOKEN = re.compile(
    r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*(?:\s*\([\d\s,]*\))?)|([<>,:]))"
)


class _TypeParser:
    """Recursive descent over Spark's type syntax: ``ARRAY<T>``, ``MAP<K, V>``,
    ``STRUCT<name: T, ...>`` (the colon optional, names optionally in backquotes)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text.rstrip()):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise SqlAnalysisError(f"cannot read SQL type {text!r}", construct=text)
            self.tokens.append(m.group(0).strip())
            pos = m.end()
        self.i = 0

    def whole(self) -> SqlType:
        t = self.type()
        if self.i != len(self.tokens):
            self.fail()
        return t

    def fail(self) -> SqlAnalysisError:
        raise SqlAnalysisError(f"cannot read SQL type {self.text!r}", construct=self.text)

    def take(self, want: str | None = None) -> str:
        if self.i >= len(self.tokens) or (want is not None and self.tokens[self.i] != want):
            self.fail()
        self.i += 1
        return self.tokens[self.i - 1]

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def type(self) -> SqlType:
        head = self.take()
        name = head.upper()
        if name not in NESTED:
            return parse_type(head)
        self.take("<")
        if name == "STRUCT":
            fields: list[tuple[str, SqlType]] = []
            while self.peek() != ">":
                if fields:
                    self.take(",")
                field_name = self.take()
                if field_name.startswith("`"):
                    field_name = field_name[1:-1].replace("``", "`")
                if self.peek() == ":":
                    self.take(":")
                fields.append((field_name, self.type()))
            self.take(">")
            return struct_of(fields)
        params = [self.type()]
        while self.peek() == ",":
            self.take(",")
            params.append(self.type())
        self.take(">")
        if len(params) != _ARITY[name]:
            self.fail()
        return array_of(params[0]) if name == "ARRAY" else map_of(params[0], params[1])
