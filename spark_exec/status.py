"""Per-group refresh status: the last success, the last failure and its error.

One small JSON file per refresh group, ``<warehouse>/_ivm/status/<database>/<group>.json``,
written atomically (not fsynced: after a crash it may show the attempt before last) after
every refresh attempt (see :func:`record`)::

    {"group": "v", "views": ["v"], "last_success": "2026-11-23T20:01:02Z", "epoch": 7,
     "last_failure": null, "error": null}

What a view *reflects* (its epoch and input versions) is read from its group's checkpoint
manifest, the committed truth; the status file only adds times and the last error.  A
view's status (:func:`view_status`) is

* ``failed``: the last attempt to refresh its group failed (``error`` says why);
* ``stale``: the group's inputs have versions the view does not reflect yet (``behind``
  counts them: the sum over its base tables of current version − reflected version);
* ``fresh``: it reflects the current version of every input.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog import Catalog, delta
from catalog.file_stamp import Stamp, stamp, stamp_of

log = logging.getLogger("ivm.session")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def status_path(catalog: Catalog, group: str) -> Path:
    return catalog.warehouse.group_status_file(group)


def read(catalog: Catalog, group: str) -> dict[str, Any]:
    """The status record of ``group`` (empty when it has none or it is unreadable)."""
    return _read_path(status_path(catalog, group))


#: the record this process last wrote per local status file, with the file's stamp then
#: (catalog.file_stamp): :func:`record` answers from it after one ``stat`` instead of reading and
#: parsing the file again (another writer's record has another inode)
_written: dict[str, tuple[Stamp, dict[str, Any]]] = {}


def _read_path(p: Path) -> dict[str, Any]:
    try:
        out = json.loads(p.read_text(encoding="utf-8"))
        return out if isinstance(out, dict) else {}
    except (OSError, ValueError):
        return {}


def _read_local(p: Path) -> dict[str, Any]:
    """The record at local ``p``: the one this process wrote if the file is still it."""
    key = str(p)
    kept = _written.get(key)
    if kept is not None:
        if stamp(key) == kept[0]:
            return dict(kept[1])
        del _written[key]
    return _read_path(p)


def _write_local(p: Path, doc: dict[str, Any]) -> None:
    """Replace the record at local ``p`` atomically (a reader sees the old or the new one),
    not fsynced: advisory only.  The directory is made when the first write finds none."""
    data = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode("utf-8")
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileNotFoundError:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            os.write(fd, data)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(tmp, p)
    except BaseException:
        _written.pop(str(p), None)
        tmp.unlink(missing_ok=True)
        raise
    _written[str(p)] = (stamp_of(st), dict(doc))


def record(
    catalog: Catalog,
    group: str,
    views: tuple[str, ...],
    *,
    epoch: int | None = None,
    error: BaseException | None = None,
) -> None:
    """Record a refresh attempt of ``group``: a success (``epoch``) or a failure (``error``).

    ``last_success`` is the time of the last refresh that brought the group to a new epoch
    (or cleared a failure); a refresh that found no new input versions writes nothing.

    A status that cannot be written (read-only warehouse) is logged, never raised: it must
    not hide the refresh's own outcome.
    """
    p = status_path(catalog, group)
    remote = catalog.warehouse.remote
    doc = _read_path(p) if remote else _read_local(p)
    if (
        error is None
        and not doc.get("error")
        and doc.get("last_success")
        and doc.get("epoch") == epoch
        and doc.get("views") == list(views)
    ):
        return  # a refresh that found nothing new: the record stands (no write on no-ops)
    doc.update(group=group, views=list(views))
    if error is None:
        doc.update(last_success=_now(), epoch=epoch, last_failure=None, error=None)
    else:
        doc.update(
            last_failure=_now(),
            error={"type": type(error).__name__, "message": str(error)[:2000]},
        )
    if remote:  # one PUT replaces the object whole
        try:
            p.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True))
        except OSError as exc:
            log.warning("cannot record the refresh status of %s: %s", group, exc)
        return
    try:
        _write_local(p, doc)
    except OSError as exc:
        log.warning("cannot record the refresh status of %s: %s", group, exc)


@dataclass(frozen=True)
class ViewStatus:
    """What ``SHOW MATERIALIZED VIEWS`` says about one view's freshness."""

    status: str  # fresh | stale | failed
    last_refresh: str | None
    epoch: int | None
    input_versions: dict[str, int]
    behind: int | None
    last_error: str | None


def view_status(catalog: Catalog, group: str, tables: dict[str, str]) -> ViewStatus:
    """The status of the views of ``group`` whose base tables are ``tables`` (name → path)."""
    doc = read(catalog, group)
    err = doc.get("error") or None
    last_error = (
        " ".join(f"{err.get('type')}: {err.get('message')}".split())
        if isinstance(err, dict)
        else None
    )
    reflected: dict[str, int] = {}
    epoch = None
    try:
        manifest = catalog.checkpoints.manifest(group)
    except Exception as exc:  # an unreadable checkpoint is a failure to report, not to raise
        manifest = None
        last_error = last_error or f"{type(exc).__name__}: {exc}"
        err = err or True
    if manifest is not None:
        reflected = {k: int(v) for k, v in manifest.input_versions.items()}
        epoch = manifest.epoch
    behind: int | None = 0
    for name, path in tables.items():
        try:
            current = delta.current_version(path)
        except Exception:  # a dropped input: its refresh fails and says so
            behind = None
            break
        assert behind is not None
        behind += max(0, current - reflected.get(name, -1))
    if err:
        status = "failed"
    elif manifest is None or behind is None or behind > 0:
        status = "stale"
    else:
        status = "fresh"
    return ViewStatus(status, doc.get("last_success"), epoch, reflected, behind, last_error)
