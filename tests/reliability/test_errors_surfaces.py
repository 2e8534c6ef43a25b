"""Bad input on every user surface gives a typed ``IvmError`` (never a raw Python exception),
says where (line and column for text) and leaves the warehouse as it was.

Surfaces: the Python API / SQL statements of a Session, Datalog programs, the CLI (exit code,
no traceback unless ``--debug``).
"""

from __future__ import annotations

import errno
import glob
import os
from pathlib import Path

import pytest
from e2e_helpers import session_fixture

from catalog.errors import CheckpointError, StorageError, ValueOutOfRangeError
from datalog.errors import DatalogLimitError, DatalogOverflowError
from ivm.errors import IvmError, SourceError
from spark_exec import Session
from spark_exec.cli import EXIT_USAGE, EXIT_USER_ERROR, main
from spark_exec.errors import StatementError
from sql_frontend.errors import SqlLimitError


def snapshot(root: Path) -> dict[str, int]:
    """Every file under ``root`` with its size (what "unchanged" means here), except the
    refresh status records and the event log (a failed refresh records its error there) and
    the view groups' lock files (catalog.locks: empty files a refresh creates once and never
    removes)."""
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in root.rglob("*")
        if p.is_file() and not {"status", "locks", "event_log"} & set(p.relative_to(root).parts)
    }


s = session_fixture(
    "CREATE TABLE t (k BIGINT, v BIGINT); INSERT INTO t VALUES (1, 2), (1, 3), (2, 5)",
    "CREATE MATERIALIZED VIEW a AS SELECT k, sum(v) AS s FROM t GROUP BY k",
)


def nested(n: int) -> str:
    return "(" * n + "k" + ")" * n


# -- SQL -------------------------------------------------------------------------------


BAD_SQL = [
    # 200 nested parentheses: RecursionError in sqlglot's parser on main
    "CREATE MATERIALIZED VIEW b AS SELECT " + nested(200) + " AS x FROM t",
    "SELECT " + nested(200) + " FROM t",
    "INSERT INTO t VALUES (" + nested(200) + ", 1)",
    # NOT NOT NOT ... and unary minus chains
    "CREATE MATERIALIZED VIEW b AS SELECT k FROM t WHERE " + "NOT " * 300 + "k = 1",
    "CREATE MATERIALIZED VIEW b AS SELECT " + "- " * 300 + "k AS x FROM t",
    # CASE nested 100 deep
    "CREATE MATERIALIZED VIEW b AS SELECT "
    + "CASE WHEN v = 1 THEN " * 100
    + "k"
    + " ELSE 0 END" * 100
    + " AS x FROM t",
    # a chain of 400 additions (RecursionError in the translator on main)
    "CREATE MATERIALIZED VIEW b AS SELECT " + " + ".join(["k"] * 400) + " AS x FROM t",
]


@pytest.mark.parametrize("text", BAD_SQL, ids=range(len(BAD_SQL)))
def test_deep_sql_is_a_limit_error_with_position(s: Session, text: str) -> None:
    before = snapshot(s.warehouse)
    with pytest.raises(SqlLimitError) as err:
        s.sql(text)
    assert err.value.line == 1 and err.value.column is not None and err.value.column > 1
    assert "levels deep" in str(err.value)
    assert snapshot(s.warehouse) == before


def test_or_of_5000_terms_is_refused_quickly_and_in_list_works(s: Session) -> None:
    """On main the optimizer's boolean simplification ran for hours on this."""
    ors = " OR ".join(f"v = {i}" for i in range(5000))
    with pytest.raises(SqlLimitError, match="IN"):
        s.sql(f"CREATE MATERIALIZED VIEW b AS SELECT k, v FROM t WHERE {ors}")
    ins = ", ".join(str(i) for i in range(5000))
    s.sql(f"CREATE MATERIALIZED VIEW b AS SELECT k, v FROM t WHERE v IN ({ins})")
    assert sorted(s.read("b").to_pylist(), key=lambda r: r["v"]) == [
        {"k": 1, "v": 2},
        {"k": 1, "v": 3},
        {"k": 2, "v": 5},
    ]


