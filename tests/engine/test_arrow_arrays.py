"""Output columns as Arrow arrays built from buffers (:mod:`ivm.arrow_arrays`): equal, value
for value and in type, to what ``pa.array`` makes of the same column; and a fresh process
that builds views over strings and integers and reads their changes imports neither pandas
(which ``pa.array`` imports on first use) nor ``numpy.ma`` (which numba's typing of a new
array type imports, see :mod:`ivm.numba_typeof`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ivm.arrow_arrays import bool_array, column_array, string_array

ROOT = Path(__file__).resolve().parents[2]

TEXT = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
    st.text(alphabet="abc", max_size=3),
)


def _objects(values: list) -> np.ndarray:
    c = np.empty(len(values), dtype=object)
    c[:] = values
    return c


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), TEXT), max_size=40))
def test_string_columns_equal_arrow_conversion(values: list) -> None:
    c = _objects(values)
    expected = pa.array(c, type=pa.string(), from_pandas=False)
    if expected.null_count == len(expected):  # no string: the inferred (null) type
        expected = pa.array(values)
    built = string_array(c)  # what a process without pandas gets
    assert built is not None
    for got in (built, column_array(c, "str")):
        got.validate(full=True)
        assert got.type == expected.type
        assert got.to_pylist() == expected.to_pylist() == values


@pytest.mark.parametrize(
    "values",
    [
        ["a", "", "bc"],
        ["", ""],
        ["x\x00y", "z"],  # a value holding U+0000: lengths value by value
        [None, "\x00", None, "ä€😀"],
        ["ä€😀", "plain", ""],
        [None, None],
    ],
)
def test_string_columns_at_the_edges(values: list) -> None:
    c = _objects(values)
    got = string_array(c)
    assert got is not None
    got.validate(full=True)
    assert got.to_pylist() == values
    assert got.type == (pa.null() if all(v is None for v in values) else pa.string())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), max_size=70))
def test_bool_columns_equal_arrow_conversion(values: list) -> None:
    c = np.array(values, dtype=np.bool_)
    got = bool_array(c)
    got.validate(full=True)
    assert got.equals(pa.array(c))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint16, np.float64, np.float32])
def test_numeric_columns_equal_arrow_conversion(dtype: type) -> None:
    c = np.array([0, 3, -1, 7, 100], dtype=np.float64).astype(dtype)
    got = column_array(c, "int64")
    assert got.equals(pa.array(c))
    strided = np.arange(10, dtype=dtype)[::2]  # not contiguous: converted by pa.array
    assert column_array(strided, "int64").equals(pa.array(strided))


def test_values_the_fast_path_does_not_take_go_through_arrow() -> None:
    # a non-string value in a str column: pa.array decides, and raises, as before
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        column_array(_objects(["a", 3]), "str")
    assert string_array(_objects(["a", 3])) is None
    # text that is not valid UTF-8 (a lone surrogate) is not built here either
    assert string_array(_objects(["\ud800"])) is None
    # a column of Python objects that is not declared str keeps Arrow's inference
    assert column_array(_objects([1, None, 3]), "int64").to_pylist() == [1, None, 3]


#: builds a string-keyed aggregate and a reachability view, reads their changes, and says
#: which of the heavy optional modules the process has imported
SCRIPT = r"""
import json, sys
import numpy as np
import ivm
from ivm.library.graphs import reachable

g = ivm.Dataflow("d")
orders = g.input("orders", [("cust", "str"), ("amount", "int64"), ("ok", "bool")])
view = orders.filter(lambda cust, amount, ok: ok).reduce(
    ["cust"], [("count",), ("sum", "amount")], names=["n", "total"]
)
out = g.output(view, "by_cust")
edges = g.input("edges", [("src", "int64"), ("dst", "int64")])
roots = g.input("roots", [("node", "int64")])
reach = g.output(reachable(edges, roots), "reach")
cust = np.empty(6, dtype=object)
cust[:] = ["ä", "b", "ä", "c", "b", "ä"]
orders.insert({"cust": cust, "amount": np.arange(6, dtype=np.int64),
               "ok": np.array([1, 1, 0, 1, 1, 1], dtype=bool)})
edges.insert({"src": np.arange(5, dtype=np.int64), "dst": np.arange(1, 6, dtype=np.int64)})
roots.insert({"node": np.array([0], dtype=np.int64)})
g.step()
changes = out.changes().to_pylist()
reached = sorted(reach.changes().column("node").to_pylist())
print(json.dumps({"changes": sorted(changes, key=lambda r: r["cust"]), "reached": reached,
                  "pandas": "pandas" in sys.modules, "numpy.ma": "numpy.ma" in sys.modules}))
"""


def test_reading_changes_imports_neither_pandas_nor_numpy_ma() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, check=True
    )
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["changes"] == [
        {"cust": "b", "n": 2, "total": 5, "__diff__": 1},
        {"cust": "c", "n": 1, "total": 3, "__diff__": 1},
        {"cust": "ä", "n": 2, "total": 5, "__diff__": 1},
    ]
    assert got["reached"] == [0, 1, 2, 3, 4, 5]
    assert got["pandas"] is False
    assert got["numpy.ma"] is False
