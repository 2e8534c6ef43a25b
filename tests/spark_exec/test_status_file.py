"""The per-group status file (spark_exec.status): ``record`` answers from the record it wrote
last when the file is still that one, and otherwise reads the file — a record another
writer put there, a removed file or a removed directory are never hidden by that memory.

Oracle: random sequences of successes, failures, no-op refreshes and outside rewrites or
removals, the file read back after every step equal to a plain model of the rules in
``record``'s docstring."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from catalog import Catalog
from spark_exec import status


def _model_record(
    doc: dict[str, Any], views: list[str], epoch: int | None, error: str | None
) -> dict[str, Any]:
    """What the record must be after one attempt (times left out)."""
    if (
        error is None
        and not doc.get("error")
        and doc.get("last_success")
        and doc.get("epoch") == epoch
        and doc.get("views") == views
    ):
        return doc
    out = {**doc, "group": "g", "views": views}
    if error is None:
        out.update(last_success="t", epoch=epoch, last_failure=None, error=None)
    else:
        out.update(last_failure="t", error={"type": "ValueError", "message": error})
    return out


def _timeless(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: ("t" if k in ("last_success", "last_failure") and v else v) for k, v in doc.items()}


@pytest.mark.parametrize("seed", range(6))
def test_record_against_a_model(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    cat = Catalog(tmp_path / "wh")
    path = status.status_path(cat, "g")
    model: dict[str, Any] = {}
    epoch = 0
    for _ in range(60):
        op = rng.choice(["ok", "ok", "same", "fail", "rewrite", "remove", "rmdir", "views"])
        views = ["v"] if op != "views" else ["v", "w"]
        if op in ("ok", "views"):
            epoch += 1
            status.record(cat, "g", tuple(views), epoch=epoch)
            model = _model_record(model, views, epoch, None)
        elif op == "same":  # a refresh that found nothing new
            status.record(cat, "g", tuple(model.get("views") or ["v"]), epoch=epoch)
            model = _model_record(model, model.get("views") or ["v"], epoch, None)
        elif op == "fail":
            status.record(cat, "g", ("v",), error=ValueError(f"bad {epoch}"))
            model = _model_record(model, ["v"], None, f"bad {epoch}")
        elif op == "rewrite":  # another process writes its record (same size, maybe)
            epoch += 1
            model = {"group": "g", "views": ["v"], "last_success": "t", "epoch": epoch}
            model.update(last_failure=None, error=None)
            other = path.with_name("other.tmp")
            path.parent.mkdir(parents=True, exist_ok=True)
            other.write_text(json.dumps(model), encoding="utf-8")
            os.replace(other, path)
        elif op == "remove":
            path.unlink(missing_ok=True)
            model = {}
        else:
            shutil.rmtree(path.parent, ignore_errors=True)
            model = {}
        assert _timeless(status.read(cat, "g")) == _timeless(model), (seed, op)
        if path.parent.exists():  # no temp file left behind
            assert [p.name for p in path.parent.iterdir()] == ([path.name] if model else [])


def test_unwritable_status_is_logged_not_raised(tmp_path: Path) -> None:
    cat = Catalog(tmp_path / "wh")
    path = status.status_path(cat, "g")
    status.record(cat, "g", ("v",), epoch=1)
    shutil.rmtree(path.parent)
    path.parent.write_text("not a directory")  # the status directory cannot be made again
    status.record(cat, "g", ("v",), epoch=2)  # logged, not raised
    assert status.read(cat, "g") == {}
    path.parent.unlink()
    status.record(cat, "g", ("v",), epoch=3)
    assert status.read(cat, "g")["epoch"] == 3


def test_a_record_caught_half_written_is_read_again(tmp_path: Path) -> None:
    """Records are rewritten in place: a reader that finds one whose checksum fails (a torn
    read) reads again; one that never heals reads as no record."""
    cat = Catalog(tmp_path / "wh")
    path = status.status_path(cat, "g")
    status.record(cat, "g", ("v",), epoch=1)
    whole = path.read_bytes()
    status.record(cat, "g", ("v", "w"), epoch=22)
    newer = path.read_bytes()
    cut = len(newer.rstrip()) // 2
    path.write_bytes(newer[:cut] + whole[cut:])  # the first half of one, the rest of the other
    assert status.read(cat, "g") == {}
    path.write_bytes(newer)
    assert status.read(cat, "g")["epoch"] == 22
    bad = json.loads(newer)
    bad["epoch"] = 23  # valid JSON, wrong checksum
    path.write_text(json.dumps(bad))
    assert status.read(cat, "g") == {}


def test_readers_see_whole_records_while_a_writer_rewrites(tmp_path: Path) -> None:
    """A reader thread while another rewrites the record in place, shorter and longer
    records alternating: every read is one of the records written (never a mix)."""
    import threading

    cat = Catalog(tmp_path / "wh")
    status.record(cat, "g", ("v",), epoch=0)
    stop = threading.Event()
    views = [("v",), tuple(f"view_{i}" for i in range(40))]

    def write() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            status.record(cat, "g", views[i % 2], epoch=i)

    t = threading.Thread(target=write)
    t.start()
    try:
        seen = [status.read(cat, "g") for _ in range(3000)]
    finally:
        stop.set()
        t.join()
    for doc in seen:
        assert doc == {} or tuple(doc["views"]) == views[doc["epoch"] % 2], doc
    assert sum(1 for d in seen if d) > 2900
