"""The type-coercion matrix: every pair of SQL types under every operator kind.

Generated, not written by hand: :func:`cases` crosses :data:`TYPES` with :data:`OPS`. Each case
is a query over the two-row table ``m`` (row ``k = 1`` holds one value of every type, row
``k = 2`` only NULLs). An *outcome* is either ``{"type": ..., "rows": [...]}`` (the result
column's Spark type name and the normalized rows) or ``{"error": True}`` (the query is
refused). :func:`spark_outcomes` asks Spark, :func:`engine_outcomes` our front end; the
golden file ``data/coercion_matrix.json`` holds Spark 4.3's answers so the default test run
compares without Spark, and the ``spark`` test keeps the golden file equal to live Spark.

Regenerate the golden file after a deliberate change (needs pyspark)::

    PYTHONPATH=.:tests/sql_frontend python -m coercion_matrix --write
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "data" / "coercion_matrix.json"

# type name -> (Spark SQL literal of the k = 1 value, the engine's Python value)
TYPES: dict[str, tuple[str, object]] = {
    "tinyint": ("CAST(3 AS TINYINT)", 3),
    "smallint": ("CAST(-7 AS SMALLINT)", -7),
    "int": ("CAST(11 AS INT)", 11),
    "bigint": ("CAST(100000 AS BIGINT)", 100000),
    "float": ("CAST(1.5 AS FLOAT)", 1.5),
    "double": ("CAST(2.25 AS DOUBLE)", 2.25),
    "decimal(10,2)": ("CAST(12.34 AS DECIMAL(10,2))", Decimal("12.34")),
    "string": ("'ab'", "ab"),
    "boolean": ("true", True),
    "date": ("DATE'2024-01-02'", dt.date(2024, 1, 2)),
    "timestamp": ("TIMESTAMP'2024-01-02 03:04:05'", dt.datetime(2024, 1, 2, 3, 4, 5)),
    "binary": ("X'31'", b"1"),
    "void": ("NULL", None),
}
# A STRING operand holds a value its partner type can read (so the pair shows the cast's
# result, not a malformed-input error): column by partner type.
_STRING_FOR = {
    "tinyint": "s_int",
    "smallint": "s_int",
    "int": "s_int",
    "bigint": "s_int",
    "float": "s_frac",
    "double": "s_frac",
    "decimal(10,2)": "s_frac",
    "boolean": "s_bool",
    "date": "s_date",
    "timestamp": "s_ts",
    "binary": "s_bin",
}
STRING_COLUMNS: dict[str, str] = {
    "s_int": "7",
    "s_frac": "2.5",
    "s_bool": "true",
    "s_date": "2024-01-02",
    "s_ts": "2024-01-02 03:04:05",
    "s_bin": "1",
}

OPS: dict[str, str] = {
    "eq": "{a} = {b}",
    "lt": "{a} < {b}",
    "add": "{a} + {b}",
    "mul": "{a} * {b}",
    "div": "{a} / {b}",
    "case": "CASE WHEN c_boolean THEN {a} ELSE {b} END",
    "coalesce": "coalesce({a}, {b})",
    "in": "{a} IN ({b})",
    "union": "",
}


def column(t: str) -> str:
    return "c_" + t.split("(")[0]


def columns() -> list[tuple[str, str]]:
    """``m``'s columns and their types."""
    cols = [("k", "int")] + [(column(t), t) for t in TYPES]
    return cols + [(c, "string") for c in STRING_COLUMNS]


def rows() -> list[tuple[object, ...]]:
    full = (1, *(v for _, v in TYPES.values()), *STRING_COLUMNS.values())
    return [full, (2,) + (None,) * (len(full) - 1)]


def spark_table_sql() -> str:
    """``m`` as a Spark query (so the NULL column keeps Spark's ``void`` type)."""
    first = ["1 AS k"] + [f"{lit} AS {column(t)}" for t, (lit, _) in TYPES.items()]
    first += [f"'{v}' AS {c}" for c, v in STRING_COLUMNS.items()]
    second = ["2"] + ["NULL" if t == "void" else f"CAST(NULL AS {t.upper()})" for t in TYPES]
    second += ["CAST(NULL AS STRING)"] * len(STRING_COLUMNS)
    return f"SELECT {', '.join(first)} UNION ALL SELECT {', '.join(second)}"


def operand(t: str, partner: str) -> str:
    if t == "string" and partner in _STRING_FOR:
        return _STRING_FOR[partner]
    return column(t)


