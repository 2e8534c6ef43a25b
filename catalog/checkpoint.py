"""State checkpoints: a dataflow's ``g.state()`` saved atomically under the warehouse.

Layout of one checkpoint group (one dataflow, named by an identifier)::

    _ivm/checkpoints/<db>/<group>/
      CURRENT                       {"epoch": 7, "dir": "epoch-000000000007-3f2a9c1e"}
      epoch-000000000007-3f2a9c1e/
        manifest.json               epoch, input versions, file of each state / pending table
        state-00000.arrow ...       Arrow IPC files, one per entry of g.state()
        pending-00000.arrow ...     the view changes of this epoch (see catalog.refresh)
      .tmp-<uuid>/                  a checkpoint being written (removed on the next save)

Writers: a save (and :meth:`CheckpointStore.clear`) must run under the group's writer lock
(:meth:`CheckpointStore.lock`, catalog.locks): garbage collection removes ``.tmp-*``
directories and epoch directories that ``CURRENT`` does not name, which is only safe when no
other writer of the group is live.  Epoch directories older than ``CURRENT`` are kept
(``keep`` of them, ``CURRENT``'s included) for readers that just read the previous pointer.

Atomicity: a checkpoint is written into a fresh ``.tmp-*`` directory and renamed to its final
``epoch-*`` name; then its files, its directory, the group directory (its new name) and the
new ``CURRENT``'s temp file are fsynced together (one barrier, catalog.durable), and only then
is ``CURRENT`` replaced with ``os.replace`` and the group directory fsynced.  A crash at any point
leaves ``CURRENT`` naming either the old complete checkpoint or the new complete one; leftover
directories are garbage-collected by the next save.  Table keys are never used as file names
(the manifest maps them), so any string key is safe.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from catalog import storage
from catalog.durable import fsync_all, fsync_path
from catalog.errors import CheckpointError, StorageError
from catalog.locks import check_fence, group_lock
from catalog.object_path import is_object_path, remove_tree
from catalog.paths import Warehouse

FORMAT = 1
CURRENT = "CURRENT"
Hook = Callable[[str], None]
_Stamp = tuple[int, int, int, int]  # a file's inode, size, mtime and ctime (catalog.checkpoint)


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
    """A checkpoint's manifest without its tables (cheap to read)."""

    pending_views: tuple[str, ...]
    meta: Mapping[str, Any]
    directory: Path


#: tables from this many rows (a base's traces) are written zstd-compressed: sorted keys,
#: repeated keys and multiplicities of 1 shrink several-fold; smaller ones (a refresh's
#: deltas) stay uncompressed, memory-mapped without a copy when read
COMPRESS_ROWS = 65_536


def _write_table(path: Path, table: pa.Table) -> None:
    """Write ``table`` as an Arrow IPC file (not yet durable locally: the caller fsyncs it)."""
    options = pa.ipc.IpcWriteOptions(
        compression="zstd" if table.num_rows >= COMPRESS_ROWS else None
    )
    if is_object_path(path):
        buf = pa.BufferOutputStream()
        with pa.ipc.new_file(buf, table.schema, options=options) as writer:
            writer.write_table(table)
        path.write_bytes(buf.getvalue().to_pybytes())
        return
    with (
        pa.OSFile(str(path), "wb") as sink,
        pa.ipc.new_file(sink, table.schema, options=options) as writer,
    ):
        writer.write_table(table)


def _read_table(path: Path) -> pa.Table:
    if is_object_path(path):
        return pa.ipc.open_file(pa.py_buffer(path.read_bytes())).read_all()
    with pa.memory_map(str(path), "r") as source:
        return pa.ipc.open_file(source).read_all()


