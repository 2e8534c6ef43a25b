"""The checkpoint of a refresh group, typed: its metadata and the keys of its tables.

A group's checkpoint (stored by :class:`catalog.checkpoint.CheckpointStore`, which knows
nothing of groups) holds

* a **base**: the engine's full ``g.state()`` at epoch ``base_epoch`` (one table per entry,
  including the engine's own ``__meta__`` entry), and
* or, after an epoch that ran sharded (issue 17), no base tables but a **shard reference**
  (:class:`ShardRef`): the base is the set of per-shard checkpoints that epoch's shards
  wrote, which this checkpoint names (the driver holds no merged copy), and
* a **log**: for each later epoch, the input changes that epoch received, by table, so that
  a new process rebuilds the state by loading the base and replaying the logged epochs.

:class:`GroupMeta` is the JSON metadata of that checkpoint, :class:`BaseKey` and
:class:`LogKey` name its tables.  This module is the only place that knows how they are
spelled on disk (``meta`` of the manifest; table keys ``s/<entry>`` and
``l/<epoch>/<table>``).  The spelling is the one checkpoints have had since format 1, so
checkpoints written before these types existed load unchanged.

>>> encode_key(LogKey(7, "sales.orders"))
'l/7/sales.orders'
>>> decode_key("s/3.trace")
BaseKey(entry='3.trace')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from catalog.errors import CheckpointError

FORMAT = 1
ENGINE_META = "__meta__"  # the entry of ``g.state()`` that carries the engine's signature
MAX_LOG_EPOCHS = 64
LOG_MIN_ROWS = 100_000
LOG_MIN_WORK = 20_000  # engine differences a cold start may replay however small the base


class CheckpointFormatError(CheckpointError):
    """A group checkpoint whose metadata or table keys this version cannot read."""

    def __init__(self, group: str, problem: str) -> None:
        self.group = group
        super().__init__(
            f"checkpoint of {group!r}: {problem}; rebuild it from the inputs with REFRESH "
            f"MATERIALIZED VIEW {group} FULL (Session.refresh({group!r}, full=True))"
        )


@dataclass(frozen=True)
class BaseKey:
    """An entry of the base state (a key of ``g.state()``)."""

    entry: str


@dataclass(frozen=True)
class LogKey:
    """The logged changes of one input table in one epoch after the base."""

    epoch: int
    table: str


StateKey = BaseKey | LogKey


def encode_key(key: StateKey) -> str:
    """The stored name of a checkpoint table."""
    if isinstance(key, BaseKey):
        return f"s/{key.entry}"
    return f"l/{int(key.epoch)}/{key.table}"


def decode_key(text: str, group: str = "?") -> StateKey:
    """The inverse of :func:`encode_key`; :class:`CheckpointFormatError` for other names."""
    kind, _, rest = text.partition("/")
    if kind == "s" and rest:
        return BaseKey(rest)
    epoch, _, table = rest.partition("/")
    if kind == "l" and epoch.isdigit() and table:
        return LogKey(int(epoch), table)
    raise CheckpointFormatError(group, f"unknown state entry {text!r}")


@dataclass(frozen=True)
class ShardRef:
    """The base state of a group checkpoint held as per-shard checkpoints: the directory
    ``<root>/checkpoints/<checkpoint>/shard-<p>.arrow`` for ``p < shards``, written by the
    shards of a sharded epoch (spark_exec.sharded) and named here before the group
    checkpoint commits.  ``rows``: the arranged rows they hold (the policy's state size)."""

    root: str
    checkpoint: str
    shards: int
    rows: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "checkpoint": self.checkpoint,
            "shards": int(self.shards),
            "rows": int(self.rows),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], group: str) -> ShardRef:
        try:
            return cls(
                str(raw["root"]), str(raw["checkpoint"]), int(raw["shards"]), int(raw["rows"])
            )
        except (TypeError, ValueError, KeyError) as exc:
            raise CheckpointFormatError(group, f"malformed shard reference ({exc})") from exc

    @property
    def directory(self) -> str:
        return f"{self.root}/checkpoints/{self.checkpoint}"


