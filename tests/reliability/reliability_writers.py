"""Writers of Delta tables for the reliability tests: every DML kind, OPTIMIZE and VACUUM.

A :class:`Writer` is one connector's way of changing a table at a path.  The tests draw a
writer per statement, so a view must stay exact whichever connector wrote each commit:

* :class:`DeltaRsWriter` — deltalake (delta-rs) called directly, as another application
  would (its UPDATE writes an incomplete change data feed);
* :class:`CatalogWriter` — the project's own write path (catalog.delta: UPDATE as MERGE).

A delta-spark writer plugs in by implementing the same methods over a SparkSession with the
Delta connector and appending itself to :func:`writers`.
"""

from __future__ import annotations

import shutil
from typing import Protocol

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from catalog import delta


class Writer(Protocol):
    name: str

    def insert(self, path: str, rows: pa.Table) -> None: ...
    def update(self, path: str, assignments: dict[str, str], where: str) -> None: ...
    def delete(self, path: str, where: str | None) -> None: ...
    def upsert(self, path: str, rows: pa.Table, key: str, column: str) -> None: ...
    def overwrite(self, path: str, rows: pa.Table) -> None: ...
    def optimize(self, path: str) -> None: ...
    def vacuum(self, path: str) -> None: ...
    def recreate(self, path: str, rows: pa.Table, *, feed: bool) -> None: ...


class DeltaRsWriter:
    """deltalake's Python API, used the way any other application would use it."""

    name = "delta-rs"

    def insert(self, path: str, rows: pa.Table) -> None:
        write_deltalake(path, rows, mode="append")

    def update(self, path: str, assignments: dict[str, str], where: str) -> None:
        DeltaTable(path).update(updates=assignments, predicate=where)

    def delete(self, path: str, where: str | None) -> None:
        DeltaTable(path).delete(where)

    def upsert(self, path: str, rows: pa.Table, key: str, column: str) -> None:
        (
            DeltaTable(path)
            .merge(rows, f"t.{key} = s.{key}", source_alias="s", target_alias="t")
            .when_matched_update({column: f"s.{column}"})
            .when_not_matched_insert_all()
            .execute()
        )

    def overwrite(self, path: str, rows: pa.Table) -> None:
        write_deltalake(path, rows, mode="overwrite")

    def optimize(self, path: str) -> None:
        DeltaTable(path).optimize.compact()

    def vacuum(self, path: str) -> None:
        DeltaTable(path).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)

    def recreate(self, path: str, rows: pa.Table, *, feed: bool) -> None:
        """Drop the table (its directory) and create a new one at the same location."""
        shutil.rmtree(path)
        conf = {"delta.enableChangeDataFeed": "true"} if feed else None
        DeltaTable.create(path, rows.schema, configuration=conf)
        if rows.num_rows:
            write_deltalake(path, rows, mode="append")


class CatalogWriter(DeltaRsWriter):
    """The project's own write path (catalog.delta), as ``Session.sql`` DML uses it."""

    name = "catalog"

    def insert(self, path: str, rows: pa.Table) -> None:
        delta.insert(path, rows)

    def update(self, path: str, assignments: dict[str, str], where: str) -> None:
        delta.update(path, assignments, where)

    def delete(self, path: str, where: str | None) -> None:
        delta.delete(path, where)

    def upsert(self, path: str, rows: pa.Table, key: str, column: str) -> None:
        delta.merge(
            path,
            rows,
            f"t.{key} = s.{key}",
            [
                delta.MergeClause("matched", "update", assignments={column: f"s.{column}"}),
                delta.MergeClause("not_matched", "insert_all"),
            ],
        )

    def overwrite(self, path: str, rows: pa.Table) -> None:
        delta.overwrite(path, rows)


def writers() -> list[Writer]:
    """Every writer available in this environment."""
    return [DeltaRsWriter(), CatalogWriter()]
