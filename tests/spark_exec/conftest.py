from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytest
from spark_fixture import spark

from catalog import view_table

__all__ = ["deletion_vectors", "spark"]


@pytest.fixture(params=[False, True], ids=["False", "True"])
def deletion_vectors(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Each test twice: a view's retractions as file rewrites, then every retraction through
    a deletion vector (``view_table.COW_MAX_BYTES = 0``)."""
    if request.param:
        monkeypatch.setattr(view_table, "COW_MAX_BYTES", 0)
    return bool(request.param)
