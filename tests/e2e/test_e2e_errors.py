"""User errors: typed, with a clear message naming the object (and line / column for SQL and
Datalog), and nothing written when they are refused."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from e2e_helpers import session_fixture
from fixture_cases import FIXTURES, read_cases

import ivm
from catalog import (
    DroppedInputError,
    InvalidPathError,
    SchemaChangeError,
    UnknownTableError,
    UnknownViewError,
    delta,
)
from catalog import errors as catalog_errors
from datalog.errors import DatalogTypeError
from spark_exec import Session
from sql_frontend import errors as sql_errors
from sql_frontend.errors import UnsupportedSqlError


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


s = session_fixture(
    "CREATE TABLE edges (src BIGINT, dst BIGINT); INSERT INTO edges VALUES (1, 2)",
    "CREATE MATERIALIZED VIEW deg AS SELECT src, count(*) AS n FROM edges GROUP BY src",
)


#: statements the Session refuses: ``(when, SQL, error class, message pattern)``
REFUSALS = [
    (c.meta["when"], c.sql[0], c.meta["error"], c.meta["match"])
    for c in read_cases(FIXTURES / "errors" / "refusals.sql")
]
_ERRORS = {**vars(catalog_errors), **vars(sql_errors), **vars(ivm)}


def refuse_all(s: Session, when: str) -> None:
    """Every refusal of ``when``: its statement raises its error, naming what it must."""
    cases = [(sql, error, match) for w, sql, error, match in REFUSALS if w == when]
    assert cases
    for sql, error, match in cases:
        with pytest.raises(_ERRORS[error], match=match or None):
            s.sql(sql)


def test_refused_at_create_with_nothing_written(s: Session) -> None:
    before = files(s.warehouse)
    refuse_all(s, "create")
    with pytest.raises(UnsupportedSqlError) as err:
        s.sql("CREATE MATERIALIZED VIEW v AS\nSELECT src, rand() AS r FROM edges")
    assert err.value.line == 2 and err.value.column is not None
    with pytest.raises(DatalogTypeError) as dl:
        s.datalog(
            ".decl edges(a: symbol, b: number)\n.input edges\n"
            ".decl out(a: symbol)\n.output out\nout(a) :- edges(a, _)."
        )
    assert dl.value.line == 1 and "edges" in str(dl.value)
    with pytest.raises(UnknownTableError, match="missing"):
        s.datalog(
            ".decl missing(a: number)\n.input missing\n.decl o(a: number)\n.output o\n"
            "o(a) :- missing(a)."
        )
    assert files(s.warehouse) == before
    assert [v["name"] for v in s.show_views().to_pylist()] == ["deg"]


def test_paths_stay_inside_the_warehouse(s: Session, tmp_path: Path) -> None:
    inside = s.table_path("edges")
    with pytest.raises(InvalidPathError, match="inside the warehouse"):
        s.sql(f"CREATE TABLE ext USING DELTA LOCATION '{inside}'")
    with pytest.raises(
        InvalidPathError, match=r"gs://\) is not supported; use a local path or s3://"
    ):
        s.sql("CREATE TABLE ext USING DELTA LOCATION 'gs://bucket/t'")
    with pytest.raises(ivm.IvmError, match="no Delta table"):
        s.sql(f"CREATE TABLE ext USING DELTA LOCATION '{tmp_path / 'empty'}'")
    assert not (tmp_path / "empty").exists()


def test_unknown_names_and_dependencies(s: Session) -> None:
    with pytest.raises(UnknownViewError, match="nope"):
        s.refresh("nope")
    refuse_all(s, "names")


def test_dropped_and_changed_inputs(tmp_path: Path) -> None:
    ext = tmp_path / "ext"
    write_deltalake(
        ext,
        pa.table({"a": pa.array([1, 2], pa.int64())}),
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    s = Session(warehouse=tmp_path / "wh")
    s.sql(f"CREATE TABLE ext USING DELTA LOCATION '{ext}'")
    s.sql("CREATE MATERIALIZED VIEW v AS SELECT a FROM ext WHERE a > 1")
    view = s.table_path("v")
    version = delta.current_version(view)

    # incompatible schema change: column a becomes a string
    write_deltalake(ext, pa.table({"a": ["x"]}), mode="overwrite", schema_mode="overwrite")
    with pytest.raises(SchemaChangeError, match=r"'ext'.*'a'"):
        s.refresh()
    assert delta.current_version(view) == version

    # dropped input: the Delta table is gone
    shutil.rmtree(ext)
    with pytest.raises(DroppedInputError, match=r"'ext'.*dropped"):
        s.refresh()
    assert delta.current_version(view) == version
    assert os.path.exists(view)
