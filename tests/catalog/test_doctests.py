"""The examples in the catalog's docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "catalog.errors",
    "catalog.names",
    "catalog.paths",
    "catalog.dtypes",
    "catalog.delta",
    "catalog.changes",
    "catalog.delta_log",
    "catalog.delta_commit",
    "catalog.locks",
    "catalog.view_table",
    "catalog.view_key",
    "catalog.change_feed",
    "catalog.view_partitions",
    "catalog.deletion_vectors",
    "catalog.storage",
    "catalog.leases",
    "catalog.manager",
    "catalog.view_options",
    "catalog.sql_types",
    "catalog.pipeline.meta",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
