"""Identifiers and warehouse paths: validation, normalization, no escape from the warehouse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from catalog.errors import CatalogError, InvalidIdentifierError, InvalidPathError
from catalog.names import Identifier, parse_identifier
from catalog.paths import Warehouse, resolve_location


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("edges", Identifier(None, "edges")),
        ("Edges", Identifier(None, "edges")),
        ("_t1", Identifier(None, "_t1")),
        ("default.edges", Identifier(None, "edges")),
        ("Sales.Orders", Identifier("sales", "orders")),
        ("`sales`.`orders_2`", Identifier("sales", "orders_2")),
        ("  t  ", Identifier(None, "t")),
    ],
)
def test_valid_identifiers(text: str, expected: Identifier) -> None:
    assert parse_identifier(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1abc",
        "a-b",
        "a b",
        "a.b.c",
        "../x",
        "a/b",
        "`a/b`",
        "`unterminated",
        "a.",
        ".a",
        "x" * 129,
        "tab\x00le",
        "é",
    ],
)
def test_invalid_identifiers(text: str) -> None:
    with pytest.raises(InvalidIdentifierError) as info:
        parse_identifier(text)
    assert isinstance(info.value, ValueError) and isinstance(info.value, CatalogError)
    assert "invalid identifier" in str(info.value)


def test_identifier_rendering() -> None:
    assert str(parse_identifier("db.t")) == "db.t"
    assert parse_identifier("db.t").sql() == "`db`.`t`"
    assert parse_identifier("t").database == "default"
    with pytest.raises(InvalidIdentifierError):
        Identifier("default", "t")
    with pytest.raises(InvalidIdentifierError):
        Identifier(None, "Upper")


def test_warehouse_layout(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "wh")
    assert wh.table_path(parse_identifier("t")) == (tmp_path / "wh/tables/default/t").resolve()
    assert wh.view_path(parse_identifier("db.v")) == (tmp_path / "wh/views/db/v").resolve()
    assert wh.checkpoint_dir("v").is_relative_to(wh.internal_dir)


def test_check_inside_rejects_escapes(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "wh")
    (tmp_path / "wh").mkdir()
    for bad in [tmp_path / "elsewhere", tmp_path / "wh" / ".." / "x", Path("/etc/passwd")]:
        with pytest.raises(InvalidPathError, match="outside the warehouse"):
            wh.check_inside(bad)
    # a symlink inside the warehouse pointing out of it is refused too
    (tmp_path / "out").mkdir()
    os.symlink(tmp_path / "out", tmp_path / "wh" / "link")
    with pytest.raises(InvalidPathError):
        wh.check_inside(tmp_path / "wh" / "link" / "t")
    assert wh.check_inside(tmp_path / "wh" / "a" / "b") == (tmp_path / "wh/a/b").resolve()


def test_resolve_location(tmp_path: Path) -> None:
    assert resolve_location(f"file://{tmp_path}/t") == (tmp_path / "t").as_posix()
    assert resolve_location(str(tmp_path / "a" / ".." / "t")) == (tmp_path / "t").as_posix()
    assert resolve_location("s3a://bucket/t/") == "s3://bucket/t"
    for bad in ["", "gs://bucket/t", "s3:///t", "file://host/t", "x\x00y"]:
        with pytest.raises(InvalidPathError):
            resolve_location(bad)
