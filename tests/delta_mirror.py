"""A Delta mode for the oracle harnesses: every engine output also kept as a view table.

After each engine step, :meth:`DeltaMirror.publish_and_check` writes every output's change
with the refresh's own writer (``catalog.view_table.commit_view_changes``: one Delta commit
per epoch) and checks, with a plain ``deltalake`` reader and nothing from this project:

* the table holds exactly the output's rows (a multiset), with the view's column names and
  no internal column;
* time travel to the version before the commit gives the previous rows;
* the commit's change data feed equals the epoch's change; for an output given a key
  (``keys``, as catalog.view_key reads it off the view's SQL) the feed's change types are
  checked too: a changed row of a key is an ``update_preimage`` / ``update_postimage``
  pair, exactly as tests/feed_oracle.py derives them from the rows before and after.

``cow_max_bytes=0`` forces deletion vectors from the first retraction on (the path large
views take).  Import as ``from delta_mirror import DeltaMirror`` (like ``spark_fixture``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable
from feed_oracle import expected_feed

from catalog import view_table
from catalog.changes import DIFF
from catalog.dtypes import from_engine_columns

_SIGN = {"insert": 1, "update_postimage": 1, "delete": -1, "update_preimage": -1}


def plain_table(path: str, version: int | None = None) -> pa.Table:
    """The table as a user's ``deltalake`` reader sees it."""
    dt = DeltaTable(path, version=version)
    if "deletionVectors" in (dt.protocol().reader_features or []):
        return pa.table(dt.scan())  # to_pyarrow_table refuses deletion vectors (delta-rs 1.6)
    return dt.to_pyarrow_table()


class DeltaMirror:
    def __init__(
        self,
        root: Path,
        outputs: Mapping[str, tuple[Any, pa.Schema]],
        normalize: Callable[[Any], Any] = lambda v: v,
        cow_max_bytes: int | None = None,
        keys: Mapping[str, tuple[str, ...] | None] | None = None,
    ) -> None:
        self.outputs = dict(outputs)
        self.keys = dict(keys or {})
        self.norm = normalize
        self.cow_max_bytes = cow_max_bytes
        self.paths: dict[str, str] = {}
        self.previous: dict[str, Counter[tuple[Any, ...]]] = {}
        self.epoch = 0
        for i, (name, (_, schema)) in enumerate(self.outputs.items()):
            path = str(root / f"v{i}")
            view_table.create_view_table(path, schema, view=name)
            self.paths[name] = path
            self.previous[name] = Counter()

    def _bag(self, t: pa.Table) -> Counter[tuple[Any, ...]]:
        return Counter(tuple(self.norm(v) for v in r.values()) for r in t.to_pylist())

    def publish_and_check(self) -> list[str]:
        """Commit every output's last change; failure messages (empty when all hold)."""
        self.epoch += 1
        failures: list[str] = []
        saved = view_table.COW_MAX_BYTES
        if self.cow_max_bytes is not None:
            view_table.COW_MAX_BYTES = self.cow_max_bytes
        try:
            for name, (out, schema) in self.outputs.items():
                failures += self._one(name, out, schema)
        finally:
            view_table.COW_MAX_BYTES = saved
        return failures

    def _one(self, name: str, out: Any, schema: pa.Schema) -> list[str]:
        path = self.paths[name]
        b = out.last_changes
        change = from_engine_columns(dict(zip(schema.names, b.cols, strict=True)), schema)
        change = change.append_column(pa.field(DIFF, pa.int64(), False), pa.array(b.diff))
        key = self.keys.get(name)
        r = view_table.commit_view_changes(
            path,
            change,
            view=name,
            epoch=self.epoch,
            input_versions={"step": self.epoch},
            key=key,
        )
        now = plain_table(path)
        where = f"view {name}, epoch {self.epoch}"
        bad = []
        if now.column_names != schema.names:
            bad.append(f"{where}: columns {now.column_names}, expected {schema.names}")
        want: Counter[tuple[Any, ...]] = Counter()
        for row, n in out.counts().items():
            want[tuple(self.norm(v) for v in row)] += n
        got = self._bag(now)
        if got != want:
            bad.append(f"{where}: table {dict(got - want)} extra, {dict(want - got)} missing")
        diff: Counter[tuple[Any, ...]] = Counter()
        for row, n in out.changed_counts().items():
            diff[tuple(self.norm(v) for v in row)] += n
        diff = Counter({k: v for k, v in diff.items() if v})
        if r is None:
            if diff:
                bad.append(f"{where}: a change {dict(diff)} but no commit")
        else:
            before = self._bag(plain_table(path, r.version - 1))
            if before != self.previous[name]:
                bad.append(f"{where}: time travel to {r.version - 1} differs from the old rows")
            cdf = pa.table(
                DeltaTable(path).load_cdf(starting_version=r.version, ending_version=r.version)
            )
            feed: Counter[tuple[Any, ...]] = Counter()
            kinds: Counter[tuple[tuple[Any, ...], str]] = Counter()
            for row in cdf.to_pylist():
                kind = row.pop("_change_type")
                row.pop("_commit_version")
                row.pop("_commit_timestamp")
                values = tuple(self.norm(v) for v in row.values())
                feed[values] += _SIGN[kind]
                kinds[(values, kind)] += 1
            feed = Counter({k: v for k, v in feed.items() if v})
            if feed != diff:
                bad.append(f"{where}: change feed {dict(feed)} != change {dict(diff)}")
            positions = None if key is None else [schema.names.index(c) for c in key]
            want_kinds = expected_feed(self.previous[name], got, positions)
            if kinds != want_kinds:
                bad.append(
                    f"{where} (key {key}): feed rows {dict(kinds - want_kinds)} extra, "
                    f"{dict(want_kinds - kinds)} missing"
                )
        self.previous[name] = got
        return bad
