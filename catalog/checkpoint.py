"""State checkpoints: a dataflow's ``g.state()`` saved atomically under the warehouse.

Layout of one checkpoint group (one dataflow, named by an identifier), format 2::

    _ivm/checkpoints/<db>/<group>/
      CURRENT                           the manifest of the current checkpoint (JSON): epoch,
                                        input versions, where each state / pending table is
      pack-000000000007-3f2a9c1e.arrow  the tables a save wrote: Arrow IPC files back to back
                                        (catalog.pack), each found by its byte range
      .CURRENT.<uuid>.tmp               a manifest being written (removed on the next save)

A save writes *one* pack with its new tables (a refresh's logged input changes and its
pending view changes, or a whole base state) and names the tables it keeps unchanged
(``carry``) where they already are: in the pack of an earlier save.  A table's place in the
manifest is ``[file, offset, length]`` relative to the group directory (``length`` ``null``:
the whole file).  So a save creates two files (its pack and the manifest) and hard-links
nothing, whatever the size of the state it carries.

Format 1 (before 2026-11-26) kept a directory per epoch, ``epoch-<12 digits>-<random>/``
with ``manifest.json`` and one IPC file per table, and ``CURRENT`` named it
(``{"epoch": .., "dir": ..}``).  It is still read, and a format-2 save carries tables out of
it (its files are then referenced as whole files); garbage collection removes the directory
once no kept manifest references it.

Writers: a save (and :meth:`CheckpointStore.clear`) must run under the group's writer lock
(:meth:`CheckpointStore.lock`, catalog.locks): garbage collection removes packs and epoch
directories no kept manifest references, and leftovers of crashed saves, which is only safe
when no other writer of the group is live.  The manifests of the ``keep`` latest epochs
(``CURRENT``'s included) are kept, as the file names they reference (a manifest lists its
predecessors' in ``kept``), for readers that just read the previous pointer.

Atomicity: the pack is written under a fresh name that no manifest references yet; then the
pack, the group directory (its new entry) and the new manifest's temp file are fsynced
together (one barrier, catalog.durable), and only then is ``CURRENT`` replaced with
``os.replace`` and the group directory fsynced.  A crash at any point leaves ``CURRENT``
naming either the old complete checkpoint or the new complete one; a pack no manifest
references is garbage-collected by the next save.  On an object store the pack goes to its
final key and ``CURRENT`` is one conditional PUT (:meth:`CheckpointStore._swap_pointer`).
Table keys are never used as file names (the manifest maps them), so any string key is safe.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from catalog import file_stamp, storage
from catalog.durable import fsync_all, fsync_path
from catalog.errors import CheckpointError, StorageError
from catalog.locks import check_fence, group_lock
from catalog.object_path import is_object_path, remove_tree
from catalog.pack import PackReader, write_pack
from catalog.paths import Warehouse

FORMAT = 2
OLD_FORMAT = 1  # a directory per epoch (read, never written)
CURRENT = "CURRENT"
PACK = "pack-"
OLD_EPOCH = "epoch-"
Hook = Callable[[str], None]
Ref = tuple[str, int, int | None]  # a table's file (relative to the group), offset, length


@dataclass(frozen=True)
class Saved:
    """What every saved epoch records: its group, its epoch, and the Delta version of every
    input the state reflects (the base of :class:`Checkpoint` and :class:`Manifest`)."""

    group: str
    epoch: int
    input_versions: Mapping[str, int]

    def __post_init__(self) -> None:
        if int(self.epoch) < 0:
            raise CheckpointError(f"checkpoint epoch must be >= 0, got {self.epoch}")
        for k, v in self.input_versions.items():
            if int(v) < 0:
                raise CheckpointError(f"input {k!r}: version must be >= 0, got {v}")


@dataclass(frozen=True)
class Checkpoint(Saved):
    """One saved epoch of a dataflow.

    ``state``: the engine's ``g.state()``; ``pending``: per view, the change batch of this
    epoch (row columns + ``__diff__``) that the view table must receive; ``input_versions``:
    the Delta version of every input the state reflects; ``meta``: JSON-able extras (a
    refresh group's are ``catalog.pipeline.meta.GroupMeta.to_json()``, which also names the
    state entries; this store treats both as opaque).
    """

    state: Mapping[str, pa.Table] = field(default_factory=dict)
    pending: Mapping[str, pa.Table] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest(Saved):
    """A checkpoint's manifest without its tables (cheap to read).  ``directory``: the one
    its files are named relative to (the group's; a format-1 checkpoint's epoch directory)."""

    pending_views: tuple[str, ...]
    meta: Mapping[str, Any]
    directory: Path


@dataclass(frozen=True)
class _Entry:
    """A manifest as read: where each table is, and the names (entries of the group
    directory) that it and its kept predecessors reference."""

    manifest: Manifest
    state: Mapping[str, Ref]
    pending: Mapping[str, Ref]
    kept: tuple[frozenset[str], ...]  # the previous kept manifests' names, newest first

    @property
    def names(self) -> frozenset[str]:
        """The group directory's entries this manifest's tables are in."""
        refs = [*self.state.values(), *self.pending.values()]
        return frozenset(r[0].split("/", 1)[0] for r in refs)

    @property
    def live(self) -> frozenset[str]:
        """What garbage collection keeps while this manifest is ``CURRENT``."""
        return self.names.union(*self.kept)


def write_json_atomic(
    path: Path,
    obj: Any,
    *,
    durable: Sequence[Path] = (),
    sync_dir: bool = True,
    compact: bool = False,
) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (temp file, fsync, ``os.replace``, fsync
    of the directory).  ``durable``: other files and directories fsynced together with the
    temp file (catalog.durable), so that they are durable before ``path`` names anything.
    ``sync_dir=False``: the directory's fsync is left to the caller.  ``compact``: no
    indentation (json's C encoder; an indented dump runs its Python encoder).

    An unwritable warehouse (read-only, no permission, disk full) raises
    :class:`~catalog.errors.StorageError`; ``path`` is then unchanged.
    """
    if compact:
        text = json.dumps(obj, separators=(",", ":"), sort_keys=True)
    else:
        text = json.dumps(obj, indent=1, sort_keys=True)
    if is_object_path(path):  # one PUT replaces the whole object: atomic, durable when done
        try:
            path.write_bytes(text.encode())
        except OSError as exc:
            raise StorageError(str(path), str(exc)) from exc
        return
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        fsync_all([tmp, *durable])
        os.replace(tmp, path)
        if sync_dir:
            fsync_path(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise StorageError(str(path), exc.strerror or str(exc)) from exc


def repair(group: str) -> str:
    """What a user can do about a damaged checkpoint of ``group`` (appended to errors)."""
    return (
        f"; rebuild it from the inputs with REFRESH MATERIALIZED VIEW {group} FULL "
        f"(Session.refresh({group!r}, full=True)), or drop and recreate the view"
    )


class CheckpointStore:
    """Saves and loads the checkpoints of the dataflows of one warehouse."""

    def __init__(self, warehouse: Warehouse, *, keep: int = 2) -> None:
        self.warehouse = warehouse
        self.keep = max(1, keep)
        #: seconds a refresh waits for a group's writer lock (None: ``IVM_LOCK_TIMEOUT`` or 300)
        self.lock_timeout: float | None = None
        #: per group, the last manifest read or written, kept while ``CURRENT`` (and a
        #: format-1 ``manifest.json``) are the same files (local warehouses: ``CURRENT`` is
        #: only ever replaced by a new file), so a refresh reads and checks it once
        self._read: dict[str, tuple[tuple[file_stamp.Stamp, file_stamp.Stamp | None], _Entry]] = {}
        #: per group, the manifest this store's last save made ``CURRENT`` after listing the
        #: group's directory: while it still is, a save removes exactly what leaves the kept
        #: manifests, without listing the directory again
        self._wrote: dict[str, _Entry] = {}

    def directory(self, group: str) -> Path:
        return self.warehouse.checkpoint_dir(group)

    # -- reading --------------------------------------------------------------------------
    def manifest(self, group: str) -> Manifest | None:
        """The current checkpoint's manifest, or ``None`` if the group has none."""
        entry = self._entry(group)
        return None if entry is None else entry.manifest

    def _entry(self, group: str) -> _Entry | None:
        """The current manifest as read (``None`` without a checkpoint)."""
        base = self.directory(group)
        pointer = base / CURRENT
        stamp = None if self.warehouse.remote else file_stamp.stamp(pointer)
        kept = self._read.get(group)
        if stamp is not None and kept is not None and kept[0][0] == stamp:
            old = kept[1].manifest.directory / "manifest.json"
            if kept[0][1] is None or kept[0][1] == file_stamp.stamp(old):
                return kept[1]
        if stamp is None and (not self.warehouse.remote or not pointer.exists()):
            return None
        try:
            cur = json.loads(pointer.read_text(encoding="utf-8"))
            if not isinstance(cur, dict):
                raise ValueError("not a JSON object")
            if "dir" in cur and "format" not in cur:
                entry, written = self._old_entry(group, base, cur)
            else:
                entry, written = _parse(group, base, cur), None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(
                f"checkpoint of {group!r} is unreadable: {exc}{repair(group)}"
            ) from exc
        if stamp is not None:
            self._read[group] = ((stamp, written), entry)
        return entry

    def _old_entry(
        self, group: str, base: Path, cur: dict[str, Any]
    ) -> tuple[_Entry, file_stamp.Stamp | None]:
        """A format-1 ``CURRENT`` and the ``manifest.json`` of the directory it names."""
        d = self.warehouse.check_inside(base / cur["dir"])
        m = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        if (
            not isinstance(m, dict)
            or m.get("format") != OLD_FORMAT
            or int(m["epoch"]) != int(cur["epoch"])
            or not isinstance(m.get("state"), dict)
            or not isinstance(m.get("pending"), dict)
        ):
            raise CheckpointError(
                f"checkpoint of {group!r} has an unexpected manifest{repair(group)}"
            )
        whole = {
            kind: {str(k): (f"{d.name}/{f}", 0, None) for k, f in m[kind].items()}
            for kind in ("state", "pending")
        }
        entry = _Entry(
            manifest=_manifest_of(group, m, d),
            state=whole["state"],
            pending=whole["pending"],
            kept=(),
        )
        return entry, file_stamp.stamp(d / "manifest.json")

    def current_epoch(self, group: str) -> int | None:
        m = self.manifest(group)
        return None if m is None else m.epoch

    def load(self, group: str) -> Checkpoint | None:
        """The current checkpoint with its tables, or ``None``."""
        entry = self._entry(group)
        if entry is None:
            return None
        base = self.directory(group)
        reader = PackReader()
        try:
            state = {k: self._table(base, reader, r) for k, r in entry.state.items()}
            pending = {k: self._table(base, reader, r) for k, r in entry.pending.items()}
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise CheckpointError(
                f"checkpoint of {group!r} is unreadable: {exc}{repair(group)}"
            ) from exc
        m = entry.manifest
        return Checkpoint(
            group=group,
            epoch=m.epoch,
            input_versions=m.input_versions,
            state=state,
            pending=pending,
            meta=m.meta,
        )

    def _table(self, base: Path, reader: PackReader, ref: Ref) -> pa.Table:
        path = self.warehouse.check_inside(base / ref[0])
        return reader.read(path, ref[1], ref[2])

    # -- writing --------------------------------------------------------------------------
    def save(
        self,
        ckpt: Checkpoint,
        *,
        hook: Hook | None = None,
        carry: Iterable[str] = (),
        durable: Sequence[str | os.PathLike[str]] = (),
        sync_pointer: bool = True,
    ) -> Path:
        """Write ``ckpt`` and make it current, atomically; returns the group's directory.

        The epoch must be greater than the current checkpoint's.  ``hook(step)`` is called
        after ``"files_written"`` and ``"renamed"`` (crash-injection points for tests; the
        second is where format 1 renamed its directory: the pack is complete, ``CURRENT``
        not yet written).  ``carry`` names state entries of the *current* checkpoint to
        keep unchanged in the new one: the new manifest names them where they are, so a
        checkpoint that adds a little to a large state costs what it adds.  ``durable``:
        other local files or directories fsynced in the checkpoint's barrier, durable before
        ``CURRENT`` names it (catalog.refresh: the view tables' log directories).
        ``sync_pointer=False``: the group directory's fsync after ``CURRENT`` is replaced (what
        makes the new pointer durable) is left to the caller (catalog.refresh joins it to the
        first view commit's barrier); local warehouses only.
        """
        base = self.directory(ckpt.group)
        base.mkdir(parents=True, exist_ok=True)
        # object stores: the version of CURRENT this save builds on, read before its epoch
        # is; CURRENT is replaced only if it is still that version (compare-and-swap)
        seen = (
            storage.backend(base).version_tag((base / CURRENT).as_posix())
            if self.warehouse.remote
            else None
        )
        previous = self._entry(ckpt.group)
        carried = self._check_next(ckpt, previous, carry)
        # CURRENT is still what this store wrote: nothing else was left in the directory
        listed = previous is not None and previous == self._wrote.pop(ckpt.group, None)
        pack = base / f"{PACK}{int(ckpt.epoch):012d}-{uuid.uuid4().hex[:8]}.arrow"
        refs = _write_tables(pack, ckpt)
        entry = self._next_entry(ckpt, base, previous, carried, refs)
        if hook:
            hook("files_written")
            hook("renamed")
        check_fence(self.warehouse, ckpt.group)
        self._replace_pointer(base, entry, seen, [pack] if refs else [], durable, sync_pointer)
        self._collect_garbage(base, entry, previous if listed else None)
        self._wrote[ckpt.group] = entry
        return base

    def _next_entry(
        self,
        ckpt: Checkpoint,
        base: Path,
        previous: _Entry | None,
        carried: Mapping[str, Ref],
        refs: Sequence[Ref],
    ) -> _Entry:
        """The manifest of ``ckpt``: its new tables at ``refs`` (state, then pending), the
        carried ones where they are, and the names its predecessors kept."""
        new = {str(k): r for k, r in zip(ckpt.state, refs, strict=False)}
        written = zip(ckpt.pending, refs[len(ckpt.state) :], strict=True)
        # in the order a reader of the (key-sorted) manifest finds them
        state = dict(sorted({**carried, **new}.items()))
        pending = dict(sorted((str(v), r) for v, r in written))
        kept = () if previous is None else (previous.names, *previous.kept)
        return _Entry(
            manifest=Manifest(
                group=ckpt.group,
                epoch=int(ckpt.epoch),
                input_versions={k: int(v) for k, v in ckpt.input_versions.items()},
                pending_views=tuple(pending),
                meta=dict(ckpt.meta),
                directory=base,
            ),
            state=state,
            pending=pending,
            kept=kept[: self.keep - 1],
        )

    def _replace_pointer(
        self,
        base: Path,
        entry: _Entry,
        seen: str | None,
        written: Sequence[Path],
        durable: Sequence[str | os.PathLike[str]],
        sync_pointer: bool,
    ) -> None:
        """The commit point: ``CURRENT`` replaced by ``entry``'s manifest, after ``written``
        (the pack) and ``durable`` are durable."""
        text = _to_json(entry)
        group = entry.manifest.group
        if self.warehouse.remote:
            fsync_all(list(durable))  # local files beside a remote warehouse
            self._swap_pointer(base, text, seen, group)
            return
        # one barrier: the pack, its name in ``base`` and the new manifest's contents
        # durable together; then the pointer is replaced (catalog.durable)
        durable_too = [*written, base, *(Path(d) for d in durable)]
        write_json_atomic(
            base / CURRENT, text, durable=durable_too, sync_dir=sync_pointer, compact=True
        )
        stamp = file_stamp.stamp(base / CURRENT)
        if stamp is not None:
            self._read[group] = ((stamp, None), entry)

    def _swap_pointer(self, base: Path, text: dict[str, Any], seen: str | None, group: str) -> None:
        """The commit point on an object store: one conditional ``PutObject`` of ``CURRENT``
        that succeeds only if no other writer replaced it since this save read it."""
        data = json.dumps(text, separators=(",", ":"), sort_keys=True).encode()
        if not storage.backend(base).replace_if((base / CURRENT).as_posix(), data, seen):
            raise CheckpointError(
                f"checkpoint of {group!r}: another writer committed a checkpoint while this "
                f"one was written (epoch {text['epoch']}); nothing committed, run it again"
            )

    def _check_next(
        self, ckpt: Checkpoint, previous: _Entry | None, carry: Iterable[str]
    ) -> dict[str, Ref]:
        """The places of the carried entries, checked: ``ckpt`` comes after the current
        checkpoint, and carries no entry it also writes."""
        current = None if previous is None else previous.manifest.epoch
        if current is not None and ckpt.epoch <= current:
            raise CheckpointError(
                f"checkpoint of {ckpt.group!r}: epoch {ckpt.epoch} is not after {current}"
            )
        wanted = [str(k) for k in carry]
        if not wanted:
            return {}
        if previous is None:
            raise CheckpointError(f"checkpoint of {ckpt.group!r}: nothing to carry over")
        missing = [k for k in wanted if k not in previous.state]
        if missing:
            raise CheckpointError(f"checkpoint of {ckpt.group!r} has no state entries {missing}")
        clash = set(wanted) & {str(k) for k in ckpt.state}
        if clash:
            raise CheckpointError(f"checkpoint of {ckpt.group!r}: {sorted(clash)} carried and new")
        return {k: previous.state[k] for k in wanted}

    def state_keys(self, group: str) -> tuple[str, ...]:
        """The keys of the current checkpoint's state entries (no table is read)."""
        entry = self._entry(group)
        return () if entry is None else tuple(entry.state)

    def lock(
        self,
        group: str,
        *,
        timeout: float | None = None,
        on_wait: Callable[[], None] | None = None,
    ) -> Any:
        """The group's writer lock (catalog.locks); hold it around every save and clear."""
        wait = self.lock_timeout if timeout is None else timeout
        return group_lock(self.warehouse, group, timeout=wait, on_wait=on_wait)

    def clear(self, group: str) -> None:
        """Delete every checkpoint of ``group`` (e.g. when its view is dropped), under the
        group's writer lock, so a refresh in progress elsewhere is never cut short."""
        if self.directory(group).exists():
            with self.lock(group):
                self.remove(group)

    def remove(self, group: str) -> None:
        """Delete every checkpoint of ``group``; the caller holds the group's writer lock."""
        base = self.directory(group)
        self._read.pop(group, None)
        self._wrote.pop(group, None)
        if base.exists():
            remove_tree(base)

    def _collect_garbage(self, base: Path, current: _Entry, previous: _Entry | None) -> None:
        """Remove what no kept manifest references once ``current`` is ``CURRENT``.

        With ``previous`` (the manifest this store's last save wrote, still ``CURRENT``
        until now): exactly what ``previous`` kept and ``current`` does not, without a listing, so a
        logged epoch, whose pack stays referenced until the next base, removes nothing.
        Else the directory is listed, and leftovers of crashed saves (packs and format-1
        directories no kept manifest references, temp directories and pointers) go too.
        """
        live = current.live
        if previous is not None:
            doomed = sorted(previous.live - live)
        else:
            if is_object_path(base):
                names = [d.name for d in base.iterdir()]
            else:
                names = [e.name for e in os.scandir(base)]
            ours = (PACK, OLD_EPOCH, ".tmp-")
            doomed = [n for n in names if n.startswith(ours) and n not in live]
            doomed += [n for n in names if n.startswith(f".{CURRENT}.")]
        for name in doomed:
            target = base / name
            if name.startswith((OLD_EPOCH, ".tmp-")):  # directories (format 1)
                remove_tree(target)
            else:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink(missing_ok=True)


def _write_tables(pack: Path, ckpt: Checkpoint) -> list[Ref]:
    """Write the new tables of ``ckpt`` (state, then pending) into ``pack``; their places
    (none, and no file, when there are none)."""
    tables = [
        *(_as_table(t, k) for k, t in ckpt.state.items()),
        *(_as_table(t, v) for v, t in ckpt.pending.items()),
    ]
    if not tables:
        return []
    try:
        ranges = write_pack(pack, tables)
    except (OSError, TypeError, ValueError, pa.ArrowException) as exc:
        with contextlib.suppress(OSError):
            pack.unlink(missing_ok=True)
        raise CheckpointError(f"cannot write checkpoint of {ckpt.group!r}: {exc}") from exc
    return [(pack.name, off, n) for off, n in ranges]


def _manifest_of(group: str, m: Mapping[str, Any], directory: Path) -> Manifest:
    return Manifest(
        group=group,
        epoch=int(m["epoch"]),
        input_versions={k: int(v) for k, v in m["input_versions"].items()},
        pending_views=tuple(str(v) for v in m["pending"]),
        meta=m.get("meta", {}),
        directory=directory,
    )


def _parse(group: str, base: Path, m: dict[str, Any]) -> _Entry:
    """A format-2 manifest (``CURRENT``'s contents)."""
    if m.get("format") != FORMAT:
        raise CheckpointError(
            f"checkpoint of {group!r} has format {m.get('format')!r}, which this version "
            f"cannot read (it reads formats {OLD_FORMAT} and {FORMAT}){repair(group)}"
        )

    def refs(kind: str) -> dict[str, Ref]:
        out: dict[str, Ref] = {}
        for k, r in m[kind].items():
            name, off, n = r
            if not isinstance(name, str) or name.startswith("/") or ".." in name.split("/"):
                raise ValueError(f"entry {k!r} names {name!r}, outside the checkpoint")
            out[str(k)] = (name, int(off), None if n is None else int(n))
        return out

    return _Entry(
        manifest=_manifest_of(group, m, base),
        state=refs("state"),
        pending=refs("pending"),
        kept=tuple(frozenset(str(n) for n in names) for names in m.get("kept", ())),
    )


def _to_json(entry: _Entry) -> dict[str, Any]:
    m = entry.manifest
    return {
        "format": FORMAT,
        "group": m.group,
        "epoch": m.epoch,
        "input_versions": dict(m.input_versions),
        "state": {k: list(r) for k, r in entry.state.items()},
        "pending": {k: list(r) for k, r in entry.pending.items()},
        "kept": [sorted(names) for names in entry.kept],
        "meta": dict(m.meta),
    }


def _as_table(value: Any, key: object) -> pa.Table:
    if isinstance(value, pa.Table):
        return value
    if isinstance(value, pa.RecordBatch):
        return pa.Table.from_batches([value])
    raise CheckpointError(f"state entry {key!r} is {type(value).__name__}, not a pyarrow Table")