@dataclass(frozen=True)
class Case:
    """One operator kind over one ordered pair of types: ``expr`` for a scalar operator; for
    UNION the two operands ``left``/``right`` (``SELECT left FROM m UNION ALL SELECT right``)."""

    key: str
    op: str
    expr: str = ""
    left: str = ""
    right: str = ""


def cases() -> Iterator[Case]:
    """Every operator kind crossed with every ordered pair of :data:`TYPES`."""
    for op, template in OPS.items():
        for a in TYPES:
            for b in TYPES:
                x, y = operand(a, b), operand(b, a)
                key = f"{op} {a} {b}"
                if op == "union":
                    yield Case(key, op, left=x, right=y)
                else:
                    yield Case(key, op, expr=template.format(a=x, b=y))


def batch_query(op: str, batch: list[Case]) -> str:
    """One query computing every case of ``batch`` (all of kind ``op``): column ``r<i>`` is
    case ``i`` (after ``k`` for scalar operators)."""
    if op == "union":
        left = ", ".join(f"{c.left} AS r{i}" for i, c in enumerate(batch))
        right = ", ".join(f"{c.right} AS r{i}" for i, c in enumerate(batch))
        return f"SELECT {left} FROM m UNION ALL SELECT {right} FROM m"
    return "SELECT k, " + ", ".join(f"{c.expr} AS r{i}" for i, c in enumerate(batch)) + " FROM m"


def _by_op() -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = {}
    for c in cases():
        out.setdefault(c.op, []).append(c)
    return out


def _outcomes(op: str, batch: list[Case], types: list[str], result: list[tuple]) -> dict:
    out: dict[str, dict[str, Any]] = {}
    for i, c in enumerate(batch):
        if op == "union":
            rs = [[normalize(r[i])] for r in result]
        else:
            rs = [[normalize(r[0]), normalize(r[i + 1])] for r in result]
        out[c.key] = {"type": types[i], "rows": _sorted(rs)}
    return out


