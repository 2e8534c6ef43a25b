"""A local S3-compatible server for the object-store tests: moto's server on 127.0.0.1.

``s3_bucket`` starts ``python -m moto.server`` on a free port once per test session, points
the ``AWS_*`` variables (the ones catalog.storage and delta-rs read) at it for the test, and
gives each test a fresh bucket: ``s3://<bucket>``.  Import as
``from s3_fixture import s3_bucket, s3_server`` (tests/ is on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("moto", reason="moto[server] (the test extra) runs the local S3 server")

ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
    "AWS_ALLOW_HTTP": "true",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def local_server(argv: list[str], port: int, what: str, **popen: Any) -> Iterator[str]:
    """Run ``argv`` (a server listening on 127.0.0.1:``port``) until the block ends; yields
    its ``http://`` URL once it accepts connections."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **popen)
    deadline = time.monotonic() + 90  # a loaded 2-core machine
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"{what} did not start") from None
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """The endpoint URL of a moto S3 server running for the whole test session."""
    port = free_port()
    argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    with local_server(argv, port, "moto's S3 server") as url:
        yield url


@pytest.fixture
def s3_bucket(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new, empty bucket on the local server, the environment pointing at it."""
    for k, v in {**ENV, "AWS_ENDPOINT_URL": s3_server}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    import boto3

    name = f"ivm-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").create_bucket(Bucket=name)
    return f"s3://{name}"


# -- a keyed input under random churn, and the per-key oracle of its GROUP BY view ------------
PER_K_VIEW = "SELECT k, count(*) AS n, sum(v) AS total FROM {table} GROUP BY k"


def per_k_oracle(rows: pa.Table) -> Counter[tuple[object, ...]]:
    """``(k, count(*), sum(v))`` per ``k`` of ``rows``, recomputed in plain Python."""
    n: Counter[int] = Counter()
    total: Counter[int] = Counter()
    for r in rows.to_pylist():
        n[r["k"]] += 1
        total[r["k"]] += r["v"]
    return Counter((k, n[k], total[k]) for k in n)


def per_k_warehouse(spark: Any, uri: str, seed: int) -> tuple[Any, Churn, str]:
    """A Session on the warehouse ``uri`` with a churned input ``facts`` (15 rows) and the
    view ``per_k`` over it: (session, churn, the input's location)."""
    from spark_exec.session import Session

    s = Session(spark=spark, warehouse=uri)
    assert s.warehouse.as_posix() == uri
    s.sql("CREATE TABLE facts (id BIGINT NOT NULL, k BIGINT, v BIGINT)")
    src = s.table_path("facts")
    assert src == f"{uri}/tables/default/facts"
    churn = Churn(src, seed=seed, keys=4)
    churn.insert(15)
    s.sql("CREATE MATERIALIZED VIEW per_k AS " + PER_K_VIEW.format(table="facts"))
    return s, churn, src


def per_k_layout_and_reopen(spark: Any, uri: str, keys: list[str], churn: Churn, src: str) -> Any:
    """``keys`` (the object keys under the store) hold the warehouse ``uri``'s catalog, the
    view's checkpoints and Delta log, and no lock; the catalog keeps relative paths; a second
    Session that knows only ``uri`` finds ``per_k`` and refreshes it to the oracle.  Returns
    that Session and the view's rows."""
    from catalog import delta, storage
    from spark_exec.session import Session

    assert "wh/_ivm/catalog.json" in keys
    assert any(k.startswith("wh/_ivm/checkpoints/default/per_k/pack-") for k in keys)
    assert any(k.startswith("wh/views/default/per_k/_delta_log/") for k in keys)
    assert not any("/locks/" in k for k in keys)  # every lease was given up
    doc = storage.backend(uri).read_bytes(f"{uri}/_ivm/catalog.json").decode()
    assert '"path": "views/default/per_k"' in doc and "://" not in doc

    again = Session(spark=spark, warehouse=uri)
    assert {v.name for v in again.catalog.views()} == {"per_k"}
    churn.insert(3)
    again.refresh()
    got = Counter(tuple(r.values()) for r in again.read("per_k").to_pylist())
    assert got == per_k_oracle(delta.read_snapshot(src))
    return again, got


def per_k_follows_its_input(session: Any, churn: Churn, src: str, steps: int, deletes: int) -> None:
    """Churn ``src`` ``steps`` times, refreshing ``session`` after each; its view ``per_k``
    must equal :func:`per_k_oracle` of the input every time."""
    from catalog import delta

    for step in range(steps):
        churn.step(step, deletes=deletes)
        session.refresh()
        got = Counter(tuple(r.values()) for r in session.read("per_k").to_pylist())
        assert got == per_k_oracle(delta.read_snapshot(src)), f"step {step}"


class Churn:
    """Random inserts, deletes and updates of a Delta table ``(id, k, v)`` at ``path``."""

    def __init__(self, path: str, seed: int, keys: int) -> None:
        self.path, self.keys, self.next_id = path, keys, 0
        self.rng = np.random.default_rng(seed)

    def insert(self, n: int) -> None:
        from catalog import delta

        ids = np.arange(self.next_id, self.next_id + n)
        self.next_id += n
        k, v = self.rng.integers(0, self.keys, n), self.rng.integers(0, 100, n)
        delta.insert(self.path, pa.table({"id": ids, "k": k, "v": v}))

    def step(self, step: int, *, deletes: int) -> None:
        """A few inserts, ``deletes`` random deletes, and on odd steps an update of one key."""
        from catalog import delta

        self.insert(int(self.rng.integers(1, 6)))
        victims = self.rng.choice(self.next_id, deletes, replace=False)
        delta.delete(self.path, f"id IN ({', '.join(str(int(v)) for v in victims)})")
        if step % 2:
            k = int(self.rng.integers(0, self.keys))
            delta.update(self.path, {"v": "v + 1"}, predicate=f"k = {k}")
