"""Settings of a Session: where Spark runs, resource limits, lock waits — and where each came from.

Every setting is resolved from four sources; the first that gives it wins:

1. an explicit argument: ``Session(...)`` keywords, or the CLI's flags;
2. an environment variable (``IVM_*``, table below);
3. a TOML config file: ``config=`` / ``--config``, else ``$IVM_CONFIG``, else ``ivm.toml`` in
   the working directory when there is one;
4. the default.

============================  =========================  ==============================
setting (TOML ``[section]``)  environment variable       default
============================  =========================  ==============================
``[spark] master``            ``IVM_SPARK_MASTER``       ``local[*]``
``[spark] shuffle_partitions`` ``IVM_SHUFFLE_PARTITIONS`` the machine's core count
``[spark.conf]`` ``"k" = "v"``  ``IVM_SPARK_CONF``         none (``k=v;k2=v2``)
``[limits] max_iterations``   ``IVM_MAX_ITERATIONS``     10,000
``[limits] max_state_rows``   ``IVM_MAX_STATE_ROWS``     200,000,000
``[limits] memory_budget``    ``IVM_MEMORY_BUDGET``      80% of physical memory
``[refresh] lock_timeout``    ``IVM_LOCK_TIMEOUT``       300 (seconds)
``warehouse``                 ``IVM_WAREHOUSE``          ``./warehouse``
``[executor] default``        ``IVM_EXECUTOR``           ``local`` (or ``spark``, ``auto``)
``[executor] shards``         ``IVM_SHARDS``             2
``[executor] memory_budget``  ``IVM_EXECUTOR_MEMORY_BUDGET``  4 GiB (the policy's budget)
``[executor] bytes_per_row``  ``IVM_EXECUTOR_BYTES_PER_ROW``  1,024
``[executor] large_change_rows`` ``IVM_EXECUTOR_LARGE_CHANGE_ROWS`` 1,000,000
============================  =========================  ==============================

Limits accept ``"none"`` (no limit); ``memory_budget`` accepts byte sizes such as ``"8GiB"``
or ``"512MB"``.  The ``[executor]`` settings say where each refresh epoch runs
(``docs/executors.md``): the default executor of views without ``ivm.executor``, the shard
count of a sharded epoch, and the thresholds of the ``'auto'`` policy
(:class:`spark_exec.sharded.ExecutorPolicy`).  ``spark.conf`` entries are passed to the SparkSession the Session builds
and win over the project's own Spark defaults; a SparkSession the caller passes in is used
as it is.  A bad value raises :class:`ConfigError` naming the source, the key and what to
write instead.  :meth:`Settings.describe` shows every value with its source (``ivm config``).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from catalog.pipeline.placement import EXECUTORS
from ivm import limits as ivm_limits
from ivm.errors import IvmError

CONFIG_FILE_NAME = "ivm.toml"
DEFAULT_MASTER = "local[*]"
DEFAULT_WAREHOUSE = "warehouse"
DEFAULT_LOCK_TIMEOUT = 300.0
DEFAULT_EXECUTOR = "local"
DEFAULT_SHARDS = 2
#: the 'auto' policy's defaults (measured: a 2M-row GROUP BY view holds 1.7 GB in one process)
DEFAULT_EXECUTOR_MEMORY_BUDGET = 4 << 30
DEFAULT_BYTES_PER_ROW = 1024
DEFAULT_LARGE_CHANGE_ROWS = 1_000_000

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.I)
_NO_LIMIT = ("none", "off", "unlimited")


class ConfigError(IvmError, ValueError):
    """A setting with a value that cannot be used; says where it came from and what to write."""

    def __init__(self, key: str, source: str, detail: str) -> None:
        self.key = key
        self.source = source
        super().__init__(f"setting {key!r} from {source}: {detail}")


class _Unset:
    """The marker of an argument the caller did not give (``None`` means "no limit")."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True)
