"""Tables and views by name in Spark SQL, and the attach script for other Spark applications.

In the project's SparkSession (delta-spark's ``DeltaCatalog`` is the session catalog) a table
``db.t`` is an external Delta table, ``CREATE TABLE `db`.`t` USING delta LOCATION '<path>'``,
read by the JVM connector: Spark plans every query on the latest committed version, scans it in
parallel (one task per file split) and reads deletion vectors and column mapping.  A view is
registered the same way: its Delta table holds exactly its rows (catalog.view_table).
Qualified names are real databases (``CREATE DATABASE IF NOT EXISTS``).

Other applications: the session catalog lives in the driver's memory (Spark's Hive metastore
would be an embedded Derby database, which one JVM at a time may open), so each warehouse keeps
``spark_attach.sql`` at its root (:func:`write_attach_script`, rewritten whenever a table or
view is added or dropped): the same statements, one per ``;``-terminated line, with paths
inside the warehouse written as ``${spark_ivm.warehouse}/...`` (Spark's variable
substitution), so a copied warehouse attaches its own tables.  A PySpark application with
delta-spark (docs/spark_attach.md has the full program) attaches a warehouse ``W`` with::

    spark.conf.set("spark_ivm.warehouse", W)
    for ddl in Path(W, "spark_attach.sql").read_text().split(";\\n")[:-1]: spark.sql(ddl)
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.names import Identifier, parse_identifier
from catalog.object_path import is_object_path
from catalog.storage import is_azure, is_object_store
from spark_exec.connector import ensure_delta_format
from spark_exec.errors import SparkSetupError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from catalog import Catalog
    from catalog.store import TableEntry, ViewEntry

ATTACH_FILE = "spark_attach.sql"
WAREHOUSE_VAR = "spark_ivm.warehouse"
_ATTR = "_spark_ivm_registered"  # {sql name: (location, view columns or None)} per session


def quote(name: str) -> str:
    """A Spark SQL identifier in backticks."""
    return "`" + name.replace("`", "``") + "`"


def spark_name(name: str | Identifier) -> str:
    """The name under which ``name`` is queryable in Spark SQL (``t`` or ```db`.`t```)."""
    ident = parse_identifier(name)
    return quote(ident.name) if ident.db is None else f"{quote(ident.db)}.{quote(ident.name)}"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def table_ddl(sql_name: str, location: str) -> str:
    """``CREATE TABLE`` of an external Delta table at ``location`` (a SQL string literal)."""
    return f"CREATE TABLE {sql_name} USING delta LOCATION {location}"


def read_delta(
    spark: SparkSession, path: str, *, view: bool = False, version: int | None = None
) -> DataFrame:
    """A DataFrame of the Delta table at ``path`` (view tables hold plain rows: ``view`` is
    kept for callers and changes nothing)."""
    ensure_delta_format(spark)
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", str(version))
    return reader.load(path)


def _registered(spark: SparkSession) -> dict[str, tuple[str, tuple[str, ...] | None]]:
    reg: dict[str, tuple[str, tuple[str, ...] | None]] | None = getattr(spark, _ATTR, None)
    if reg is None:
        reg = {}
        setattr(spark, _ATTR, reg)
    return reg


def _drop_existing(spark: SparkSession, ident: Identifier, sql_name: str) -> bool:
    """Drop a catalog view or external table named ``ident``; never a managed table.

    Goes to Spark's session catalog directly: ``DROP TABLE`` through ``DeltaCatalog`` would
    first load the Delta table, which fails once a dropped managed table's files are gone.
    """
    jvm: Any = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalog()
    tid = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(
        ident.name, jvm.scala.Option.apply(ident.db or "default")
    )
    if not catalog.tableExists(tid):
        return False
    kind = catalog.getTableMetadata(tid).tableType().name()
    if kind not in ("VIEW", "EXTERNAL"):  # EXTERNAL: the entry only; the Delta table stays
        raise SparkSetupError(
            f"Spark's catalog already has a {kind.lower()} table {sql_name}; drop or rename it "
            "before spark-ivm can register its own table of that name"
        )
    catalog.dropTable(tid, True, False)
    # the session catalog keeps a resolved relation (its file listing) per table name; a
    # table registered again under this name must not be answered from the dropped one's
    catalog.invalidateCachedTable(tid)
    return True


def register(spark: SparkSession, name: str | Identifier, path: str, *, view: bool = False) -> str:
    """Make the table (or view table) at ``path`` queryable as ``name``; returns the SQL name."""
    if ensure_delta_format(spark) != "jvm":
        raise SparkSetupError(
            f"cannot register {name}: this SparkSession has no delta-spark; build it with "
            "spark_exec.spark_session.local_spark() or add spark_exec.spark_session.delta_conf()"
        )
    if is_azure(path):
        raise SparkSetupError(
            f"cannot register {name} ({path}) in Spark SQL: reading abfss:// / az:// tables "
            "needs the hadoop-azure jars (ABFS), which spark-ivm does not fetch; read the view "
            "with Session.read() or deltalake, or add hadoop-azure and its Azure settings to "
            "the SparkSession yourself"
        )
    if is_object_store(path):
        from spark_exec import s3a

        s3a.configure(spark)
    ident = parse_identifier(name)
    sql_name = spark_name(ident)
    columns = None
    reg = _registered(spark)
    if reg.get(sql_name) == (path, columns):
        return sql_name
    if ident.db is not None:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(ident.db)}")
    _drop_existing(spark, ident, sql_name)
    reg.pop(sql_name, None)
    spark.sql(table_ddl(sql_name, _literal(path)))
    reg[sql_name] = (path, columns)
    return sql_name


def unregister(spark: SparkSession, name: str | Identifier) -> bool:
    """Remove ``name`` from Spark SQL (the Delta table stays); whether it was registered."""
    ident = parse_identifier(name)
    sql_name = spark_name(ident)
    _registered(spark).pop(sql_name, None)
    return _drop_existing(spark, ident, sql_name)


# -- the attach script for other applications ----------------------------------------------
def _location(root: Path, path: str) -> str:
    """``path``, relative to ``${spark_ivm.warehouse}`` when inside the warehouse."""
    if is_object_path(root):  # s3:// locations (a Path would fold the '//')
        prefix = root.as_posix() + "/"
        rel = path[len(prefix) :] if path.startswith(prefix) else None
        return path if rel is None else "${" + WAREHOUSE_VAR + "}/" + rel
    full = Path(os.path.join(root, path))
    try:
        rel = full.relative_to(root).as_posix()
    except ValueError:
        return full.as_posix()
    return "${" + WAREHOUSE_VAR + "}/" + rel


def attach_statements(catalog: Catalog) -> list[str]:
    """The statements that register every table and view of ``catalog`` in a Spark session."""
    root = catalog.warehouse.root
    out: list[str] = []
    entries: list[TableEntry | ViewEntry] = [*catalog.tables(), *catalog.views()]
    dbs = sorted({e.ident.db for e in entries if e.ident.db})
    out += [f"CREATE DATABASE IF NOT EXISTS {quote(db)}" for db in dbs]
    from spark_exec.events import event_log_ddl, event_log_dir

    log_dir = event_log_dir(catalog.warehouse.internal_dir).as_posix()
    out.append(event_log_ddl(_literal(_location(root, log_dir))))
    for t in entries:  # views too: a view table is a Delta table of its rows
        out.append(
            table_ddl(spark_name(t.ident), _literal(_location(root, t.path))).replace(
                "CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1
            )
        )
    return out


def render_attach_script(statements: Iterable[str]) -> str:
    head = (
        "-- spark-ivm: the tables and views of this warehouse for any Spark session with\n"
        "-- delta-spark. Set spark_ivm.warehouse to this directory, then run each statement\n"
        "-- (one per line, ending in ';'). Rewritten by spark-ivm; do not edit.\n"
    )
    return head + "".join(s + ";\n" for s in statements)


def write_attach_script(catalog: Catalog) -> Path:
    """(Re)write ``<warehouse>/spark_attach.sql`` atomically; returns its path."""
    root = catalog.warehouse.root
    target = root / ATTACH_FILE
    text = render_attach_script(attach_statements(catalog))
    if target.is_file() and target.read_text() == text:
        return target
    if is_object_path(target):  # one PUT replaces the object whole
        target.write_text(text)
        return target
    root.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".spark_attach-", dir=root)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, target)
    return target
