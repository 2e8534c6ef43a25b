"""What the view-layout tests (clustering, partitioning) share: a view's SHOW CREATE text and
DESCRIBE EXTENDED details, and the check that a refused CREATE leaves nothing behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_exec.session import Session


def assert_create_refused(
    tmp_path: Path, table: str, create: str, error: type[Exception], message: str
) -> None:
    """In a new warehouse holding ``table``, ``create`` (of a view ``m``) raises ``error``
    matching ``message``; the catalog does not know ``m`` and no view table was written."""
    s = Session(warehouse=tmp_path / "wh")
    s.sql(table)
    with pytest.raises(error, match=message):
        s.sql(create)
    assert s.catalog.store.find("m") is None
    assert not any((tmp_path / "wh").rglob("views/**/_delta_log"))


def show_create(s: Session, name: str) -> str:
    """``SHOW CREATE TABLE name``'s text."""
    return s.sql(f"SHOW CREATE TABLE {name}").to_arrow().column(0)[0].as_py()


def describe_extended(s: Session, name: str) -> dict[str, Any]:
    """``DESCRIBE EXTENDED MATERIALIZED VIEW name`` as ``{col_name: data_type}``."""
    rows = s.sql(f"DESCRIBE EXTENDED MATERIALIZED VIEW {name}").collect()
    return {r["col_name"]: r["data_type"] for r in rows}
