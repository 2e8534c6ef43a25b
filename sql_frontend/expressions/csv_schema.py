"""``schema_of_csv(text)``: the schema Spark's CSV inference (``CSVInferSchema.inferField``)
gives one line, computed once when the view is compiled (Spark requires a constant). Per
field, the first type that reads it: INT, BIGINT, DECIMAL(p,0) (whole numbers past BIGINT),
DOUBLE (Java's ``Double.parseDouble``, or ``NaN``/``Inf``/``-Inf``), DATE (``yyyy-MM-dd``),
TIMESTAMP (as a cast reads it), BOOLEAN; else STRING (an empty field too)."""

from __future__ import annotations

import csv
import re

_INT = re.compile(r"[+-]?[0-9]+")
# Java's Double.parseDouble: spaces around, a sign, NaN / Infinity / a decimal number with an
# exponent, an optional f/F/d/D suffix (hexadecimal floats are left out)
_JAVA_DOUBLE = re.compile(
    r"[\x00-\x20]*[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)"
    r"[\x00-\x20]*"
)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_YEAR_MONTH = re.compile(r"[0-9]{4}-([0-9]{1,2})")


def field_type(f: str) -> str:
    """The type Spark's CSV inference gives one field."""
    from sql_frontend.expressions.casts import reads_as
    from sql_frontend.sql_types import DATE, TIMESTAMP

    if f == "":
        return "STRING"
    if _INT.fullmatch(f):
        n = int(f)
        if -(2**31) <= n < 2**31:
            return "INT"
        if -(2**63) <= n < 2**63:
            return "BIGINT"
        digits = len(f.lstrip("+-"))
        if digits <= 38:
            return f"DECIMAL({digits},0)"
    if _JAVA_DOUBLE.fullmatch(f) or f in ("Inf", "-Inf"):
        return "DOUBLE"
    m = _YEAR_MONTH.fullmatch(f)  # a cast reads 'yyyy-[m]m' as a TIMESTAMP
    if m and 1 <= int(m.group(1)) <= 12:
        return "TIMESTAMP"
    for pattern, t, name in ((_DATE, DATE, "DATE"), (None, TIMESTAMP, "TIMESTAMP")):
        if pattern is not None and not pattern.fullmatch(f):
            continue
        if reads_as(f, t):
            return name
    if f.lower() in ("true", "false"):
        return "BOOLEAN"
    return "STRING"


def schema_of_csv(text: str) -> str:
    """``STRUCT<_c0: INT, _c1: STRING, ...>`` of one CSV line (``,`` separated, ``"`` quoted,
    ``\\`` escaped, as Spark's defaults are)."""
    (fields,) = list(csv.reader([text], quotechar='"', escapechar="\\")) or [[""]]
    cols = ", ".join(f"_c{i}: {field_type(f)}" for i, f in enumerate(fields))
    return f"STRUCT<{cols}>"
