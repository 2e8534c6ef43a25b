"""A warehouse copied or moved elsewhere works on its own: the catalog stores paths relative
to the warehouse, old absolute-path catalogs are migrated on load, and the original's files
stay byte-for-byte unchanged.  A view's location can never point outside the warehouse."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from catalog.errors import InvalidPathError
from catalog.store import ViewEntry
from spark_exec import Session

AGG = "SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k"


def hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def agg_of(s: Session) -> Counter[tuple[int, int, int]]:
    groups: dict[int, list[int]] = {}
    for r in s.read("t").to_pylist():
        groups.setdefault(r["k"], []).append(r["v"])
    return Counter((k, len(vs), sum(vs)) for k, vs in groups.items())


def bag(s: Session, name: str) -> Counter[tuple[int, ...]]:
    return Counter(tuple(r.values()) for r in s.read(name).to_pylist())


@pytest.fixture
def original(tmp_path: Path) -> Path:
    wh = tmp_path / "original"
    s = Session(warehouse=wh)
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT)")
    s.sql("INSERT INTO t VALUES (1, 1), (1, 2), (2, 5)")
    s.sql(f"CREATE MATERIALIZED VIEW agg AS {AGG}")
    s.sql("INSERT INTO t VALUES (3, 3)")
    s.refresh()
    return wh


def change_and_check(wh: Path) -> None:
    s = Session(warehouse=wh)
    s.sql("INSERT INTO t VALUES (1, 10), (4, 4)")
    s.sql("DELETE FROM t WHERE k = 2")
    s.refresh()
    assert bag(s, "agg") == agg_of(s)


def inside(wh: Path) -> None:
    s = Session(warehouse=wh)
    assert Path(s.table_path("t")).is_relative_to(wh.resolve())
    assert Path(s.table_path("agg")).is_relative_to(wh.resolve())


def test_copied_warehouse_refreshes_on_its_own(original: Path, tmp_path: Path) -> None:
    before = hashes(original)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    change_and_check(copy)
    assert hashes(original) == before
    inside(copy)
    doc = json.loads((copy / "_ivm" / "catalog.json").read_text())
    assert doc["tables"]["t"]["path"] == "tables/default/t"
    assert doc["views"]["agg"]["path"] == "views/default/agg"


def test_moved_warehouse(original: Path, tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    original.rename(moved)
    change_and_check(moved)
    inside(moved)


def test_absolute_path_catalog_is_migrated(original: Path, tmp_path: Path) -> None:
    copy = tmp_path / "old-format"
    shutil.copytree(original, copy)
    cat = copy / "_ivm" / "catalog.json"
    doc = json.loads(cat.read_text())
    doc["format"] = 1  # as written before paths were relative: absolute, into the original
    for section in ("tables", "views"):
        for e in doc[section].values():
            e["path"] = (original.resolve() / e["path"]).as_posix()
    cat.write_text(json.dumps(doc))
    before = hashes(original)
    change_and_check(copy)
    assert hashes(original) == before
    inside(copy)
    Session(warehouse=copy).sql("CREATE TABLE other (x BIGINT)")  # rewrites the catalog
    doc = json.loads(cat.read_text())
    assert doc["format"] == 2 and doc["tables"]["t"]["path"] == "tables/default/t"


def test_view_path_outside_the_warehouse_is_refused(original: Path, tmp_path: Path) -> None:
    s = Session(warehouse=original)
    entry = s.catalog.view("agg")
    outside = ViewEntry(
        entry.ident.__class__(entry.ident.db, "agg2"),
        entry.definition,
        entry.language,
        entry.dependencies,
        (tmp_path / "elsewhere").as_posix(),
        entry.schema,
        "agg2",
    )
    with pytest.raises(InvalidPathError, match="inside the warehouse"):
        s.catalog.store.add(outside)
    cat = original / "_ivm" / "catalog.json"
    doc = json.loads(cat.read_text())
    doc["views"]["agg"]["path"] = "../elsewhere"
    cat.write_text(json.dumps(doc))
    with pytest.raises(InvalidPathError, match="agg must live inside the warehouse"):
        Session(warehouse=original).catalog.views()
