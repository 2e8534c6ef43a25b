"""What a view's DDL says beyond its query: comments, table properties, column names, schedule,
partition or clustering columns.

Stored with the view's catalog entry (``ViewEntry.options``) and shown by ``DESCRIBE
[EXTENDED] MATERIALIZED VIEW`` and ``SHOW CREATE TABLE``.  Schedules are executed by the
always-on refresher, ``ivm serve`` (:mod:`spark_exec.serve`); without it views refresh when
``REFRESH`` (or ``ivm refresh``) runs.

>>> Schedule(every=2, unit="HOUR").sql()
'SCHEDULE EVERY 2 HOURS'
>>> ViewOptions.from_json(ViewOptions(comment="c", schedule=Schedule(on_update=True)).to_json())
ViewOptions(comment='c', columns=(), properties=(), schedule=Schedule(every=None, unit=None, on_update=True), query=None, partitioned_by=(), clustered_by=())
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalog.errors import CatalogError

SCHEDULE_UNITS = {"MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 7 * 86400}


@dataclass(frozen=True)
class Schedule:
    """``SCHEDULE EVERY n unit`` (``every``, ``unit``) or ``TRIGGER ON UPDATE``."""

    every: int | None = None
    unit: str | None = None
    on_update: bool = False

    def __post_init__(self) -> None:
        if self.on_update == (self.every is not None):
            raise CatalogError("a schedule is either EVERY n units or TRIGGER ON UPDATE")
        if self.every is not None and (self.every < 1 or self.unit not in SCHEDULE_UNITS):
            raise CatalogError(
                f"SCHEDULE EVERY {self.every} {self.unit}: give a positive whole number of "
                "MINUTES, HOURS, DAYS or WEEKS"
            )

    @property
    def seconds(self) -> int | None:
        """The refresh interval in seconds (``None`` for TRIGGER ON UPDATE)."""
        return None if self.every is None else self.every * SCHEDULE_UNITS[str(self.unit)]

    def sql(self) -> str:
        if self.on_update:
            return "TRIGGER ON UPDATE"
        return f"SCHEDULE EVERY {self.every} {self.unit}{'S' if self.every != 1 else ''}"


@dataclass(frozen=True)
class ViewOptions:
    """The DDL options of a view.

    ``columns``: the view's column list, ``(name, comment or None)`` per column (empty: the
    query's names); ``properties``: ``TBLPROPERTIES`` pairs; ``query``: the query as the
    user wrote it when the stored definition differs (a column list renames its outputs);
    ``partitioned_by``: ``PARTITIONED BY`` columns of the view's Delta table
    (catalog.view_partitions); ``clustered_by``: ``CLUSTER BY`` columns of it
    (catalog.view_clustering).
    """

    comment: str | None = None
    columns: tuple[tuple[str, str | None], ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    schedule: Schedule | None = None
    query: str | None = None
    partitioned_by: tuple[str, ...] = ()
    clustered_by: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.comment is not None:
            out["comment"] = self.comment
        if self.columns:
            out["columns"] = [list(c) for c in self.columns]
        if self.properties:
            out["properties"] = [list(p) for p in self.properties]
        if self.schedule is not None:
            s = self.schedule
            out["schedule"] = {"every": s.every, "unit": s.unit, "on_update": s.on_update}
        if self.query is not None:
            out["query"] = self.query
        if self.partitioned_by:
            out["partitioned_by"] = list(self.partitioned_by)
        if self.clustered_by:
            out["clustered_by"] = list(self.clustered_by)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> ViewOptions:
        if not d:
            return cls()
        s = d.get("schedule")
        return cls(
            comment=d.get("comment"),
            columns=tuple((str(n), c) for n, c in d.get("columns", [])),
            properties=tuple((str(k), str(v)) for k, v in d.get("properties", [])),
            schedule=Schedule(s["every"], s["unit"], bool(s["on_update"])) if s else None,
            query=d.get("query"),
            partitioned_by=tuple(str(c) for c in d.get("partitioned_by", [])),
            clustered_by=tuple(str(c) for c in d.get("clustered_by", [])),
        )
