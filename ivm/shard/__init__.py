"""Sharded execution of a dataflow: N copies of the same dataflow, ``shard = p of N``.

* :mod:`ivm.sharding` — shard identity (``building(p, n)``);
  :mod:`ivm.operators.exchange` — the ``Exchange(key)`` in front of every arrangement.
* :mod:`ivm.shard.scheduler` — one shard's epoch as bulk-synchronous rounds.
* :mod:`ivm.shard.transport` — the transport interface and the in-process lockstep driver.
* :mod:`ivm.shard.files` — the file transport (Arrow IPC files and a file barrier).
* :mod:`ivm.shard.group` — ``ShardGroup``: N shards in one process.
"""

from ivm.shard.group import Balance, ShardedInput, ShardedOutput, ShardGroup
from ivm.shard.scheduler import ShardAborted, ShardScheduler, ShardStats
from ivm.shard.transport import Transport, run_lockstep, run_shard

__all__ = [
    "Balance",
    "ShardAborted",
    "ShardGroup",
    "ShardScheduler",
    "ShardStats",
    "ShardedInput",
    "ShardedOutput",
    "Transport",
    "run_lockstep",
    "run_shard",
]
