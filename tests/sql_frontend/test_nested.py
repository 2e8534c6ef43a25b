"""Issue 16: ARRAY, MAP and STRUCT columns in views — their types, constructors, accessors and
casts — kept equal to Spark SQL's recomputation under random inserts, deletes and updates, and
stored as Delta view tables of Spark's types."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from coverage_views import NESTED_VIEWS
from delta_mirror import DeltaMirror
from sql_harness import TABLES, Harness, failures_over_steps, normalize

import ivm
from catalog.dtypes import engine_value
from catalog.sql_types import arrow_to_sql, sql_to_arrow, view_schema
from sql_frontend import coercion
from sql_frontend.compile import compile_view
from sql_frontend.errors import SqlError, SqlRuntimeError
from sql_frontend.sql_types import parse_type

SEED = int(os.environ.get("IVM_SQL_SEED", "1616"))


_COLLECT = re.compile(r"\b(collect_list|collect_set|array_agg)\(", re.IGNORECASE)


def sorted_collects(sql: str) -> str:
    """``sql`` with every ``collect_list`` / ``collect_set`` / ``array_agg`` sorted: Spark's
    element order is the order rows arrive in, ours is sorted (NULLs and shorter prefixes
    first), so Spark's answer is compared through ``sort_array``."""
    out, i = [], 0
    while m := _COLLECT.search(sql, i):
        depth, j = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(sql[j], 0)
            j += 1
        out += [sql[i : m.start()], "sort_array(", sql[m.start() : j], ")"]
        i = j
    return "".join(out) + sql[i:]


def test_sorted_collects_wraps_each_call() -> None:
    sql = "SELECT collect_list(f(a, b)) AS x, size(collect_set(c)) FROM t"
    want = "SELECT sort_array(collect_list(f(a, b))) AS x, size(sort_array(collect_set(c))) FROM t"
    assert sorted_collects(sql) == want


@pytest.mark.spark
def test_nested_views_equal_spark_after_every_step(spark: object) -> None:
    spark_text = {n: sorted_collects(sql) for n, sql in NESTED_VIEWS.items()}
    failures = failures_over_steps(spark, NESTED_VIEWS, SEED, spark_text)
    assert not failures, f"seed {SEED}:\n" + "\n".join(failures)


def test_nested_view_tables_hold_the_views(tmp_path: Path) -> None:
    """Each nested view as a Delta table (Arrow list / map / struct columns) after every step."""
    h = Harness(None, NESTED_VIEWS, SEED)
    names = list(NESTED_VIEWS)
    schemas = {n: view_schema(h.schemas[n]) for n in names}
    mirror = DeltaMirror(  # Arrow's structs read back as dicts: compared as engine values
        tmp_path,
        {n: (h.outputs[n], schemas[n]) for n in names},
        lambda v: normalize(engine_value(v)),
        None,
        {},
    )
    failures: list[str] = []
    for ins, dels in [(25, 0), (6, 8), (4, 12)]:
        h.random_changes(ins, dels)
        h.g.step()
        failures += mirror.publish_and_check()
    assert not failures, "\n".join(failures[:20])


TYPES = [
    ("array<int>", "ARRAY<INT>", "array<int>"),
    ("map<string, decimal(5, 2)>", "MAP<STRING, DECIMAL(5,2)>", "map<string,decimal(5,2)>"),
    ("struct<a: int, `b c`: array<string>>", "STRUCT<a: INT, `b c`: ARRAY<STRING>>", None),
    ("STRUCT<x INT, y STRING>", "STRUCT<x: INT, y: STRING>", "struct<x:int,y:string>"),
    ("array<struct<k: bigint, v: map<int, date>>>", None, None),
]


@pytest.mark.parametrize(("text", "printed", "simple"), TYPES)
def test_types_parse_print_and_round_trip_through_arrow(
    text: str, printed: str | None, simple: str | None
) -> None:
    t = parse_type(text)
    if printed is not None:
        assert str(t) == printed
    if simple is not None:
        assert t.simple == simple
    assert parse_type(str(t)) == t
    assert parse_type(arrow_to_sql(sql_to_arrow(t))) == t
    assert t.engine_dtype == "any"


def test_common_types_of_nested_values() -> None:
    t = parse_type
    assert coercion.common_type([t("array<int>"), t("array<bigint>")], "CASE") == t("array<bigint>")
    assert coercion.common_type([t("array<string>"), t("array<int>")], "x") == t("array<bigint>")
    got = coercion.common_type([t("struct<a: int>"), t("struct<A: double>")], "x")
    assert got == t("struct<a: double>")
    with pytest.raises(SqlError, match="DATATYPE_MISMATCH"):
        coercion.common_type([t("array<int>"), t("map<int, int>")], "x")
    with pytest.raises(SqlError, match="DATATYPE_MISMATCH"):
        coercion.common_type([t("struct<a: int>"), t("struct<b: int>")], "x")
    with pytest.raises(SqlError, match="CAST"):
        coercion.check_cast(t("array<int>"), t("map<int, int>"))
    coercion.check_cast(t("map<string, int>"), t("string"))