class Settings:
    """The resolved settings; ``sources`` maps each field to where its value came from."""

    warehouse: str = DEFAULT_WAREHOUSE
    spark_master: str = DEFAULT_MASTER
    shuffle_partitions: int = field(default_factory=lambda: os.cpu_count() or 1)
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    max_iterations: int | None = ivm_limits.DEFAULT_MAX_ITERATIONS
    max_state_rows: int | None = ivm_limits.DEFAULT_MAX_STATE_ROWS
    memory_budget: int | None = field(default_factory=ivm_limits.default_memory_budget)
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    executor: str = DEFAULT_EXECUTOR
    shards: int = DEFAULT_SHARDS
    executor_memory_budget: int = DEFAULT_EXECUTOR_MEMORY_BUDGET
    executor_bytes_per_row: int = DEFAULT_BYTES_PER_ROW
    executor_large_change_rows: int = DEFAULT_LARGE_CHANGE_ROWS
    config_file: str | None = None
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def limits(self) -> ivm_limits.Limits:
        return ivm_limits.Limits(self.max_iterations, self.max_state_rows, self.memory_budget)

    def spark_settings(self) -> dict[str, str]:
        """The Spark configuration a new SparkSession gets from these settings."""
        n = str(self.shuffle_partitions)
        return {
            "spark.sql.shuffle.partitions": n,
            "spark.default.parallelism": n,
            **self.spark_conf,
        }

    def describe(self) -> list[tuple[str, str, str]]:
        """``(setting, value, source)`` for every setting, in a stable order."""
        out = []
        for f in fields(self):
            if f.name in ("sources", "config_file"):
                continue
            value = getattr(self, f.name)
            if isinstance(value, Mapping):
                text = ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "(none)"
            else:
                text = "none" if value is None else str(value)
            out.append((f.name, text, self.sources.get(f.name, "default")))
        return out


# -- value parsers -------------------------------------------------------------------------


def _positive_int(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("a positive integer, not a boolean")
    n = int(str(value).replace("_", "")) if not isinstance(value, int) else value
    if n < 1:
        raise ValueError("must be at least 1")
    return n


def _limit(value: object) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in _NO_LIMIT):
        return None
    return _positive_int(value)


def _byte_size(value: object) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in _NO_LIMIT):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return _positive_int(value)
    m = _SIZE.match(str(value).replace("_", ""))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError("a byte count such as 8589934592, '8GiB' or '512MB', or 'none'")
    return _positive_int(int(float(m.group(1)) * _UNITS[m.group(2).lower()]))


def _seconds(value: object) -> float:
    seconds = float(str(value))
    if seconds < 0 or seconds != seconds:
        raise ValueError("a number of seconds, 0 or more")
    return seconds


def _budget(value: object) -> int:
    size = _byte_size(value)
    if size is None:
        raise ValueError("a byte count such as '8GiB' (the policy needs a budget)")
    return size


def _executor(value: object) -> str:
    v = str(value).strip().lower()
    if v not in EXECUTORS:
        raise ValueError(f"one of {', '.join(repr(e) for e in EXECUTORS)}")
    return v


def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("a non-empty string")
    return value.strip()


def _spark_conf(value: object) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k): _conf_value(v) for k, v in value.items()}
    pairs = [p for p in re.split(r"[;\n]", str(value)) if p.strip()]
    out: dict[str, str] = {}
    for p in pairs:
        k, sep, v = p.partition("=")
        if not sep or not k.strip():
            raise ValueError(f"{p.strip()!r} is not key=value (write 'k=v;k2=v2')")
        out[k.strip()] = v.strip()
    return out


def _conf_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


#: setting -> (TOML path, environment variable, parser)
_KEYS: dict[str, tuple[tuple[str, ...], str, Callable[[object], Any]]] = {
    "warehouse": (("warehouse",), "IVM_WAREHOUSE", _text),
    "spark_master": (("spark", "master"), "IVM_SPARK_MASTER", _text),
    "shuffle_partitions": (
        ("spark", "shuffle_partitions"),
        "IVM_SHUFFLE_PARTITIONS",
        _positive_int,
    ),
    "spark_conf": (("spark", "conf"), "IVM_SPARK_CONF", _spark_conf),
    "max_iterations": (("limits", "max_iterations"), "IVM_MAX_ITERATIONS", _limit),
    "max_state_rows": (("limits", "max_state_rows"), "IVM_MAX_STATE_ROWS", _limit),
    "memory_budget": (("limits", "memory_budget"), "IVM_MEMORY_BUDGET", _byte_size),
    "lock_timeout": (("refresh", "lock_timeout"), "IVM_LOCK_TIMEOUT", _seconds),
    "executor": (("executor", "default"), "IVM_EXECUTOR", _executor),
    "shards": (("executor", "shards"), "IVM_SHARDS", _positive_int),
    "executor_memory_budget": (
        ("executor", "memory_budget"),
        "IVM_EXECUTOR_MEMORY_BUDGET",
        _budget,
    ),
    "executor_bytes_per_row": (
        ("executor", "bytes_per_row"),
        "IVM_EXECUTOR_BYTES_PER_ROW",
        _positive_int,
    ),
    "executor_large_change_rows": (
        ("executor", "large_change_rows"),
        "IVM_EXECUTOR_LARGE_CHANGE_ROWS",
        _positive_int,
    ),
}
#: settings where an explicit ``None`` means "no limit" rather than "not given"
_NULLABLE = frozenset({"max_iterations", "max_state_rows", "memory_budget"})
_SECTIONS = {"warehouse": None, "spark": {"master", "shuffle_partitions", "conf"}}
_SECTIONS |= {"limits": {"max_iterations", "max_state_rows", "memory_budget"}}
_SECTIONS |= {"refresh": {"lock_timeout"}}
_SECTIONS |= {
    "executor": {"default", "shards", "memory_budget", "bytes_per_row", "large_change_rows"}
}


