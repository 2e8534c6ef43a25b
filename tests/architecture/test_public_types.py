"""The public API is typed without ``Any`` (issue 18, item 8).

What users call — the engine's exports (``ivm.__all__``), the facade ``spark_exec.Session``
with its result type ``SqlResult``, and the catalog's exports (``catalog.__all__``) — has every
parameter and return annotated, and no annotation that is or contains ``typing.Any`` once
aliases are expanded (``Event``, ``Rows``, ``SchemaSpec`` ... are resolved, not trusted by
name).  Names imported only for type checkers (``if TYPE_CHECKING:``) are resolved by running
those imports; a package that is not installed (pandas) stands as an opaque class.

One exception, by design: numpy's ``NDArray[T]`` is ``ndarray[tuple[Any, ...], dtype[T]]``:
its shape parameter is numpy's own ``Any`` (an array of any shape); the dtype is checked.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import catalog
import ivm
import spark_exec.result
import spark_exec.session

PACKAGES = ("ivm", "catalog", "spark_exec")


def public_api() -> Iterator[tuple[str, object]]:
    for name in ivm.__all__:
        yield f"ivm.{name}", getattr(ivm, name)
    yield "spark_exec.Session", spark_exec.session.Session
    yield "spark_exec.result.SqlResult", spark_exec.result.SqlResult
    for name in catalog.__all__:
        yield f"catalog.{name}", getattr(catalog, name)


@functools.cache
def type_checking_namespace(module: types.ModuleType) -> dict[str, object]:
    """The module's globals plus what its ``if TYPE_CHECKING:`` blocks import."""
    ns = dict(vars(module))
    tree = ast.parse(inspect.getsource(module))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for st in node.body:
                if not isinstance(st, ast.Import | ast.ImportFrom):
                    continue
                try:
                    exec(compile(ast.Module([st], []), module.__name__, "exec"), ns)
                except ImportError:  # an optional package: an opaque class, not Any
                    for alias in st.names:
                        name = alias.asname or alias.name.split(".")[0]
                        ns[name] = types.new_class(alias.name)
    return ns


def contains_any(t: object) -> bool:
    if t is typing.Any:
        return True
    args = typing.get_args(t)
    if typing.get_origin(t) is np.ndarray:
        args = args[1:]  # numpy's shape parameter (see the module docstring)
    for a in args:
        if isinstance(a, list | tuple):  # Callable's parameter list
            if any(contains_any(x) for x in a):
                return True
        elif contains_any(a):
            return True
    return False


def members(owner: object) -> Iterator[tuple[str, Callable[..., object]]]:
    """Public functions of ``owner`` (a class: its own and inherited methods and properties
    defined in our packages, ``__init__`` included)."""
    if inspect.isfunction(owner):
        yield "", owner
        return
    if not inspect.isclass(owner) or issubclass(owner, BaseException):
        return
    for cls in owner.__mro__:
        if cls.__module__.split(".")[0] not in PACKAGES:
            continue
        for name, v in vars(cls).items():
            if name.startswith("_") and name != "__init__":
                continue
            if isinstance(v, property) and v.fget is not None:
                yield name, v.fget
            elif isinstance(v, staticmethod | classmethod):
                yield name, v.__func__
            elif inspect.isfunction(v):
                yield name, v


def problems() -> list[str]:
    out = []
    for label, owner in public_api():
        for name, fn in members(owner):
            where = f"{label}.{name}".rstrip(".")
            module = sys.modules[fn.__module__]
            sig = inspect.signature(fn)
            unannotated = [
                p.name
                for p in sig.parameters.values()
                if p.annotation is inspect.Parameter.empty and p.name not in ("self", "cls")
            ]
            if unannotated:
                out.append(f"{where}: parameters without a type: {unannotated}")
            if sig.return_annotation is inspect.Signature.empty:
                out.append(f"{where}: no return type")
            hints = typing.get_type_hints(fn, globalns=type_checking_namespace(module))
            out += [f"{where}: {p} is {t}" for p, t in hints.items() if contains_any(t)]
    return out


def test_public_signatures_have_no_any() -> None:
    found = problems()
    assert not found, "public signatures with Any or without types:\n" + "\n".join(found)


def test_the_check_sees_any_behind_an_alias() -> None:
    Hidden = dict[str, typing.Any]  # an alias does not hide Any

    def f(x: Hidden) -> None:  # type: ignore[valid-type]
        return None

    hints = typing.get_type_hints(f, localns={"Hidden": Hidden})
    assert contains_any(hints["x"])
    assert contains_any(Callable[[int], typing.Any])
    assert not contains_any(np.ndarray[tuple[typing.Any, ...], np.dtype[np.int64]])
    assert contains_any(np.ndarray[tuple[int], np.dtype[typing.Any]])


@pytest.mark.parametrize("module", ["ivm.types", "spark_exec.events"])
def test_named_aliases_exist(module: str) -> None:
    import importlib

    m = importlib.import_module(module)
    names = {"ivm.types": ("Rows", "Diffs", "SchemaSpec", "Row"), "spark_exec.events": ("Event",)}
    for n in names[module]:
        assert not contains_any(getattr(m, n)), n


def test_types_docstring_example() -> None:
    import doctest

    import ivm.types

    assert doctest.testmod(ivm.types).failed == 0
