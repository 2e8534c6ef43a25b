"""The catalog facade and store: persistence, name rules, errors, no partial writes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from catalog import Catalog, delta
from catalog import errors as E

EDGES = pa.schema([("src", pa.int64()), ("dst", pa.int64())])
ROOT = Path(__file__).resolve().parents[2]


def files_under(p: Path) -> set[str]:
    return {str(x.relative_to(p)) for x in p.rglob("*")}


def test_create_and_reload_in_a_new_process(tmp_path: Path) -> None:
    cat = Catalog(tmp_path / "wh")
    cat.create_table("edges", EDGES)
    cat.create_table("sales.orders", pa.schema([pa.field("id", pa.int64(), False)]))
    cat.create_view("reach", "SELECT * FROM edges", "sql", ["edges"], EDGES)
    cat.create_view(
        "r2", "r2(x) :- reach(x, _).", "datalog", ["reach"], pa.schema([("x", pa.int64())])
    )
    code = (
        "import sys; from catalog import Catalog; c = Catalog(sys.argv[1]);"
        "print([t.name for t in c.tables()], [(v.name, v.language, [str(d) for d in "
        "v.dependencies]) for v in c.views()], c.table('sales.orders').schema.field('id')"
        ".nullable, c.view('r2').definition)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "wh")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == (
        "['edges', 'sales.orders'] [('r2', 'datalog', ['reach']), ('reach', 'sql', "
        "['edges'])] False r2(x) :- reach(x, _)."
    )
    assert [v.name for v in cat.dependency_order()] == ["reach", "r2"]
    assert [v.name for v in cat.dependency_order(["r2"])] == ["reach", "r2"]
    assert delta.change_feed_enabled(cat.table("edges").path)
    assert Path(cat.table("sales.orders").path) == (tmp_path / "wh/tables/sales/orders").resolve()


def test_name_clashes(tmp_path: Path) -> None:
    cat = Catalog(tmp_path)
    cat.create_table("t", EDGES)
    cat.create_view("v", "...", "sql", ["t"], EDGES)
    with pytest.raises(E.NameClashError, match="a table with that name exists"):
        cat.create_table("T", EDGES)
    with pytest.raises(E.NameClashError, match="materialized view"):
        cat.create_table("v", EDGES)
    with pytest.raises(E.NameClashError):
        cat.create_view("default.t", "...", "sql", ["t"], EDGES)
    assert cat.create_table("t", EDGES, if_not_exists=True).name == "t"


def test_unknown_names(tmp_path: Path) -> None:
    cat = Catalog(tmp_path)
    cat.create_table("t", EDGES)
    with pytest.raises(E.UnknownTableError, match="unknown table or view 'nope'; known: t") as e:
        cat.lookup("nope")
    assert isinstance(e.value, KeyError) and str(e.value).startswith("unknown")
    with pytest.raises(E.UnknownViewError, match="materialized view 't'"):
        cat.view("t")
    with pytest.raises(E.UnknownTableError):
        cat.create_view("v", "...", "sql", ["t", "missing"], EDGES)
    with pytest.raises(E.UnknownTableError):
        cat.drop_table("nope")
    cat.drop_table("nope", if_exists=True)
    assert not (tmp_path / "views" / "default" / "v").exists()


def test_invalid_identifiers_and_paths_write_nothing(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    cat = Catalog(wh)
    before = files_under(wh)
    for bad in ["../evil", "a/b", "x.y.z", "1t", "`../x`"]:
        with pytest.raises(E.InvalidIdentifierError):
            cat.create_table(bad, EDGES)
    with pytest.raises(E.UnsupportedTypeError):
        cat.create_table("un", pa.schema([("u", pa.dense_union([pa.field("a", pa.int64())]))]))
    not_in_delta = [
        pa.duration("s"),
        pa.month_day_nano_interval(),
        pa.time64("us"),
        pa.float16(),
        pa.timestamp("s", "UTC"),
        pa.decimal256(40, 2),
        pa.list_(pa.duration("s")),
        pa.struct([("t", pa.time32("s"))]),
    ]
    for t in not_in_delta:  # the engine carries them, Delta Lake cannot store them
        with pytest.raises(E.UnsupportedTypeError, match=r"'late'.*cast the column"):
            cat.create_table("odd", pa.schema([("k", pa.int64()), ("late", t)]))
        assert cat.store.find("odd") is None
    with pytest.raises(E.CatalogError, match="at least one column"):
        cat.create_table("empty", pa.schema([]))
    with pytest.raises(ValueError, match="__diff__"):
        cat.create_view("v", "...", "sql", [], pa.schema([("__diff__", pa.int64())]))
    assert files_under(wh) == before
    assert not (tmp_path / "evil").exists()


def test_external_tables(tmp_path: Path) -> None:
    ext = tmp_path / "ext"
    write_deltalake(str(ext), pa.table({"a": [1, 2]}))
    cat = Catalog(tmp_path / "wh")
    e = cat.register_table("ext", f"file://{ext}")
    assert not e.managed and e.path == ext.as_posix()
    assert cat.read("ext").column("a").to_pylist() == [1, 2]
    with pytest.raises(E.NotADeltaTableError):
        cat.register_table("nothing", tmp_path / "nothing")
    with pytest.raises(E.InvalidPathError, match="inside the warehouse"):
        cat.register_table(
            "inside", cat.table("ext").path.replace(str(ext), str(tmp_path / "wh" / "tables"))
        )
    with pytest.raises(E.InvalidPathError):
        cat.register_table("gs", "gs://bucket/x")  # s3:// is served by catalog.storage
    cat.drop_table("ext")
    assert (ext / "_delta_log").exists()  # an external table's data is never deleted


def test_drop_rules(tmp_path: Path) -> None:
    cat = Catalog(tmp_path)
    cat.create_table("t", EDGES)
    cat.create_view("v", "...", "sql", ["t"], EDGES)
    with pytest.raises(E.DependencyError, match=r"'t'.*v depend"):
        cat.drop_table("t")
    vpath = Path(cat.view("v").path)
    cat.drop_view("v")
    assert not vpath.exists()
    tpath = Path(cat.table("t").path)
    cat.drop_table("t")
    assert not tpath.exists() and cat.tables() == ()
    # re-creating after a drop works, also over a leftover directory of a crashed drop
    tpath.mkdir(parents=True)
    (tpath / "junk").write_text("x")
    cat.create_table("t", EDGES)
    assert delta.is_delta_table(tpath)


def test_dropped_input_and_schema_change(tmp_path: Path) -> None:
    ext = tmp_path / "ext"
    write_deltalake(str(ext), pa.table({"a": [1], "b": ["x"]}))
    cat = Catalog(tmp_path / "wh")
    cat.register_table("ext", ext)
    cat.create_view("v", "SELECT a FROM ext", "sql", ["ext"], pa.schema([("a", pa.int64())]))
    assert cat.pin_versions(["ext"]) == {"ext": 0}
    # a compatible evolution: an added column
    write_deltalake(
        str(ext), pa.table({"a": [2], "b": ["y"], "c": [1.0]}), mode="append", schema_mode="merge"
    )
    assert cat.pin_versions(["ext"]) == {"ext": 1}
    assert cat.read_changes("ext", 0, 1).column_names == ["a", "b", "__diff__"]
    # an incompatible one: a column's type changes
    write_deltalake(
        str(ext), pa.table({"a": ["s"], "b": ["z"]}), mode="overwrite", schema_mode="overwrite"
    )
    with pytest.raises(E.SchemaChangeError, match=r"'ext'.*'a' changed type"):
        cat.pin_versions(["ext"], view="v")
    shutil.rmtree(ext)
    with pytest.raises(E.DroppedInputError, match="'ext' \\(input of view 'v'\\) was dropped"):
        cat.pin_versions(["ext"], view="v")