@dataclass(frozen=True)
class GroupMeta:
    """What a group checkpoint records beside the engine state.

    ``fingerprint``: the group's definition (views, schemas, inputs) the state was computed
    for; ``views``: the group's views; ``input_ids``: the Delta table id of every input (a
    table recreated at the same place has another); ``base_epoch`` / ``base_rows``: the
    epoch and size of the base state; ``log``: the logged epochs after the base, in order,
    ``log_rows`` their input changes and ``log_work`` the differences the engine processed
    for them (what a new process spends replaying them; 0 in checkpoints older than it);
    ``shards``: set when the base is held by shard checkpoints (then there is no log).
    """

    fingerprint: str
    views: tuple[str, ...]
    input_ids: Mapping[str, str] = field(default_factory=dict)
    base_epoch: int | None = None
    base_rows: int = 0
    log: tuple[int, ...] = ()
    log_rows: int = 0
    log_work: int = 0
    shards: ShardRef | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "fingerprint": self.fingerprint,
            "views": list(self.views),
            "input_ids": dict(self.input_ids),
            "base_epoch": self.base_epoch,
            "base_rows": int(self.base_rows),
            "log": [int(e) for e in self.log],
            "log_rows": int(self.log_rows),
            "log_work": int(self.log_work),
            **({"shards": self.shards.to_json()} if self.shards is not None else {}),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], group: str) -> GroupMeta:
        """Read the metadata as written by :meth:`to_json` (or by format-1 code before it)."""
        if raw.get("format") != FORMAT or not isinstance(raw.get("fingerprint"), str):
            raise CheckpointFormatError(group, f"metadata of unknown format {raw.get('format')!r}")
        try:
            base_epoch = raw.get("base_epoch")
            return cls(
                fingerprint=raw["fingerprint"],
                views=tuple(str(v) for v in raw.get("views", ())),
                input_ids={str(k): str(v) for k, v in raw.get("input_ids", {}).items()},
                base_epoch=None if base_epoch is None else int(base_epoch),
                base_rows=int(raw.get("base_rows", 0)),
                log=tuple(int(e) for e in raw.get("log", ())),
                log_rows=int(raw.get("log_rows", 0)),
                log_work=int(raw.get("log_work", 0)),
                shards=ShardRef.from_json(raw["shards"], group) if raw.get("shards") else None,
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise CheckpointFormatError(group, f"malformed metadata ({exc})") from exc

    def logs_more(self, rows: int, work: int) -> bool:
        """Whether an epoch with ``rows`` input changes that cost ``work`` differences is
        logged rather than written as a new base.

        A log entry costs a refresh what it adds, a base costs the whole state; the log is
        replayed by every new process, so it is bounded by a quarter of the base (or a
        small floor) both in input rows and in engine work (issue 15: a cold refresh).
        """
        if self.shards is not None:
            return False  # a base held by shards is replaced, never logged onto
        rows_ok = self.log_rows + rows <= max(LOG_MIN_ROWS, self.base_rows // 4)
        work_ok = self.log_work + work <= max(LOG_MIN_WORK, self.base_rows // 4)
        return len(self.log) < MAX_LOG_EPOCHS and rows_ok and work_ok


@dataclass(frozen=True)
class GroupState:
    """A group checkpoint's tables: the base state and the logged input changes by epoch."""

    base: Mapping[str, pa.Table] = field(default_factory=dict)
    log: Mapping[int, Mapping[str, pa.Table]] = field(default_factory=dict)

    @classmethod
    def from_tables(cls, tables: Mapping[str, pa.Table], group: str) -> GroupState:
        base: dict[str, pa.Table] = {}
        log: dict[int, dict[str, pa.Table]] = {}
        for text, table in tables.items():
            key = decode_key(text, group)
            if isinstance(key, BaseKey):
                base[key.entry] = table
            else:
                log.setdefault(key.epoch, {})[key.table] = table
        if ENGINE_META not in base:
            raise CheckpointFormatError(group, "no base state")
        return cls(base, log)

    def to_tables(self) -> dict[str, pa.Table]:
        out = {encode_key(BaseKey(k)): t for k, t in self.base.items()}
        for epoch, tables in self.log.items():
            out.update({encode_key(LogKey(epoch, k)): t for k, t in tables.items()})
        return out