def _compile(sql: str):
    g = ivm.Dataflow()
    inputs = {n: g.input(n, [(c, "any") for c, _ in cols]) for n, cols in TABLES.items()}
    return compile_view(sql, dict(TABLES), g, inputs)


REFUSED = [
    ("SELECT st.z FROM nt", "FIELD_NOT_FOUND", "x, y"),
    ("SELECT arr.x FROM nt", "INVALID_EXTRACT_BASE_FIELD_TYPE", "element_at"),
    ("SELECT element_at(arr, 1.5) FROM nt", "DATATYPE_MISMATCH", "element_at"),
    ("SELECT map(1, 2, 3) FROM nt", "cannot parse", "key, value pairs"),
    ("SELECT k[0] FROM t", "DATATYPE_MISMATCH", "[]"),
    ("SELECT m, count(*) FROM nt GROUP BY m", "INVALID_ORDERING_TYPE", "map_entries"),
    ("SELECT DISTINCT id, m FROM nt", "INVALID_ORDERING_TYPE", "SELECT DISTINCT"),
    ("SELECT id FROM nt WHERE m = map('a', 1)", "INVALID_ORDERING_TYPE", "comparison"),
    ("SELECT id, collect_set(m) FROM nt GROUP BY id", "collect_set", "not comparable"),
    ("SELECT m FROM nt INTERSECT SELECT m FROM nt", "INVALID_ORDERING_TYPE", "INTERSECT"),
    ("SELECT st, count(*) FROM nt GROUP BY st", "", ""),
]


@pytest.mark.parametrize(("sql", "error", "hint"), REFUSED)
def test_refusals_name_the_construct(sql: str, error: str, hint: str) -> None:
    if not error:  # a struct (no map inside) groups
        assert _compile(sql) is not None
        return
    with pytest.raises(SqlError) as e:
        _compile(sql)
    assert error in str(e.value) and hint in str(e.value)


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        ("SELECT arr[5] FROM nt", "INVALID_ARRAY_INDEX"),
        ("SELECT element_at(arr, 0) FROM nt", "INVALID_INDEX_OF_ZERO"),
        ("SELECT map(st.y, 1) FROM nt", "NULL_MAP_KEY"),
        ("SELECT map('a', 1, 'a', id) FROM nt", "DUPLICATED_MAP_KEY"),
    ],
)
def test_runtime_errors_are_sparks_and_change_nothing(sql: str, error: str) -> None:
    g = ivm.Dataflow()
    nt = g.input("nt", [(c, "any") for c, _ in TABLES["nt"]])
    out = g.output(compile_view(sql, dict(TABLES), g, {"nt": nt}).collection, "v")
    nt.insert([(1, (1, 2), ("a",), (("a", 1),), (1, None))])
    with pytest.raises(SqlRuntimeError, match=error):
        g.step()
    assert out.counts() == {}


def test_a_table_of_nested_columns_refreshes_without_spark(tmp_path: Path) -> None:
    """CREATE TABLE with ARRAY / MAP / STRUCT columns, literal INSERTs, a view reading and
    building nested values, refreshed after a DELETE and an INSERT: the Delta view table has
    Spark's types and the rows a plain recomputation gives."""
    from spark_exec.session import Session

    s = Session(warehouse=tmp_path)
    s.sql(
        "CREATE TABLE t (k BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, INT>, pt STRUCT<x: INT, y: STRING>)"
    )
    s.sql(
        "INSERT INTO t VALUES (1, array('a', 'b'), map('p', 1), named_struct('x', 1, 'y', 'u')),"
        " (2, NULL, map(), NULL), (3, array('c', NULL), NULL, struct(3, NULL))"
    )
    s.sql(
        "CREATE MATERIALIZED VIEW v AS SELECT k, tags, attrs['p'] AS p, pt.y AS y, size(tags) AS n,"
        " named_struct('k', k, 'tags', tags) AS kt, map(k, pt) AS mk FROM t"
    )
    s.sql("DELETE FROM t WHERE k = 1")
    s.sql(
        "INSERT INTO t VALUES (4, array('z'), map('q', 2, 'p', NULL), named_struct('x', 4, 'y', 'w'))"
    )
    s.refresh()
    table = s.read("v")
    assert (
        table.schema.field("kt").type
        == pa.struct([("k", pa.int64()), ("tags", pa.list_(pa.string()))])
        or str(table.schema.field("kt").type) == "struct<k: int64, tags: list<element: string>>"
    )
    assert pa.types.is_map(table.schema.field("mk").type)
    rows = Counter(tuple(normalize(engine_value(v)) for v in r.values()) for r in table.to_pylist())
    expected = [
        (2, None, None, None, None, (2, None), ((2, None),)),
        (3, ("c", None), None, None, 2, (3, ("c", None)), ((3, (3, None)),)),
        (4, ("z",), None, "w", 1, (4, ("z",)), ((4, (4, "w")),)),
    ]
    assert rows == Counter(expected)
