"""The examples in the catalog's docstrings run: every module of the package, found by
walking it, so a module that gains examples is checked without being listed here."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import catalog

MODULES = sorted(m.name for m in pkgutil.walk_packages(catalog.__path__, "catalog."))


def test_the_walk_finds_the_modules_with_examples() -> None:
    assert {"catalog.paths", "catalog.delta_log", "catalog.pipeline.meta"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