def normalize(v: Any) -> Any:
    """A JSON value standing for a result value (floats to 6 significant digits, since FLOAT
    values reach Python widened)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return f"float:{v}"
        return float(f"{v:.6g}")
    if isinstance(v, Decimal):
        return f"dec:{v}"
    if isinstance(v, dt.datetime):
        return f"ts:{v.isoformat()}"
    if isinstance(v, dt.date):
        return f"date:{v.isoformat()}"
    if isinstance(v, (bytes, bytearray)):
        return f"bin:{bytes(v).hex()}"
    if hasattr(v, "item"):
        return normalize(v.item())
    raise TypeError(f"cannot normalize {v!r}")


def _sorted(rs: list[list[Any]]) -> list[list[Any]]:
    return sorted(rs, key=lambda r: json.dumps(r, sort_keys=True))


def _engine_accepts(c: Case, cat: dict[str, list[tuple[str, str]]]) -> bool:
    """Whether our front end accepts the case alone (scalar cases are translated as
    expressions, which is where coercion happens; UNION cases are planned whole)."""
    import sqlglot

    from sql_frontend.analyze import catalog_schema
    from sql_frontend.errors import SqlError
    from sql_frontend.planner import plan_sql
    from sql_frontend.scalar import Ref
    from sql_frontend.translate_expr import ExprTranslator

    try:
        if c.op == "union":
            plan_sql(batch_query(c.op, [c]), cat)
            return True
        schema = catalog_schema(cat)["m"]
        names = list(schema)
        translate = ExprTranslator(
            lambda col: Ref(names.index(col.name), schema[col.name], col.name)
        )
        translate(sqlglot.parse_one(c.expr, read="spark"))
        return True
    except SqlError:
        return False


def _engine_run(op: str, batch: list[Case], cat: dict) -> dict[str, dict[str, Any]]:
    import ivm
    from sql_frontend.compile import compile_view
    from sql_frontend.errors import SqlRuntimeError

    g = ivm.Dataflow()
    m = g.input("m", [(c, "any") for c, _ in columns()])
    cv = compile_view(batch_query(op, batch), cat, g, {"m": m})
    o = g.output(cv.collection, "o")
    m.insert(rows())
    try:
        g.step()
    except SqlRuntimeError:
        if len(batch) == 1:
            return {batch[0].key: {"error": True}}
        return {k: v for c in batch for k, v in _engine_run(op, [c], cat).items()}
    result = [row for row, n in o.counts().items() for _ in range(n)]
    first = 0 if op == "union" else 1
    types = [str(t).lower().replace("null", "void") for _, t in cv.schema[first:]]
    return _outcomes(op, batch, types, result)


def engine_outcomes() -> dict[str, dict[str, Any]]:
    """Every case as our front end and engine compute it: the accepted cases of each operator
    kind compiled into one view and run together."""
    cat = {"m": columns()}
    out: dict[str, dict[str, Any]] = {}
    for op, batch in _by_op().items():
        ok = []
        for c in batch:
            if _engine_accepts(c, cat):
                ok.append(c)
            else:
                out[c.key] = {"error": True}
        if ok:
            out.update(_engine_run(op, ok, cat))
    return out


def spark_outcomes(spark: Any, likely_ok: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """Every case as Spark computes it, in few Spark queries.

    Analysis is the costly part, so the cases ``likely_ok`` names (those our engine accepts)
    are analyzed together, one query per operator kind; only when that query is refused, and
    for every other case, each is analyzed alone (two at a time). Values come from one query
    per kind."""
    spark.sql(spark_table_sql()).createOrReplaceTempView("m")
    js = spark._jsparkSession
    by_op = _by_op()
    accepted: set[str] = set()
    alone: list[Case] = []
    for op, batch in by_op.items():
        guess = [c for c in batch if likely_ok is None or c.key in likely_ok]
        if guess and _analyzes(js, op, guess):
            accepted |= {c.key for c in guess}
        alone += [c for c in batch if c.key not in accepted]
    with _raw_java_errors(), ThreadPoolExecutor(2) as pool:
        verdicts = list(pool.map(lambda c: _analyzes(js, c.op, [c]), alone))
    accepted |= {c.key for c, ok in zip(alone, verdicts, strict=True) if ok}
    out: dict[str, dict[str, Any]] = {c.key: {"error": True} for c in alone}
    for op, batch in by_op.items():
        out.update(_spark_run(spark, op, [c for c in batch if c.key in accepted]))
    return out


@contextmanager
def _raw_java_errors() -> Iterator[None]:
    """Skip pyspark's conversion of Java exceptions (several JVM round trips per error) while
    only the fact of a refusal matters."""
    import py4j.java_gateway
    import py4j.protocol

    converting = py4j.java_gateway.get_return_value
    py4j.java_gateway.get_return_value = py4j.protocol.get_return_value
    try:
        yield
    finally:
        py4j.java_gateway.get_return_value = converting


def _analyzes(js: Any, op: str, batch: list[Case]) -> bool:
    try:
        js.sql(batch_query(op, batch))
    except Exception:
        return False
    return True


def _spark_run(spark: Any, op: str, batch: list[Case]) -> dict[str, dict[str, Any]]:
    if not batch:
        return {}
    try:
        df = spark.sql(batch_query(op, batch))
        result = [tuple(r) for r in df.collect()]
    except Exception:
        if len(batch) == 1:
            return {batch[0].key: {"error": True}}
        return {k: v for c in batch for k, v in _spark_run(spark, op, [c]).items()}
    first = 0 if op == "union" else 1
    types = [f.dataType.simpleString() for f in df.schema.fields[first:]]
    return _outcomes(op, batch, types, result)


def differences(
    expected: dict[str, dict[str, Any]], actual: dict[str, dict[str, Any]]
) -> list[str]:
    """One line per case whose outcomes differ."""
    return [
        f"{key}: expected {expected.get(key)}, got {actual.get(key)}"
        for key in sorted(set(expected) | set(actual))
        if expected.get(key) != actual.get(key)
    ]


def load_golden() -> dict[str, dict[str, Any]]:
    return json.loads(GOLDEN.read_text())


def write_golden(outcomes: dict[str, dict[str, Any]]) -> None:
    GOLDEN.parent.mkdir(exist_ok=True)
    lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(outcomes.items())]
    GOLDEN.write_text("{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":  # pragma: no cover - regenerates the golden file
    import sys

    from spark_exec.spark_session import local_spark

    session = local_spark(Path("/tmp/coercion-matrix-warehouse"))
    session.conf.set("spark.sql.session.timeZone", "UTC")
    live = spark_outcomes(session)
    if "--write" in sys.argv:
        write_golden(live)
    for line in differences(live, engine_outcomes()):
        print(line)
