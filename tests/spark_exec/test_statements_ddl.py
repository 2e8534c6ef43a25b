"""The materialized-view DDL of Spark and Databricks, parsed by sqlglot (spark_exec.sql_dialect)
into one statement model (spark_exec.statements) and run by the Session — no Spark needed.

Every form is written with a comment before the statement and comments inside it; errors
point into the user's script (line and column).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from catalog.errors import DependencyError, NameClashError
from catalog.view_options import Schedule
from spark_exec import statements as S
from spark_exec.errors import StatementError
from spark_exec.session import Session
from sql_frontend.errors import (
    NonDeterministicError,
    SqlAnalysisError,
    SqlSyntaxError,
    UnsupportedSqlError,
)


@pytest.fixture
def s(tmp_path: Path) -> Session:
    s = Session(warehouse=tmp_path / "wh")
    s.sql(
        "CREATE TABLE t (k BIGINT, v BIGINT);INSERT INTO t VALUES (1, 10), (1, 5), (2, 7), (3, 1)"
    )
    return s


def rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def parse_one(text: str) -> S.Stmt:
    (st,) = S.split_statements(text)
    return S.parse(st)


# -- recognition -------------------------------------------------------------------------

RECOGNISED = [
    ("-- c\nCREATE /* i */ MATERIALIZED VIEW v AS SELECT k FROM t", S.CreateView),
    ("/* c */ DROP /* i */ MATERIALIZED VIEW IF EXISTS v", S.DropView),
    ("-- c\nREFRESH MATERIALIZED /* i */ VIEW v FULL", S.RefreshView),
    ("-- c\nREFRESH MATERIALIZED VIEWS", S.RefreshView),
    ("/* c */ EXPLAIN MATERIALIZED -- i\n VIEW v", S.ExplainView),
    ("/* c */ SHOW /* i */ MATERIALIZED VIEWS", S.ShowViews),
    ("/* c */ DESCRIBE /* i */ EXTENDED MATERIALIZED VIEW v", S.DescribeView),
    ("/* c */ SHOW CREATE /* i */ TABLE v", S.ShowCreate),
    ("/* c */ DESCRIBE HISTORY /* i */ v", S.DescribeHistory),
    ("/* c */ ALTER MATERIALIZED VIEW v /* i */ DROP SCHEDULE", S.AlterViewSchedule),
    ("/* c */ CREATE TABLE x (a BIGINT)", S.CreateTable),
    ("/* c */ DROP TABLE x", S.DropTable),
    ("/* c */ INSERT INTO t VALUES (1, 2)", S.Dml),
    ("/* c */ DELETE FROM t WHERE k = 1", S.Dml),
    ("/* c */ UPDATE t SET v = 1", S.Dml),
    ("/* c */ MERGE INTO t USING u ON t.k = u.k WHEN MATCHED THEN DELETE", S.Dml),
    ("/* c */ SELECT 1", S.PassToSpark),
    ("/* c */ EXPLAIN SELECT 1", S.PassToSpark),
    ("/* c */ SHOW TABLES", S.PassToSpark),
    ("/* c */ ALTER TABLE t ADD COLUMN c INT", S.PassToSpark),
]


@pytest.mark.parametrize(("text", "kind"), RECOGNISED)
def test_every_statement_has_one_model(text: str, kind: type) -> None:
    assert type(parse_one(text)) is kind


def test_comment_before_create_materialized_view(s: Session) -> None:
    """Old main recognised MV statements with regexes: a leading comment broke them."""
    s.sql(
        "-- the totals per key\n/* more */ CREATE MATERIALIZED VIEW totals AS\n"
        "SELECT k, sum(v) AS total FROM t GROUP BY k"
    )
    assert rows(s.read("totals")) == [(1, 15), (2, 7), (3, 1)]


def test_create_options_are_parsed() -> None:
    stmt = parse_one(
        "-- before\nCREATE OR REPLACE /* a */ MATERIALIZED VIEW IF NOT EXISTS db.v (\n"
        "  a COMMENT 'the a', -- inside\n  b)\n"
        "COMMENT 'it\\'s v' /* c */ TBLPROPERTIES ('owner' = 'ana', 'n' = 1)\n"
        "SCHEDULE REFRESH EVERY 2 HOURS AS /* q */ SELECT k, v FROM t"
    )
    assert isinstance(stmt, S.CreateView)
    assert (stmt.name, stmt.or_replace, stmt.if_not_exists) == ("db.v", True, True)
    o = stmt.options
    assert o.columns == (("a", "the a"), ("b", None))
    assert o.comment == "it's v"
    assert o.properties == (("owner", "ana"), ("n", "1"))
    assert o.schedule == Schedule(every=2, unit="HOUR")
    assert stmt.query == "/* q */ SELECT k, v FROM t"
    trigger = parse_one("CREATE MATERIALIZED VIEW v -- x\n TRIGGER ON UPDATE AS SELECT 1")
    assert isinstance(trigger, S.CreateView)
    assert trigger.options.schedule == Schedule(on_update=True)


# -- CREATE ------------------------------------------------------------------------------


def test_column_list_with_comments_names_the_view(s: Session) -> None:
    s.sql(
        "/* c */ CREATE MATERIALIZED VIEW totals (\n"
        "  key COMMENT 'the key', -- inside\n  total /* no comment */)\n"
        "COMMENT 'sum of v per key'\n"
        "TBLPROPERTIES ('owner' = 'ana')\n"
        "AS SELECT k, sum(v) AS s FROM t GROUP BY k"
    )
    assert s.read("totals").column_names == ["key", "total"]
    assert rows(s.read("totals")) == [(1, 15), (2, 7), (3, 1)]
    s.sql("INSERT INTO t VALUES (2, 3); REFRESH MATERIALIZED VIEW totals")
    assert rows(s.read("totals")) == [(1, 15), (2, 10), (3, 1)]
    d = s.sql("-- d\nDESCRIBE /* x */ MATERIALIZED VIEW totals").to_arrow().to_pylist()
    assert [(r["col_name"], r["data_type"], r["comment"]) for r in d] == [
        ("key", "BIGINT", "the key"),
        ("total", "BIGINT", None),
    ]


def test_if_not_exists_keeps_the_view(s: Session) -> None:
    s.sql("CREATE MATERIALIZED VIEW m AS SELECT k FROM t")
    r = s.sql("-- c\nCREATE MATERIALIZED VIEW /* i */ IF NOT EXISTS m AS SELECT v FROM t")
    assert "exists" in r.message
    assert s.read("m").column_names == ["k"]
    with pytest.raises(NameClashError):
        s.sql("CREATE MATERIALIZED VIEW m AS SELECT v FROM t")


def test_create_or_replace_replaces(s: Session) -> None:
    s.sql("CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k")
    s.sql(
        "-- new definition\nCREATE OR REPLACE /* i */ MATERIALIZED VIEW m AS\n"
        "SELECT k, max(v) AS top FROM t GROUP BY k"
    )
    assert rows(s.read("m")) == [(1, 10), (2, 7), (3, 1)]
    assert s.read("m").column_names == ["k", "top"]
    s.sql("DELETE FROM t WHERE v = 10; REFRESH MATERIALIZED VIEW m")
    assert rows(s.read("m")) == [(1, 5), (2, 7), (3, 1)]


def test_create_or_replace_keeps_the_old_view_when_the_new_one_fails(s: Session) -> None:
    s.sql("CREATE MATERIALIZED VIEW m COMMENT 'old' AS SELECT k, sum(v) AS s FROM t GROUP BY k")
    before = s.catalog.view("m")
    history = s.sql("DESCRIBE HISTORY m").to_arrow().num_rows
    with pytest.raises(SqlAnalysisError, match="nope"):
        s.sql("-- broken\nCREATE OR REPLACE MATERIALIZED VIEW m AS SELECT nope FROM t")
    with pytest.raises(NonDeterministicError) as err:
        s.sql(
            "DELETE FROM t WHERE k = 99;\n-- c\nCREATE OR REPLACE MATERIALIZED VIEW m AS\n  SELECT k, rand() AS r FROM t"
        )
    assert (err.value.line, err.value.column) == (4, 13)
    assert s.catalog.view("m") == before
    assert s.sql("DESCRIBE HISTORY m").to_arrow().num_rows == history
    s.sql("INSERT INTO t VALUES (5, 5); REFRESH MATERIALIZED VIEW m")
    assert rows(s.read("m")) == [(1, 15), (2, 7), (3, 1), (5, 5)]


def test_create_or_replace_refuses_a_view_others_read(s: Session) -> None:
    s.sql("CREATE MATERIALIZED VIEW m AS SELECT k, v FROM t")
    s.sql("CREATE MATERIALIZED VIEW n AS SELECT k FROM m")
    with pytest.raises(DependencyError):
        s.sql("CREATE OR REPLACE MATERIALIZED VIEW m AS SELECT k, v FROM t WHERE k > 1")
    assert rows(s.read("m")) == [(1, 5), (1, 10), (2, 7), (3, 1)]


@pytest.mark.parametrize(
    ("clause", "construct"),
    [
        ("CLUSTERED BY (k) INTO 4 BUCKETS", "CLUSTERED BY"),
        ("LOCATION '/tmp/x'", "LOCATION"),
    ],
)
def test_layout_options_are_refused_by_name(s: Session, clause: str, construct: str) -> None:
    with pytest.raises(UnsupportedSqlError, match=construct) as err:
        s.sql(
            f"DELETE FROM t WHERE k = 99;\n/* c */ CREATE MATERIALIZED VIEW x\n  -- i\n  {clause} AS SELECT k FROM t"
        )
    assert err.value.line == 4
    assert s.catalog.store.find("x") is None


def test_errors_in_the_query_point_into_the_script(s: Session) -> None:
    with pytest.raises(NonDeterministicError) as err:
        s.sql(
            "INSERT INTO t VALUES (9, 9);\n\n  /* c */ CREATE MATERIALIZED VIEW x\n"
            "  COMMENT 'c' SCHEDULE EVERY 1 HOUR\n  AS SELECT k, rand() AS r FROM t"
        )
    assert (err.value.line, err.value.column) == (5, 16)
    with pytest.raises(SqlSyntaxError) as syn:
        s.sql(
            "DELETE FROM t WHERE k = 99;\n-- c\nCREATE MATERIALIZED VIEW x SCHEDULE EVERY 1 FORTNIGHT AS SELECT 1"
        )
    assert syn.value.line == 3


# -- schedules ---------------------------------------------------------------------------


def test_schedule_is_stored_shown_and_altered(s: Session) -> None:
    s.sql(
        "-- c\nCREATE MATERIALIZED VIEW m /* i */ SCHEDULE REFRESH EVERY 30 MINUTES "
        "AS SELECT k FROM t"
    )

    def shown() -> str | None:
        d = s.sql("DESCRIBE EXTENDED MATERIALIZED VIEW m").to_arrow().to_pylist()
        return next((r["data_type"] for r in d if r["col_name"] == "Schedule"), None)

    assert s.catalog.view("m").options.schedule == Schedule(every=30, unit="MINUTE")
    assert shown() == "SCHEDULE EVERY 30 MINUTES"
    with pytest.raises(StatementError, match="has a schedule already"):
        s.sql("ALTER MATERIALIZED VIEW m ADD SCHEDULE EVERY 1 HOUR")
    s.sql("/* c */ ALTER MATERIALIZED VIEW m -- i\n ALTER SCHEDULE EVERY 1 HOUR")
    assert shown() == "SCHEDULE EVERY 1 HOUR"
    s.sql("/* c */ ALTER MATERIALIZED VIEW m /* i */ DROP SCHEDULE")
    assert shown() is None
    s.sql("-- c\nALTER MATERIALIZED VIEW m ADD /* i */ TRIGGER ON UPDATE")
    assert shown() == "TRIGGER ON UPDATE"
    again = Session(warehouse=s.warehouse)  # stored in the catalog, seen by a new process
    assert again.catalog.view("m").options.schedule == Schedule(on_update=True)


# -- describing statements ---------------------------------------------------------------


def test_describe_extended(s: Session) -> None:
    s.sql(
        "CREATE MATERIALIZED VIEW m COMMENT 'per key' TBLPROPERTIES ('owner' = 'ana') "
        "AS SELECT k, count(*) AS n FROM t GROUP BY k"
    )
    d = s.sql("/* c */ DESCRIBE EXTENDED /* i */ MATERIALIZED VIEW m").to_arrow().to_pylist()
    info = {r["col_name"]: r["data_type"] for r in d}
    assert info["Type"] == "MATERIALIZED_VIEW"
    assert info["Comment"] == "per key"
    assert info["Inputs"] == "t"
    assert info["Table Properties"] == "[owner=ana]"
    assert info["Status"] == "fresh"
    assert info["View Text"] == "SELECT k, count(*) AS n FROM t GROUP BY k"
    assert [r["col_name"] for r in d[:2]] == ["k", "n"]


def test_show_create_table_round_trips(s: Session, tmp_path: Path) -> None:
    s.sql(
        "CREATE MATERIALIZED VIEW m (key COMMENT 'it\\'s the key', total) "
        "COMMENT 'per key' TBLPROPERTIES ('owner' = 'ana') TRIGGER ON UPDATE "
        "AS SELECT k, sum(v) AS s FROM t GROUP BY k"
    )
    text = (
        s.sql("/* c */ SHOW CREATE /* i */ TABLE m").to_arrow().column("createtab_stmt")[0].as_py()
    )
    table_ddl = s.sql("SHOW CREATE TABLE t").to_arrow().column("createtab_stmt")[0].as_py()
    other = Session(warehouse=tmp_path / "other")
    other.sql(table_ddl)
    other.sql("INSERT INTO t VALUES (1, 10), (1, 5), (2, 7), (3, 1)")
    other.sql(text)
    assert other.catalog.view("m").options == s.catalog.view("m").options
    assert other.read("m").equals(s.read("m"))


def test_describe_history_lists_the_view_table_commits(s: Session) -> None:
    s.sql("CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k")
    s.sql("INSERT INTO t VALUES (4, 4); REFRESH MATERIALIZED VIEW m")
    h = s.sql("-- c\nDESCRIBE /* i */ HISTORY m").to_arrow().to_pylist()
    assert [r["version"] for r in h] == [2, 1, 0]
    meta = [json.loads(r["userMetadata"]) for r in h]
    assert [m["ivm.operation"] for m in meta] == ["refresh", "refresh", "create"]
    assert json.loads(meta[0]["ivm.inputs"]) == {"t": 2}
    table = s.sql("DESCRIBE HISTORY t").to_arrow().column("version").to_pylist()
    assert table == list(range(s.catalog.read("t").num_rows and table[0], -1, -1))


def test_refresh_full_and_explain_with_comments(s: Session) -> None:
    s.sql("CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k")
    s.sql("INSERT INTO t VALUES (1, 1)")
    r = s.sql("-- c\nREFRESH /* i */ MATERIALIZED VIEW m -- i\n FULL")
    assert r.reports and rows(s.read("m")) == [(1, 16), (2, 7), (3, 1)]
    assert "refresh group m" in s.sql("/* c */ EXPLAIN MATERIALIZED /* i */ VIEW m").message
    assert s.sql("-- c\nDROP MATERIALIZED /* i */ VIEW m").message == "dropped materialized view m"


def test_tblproperties_are_set_on_the_view_table(s: Session) -> None:
    from catalog import delta

    s.sql(
        "-- c\nCREATE MATERIALIZED VIEW m TBLPROPERTIES (/* i */ 'owner' = 'ana', 'tier' = 2) "
        "AS SELECT k FROM t"
    )
    conf = delta.open_table(s.table_path("m")).metadata().configuration
    assert (conf["owner"], conf["tier"]) == ("ana", "2")
    assert conf["delta.enableChangeDataFeed"] == "true"
    s.sql("INSERT INTO t VALUES (7, 7); REFRESH MATERIALIZED VIEW m")
    assert (7,) in rows(s.read("m"))
    with pytest.raises(UnsupportedSqlError, match=r"delta\.enableDeletionVectors"):
        s.sql(
            "CREATE MATERIALIZED VIEW x TBLPROPERTIES ('delta.enableDeletionVectors' = 'true') "
            "AS SELECT k FROM t"
        )
    assert s.catalog.store.find("x") is None


def test_dialect_docstring_example() -> None:
    import doctest

    from spark_exec import sql_dialect

    assert doctest.testmod(sql_dialect).failed == 0


def test_create_or_replace_restores_the_old_view_when_the_first_refresh_fails(
    s: Session,
) -> None:
    s.sql("CREATE MATERIALIZED VIEW m COMMENT 'old' AS SELECT k, sum(v) AS s FROM t GROUP BY k")
    before = rows(s.read("m"))

    def fail_once(step: str) -> None:
        if step == "stepped":
            s.refresh_hook = None
            raise RuntimeError("injected failure in the new view's first refresh")

    s.refresh_hook = fail_once
    with pytest.raises(RuntimeError, match="injected"):
        s.sql("CREATE OR REPLACE MATERIALIZED VIEW m AS SELECT k, max(v) AS top FROM t GROUP BY k")
    entry = s.catalog.view("m")
    assert entry.options.comment == "old"
    assert s.read("m").column_names == ["k", "s"]
    assert rows(s.read("m")) == before
    s.sql("INSERT INTO t VALUES (2, 1); REFRESH MATERIALIZED VIEW m")
    assert rows(s.read("m")) == [(1, 15), (2, 8), (3, 1)]


def test_comments_between_and_after_statements(s: Session) -> None:
    """Old main took a comment after the last ``;`` for a statement and failed to parse it."""
    script = (
        "/* a script */\nINSERT INTO t VALUES (8, 8); -- one row\n"
        "-- nothing here;\n;\nDELETE FROM t WHERE k = 8; /* trailing */\n-- the end"
    )
    models = [S.parse(st) for st in S.split_statements(script)]
    assert [type(m) for m in models] == [S.Dml, S.Dml]
    assert [type(m.tree).__name__ for m in models if isinstance(m, S.Dml)] == ["Insert", "Delete"]
    assert len(s.run_script(script)) == 2
    (st,) = S.split_statements("-- c;\n\n   /* x */ SHOW MATERIALIZED VIEWS")
    assert (st.line, st.column) == (3, 12)  # its first token