def write_json_atomic(
    path: Path, obj: Any, *, durable: Sequence[Path] = (), sync_dir: bool = True
) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (temp file, fsync, ``os.replace``, fsync
    of the directory).  ``durable``: other files and directories fsynced together with the
    temp file (catalog.durable), so that they are durable before ``path`` names anything.
    ``sync_dir=False``: the directory's fsync is left to the caller.

    An unwritable warehouse (read-only, no permission, disk full) raises
    :class:`~catalog.errors.StorageError`; ``path`` is then unchanged.
    """
    if is_object_path(path):  # one PUT replaces the whole object: atomic, durable when done
        data = json.dumps(obj, indent=1, sort_keys=True).encode()
        try:
            path.write_bytes(data)
        except OSError as exc:
            raise StorageError(str(path), str(exc)) from exc
        return
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
        fsync_all([tmp, *durable])
        os.replace(tmp, path)
        if sync_dir:
            fsync_path(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise StorageError(str(path), exc.strerror or str(exc)) from exc


def _write_files(tmp: Path, ckpt: Checkpoint, carried: Mapping[str, Path]) -> list[Path]:
    """Write the tables and the manifest of ``ckpt`` into directory ``tmp`` (carried entries
    linked); returns the files written (not yet durable: the caller fsyncs them)."""
    state_files: dict[str, str] = {}
    pending_files: dict[str, str] = {}
    written: list[Path] = []
    for i, (key, source) in enumerate(carried.items()):
        state_files[key] = f"carried-{i:05d}.arrow"
        if not _link(source, tmp / state_files[key]):
            written.append(tmp / state_files[key])
    for i, (key, table) in enumerate(ckpt.state.items()):
        state_files[str(key)] = f"state-{i:05d}.arrow"
        _write_table(tmp / state_files[str(key)], _as_table(table, key))
        written.append(tmp / state_files[str(key)])
    for i, (view, table) in enumerate(ckpt.pending.items()):
        pending_files[str(view)] = f"pending-{i:05d}.arrow"
        _write_table(tmp / pending_files[str(view)], _as_table(table, view))
        written.append(tmp / pending_files[str(view)])
    manifest = {
        "format": FORMAT,
        "group": ckpt.group,
        "epoch": int(ckpt.epoch),
        "input_versions": {k: int(v) for k, v in ckpt.input_versions.items()},
        "state": state_files,
        "pending": pending_files,
        "meta": dict(ckpt.meta),
    }
    # compact: json's C encoder (an indented dump runs its Python encoder, ~0.3 ms a refresh)
    (tmp / "manifest.json").write_text(json.dumps(manifest, separators=(",", ":"), sort_keys=True))
    written.append(tmp / "manifest.json")
    return written


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
        #: per group, the last manifest read, kept while ``CURRENT`` and ``manifest.json``
        #: are the same files (local warehouses: ``CURRENT`` is only ever replaced by a new
        #: file), so a refresh reads and checks it once, not five times
        self._read: dict[str, tuple[tuple[_Stamp, _Stamp], Manifest, dict[str, Any]]] = {}

    def directory(self, group: str) -> Path:
        return self.warehouse.checkpoint_dir(group)

    # -- reading --------------------------------------------------------------------------
    def manifest(self, group: str) -> Manifest | None:
        """The current checkpoint's manifest, or ``None`` if the group has none."""
        return self._manifest(group)[0]

    def _manifest(self, group: str) -> tuple[Manifest | None, dict[str, Any]]:
        """The current manifest and its raw JSON (``(None, {})`` without a checkpoint)."""
        base = self.directory(group)
        pointer = base / CURRENT
        stamp = None if self.warehouse.remote else _stamp(pointer)
        kept = self._read.get(group)
        same = kept is not None and kept[0] == (stamp, _stamp(kept[1].directory / "manifest.json"))
        if stamp is not None and kept is not None and same:
            return kept[1], kept[2]
        if stamp is None and not pointer.exists():
            return None, {}
        try:
            cur = json.loads(pointer.read_text(encoding="utf-8"))
            d = self.warehouse.check_inside(base / cur["dir"])
            m = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError) as exc:
            raise CheckpointError(
                f"checkpoint of {group!r} is unreadable: {exc}{repair(group)}"
            ) from exc
        if m.get("format") != FORMAT or int(m["epoch"]) != int(cur["epoch"]):
            raise CheckpointError(
                f"checkpoint of {group!r} has an unexpected manifest{repair(group)}"
            )
        out = Manifest(
            group=group,
            epoch=int(m["epoch"]),
            input_versions={k: int(v) for k, v in m["input_versions"].items()},
            pending_views=tuple(m["pending"]),
            meta=m.get("meta", {}),
            directory=d,
        )
        written = _stamp(d / "manifest.json")
        if stamp is not None and written is not None and _valid_manifest(m):
            self._read[group] = ((stamp, written), out, m)
        return out, m

    def current_epoch(self, group: str) -> int | None:
        m = self.manifest(group)
        return None if m is None else m.epoch

    def load(self, group: str) -> Checkpoint | None:
        """The current checkpoint with its tables, or ``None``."""
        m = self.manifest(group)
        if m is None:
            return None
        try:
            raw = json.loads((m.directory / "manifest.json").read_text(encoding="utf-8"))
            state = {k: _read_table(m.directory / f) for k, f in raw["state"].items()}
            pending = {k: _read_table(m.directory / f) for k, f in raw["pending"].items()}
        except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
            raise CheckpointError(
                f"checkpoint of {group!r} is unreadable: {exc}{repair(group)}"
            ) from exc
        return Checkpoint(
            group=group,
            epoch=m.epoch,
            input_versions=m.input_versions,
            state=state,
            pending=pending,
            meta=m.meta,
        )

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
        """Write ``ckpt`` and make it current, atomically; returns its directory.

        The epoch must be greater than the current checkpoint's.  ``hook(step)`` is called
        after ``"files_written"`` and ``"renamed"`` (crash-injection points for tests).
        ``carry`` names state entries of the *current* checkpoint to keep unchanged in the
        new one without rewriting them (hard links, a copy where links are not possible), so
        a checkpoint that adds a little to a large state costs what it adds.  ``durable``:
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
        carried = self._check_next(ckpt, carry)
        # leftovers of a crashed save are collected after this one (one directory scan a save)
        final = base / f"epoch-{int(ckpt.epoch):012d}-{uuid.uuid4().hex[:8]}"
        # an object store has no rename: the files go to their final prefix at once, which
        # no reader looks at before ``CURRENT`` names it (and garbage collection removes it
        # if ``CURRENT`` never does)
        tmp = final if self.warehouse.remote else base / f".tmp-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            written = _write_files(tmp, ckpt, carried)
        except (OSError, TypeError, ValueError, pa.ArrowException) as exc:
            remove_tree(tmp)
            raise CheckpointError(f"cannot write checkpoint of {ckpt.group!r}: {exc}") from exc
        if hook:
            hook("files_written")
        if tmp != final:
            os.rename(tmp, final)
        if hook:
            hook("renamed")
        check_fence(self.warehouse, ckpt.group)
        pointer = {"epoch": int(ckpt.epoch), "dir": final.name}
        if self.warehouse.remote:
            fsync_all(list(durable))  # local files beside a remote warehouse
            self._swap_pointer(base, pointer, seen, ckpt.group)
            self._collect_garbage(base, final.name)
            return final
        # one barrier: the files, the directory's entries, its name in ``base`` and the new
        # pointer's contents durable together; then the pointer is replaced (catalog.durable)
        written = [final / w.name for w in written]
        extra = [Path(d) for d in durable]
        durable_too = [*written, final, base, *extra]
        write_json_atomic(base / CURRENT, pointer, durable=durable_too, sync_dir=sync_pointer)
        self._collect_garbage(base, final.name)
        return final

    def _swap_pointer(
        self, base: Path, pointer: dict[str, Any], seen: str | None, group: str
    ) -> None:
        """The commit point on an object store: one conditional ``PutObject`` of ``CURRENT``
        that succeeds only if no other writer replaced it since this save read it."""
        data = json.dumps(pointer, indent=1, sort_keys=True).encode()
        if not storage.backend(base).replace_if((base / CURRENT).as_posix(), data, seen):
            raise CheckpointError(
                f"checkpoint of {group!r}: another writer committed a checkpoint while this "
                f"one was written (epoch {pointer['epoch']}); nothing committed, run it again"
            )

    def _check_next(self, ckpt: Checkpoint, carry: Iterable[str]) -> dict[str, Path]:
        """The files of the carried entries, checked: ``ckpt`` comes after the current
        checkpoint, and carries no entry it also writes."""
        current = self.current_epoch(ckpt.group)
        if current is not None and ckpt.epoch <= current:
            raise CheckpointError(
                f"checkpoint of {ckpt.group!r}: epoch {ckpt.epoch} is not after {current}"
            )
        carried = self._carried_files(ckpt.group, carry)
        clash = set(carried) & {str(k) for k in ckpt.state}
        if clash:
            raise CheckpointError(f"checkpoint of {ckpt.group!r}: {sorted(clash)} carried and new")
        return carried

    def _carried_files(self, group: str, keys: Iterable[str]) -> dict[str, Path]:
        wanted = [str(k) for k in keys]
        if not wanted:
            return {}
        m, raw = self._manifest(group)
        if m is None:
            raise CheckpointError(f"checkpoint of {group!r}: nothing to carry over")
        raw = raw if _valid_manifest(raw) else _read_manifest(m.directory, group)
        missing = [k for k in wanted if k not in raw["state"]]
        if missing:
            raise CheckpointError(f"checkpoint of {group!r} has no state entries {missing}")
        return {k: m.directory / raw["state"][k] for k in wanted}

    def state_keys(self, group: str) -> tuple[str, ...]:
        """The keys of the current checkpoint's state entries (no table is read)."""
        m, raw = self._manifest(group)
        if m is None:
            return ()
        raw = raw if _valid_manifest(raw) else _read_manifest(m.directory, group)
        return tuple(raw["state"])

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
        if base.exists():
            remove_tree(base)

    def _collect_garbage(self, base: Path, current: str) -> None:
        """Remove what a save leaves behind once ``current`` (the directory the save just
        made ``CURRENT`` name) is durable: leftovers of crashed saves (temp directories and
        pointers, epoch directories ``CURRENT`` never named) and all but ``keep`` epochs."""
        if is_object_path(base):
            names = [d.name for d in base.iterdir()]
        else:
            names = [e.name for e in os.scandir(base)]
        dirs = sorted(d for d in names if d.startswith("epoch-"))
        # ``epoch-<12 digits>-<random>``: a crashed save of the current epoch left a
        # directory of the same epoch, which goes with the newer ones
        epoch = current[: len("epoch-") + 12]
        older = [d for d in dirs if d[: len(epoch)] < epoch]
        newer = [d for d in dirs if d != current and d[: len(epoch)] >= epoch]
        doomed = older[: max(0, len(older) - (self.keep - 1))] + newer
        doomed += [n for n in names if n.startswith(".tmp-") or n.startswith(f".{CURRENT}.")]
        for name in doomed:
            target = base / name
            if target.is_dir():
                remove_tree(target)
            else:
                target.unlink(missing_ok=True)


