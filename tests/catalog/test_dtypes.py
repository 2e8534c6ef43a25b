"""Delta/Arrow types <-> engine dtypes, and values both ways."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from catalog.dtypes import (
    check_compatible,
    column_mappings,
    conform,
    engine_schema,
    from_engine_columns,
    schema_from_text,
    schema_to_text,
    to_engine_columns,
)
from catalog.errors import SchemaChangeError, UnsupportedTypeError, ValueOutOfRangeError

SCHEMA = pa.schema(
    [
        pa.field("i", pa.int64(), False),
        pa.field("i32", pa.int32(), False),
        pa.field("ni", pa.int64()),
        pa.field("f", pa.float64(), False),
        pa.field("nf", pa.float32()),
        pa.field("b", pa.bool_(), False),
        pa.field("s", pa.string()),
        pa.field("d", pa.decimal128(10, 2)),
        pa.field("day", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("l", pa.list_(pa.int64())),
        pa.field("u64", pa.uint64(), False),
    ]
)


def test_mapping_table() -> None:
    assert engine_schema(SCHEMA) == [
        ("i", "int64"),
        ("i32", "int64"),
        ("ni", "any"),
        ("f", "float64"),
        ("nf", "any"),
        ("b", "bool"),
        ("s", "str"),
        ("d", "any"),
        ("day", "any"),
        ("ts", "any"),
        ("l", "any"),
        ("u64", "any"),
    ]
    assert column_mappings(pa.schema([("s", pa.large_string())]))[0].arrow_type == pa.string()


def test_unsupported_types() -> None:
    union = pa.dense_union([pa.field("a", pa.int64())])
    with pytest.raises(UnsupportedTypeError, match="'u'"):
        column_mappings(pa.schema([("u", union)]))
    with pytest.raises(UnsupportedTypeError, match="'st'"):  # inside a struct too
        column_mappings(pa.schema([("st", pa.struct([("a", union)]))]))
    nested = pa.schema(
        [("st", pa.struct([("a", pa.int64())])), ("m", pa.map_(pa.string(), pa.int64()))]
    )
    assert [m.dtype for m in column_mappings(nested)] == ["any", "any"]


def test_values_round_trip() -> None:
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    t = pa.Table.from_pylist(
        [
            {
                "i": 1,
                "i32": 2,
                "ni": None,
                "f": 1.5,
                "nf": None,
                "b": True,
                "s": None,
                "d": Decimal("1.25"),
                "day": dt.date(2024, 1, 2),
                "ts": ts,
                "l": [1, 2],
                "u64": 2**63,
            },
            {
                "i": 3,
                "i32": 4,
                "ni": 5,
                "f": 2.5,
                "nf": 0.5,
                "b": False,
                "s": "x",
                "d": None,
                "day": None,
                "ts": None,
                "l": None,
                "u64": 0,
            },
        ],
        schema=SCHEMA,
    )
    cols = to_engine_columns(t, column_mappings(SCHEMA))
    assert cols["i"].dtype == np.int64 and cols["i32"].dtype == np.int64
    assert cols["f"].dtype == np.float64 and cols["b"].dtype == np.bool_
    assert cols["ni"].dtype == object and list(cols["ni"]) == [None, 5]
    assert cols["d"][0] == Decimal("1.25") and cols["day"][0] == dt.date(2024, 1, 2)
    assert cols["l"][0] == (1, 2)  # hashable
    assert cols["ts"][0] == ts
    back = from_engine_columns(cols, SCHEMA)
    assert back.equals(t)


def _random_values(t: pa.DataType, rng: np.random.Generator, n: int) -> list[object]:
    """``n`` random values of type ``t`` (about a fifth NULL)."""
    day = dt.date(2024, 1, 1)
    make = {
        "int64": lambda: int(rng.integers(-(2**62), 2**62)),
        "int32": lambda: int(rng.integers(-(2**31), 2**31)),
        "double": lambda: [float(rng.normal()), float("nan"), -0.0][int(rng.integers(0, 3))],
        "bool": lambda: bool(rng.integers(0, 2)),
        "string": lambda: ["", "a", "é", "north", "x" * 40][int(rng.integers(0, 5))],
        "binary": lambda: bytes(rng.integers(0, 256, int(rng.integers(0, 5))).tolist()),
        "decimal128(10, 2)": lambda: Decimal(int(rng.integers(-(10**9), 10**9))) / 100,
        "date32[day]": lambda: day + dt.timedelta(days=int(rng.integers(-1000, 1000))),
        "timestamp[us, tz=UTC]": lambda: (
            dt.datetime(2024, 1, 2, tzinfo=dt.UTC)
            + dt.timedelta(microseconds=int(rng.integers(0, 10**12)))
        ),
    }[str(t)]
    return [None if rng.random() < 0.2 else make() for _ in range(n)]


@pytest.mark.parametrize("seed", range(3))
def test_object_arrays_build_as_their_lists_do(seed: int) -> None:
    """Oracle: an engine object column (read by Arrow directly) builds the same Arrow column
    as the same values given as a Python list."""
    rng = np.random.default_rng(seed)
    types = [
        pa.int64(), pa.int32(), pa.float64(), pa.bool_(), pa.string(), pa.binary(),
        pa.decimal128(10, 2), pa.date32(), pa.timestamp("us", tz="UTC"),
    ]  # fmt: skip
    schema = pa.schema([pa.field(f"c{i}", t) for i, t in enumerate(types)])
    for n in (0, 1, 7, 300):
        lists = {f.name: _random_values(f.type, rng, n) for f in schema}
        objects = {}
        for name, vals in lists.items():
            arr = np.empty(n, dtype=object)
            arr[:] = vals
            objects[name] = arr
        got, want = from_engine_columns(objects, schema), from_engine_columns(lists, schema)
        assert got.schema == want.schema
        for name in schema.names:  # NaN != NaN: compared as Python values, NaN as a tag
            tag = [("nan",) if isinstance(v, float) and v != v else v for v in lists[name]]
            for col in (got, want):
                py = col.column(name).to_pylist()
                assert [("nan",) if isinstance(v, float) and v != v else v for v in py] == tag


def test_object_array_misfit_names_view_and_column() -> None:
    for t, bad in ((pa.int64(), 2**63), (pa.decimal128(3, 2), Decimal("12.345"))):
        arr = np.empty(3, dtype=object)
        arr[:] = [1, None, bad]
        with pytest.raises(ValueOutOfRangeError, match="view 'v', column 's'") as err:
            from_engine_columns({"s": arr}, pa.schema([("s", t)]), name="v")
        assert str(bad) in str(err.value)


def test_not_null_column_with_null_is_refused() -> None:
    schema = pa.schema([pa.field("i", pa.int64(), False)])
    t = pa.table({"i": pa.array([1, None], pa.int64())})
    with pytest.raises(SchemaChangeError, match="NULL"):
        to_engine_columns(t, column_mappings(schema))


def test_conform_and_compatibility() -> None:
    target = pa.schema([("a", pa.int64()), ("b", pa.string())])
    t = pa.table(
        {"b": pa.array(["x"], pa.string_view()), "a": pa.array([1], pa.int32()), "__diff__": [1]}
    )
    out = conform(t, target, name="t", extra=["__diff__"])
    assert out.schema.names == ["a", "b", "__diff__"] and out.schema.field("a").type == pa.int64()
    with pytest.raises(SchemaChangeError, match="missing column 'c'"):
        conform(t, pa.schema([("c", pa.int64())]), name="t")
    with pytest.raises(SchemaChangeError, match="cannot cast"):
        conform(pa.table({"a": ["x"]}), pa.schema([("a", pa.int64())]), name="t")
    check_compatible(target, target.append(pa.field("c", pa.int64())), name="t")
    with pytest.raises(SchemaChangeError, match="dropped"):
        check_compatible(target, pa.schema([("a", pa.int64())]), name="t")
    with pytest.raises(SchemaChangeError, match="changed type"):
        check_compatible(target, pa.schema([("a", pa.string()), ("b", pa.string())]), name="t")
    nn = pa.schema([pa.field("a", pa.int64(), False)])
    with pytest.raises(SchemaChangeError, match="nullable"):
        check_compatible(nn, pa.schema([("a", pa.int64())]), name="t")


def test_schema_text_round_trip() -> None:
    assert schema_from_text(schema_to_text(SCHEMA)).equals(SCHEMA)