def test_nesting_at_the_limit_still_works(s: Session) -> None:
    from sql_frontend.limits import MAX_NESTING

    s.sql(f"CREATE MATERIALIZED VIEW b AS SELECT {nested(MAX_NESTING)} AS x FROM t")
    assert sorted(r["x"] for r in s.read("b").to_pylist()) == [1, 1, 2]


@pytest.mark.parametrize(
    "literal", ["99999999999999999999999", "9223372036854775808", "-9223372036854775809"]
)
def test_insert_literal_overflow(s: Session, literal: str) -> None:
    before = snapshot(s.warehouse)
    with pytest.raises(StatementError, match="CAST_OVERFLOW") as err:
        s.sql(f"INSERT INTO t VALUES ({literal}, 1)")
    assert "'k'" in str(err.value)
    assert snapshot(s.warehouse) == before


def test_sum_overflow_names_view_and_column(s: Session) -> None:
    # at CREATE: refused, nothing left behind
    s.sql("CREATE TABLE big (k BIGINT, v BIGINT)")
    s.sql("INSERT INTO big VALUES (1, 9223372036854775807), (1, 5)")
    with pytest.raises(ValueOutOfRangeError) as err:
        s.sql("CREATE MATERIALIZED VIEW total AS SELECT k, sum(v) AS s FROM big GROUP BY k")
    assert err.value.view == "total" and err.value.column == "s"
    assert "ARITHMETIC_OVERFLOW" in str(err.value)
    assert "total" not in [v.name for v in s.catalog.views()]
    # at refresh: rolled back, the view keeps its last state, later refreshes work
    s.sql("INSERT INTO t VALUES (1, 9223372036854775806)")
    before = snapshot(s.warehouse)
    with pytest.raises(ValueOutOfRangeError, match="view 'a', column 's'"):
        s.refresh()
    assert snapshot(s.warehouse) == before
    assert sorted(s.read("a").to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "s": 5},
        {"k": 2, "s": 5},
    ]
    s.sql("DELETE FROM t WHERE v = 9223372036854775806")
    s.refresh()
    assert sorted(s.read("a").to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "s": 5},
        {"k": 2, "s": 5},
    ]


def test_decimal_38_18_sum_overflow_is_raised(s: Session) -> None:
    """SUM(DECIMAL(38,18)) is DECIMAL(38,18) in Spark; 2 x 10^20 does not fit it.  On main
    the view was typed DECIMAL(38,8) and the sum silently succeeded."""
    import pyarrow as pa

    s.sql("CREATE TABLE d (k BIGINT, v DECIMAL(38,18))")
    s.sql("INSERT INTO d VALUES (1, 99999999999999999999.0), (2, 1.5)")
    s.sql("CREATE MATERIALIZED VIEW ds AS SELECT k, sum(v) AS s FROM d GROUP BY k")
    assert s.read("ds").schema.field("s").type == pa.decimal128(38, 18)
    s.sql("INSERT INTO d VALUES (1, 99999999999999999999.0)")
    with pytest.raises(ValueOutOfRangeError, match="NUMERIC_VALUE_OUT_OF_RANGE") as err:
        s.refresh("ds")
    assert err.value.view == "ds" and err.value.column == "s"


def test_deleted_checkpoint_file_says_how_to_repair_and_full_refresh_repairs(
    s: Session,
) -> None:
    s.sql("INSERT INTO t VALUES (3, 7)")
    s.close()  # a new process: the engine state comes from the checkpoint
    for f in glob.glob(
        str(s.warehouse / "_ivm" / "checkpoints" / "**" / "pack-*.arrow"), recursive=True
    ):
        os.remove(f)
    with pytest.raises(CheckpointError, match="REFRESH MATERIALIZED VIEW a FULL"):
        s.refresh()
    s.sql("REFRESH MATERIALIZED VIEW a FULL")
    assert sorted(s.read("a").to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "s": 5},
        {"k": 2, "s": 5},
        {"k": 3, "s": 7},
    ]
    s.sql("INSERT INTO t VALUES (3, 1)")
    s.close()
    s.refresh()
    assert {r["k"]: r["s"] for r in s.read("a").to_pylist()} == {1: 5, 2: 5, 3: 8}


