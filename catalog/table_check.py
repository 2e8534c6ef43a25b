"""What a table location holds when it is not a Delta table spark-ivm can use.

Two kinds of bad input are told apart here, so the typed errors can say what is wrong:

* **not a Delta table** (:class:`~catalog.errors.NotADeltaTableError`): no ``_delta_log``
  with a commit in it.  :func:`describe_location` says what is there instead — nothing, a
  file, an empty directory, a directory of Parquet files (a plain Parquet table), an empty
  ``_delta_log``;
* **a protocol it cannot read or write** (:class:`~catalog.errors.UnsupportedProtocolError`):
  a ``minReaderVersion`` / ``minWriterVersion`` or a table feature delta-rs does not
  implement.  delta-rs reports these as plain ``DeltaError``\\ s; :func:`protocol_refusal`
  recognises them and :func:`declared_protocol` reads the table's protocol action from its
  JSON log for the message.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> describe_location(os.path.join(d, "nothing")) is None
True
>>> describe_location(d)
'an empty directory'
"""

from __future__ import annotations

import json
import os
from typing import Any

from catalog import storage

LOG_DIR = "_delta_log"
_SCAN_LIMIT = 200  # JSON log entries read (newest first) when looking for the protocol

# how delta-rs (kernel) words a protocol it does not support, on open and on commit
_REFUSALS = (
    "unsupported minimum reader version",
    "unsupported minimum writer version",
    "unsupported table features required",
    "invalid protocol action",
    "table features must be specified",
)


def describe_location(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` holds, in words, or ``None`` when nothing exists there."""
    p = os.fspath(path)
    if storage.is_object_store(p):
        store = storage.backend(p)
        if not store.listdir(p):
            return None
        if store.listdir(storage.join(p, LOG_DIR)):
            return f"a {LOG_DIR} that deltalake cannot open as a table"
        return f"objects under the prefix and no {LOG_DIR}"
    if not os.path.lexists(p):
        return None
    if not os.path.isdir(p):
        return "a file, not a directory"
    names = os.listdir(p)
    if not names:
        return "an empty directory"
    log = os.path.join(p, LOG_DIR)
    if os.path.isdir(log):
        if not any(n.endswith(".json") or ".checkpoint." in n for n in os.listdir(log)):
            return f"a {LOG_DIR} directory without any commit"
        return f"a {LOG_DIR} that deltalake cannot open as a table"
    parquet = 0
    for _, _, files in os.walk(p):
        parquet += sum(1 for f in files if f.endswith(".parquet"))
    if parquet:
        return (
            f"a directory of {parquet} Parquet file(s) and no {LOG_DIR} (a plain Parquet "
            f"table: convert it with delta-spark's CONVERT TO DELTA parquet.`{p}`)"
        )
    return f"a directory of {len(names)} entries and no {LOG_DIR}"


def protocol_refusal(exc: BaseException) -> bool:
    """Whether a delta-rs error says the table's protocol is one it does not support."""
    text = str(exc).lower()
    if any(r in text for r in _REFUSALS):
        return True
    return "feature" in text and "is not supported" in text


def declared_protocol(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The newest ``protocol`` action in the table's JSON log (``None`` if none is found)."""
    log = storage.join(os.fspath(path), LOG_DIR)
    store = storage.backend(log)
    try:
        names = sorted((n for n in store.listdir(log) if n.endswith(".json")), reverse=True)
    except OSError:
        return None
    for name in names[:_SCAN_LIMIT]:
        try:
            text = store.read_bytes(storage.join(log, name)).decode("utf-8")
            for line in text.splitlines():
                if '"protocol"' not in line:
                    continue
                action = json.loads(line).get("protocol")
                if isinstance(action, dict):
                    return action
        except (OSError, ValueError):
            continue
    return None