def _parse(key: str, source: str, raw: object) -> Any:
    what = f"[{'.'.join(_KEYS[key][0])}]" if source.startswith("file") else key
    try:
        return _KEYS[key][2](raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(what, source, f"{raw!r} is not usable: {exc}") from None


# -- sources -------------------------------------------------------------------------------


def find_config_file(
    explicit: str | os.PathLike[str] | None, environ: Mapping[str, str]
) -> Path | None:
    """The config file to read: ``explicit``, else ``$IVM_CONFIG``, else ``./ivm.toml``."""
    if explicit is not None:
        return Path(explicit)
    if environ.get("IVM_CONFIG"):
        return Path(environ["IVM_CONFIG"])
    local = Path.cwd() / CONFIG_FILE_NAME
    return local if local.is_file() else None


def read_config_file(path: Path) -> dict[str, Any]:
    """The settings in a TOML file, as ``{setting: raw value}``; unknown keys are errors."""
    source = f"file {path}"
    try:
        with path.open("rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(
            "config", source, "no such file (fix the path, or unset IVM_CONFIG)"
        ) from None
    except OSError as exc:
        raise ConfigError("config", source, f"cannot read it: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("config", source, f"not valid TOML: {exc}") from None
    for name, value in doc.items():
        if name not in _SECTIONS:
            raise ConfigError(name, source, f"unknown key; known: {', '.join(sorted(_SECTIONS))}")
        allowed = _SECTIONS[name]
        if allowed is not None:
            if not isinstance(value, dict):
                raise ConfigError(name, source, "must be a [section] table")
            unknown = sorted(set(value) - allowed)
            if unknown:
                raise ConfigError(
                    f"{name}.{unknown[0]}",
                    source,
                    f"unknown key; known: {', '.join(sorted(allowed))}",
                )
    out: dict[str, Any] = {}
    for key, (toml_path, _, _) in _KEYS.items():
        node: Any = doc
        for part in toml_path:
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            out[key] = node
    return out


def load_settings(
    overrides: Mapping[str, object] | None = None,
    *,
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Resolve every setting: ``overrides`` (explicit arguments; :data:`UNSET` values are
    ignored), then ``environ`` (default ``os.environ``), then the config file, then defaults."""
    env = os.environ if environ is None else environ
    given = {
        k: v
        for k, v in (overrides or {}).items()
        if v is not UNSET and (v is not None or k in _NULLABLE)
    }
    unknown = sorted(set(given) - set(_KEYS))
    if unknown:
        raise ConfigError(unknown[0], "argument", f"unknown setting; known: {', '.join(_KEYS)}")
    path = find_config_file(config_file, env)
    from_file = read_config_file(path) if path is not None else {}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, (_, var, _) in _KEYS.items():
        if key in given:
            source, raw = "argument", given[key]
        elif env.get(var, "").strip():
            source, raw = f"environment {var}", env[var]
        elif key in from_file:
            source, raw = f"file {path}", from_file[key]
        else:
            continue
        values[key] = _parse(key, source, raw)
        sources[key] = source
    if (
        path is not None
        and sources.get("warehouse", "").startswith("file")
        and "://" not in values["warehouse"]
    ):
        # a relative warehouse in a config file is relative to the file, not to the caller
        values["warehouse"] = str((path.parent / values["warehouse"]).resolve())
    return Settings(**values, config_file=None if path is None else str(path), sources=sources)