def test_read_only_warehouse_is_a_storage_error(
    s: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: every rename in the catalog's atomic JSON write fails as on a
    read-only file system (on main: a raw OSError)."""
    import catalog.checkpoint as ck

    def read_only(src: object, dst: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(ck.os, "replace", read_only)
    with pytest.raises(StorageError, match="Read-only file system") as err:
        s.sql("CREATE TABLE u (x BIGINT)")
    assert isinstance(err.value, IvmError) and isinstance(err.value, OSError)
    monkeypatch.undo()
    assert "u" not in [t.name for t in s.catalog.tables()]
    assert not list(s.warehouse.rglob("*.tmp"))


# -- Datalog ---------------------------------------------------------------------------

HEAD = ".decl a(x: number)\n.decl b(x: number)\n.output b\na(1).\n"


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("y = " + "(" * 2000 + "x" + ")" * 2000, DatalogLimitError),
        ("y = " + "- " * 2000 + "x", DatalogLimitError),
        ("y = " + "bnot " * 2000 + "x", DatalogLimitError),
        ("y = " + " + ".join(["x"] * 2000), DatalogLimitError),
        ("y = " + "max(x, " * 2000 + "x" + ")" * 2000, DatalogLimitError),
        ("y = 99999999999999999999 + x", DatalogOverflowError),
    ],
    ids=["parens", "minus", "bnot", "chain", "functor", "constant"],
)
def test_datalog_limits(tmp_path: Path, body: str, error: type) -> None:
    s = Session(warehouse=tmp_path / "wh")
    with pytest.raises(error) as err:
        s.datalog(HEAD + f"b(y) :- a(x), {body}.\n")
    assert err.value.line == 5 and err.value.column is not None
    assert s.catalog.views() == ()


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("x * 4611686018427387904", None),
        ("x + 9223372036854775807", None),
        ("x - 9223372036854775807 - 4", None),
        ("x ^ 64", None),
        ('to_number("99999999999999999999")', None),
        ("x * 4611686018427387903", 9223372036854775806),
        ("x - 9223372036854775807 - 3", -9223372036854775808),
        ("x ^ 62", 4611686018427387904),
    ],
)
def test_datalog_integers_are_64_bit_and_checked(
    tmp_path: Path, expr: str, value: int | None
) -> None:
    """On main these wrapped around silently (e.g. 2 * 2^62 gave -2^63)."""
    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE n (x BIGINT NOT NULL)")
    s.sql("INSERT INTO n VALUES (2)")
    prog = ".decl n(x: number)\n.input n\n.decl b(x: number)\n.output b\n"
    prog += f"b(y) :- n(x), y = {expr}.\n"
    if value is None:
        with pytest.raises(DatalogOverflowError, match="64-bit") as err:
            s.datalog(prog)
        assert err.value.line == 5
        assert s.catalog.views() == ()
    else:
        s.datalog(prog)
        assert s.read("b").to_pylist() == [{"x": value}]


# -- CLI --------------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_bad_inputs_exit_codes_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wh = str(tmp_path / "wh")
    binary = tmp_path / "x.sql"
    binary.write_bytes(bytes(range(256)) * 4)
    latin = tmp_path / "latin.sql"
    latin.write_bytes("SELECT 'é'".encode("latin-1"))
    a_file = tmp_path / "file"
    a_file.write_text("not a warehouse")
    deep = tmp_path / "deep.sql"
    deep.write_text("CREATE TABLE t (k BIGINT);\nSELECT " + nested(500) + " FROM t;\n")
    deep_dl = tmp_path / "deep.dl"
    deep_dl.write_text(HEAD + "b(y) :- a(x), y = " + "(" * 2000 + "x" + ")" * 2000 + ".\n")
    good = tmp_path / "good.sql"
    good.write_text("CREATE TABLE g (k BIGINT);\n")
    cases = [
        ["--warehouse", wh, "sql", str(tmp_path)],  # a directory
        ["--warehouse", wh, "sql", str(binary)],
        ["--warehouse", wh, "sql", str(latin)],
        ["--warehouse", wh, "sql", str(tmp_path / "missing.sql")],
        ["--warehouse", str(a_file), "sql", str(good)],
        ["--warehouse", str(a_file), "refresh"],
        ["--warehouse", wh, "sql", str(deep)],
        ["--warehouse", wh, "datalog", str(deep_dl)],
        ["--warehouse", wh, "datalog", str(binary)],
        ["--warehouse", wh, "explain", "nope"],
        ["--warehouse", wh, "sql", "SELECT 1 FROM t WHERE " + " OR ".join(["k = 1"] * 400)],
        ["--warehouse", wh, "sql"],  # neither a file nor -e
        ["--warehouse", wh, "sql", str(good), "-e", "SELECT 1"],  # both
    ]
    for argv in cases:
        code, out, err = run_cli(capsys, *argv)
        assert code == EXIT_USER_ERROR, (argv, code, err)
        assert "Traceback" not in out + err, argv
        assert any(line.startswith("error: ") for line in err.splitlines()), (argv, err)
    code, _, err = run_cli(capsys, "--warehouse", wh, "sql", "CREATE TABLE t (k BIGINT)")
    assert "ivm sql -e" in err  # SQL text given where a file was expected: says what to type
    code, out, err = run_cli(
        capsys,
        "--warehouse",
        wh,
        "sql",
        "-e",
        "CREATE TABLE e (k BIGINT); INSERT INTO e VALUES (4)",
    )
    assert code == 0, err
    wh2 = str(tmp_path / "wh2")
    code, _, err = run_cli(capsys, "--warehouse", wh2, "--debug", "sql", str(deep))
    assert code == EXIT_USER_ERROR and "Traceback" in err and "SqlLimitError" in err
    assert a_file.read_text() == "not a warehouse"
    with pytest.raises(SystemExit) as usage:
        main(["--warehouse", wh, "no-such-command"])
    assert usage.value.code == EXIT_USAGE


# -- the umbrella: many bad inputs, each a typed error, nothing written ---------------------

BAD_STATEMENTS = [
    "CREATE MATERIALIZED VIEW x",
    "CREATE MATERIALIZED VIEW x AS",
    "CREATE MATERIALIZED VIEW x AS SELECT",
    "CREATE MATERIALIZED VIEW x AS SELECT k FROM t WHERE",
    "CREATE MATERIALIZED VIEW x AS SELECT 1/0 AS z FROM t",
    "CREATE MATERIALIZED VIEW x AS SELECT k * 9223372036854775807 AS z FROM t",
    "CREATE MATERIALIZED VIEW x AS SELECT CAST(k AS DECIMAL(50, 2)) AS z FROM t",
    "CREATE MATERIALIZED VIEW x AS SELECT nope FROM t",
    "CREATE MATERIALIZED VIEW x AS SELECT k FROM nope",
    "CREATE MATERIALIZED VIEW `` AS SELECT k FROM t",
    "CREATE MATERIALIZED VIEW x.y.z AS SELECT k FROM t",
    "CREATE MATERIALIZED VIEW a AS SELECT k FROM t",
    "CREATE OR REPLACE MATERIALIZED VIEW a AS SELECT nope FROM t",
    "CREATE OR REPLACE MATERIALIZED VIEW t AS SELECT k FROM t",
    "CREATE MATERIALIZED VIEW x PARTITIONED BY (k) AS SELECT k FROM t",
    "CREATE MATERIALIZED VIEW x CLUSTER BY (nope) AS SELECT k FROM t",
    "CREATE MATERIALIZED VIEW x (p, q) AS SELECT k FROM t",
    "CREATE MATERIALIZED VIEW x (p INT) AS SELECT k FROM t",
    "CREATE MATERIALIZED VIEW x SCHEDULE EVERY 0 HOURS AS SELECT k FROM t",
    "CREATE MATERIALIZED VIEW x SCHEDULE EVERY 2 YEARS AS SELECT k FROM t",
    "ALTER MATERIALIZED VIEW a DROP SCHEDULE",
    "ALTER MATERIALIZED VIEW a ALTER SCHEDULE EVERY 1 HOUR",
    "ALTER MATERIALIZED VIEW nope ADD SCHEDULE EVERY 1 HOUR",
    "DESCRIBE MATERIALIZED VIEW nope",
    "DESCRIBE MATERIALIZED VIEW t",
    "INSERT INTO t VALUES (1)",
    "INSERT INTO t VALUES ('x', 1)",
    "INSERT INTO t VALUES (1.5, 1)",
    "INSERT INTO t VALUES (1e400, 1)",
    "INSERT INTO nope VALUES (1)",
    "INSERT INTO a VALUES (1, 2)",
    "DELETE FROM t WHERE nope = 1",
    "UPDATE t SET nope = 1",
    "MERGE INTO t USING (VALUES (1, 2)) AS src(k, v) ON t.k = src.k "
    "WHEN MATCHED THEN UPDATE SET v = 99999999999999999999",
    "DROP MATERIALIZED VIEW nope",
    "DROP TABLE nope",
    "DROP TABLE t",
    "REFRESH MATERIALIZED VIEW nope",
    "EXPLAIN MATERIALIZED VIEW nope",
    "CREATE TABLE c1 (d DECIMAL(50,2))",
    "CREATE TABLE c2 (d VARIANT)",
    "CREATE TABLE c3 (k BIGINT, k BIGINT)",
    "CREATE TABLE c4 LOCATION '/nonexistent/x'",
    "CREATE TABLE `a-b` (k BIGINT)",
]


@pytest.mark.parametrize("text", BAD_STATEMENTS)
def test_bad_statements_are_typed_and_change_nothing(s: Session, text: str) -> None:
    before = snapshot(s.warehouse)
    with pytest.raises(IvmError):
        s.sql(text)
    after = snapshot(s.warehouse)
    assert {k: v for k, v in after.items() if "catalog" not in k} == {
        k: v for k, v in before.items() if "catalog" not in k
    }
    assert [v.name for v in s.catalog.views()] == ["a"]
    assert sorted(t.name for t in s.catalog.tables()) == ["t"]


ONE = ".decl one(x: number)\none(1).\n.decl b(x: number)\n.output b\n"
BAD_PROGRAMS = [
    ".decl",
    ".decl a(x: number)\n.output a\na(1",
    '.decl a(x: number)\n.output a\na("s").',
    ".decl a(x: number)\n.output a\na(x) :- a(x), !a(x).",
    ".decl a(x: number)\n.input nope\n.output a\na(1).",
    '.decl a(x: symbol)\n.output a\na(x) :- x = cat("a", 1).',
    "\x00\xff",
    ".decl a(x: number)\n.output a\na(0x1FFFFFFFFFFFFFFFFF).",
    ONE + 'b(y) :- one(x), y = to_number(to_float("1e30")) + x.',
    ONE + "b(y) :- one(x), y = 3 * 3074457345618258603 * x.",
    ONE + "b(y) :- one(x), y = (x + 1) ^ 63.",
    ONE + "b(y) :- one(x), y = -(-9223372036854775807 - x).",
]


@pytest.mark.parametrize("text", BAD_PROGRAMS, ids=range(len(BAD_PROGRAMS)))
def test_bad_datalog_is_typed_and_changes_nothing(s: Session, text: str) -> None:
    before = snapshot(s.warehouse)
    with pytest.raises(IvmError) as err:
        s.datalog(text)
    if isinstance(err.value, SourceError):  # errors in the text point into it
        assert err.value.line is not None, err.value
    assert {k: v for k, v in snapshot(s.warehouse).items() if "catalog" not in k} == {
        k: v for k, v in before.items() if "catalog" not in k
    }
    assert [v.name for v in s.catalog.views()] == ["a"]
