"""View languages behind one protocol (catalog.pipeline.languages)."""

from __future__ import annotations

import ast
from pathlib import Path

import pyarrow as pa
import pytest

from catalog.errors import CatalogError
from catalog.names import parse_identifier
from catalog.pipeline import DATALOG, LANGUAGES, SQL, ViewLanguage, language_of
from catalog.store import ViewEntry
from datalog.errors import DatalogTypeError

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """
.decl edges(x: number, y: number)  .input edges
.decl reach(x: number, y: number)  .output reach
reach(x, y) :- edges(x, y).
reach(x, z) :- reach(x, y), edges(y, z).
.decl hops(x: number, n: number)   .output hops
hops(x, n) :- reach(x, _), n = count : { reach(x, _) }.
"""
EDGES = pa.schema([("src", pa.int64()), ("dst", pa.int64())])


def _entry(language: str, definition: str) -> ViewEntry:
    return ViewEntry(parse_identifier("v"), definition, language, (), "/w/v", EDGES, "v")  # type: ignore[arg-type]


def test_every_language_object_has_the_protocol_and_its_stored_name() -> None:
    for name, lang in LANGUAGES.items():
        assert isinstance(lang, ViewLanguage)
        assert lang.name == name and language_of(_entry(name, "")) is lang
    assert set(LANGUAGES) == {SQL.name, DATALOG.name}


def test_sql_plan_gives_schema_dependencies_and_explain() -> None:
    front = SQL.plan("SELECT src, count(*) AS n FROM edges GROUP BY src", {"edges": EDGES})
    assert [name for name, _ in front.outputs[""]] == ["src", "n"]
    assert set(front.reads) == {"edges"}
    assert front.explain.startswith("== Relational plan ==") and "Aggregate" in front.explain


def test_datalog_plan_gives_one_output_per_view_and_the_inputs() -> None:
    front = DATALOG.plan(PROGRAM, {"edges": EDGES})
    assert dict(front.outputs) == {
        "reach": (("x", "int64"), ("y", "int64")),
        "hops": (("x", "int64"), ("n", "int64")),
    }
    assert dict(front.reads) == {"edges": (("x", "int64"), ("y", "int64"))}
    assert "stratum" in front.explain
    with pytest.raises(DatalogTypeError, match="column 'src' of the table is string"):
        DATALOG.plan(PROGRAM, {"edges": pa.schema([("src", pa.string()), ("dst", pa.int64())])})


def test_languages_differ_in_keys_programs_and_explain() -> None:
    sql = _entry("sql", "SELECT src, count(*) AS n FROM edges GROUP BY src")
    dl = _entry("datalog", PROGRAM)
    assert SQL.key(sql) == ("src",) and DATALOG.key(dl) is None
    assert SQL.program(sql) is None and DATALOG.program(dl) == PROGRAM
    assert SQL.explain_lines(sql) == (f"definition: {sql.definition}",)
    assert DATALOG.explain_lines(dl) == ()


def test_an_unknown_language_is_refused_by_name() -> None:
    entry = _entry("sql", "SELECT 1")
    object.__setattr__(entry, "language", "prolog")  # as if stored by a newer version
    with pytest.raises(CatalogError, match="'prolog', which this version does not know"):
        language_of(entry)


def test_nothing_branches_on_a_language_string() -> None:
    """No comparison of a view's ``language`` with a string literal outside the registry."""
    found = []
    for package in ("spark_exec", "catalog", "sql_frontend", "datalog"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Compare):
                    continue
                sides = [node.left, *node.comparators]
                reads_language = any(
                    isinstance(s, ast.Attribute) and s.attr == "language" for s in sides
                )
                literal = any(
                    (isinstance(s, ast.Constant) and s.value in ("sql", "datalog"))
                    or (
                        isinstance(s, ast.Tuple | ast.Set)
                        and any(isinstance(e, ast.Constant) and e.value == "sql" for e in s.elts)
                    )
                    for s in sides
                )
                if reads_language and literal:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
