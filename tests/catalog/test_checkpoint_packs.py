"""Checkpoint format 2 (catalog.checkpoint, catalog.pack): one pack per save, carried tables
named where they are, garbage collection of what no kept manifest references.

The oracle: a plain dict of the tables every save means to hold.  Random sequences of saves
(new bases, logged epochs that carry everything and add a little, empty epochs), crashes
injected at the save's crash points and new stores (new processes) are played against it;
after every step the loaded checkpoint equals the dict, the previous manifest's files are
still there (readers of the previous pointer), and after every completed save the group
directory holds exactly ``CURRENT`` and the packs the kept manifests reference.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.checkpoint import Checkpoint, CheckpointStore
from catalog.pack import COMPRESS_ROWS, PackReader, write_pack

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "main_checkpoint_2026_11_23"


class Crash(Exception):
    pass


def _table(rng: random.Random, rows: int) -> pa.Table:
    return pa.table(
        {
            "k": pa.array([rng.randrange(1000) for _ in range(rows)], pa.int64()),
            "s": pa.array([rng.choice(["a", "bb", None]) for _ in range(rows)], pa.string()),
        }
    )


def _equal(a: dict[str, pa.Table], b: dict[str, pa.Table]) -> bool:
    return set(a) == set(b) and all(a[k].equals(b[k]) for k in a)


def _referenced(base: Path) -> set[str]:
    cur = json.loads((base / "CURRENT").read_text())
    refs = [*cur["state"].values(), *cur["pending"].values()]
    return {r[0].split("/")[0] for r in refs}.union(*cur["kept"])


def test_pack_round_trip_with_sizes_types_and_compression(tmp_path: Path) -> None:
    rng = random.Random(1)
    tables = [
        _table(rng, 0),
        _table(rng, 3),
        pa.table({"big": pa.array(range(COMPRESS_ROWS + 5), pa.int64())}),  # compressed
        pa.table({"l": pa.array([[1, 2], None, []], pa.list_(pa.int32()))}),
        _table(rng, 1),
    ]
    ranges = write_pack(tmp_path / "p.arrow", tables)
    assert all(off % 64 == 0 for off, _ in ranges)
    reader = PackReader()
    for t, (off, n) in reversed(list(zip(tables, ranges, strict=True))):
        assert reader.read(tmp_path / "p.arrow", off, n).equals(t)
    with pytest.raises(pa.ArrowInvalid, match="past its end"):
        reader.read(tmp_path / "p.arrow", ranges[-1][0], ranges[-1][1] + 64)


@pytest.mark.parametrize("seed", range(6))
def test_random_saves_against_a_dict(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    wh = Catalog(tmp_path).warehouse
    keep = rng.choice([1, 2, 3])
    store = CheckpointStore(wh, keep=keep)
    base = store.directory("g")
    model: dict[str, pa.Table] = {}
    pending: dict[str, pa.Table] = {}
    epoch, log = 0, 0
    previous_refs: set[str] = set()
    for _ in range(40):
        op = rng.choice(["base", "log", "log", "log", "empty", "crash", "process"])
        if op == "process":  # a new process: nothing cached
            store = CheckpointStore(wh, keep=keep)
            continue
        new: dict[str, pa.Table]
        carry: tuple[str, ...] = ()
        if op == "base" or not model:
            new = {f"s/{i}": _table(rng, rng.choice([0, 5, 50])) for i in range(rng.randint(1, 6))}
        elif op == "empty":
            new, carry = {}, tuple(model)
        else:
            log += 1
            new = {
                f"l/{log}/{t}": _table(rng, rng.randint(1, 9))
                for t in ("a", "b")[: rng.randint(1, 2)]
            }
            carry = tuple(model)
        views = {f"v{i}": _table(rng, rng.randint(1, 4)) for i in range(rng.randint(0, 2))}
        ckpt = Checkpoint("g", epoch + 1, {"t": epoch + 1}, state=new, pending=views)
        if op == "crash":
            point = rng.choice(["files_written", "renamed"])

            def hook(step: str, point: str = point) -> None:
                if step == point:
                    raise Crash(step)

            with pytest.raises(Crash):
                store.save(ckpt, hook=hook, carry=carry)
            store = CheckpointStore(wh, keep=keep)  # the crashed process is gone
        else:
            store.save(ckpt, carry=carry)
            epoch += 1
            model = {**{k: model[k] for k in carry}, **new}
            pending = views
            # after a completed save: CURRENT and exactly the packs kept manifests name
            names = {p.name for p in base.iterdir()}
            assert names == {"CURRENT"} | _referenced(base), (op, names)
            if keep > 1:  # a reader of the previous pointer finds its files
                assert previous_refs <= names
            cur = json.loads((base / "CURRENT").read_text())
            assert len(cur["kept"]) <= keep - 1
            previous_refs = {r[0] for r in [*cur["state"].values(), *cur["pending"].values()]}
        loaded = CheckpointStore(wh).load("g")
        if epoch == 0:
            assert loaded is None
            continue
        assert loaded is not None and loaded.epoch == epoch
        assert _equal(dict(loaded.state), model) and _equal(dict(loaded.pending), pending)
        assert store.state_keys("g") == tuple(CheckpointStore(wh).state_keys("g"))


def test_a_logged_epoch_writes_one_pack_and_links_nothing(tmp_path: Path) -> None:
    wh = Catalog(tmp_path).warehouse
    store = CheckpointStore(wh)
    base_state = {f"s/{i}": pa.table({"x": list(range(100))}) for i in range(20)}
    store.save(Checkpoint("g", 1, {"t": 1}, state=base_state))
    for e in range(2, 6):
        before = {p.name for p in store.directory("g").iterdir()}
        store.save(
            Checkpoint(
                "g",
                e,
                {"t": e},
                state={f"l/{e}/t": pa.table({"x": [e]})},
                pending={"v": pa.table({"x": [e]})},
            ),
            carry=store.state_keys("g"),
        )
        after = {p.name for p in store.directory("g").iterdir()}
        assert len(after - before) == 1  # this epoch's pack; CURRENT replaced in place
        assert before - after == set()  # every earlier pack still holds a carried table
    loaded = store.load("g")
    assert loaded is not None and len(loaded.state) == 20 + 4
    store.save(Checkpoint("g", 6, {"t": 6}, state={"s/0": pa.table({"x": [0]})}))  # a new base
    store.save(Checkpoint("g", 7, {"t": 7}, state={"s/0": pa.table({"x": [1]})}))
    assert len([p for p in store.directory("g").iterdir() if p.name.startswith("pack-")]) == 2


def test_a_format_1_checkpoint_is_read_carried_from_and_collected(tmp_path: Path) -> None:
    """A checkpoint written by format 1 (a directory per epoch, hard-linked carried files):
    loaded as it is, its tables carried into format-2 saves without a copy, and its directory
    removed once no kept manifest references it."""
    wh_root = tmp_path / "wh"
    shutil.copytree(FIXTURE, wh_root)
    store = CheckpointStore(Catalog(wh_root).warehouse)
    old = store.load("agg")
    assert old is not None and old.epoch == 2 and old.state and old.pending
    base = store.directory("agg")
    (old_dir,) = [p.name for p in base.iterdir() if p.name.startswith("epoch-")]
    extra = {"l/3/t": pa.table({"k": [1], "v": [2], "__diff__": [1]})}
    store.save(Checkpoint("agg", 3, {"t": 3}, state=extra, meta=old.meta), carry=old.state)
    new = CheckpointStore(store.warehouse).load("agg")
    assert new is not None and _equal(dict(new.state), {**old.state, **extra})
    assert not new.pending
    assert (base / old_dir).is_dir()  # its files are the carried tables
    store.save(Checkpoint("agg", 4, {"t": 4}, state={"s/x": pa.table({"x": [1]})}))
    assert (base / old_dir).is_dir()  # kept: the previous manifest references it
    store.save(Checkpoint("agg", 5, {"t": 5}, state={"s/x": pa.table({"x": [2]})}))
    assert not (base / old_dir).exists()
    assert {p.name for p in base.iterdir()} == {"CURRENT"} | _referenced(base)


def test_a_warm_store_collects_garbage_without_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a store has listed the group's directory, its next saves remove exactly what
    leaves the kept manifests; a store that did not write ``CURRENT`` (a new process, or
    after another writer) lists it again, and so finds a crashed save's pack."""
    import catalog.checkpoint as ck

    listed: list[str] = []
    real = os.scandir

    def scandir(path: str) -> object:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(ck.os, "scandir", scandir)
    wh = Catalog(tmp_path).warehouse
    store = CheckpointStore(wh)
    big = {"s/a": pa.table({"x": [1]})}
    store.save(Checkpoint("g", 1, {"t": 1}, state=big))
    for e in range(2, 8):
        step = {f"l/{e}/t": pa.table({"x": [e]})}
        store.save(Checkpoint("g", e, {"t": e}, state=step), carry=store.state_keys("g"))
    store.save(Checkpoint("g", 8, {"t": 8}, state=big))  # a base: the old packs go later
    store.save(Checkpoint("g", 9, {"t": 9}, state=big))
    assert len(listed) == 1  # the first save only
    base = store.directory("g")
    assert {p.name for p in base.iterdir()} == {"CURRENT"} | _referenced(base)

    def crash(step: str) -> None:
        if step == "renamed":
            raise Crash(step)

    with pytest.raises(Crash):
        CheckpointStore(wh).save(Checkpoint("g", 10, {"t": 10}, state=big), hook=crash)
    orphans = {p.name for p in base.iterdir()} - {"CURRENT"} - _referenced(base)
    assert len(orphans) == 1
    other = CheckpointStore(wh)
    other.save(Checkpoint("g", 10, {"t": 10}, state=big))
    assert len(listed) == 2 and not orphans & {p.name for p in base.iterdir()}