def _stamp(path: Path) -> _Stamp | None:
    """``path``'s inode, size and change times (``None``: no such file)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _valid_manifest(raw: Any) -> bool:
    return isinstance(raw, dict) and isinstance(raw.get("state"), dict)


def _read_manifest(directory: Path, group: str) -> dict[str, Any]:
    try:
        raw = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(
            f"checkpoint of {group!r} is unreadable: {exc}{repair(group)}"
        ) from exc
    if not _valid_manifest(raw):
        raise CheckpointError(f"checkpoint of {group!r} has an unexpected manifest{repair(group)}")
    return raw


def _link(source: Path, target: Path) -> bool:
    """Hard-link ``source`` as ``target`` (True), or copy it where links are not possible
    (False: the copy is not yet durable; an object store copies, durable once written)."""
    if is_object_path(target):
        target.write_bytes(source.read_bytes())
        return True
    try:
        os.link(source, target)
        return True
    except OSError:
        shutil.copyfile(source, target)
        return False


def _as_table(value: Any, key: object) -> pa.Table:
    if isinstance(value, pa.Table):
        return value
    if isinstance(value, pa.RecordBatch):
        return pa.Table.from_batches([value])
    raise CheckpointError(f"state entry {key!r} is {type(value).__name__}, not a pyarrow Table")
