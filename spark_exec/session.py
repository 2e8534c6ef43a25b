"""``Session``: tables, materialized views and refreshes over one warehouse, with Spark.

>>> import tempfile                                         # doctest: +SKIP
>>> from spark_exec import Session                          # doctest: +SKIP
>>> s = Session(warehouse=tempfile.mkdtemp())               # doctest: +SKIP
>>> s.sql("CREATE TABLE edges (src BIGINT, dst BIGINT)")     # doctest: +SKIP
>>> s.sql("INSERT INTO edges VALUES (1, 2), (2, 3)")         # doctest: +SKIP
>>> s.sql("CREATE MATERIALIZED VIEW out_deg AS "
...       "SELECT src, count(*) AS n FROM edges GROUP BY src")  # doctest: +SKIP
>>> s.sql("DELETE FROM edges WHERE src = 1"); s.refresh()   # doctest: +SKIP
>>> s.spark.sql("SELECT * FROM out_deg").show()             # doctest: +SKIP

What a Session does, and where the work happens:

* statements (``s.sql``) are split and parsed into one statement model by
  :mod:`spark_exec.statements` and dispatched once (:meth:`Session._run`); DDL and DML go to
  the catalog (:mod:`catalog`, DML in :mod:`catalog.dml`), queries to Spark SQL; every
  statement gives one :class:`~spark_exec.result.SqlResult` (``s.sql("SELECT ...").toDF()``
  is Spark's DataFrame, ``.to_arrow()`` its rows);
* ``CREATE MATERIALIZED VIEW`` compiles the view into its refresh group's dataflow *in
  memory first* — any error (unknown table, unsupported SQL with line and column, type
  mismatch) is raised before anything is written — then records it, creates its view table
  and runs the group's first refresh (if that fails the view is dropped again);
* ``s.refresh()`` refreshes every group in turn (:mod:`catalog.pipeline`), dependency order
  inside each group; the reports are returned and kept in ``s.last_reports``.  Groups are
  isolated: a group that fails is marked ``failed`` with its error and time
  (:mod:`spark_exec.status`), keeps its last committed state, and the other groups still
  refresh and commit; then :class:`~spark_exec.errors.RefreshFailedError` is raised naming
  every failed group (a refresh of one group raises that group's own error);
* resource limits (``max_iterations``, ``max_state_rows``, ``memory_budget``;
  :mod:`ivm.limits`) are checked between the iterations of every loop; past one, the
  epoch is rolled back and a :class:`~ivm.limits.ResourceLimitError` names the views;
* Spark is started only when first needed (``s.spark``, a query, ``INSERT ... SELECT``); every
  table and view is then a name in Spark SQL (a temporary view over its Delta table that shows
  the latest committed version: for a view, its last refresh).

Concurrency: one Session refreshes a warehouse at a time (other processes may write the base
tables at any time).  Every operation re-reads the catalog, so several Sessions (processes)
see each other's tables and views.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, assert_never

import pyarrow as pa

from catalog import Catalog, delta, dml
from catalog.errors import CatalogError, DependencyError, NameClashError
from catalog.names import Identifier, parse_identifier
from catalog.pipeline import (
    DATALOG,
    SQL,
    BuiltGroup,
    GroupRuntime,
    GroupSpec,
    Progress,
    RefreshReport,
    build_group,
    check_datalog_input,
    language_of,
    plan_groups,
    refresh_group,
    stale_checkpoint_groups,
)
from catalog.sql_types import columns_schema, frontend_columns, view_schema
from catalog.storage import is_azure
from catalog.store import TableEntry, ViewEntry
from catalog.view_clustering import check_cluster_columns
from catalog.view_options import ViewOptions
from catalog.view_partitions import check_partition_columns
from ivm import limits as ivm_limits
from ivm.errors import PlanError
from spark_exec import ddl, warmup
from spark_exec import statements as S
from spark_exec import status as status_file
from spark_exec.config import UNSET, load_settings
from spark_exec.errors import RefreshFailedError, SparkSqlError, StatementError
from spark_exec.events import (
    Event,
    EventCallback,
    EventLog,
    failure_event,
    progress_event,
    read_event_log,
    report_event,
)
from spark_exec.executor_policy import ShardedRefresh
from spark_exec.result import MetricValue, SqlResult, StatementKind, affected_rows
from spark_exec.sharded import ExecutorPolicy

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from sqlglot import exp

log = logging.getLogger("ivm.session")

_DATALOG_ARROW = {"int64": pa.int64(), "float64": pa.float64(), "str": pa.string()}
#: the columns of ``SHOW MATERIALIZED VIEWS``
_SHOW_VIEWS = columns_schema(
    "name STRING, language STRING, inputs STRING, group STRING, status STRING, "
    "last_refresh STRING, epoch BIGINT, input_versions STRING, behind BIGINT, last_error STRING"
)

__all__ = ["RefreshReport", "Session", "SqlResult"]


def _policy_arguments(policy: ExecutorPolicy | None) -> dict[str, object]:
    """An explicit ``executor_policy``'s thresholds, as the settings they override."""
    if policy is None:
        return {}
    return {
        "executor_memory_budget": policy.memory_budget_bytes,
        "executor_bytes_per_row": policy.bytes_per_row,
        "executor_large_change_rows": policy.large_change_rows,
    }


class Session:
    """Incrementally maintained SQL and Datalog views over the Delta tables of a warehouse.

    ``warehouse``: the directory holding tables, views, catalog and checkpoints (default
    ``./warehouse``).  ``spark``: a SparkSession to use — it must have delta-spark (jars,
    extension, ``DeltaCatalog``), else :class:`~spark_exec.errors.SparkSetupError` lists what
    it lacks; without one, a local session is started on first use
    (``spark_exec.spark_session.local_spark``).  Spark master and conf, limits, lock wait and
    warehouse also come from ``IVM_*`` variables and ``ivm.toml`` (``config``; see
    :mod:`spark_exec.config`).  ``on_event`` is called with every refresh event (a group
    starting, each step, each view's report or a failure; :mod:`spark_exec.events`), and
    reports and failures are also logged in the warehouse's event log
    (:meth:`event_log`, the Spark table ``ivm_event_log``).  ``refresh_hook`` is
    called with the name of each step of a refresh (crash-injection for tests).

    Resource limits of a refresh, checked between the iterations of every loop (recursive
    SQL, Datalog recursion): ``max_iterations`` rounds of one loop per refresh (default
    10,000), ``max_state_rows`` rows held in a group's arrangements (default 200 million),
    ``memory_budget`` resident bytes of this process (default: 80% of the machine's memory).  ``None`` lifts a
    limit.  Past one, the refresh is rolled back and
    :class:`~ivm.limits.ResourceLimitError` names the views and the setting to change.

    Where each epoch runs (:mod:`spark_exec.executor_policy`): ``executor`` is the default of
    the views without ``TBLPROPERTIES ('ivm.executor' = ...)``: ``'local'`` (in this
    process, the default), ``'spark'`` (sharded: one Spark barrier stage of ``shards``
    engines per epoch) or ``'auto'`` (``executor_policy`` decides per epoch from the state,
    the change and its memory budget).  ``executor``, ``shards`` and the policy's thresholds
    also come from ``IVM_EXECUTOR``, ``IVM_SHARDS``, ``IVM_EXECUTOR_*`` and ``[executor]`` in
    ``ivm.toml``; an ``executor_policy`` given here wins over them.  Sharded epochs run on
    ``shard_spark`` if given, else on :attr:`spark`: with a cluster master
    (``spark_master='local-cluster[...]'``, ``spark://``, ``yarn``, ``k8s://``) on the
    cluster, with ``local[N]`` as N tasks of this machine's local Spark (``docs/executors.md``).

    ``warm_up`` (default on; ``IVM_WARMUP=0`` turns it off everywhere): the SQL front end and
    the engine's compiled kernels load on a thread while the caller goes on
    (:mod:`spark_exec.warmup`), so the first view created is not slowed by them.
    """

    def __init__(
        self,
        spark: SparkSession | None = None,
        warehouse: str | os.PathLike[str] | None = None,
        *,
        refresh_hook: Callable[[str], None] | None = None,
        on_event: EventCallback | None = None,
        max_iterations: int | None = UNSET,
        max_state_rows: int | None = UNSET,
        memory_budget: int | str | None = UNSET,
        spark_master: str | None = None,
        spark_conf: Mapping[str, str] | None = None,
        shuffle_partitions: int | None = None,
        lock_timeout: float | None = None,
        config: str | os.PathLike[str] | None = None,
        executor: str = UNSET,
        shards: int = UNSET,
        shard_spark: SparkSession | None = None,
        executor_policy: ExecutorPolicy | None = None,
        warm_up: bool = True,
    ) -> None:
        self.settings = load_settings(
            {
                "executor": executor,
                "shards": shards,
                **_policy_arguments(executor_policy),
                "warehouse": None if warehouse is None else os.fspath(warehouse),
                "max_iterations": max_iterations,
                "max_state_rows": max_state_rows,
                "memory_budget": memory_budget,
                "spark_master": spark_master,
                "spark_conf": spark_conf,
                "shuffle_partitions": shuffle_partitions,
                "lock_timeout": lock_timeout,
            },
            config_file=config,
        )
        self.limits = self.settings.limits
        self.catalog = Catalog(self.settings.warehouse)
        self.catalog.checkpoints.lock_timeout = self.settings.lock_timeout
        self._spark = spark
        self._registered = False
        self._runtime = GroupRuntime()
        #: where each epoch runs (spark_exec.executor_policy); ``executors.faults`` injects
        self.executors = ShardedRefresh(
            (lambda: shard_spark) if shard_spark is not None else (lambda: self.spark),
            self.catalog.warehouse.internal_dir / "shards",
            self.settings.shards,
            self.settings.executor,
            ExecutorPolicy.of(self.settings),
            enforce_budget=self.settings.sources.get("executor_memory_budget", "default")
            != "default",
        )
        self.refresh_hook = refresh_hook
        #: called with each refresh event (spark_exec.events); also settable later
        self.on_event: EventCallback | None = on_event
        self._event_log = EventLog(self.catalog.warehouse.internal_dir)
        self.last_reports: list[RefreshReport] = []
        if warm_up:  # the front end and compiled kernels load while the caller goes on
            warmup.start()
        if spark is not None:
            from spark_exec.spark_session import require_spark_ivm_ready

            require_spark_ivm_ready(spark)
            self._register_all()

    def __repr__(self) -> str:
        return f"Session(warehouse={self.warehouse.as_posix()!r})"

    @property
    def warehouse(self) -> Path:
        return self.catalog.warehouse.root

    # -- Spark -----------------------------------------------------------------------------
    @property
    def spark(self) -> SparkSession:
        """The SparkSession (started on first use); every table and view is a name in it."""
        if self._spark is None:
            from spark_exec.spark_session import local_spark

            self._spark = local_spark(
                self.catalog.warehouse.spark_warehouse_dir,
                master=self.settings.spark_master,
                conf=self.settings.spark_settings(),
                s3=self.catalog.warehouse.remote and not is_azure(self.catalog.warehouse.root),
            )
        if not self._registered:
            self._register_all()
        return self._spark

    def _register_all(self) -> None:
        self._registered = True
        self._register_event_log()
        entries: list[TableEntry | ViewEntry] = [*self.catalog.tables(), *self.catalog.views()]
        for e in entries:
            self._register(e)

    def _register_event_log(self) -> None:
        from spark_exec.events import EVENT_LOG_TABLE, event_log_ddl, event_log_dir

        if self._spark is None:
            return
        directory = event_log_dir(self.catalog.warehouse.internal_dir)
        directory.mkdir(parents=True, exist_ok=True)
        if is_azure(self.catalog.warehouse.root):  # no hadoop-azure (spark_exec.registry)
            log.warning("the event log of an Azure warehouse is not a Spark SQL table")
            return
        try:  # this warehouse's log, also when the SparkSession served another one before
            from spark_exec.registry import _drop_existing  # never a managed table

            if self.catalog.warehouse.remote:
                from spark_exec import s3a

                s3a.configure(self._spark)

            _drop_existing(self._spark, parse_identifier(EVENT_LOG_TABLE), EVENT_LOG_TABLE)
            self._spark.sql(event_log_ddl("'" + directory.as_posix().replace("'", "\\'") + "'"))
        except Exception as exc:  # queryable by Session.event_log() regardless
            log.warning("cannot register the event log in Spark SQL: %s", exc)

    def _register(self, entry: TableEntry | ViewEntry) -> None:
        from spark_exec.registry import register, write_attach_script

        write_attach_script(self.catalog)
        if self._spark is None or not self._registered:
            return

        try:
            register(self._spark, entry.name, entry.path, view=isinstance(entry, ViewEntry))
        except Exception as exc:  # a dropped external table must not break the session
            log.warning("cannot make %s queryable in Spark SQL: %s", entry.name, exc)

    def _unregister(self, name: str) -> None:
        from spark_exec.registry import write_attach_script

        write_attach_script(self.catalog)
        if self._spark is not None and self._registered:
            from spark_exec.registry import unregister

            unregister(self._spark, name)

    def _spark_rows(self, query: str) -> pa.Table:
        return self.spark.sql(query).toArrow()

    def table_path(self, name: str) -> str:
        """The Delta location of a table or view (``spark.read.format("delta").load(it)``)."""
        return self.catalog.lookup(name).path

    # -- statements ------------------------------------------------------------------------
    def sql(self, text: str) -> SqlResult:
        """Run one or more ``;``-separated statements; returns the last one's result.

        Every statement gives a :class:`~spark_exec.result.SqlResult` (DDL, DML, queries,
        SHOW, DESCRIBE, REFRESH alike): ``to_arrow()``, ``to_pandas()``, ``toDF()``,
        ``show()``, its ``kind`` and ``affected_rows``.  A script without a statement gives
        an ``empty`` result.
        """
        results = self.run_script(text)
        if not results:
            return self._result("", "empty", "no statement")
        return results[-1]

    def run_script(self, text: str) -> list[SqlResult]:
        """Run every statement of ``text`` in order; one result per statement."""
        return [self._run(st) for st in S.split_statements(text)]

    def _result(
        self, statement: str, kind: StatementKind, message: str, **options: Any
    ) -> SqlResult:
        """A statement's result (``options`` as :class:`SqlResult` takes them); its
        ``toDF()`` uses this Session's SparkSession."""
        return SqlResult(statement, kind, message, spark=lambda: self.spark, **options)

    def _run(self, st: S.Statement) -> SqlResult:
        """Run one statement: the one dispatch over the statement model."""
        stmt = S.parse(st)
        match stmt:
            case S.CreateView():
                return self._create_view_stmt(stmt, st)
            case S.DropView() | S.DropTable():
                return self._drop_stmt(stmt)
            case S.RefreshView(name=name, full=full):
                reports = self.refresh(name, full=full)
                return self._result(
                    "REFRESH MATERIALIZED VIEW",
                    "refresh",
                    f"refreshed {len(reports)} view(s)",
                    reports=reports,
                )
            case S.ExplainView(name=name):
                plan = self.explain(name)
                return self._result(
                    "EXPLAIN MATERIALIZED VIEW", "explain", plan, rows=pa.table({"plan": [plan]})
                )
            case S.ShowViews():
                return self._result(
                    "SHOW MATERIALIZED VIEWS",
                    "show",
                    "materialized views:",
                    rows=self.show_views(),
                )
            case S.DescribeView(name=name, extended=extended):
                return self._describe_view(name, extended)
            case S.ShowCreate(name=name):
                return self._catalog_or_spark(
                    name, st, "SHOW CREATE TABLE", "show", ddl.create_statement
                )
            case S.DescribeHistory(name=name):
                return self._catalog_or_spark(name, st, "DESCRIBE HISTORY", "describe", ddl.history)
            case S.AlterViewSchedule():
                return self._alter_schedule(stmt, st)
            case S.AlterViewClustering(name=name, columns=columns):
                return self._alter_clustering(name, columns)
            case S.CreateTable(definition=d):
                return self._create_table(d, st)
            case S.Dml(tree=tree):
                return self._write_result(
                    tree.key.upper(), dml.write(self.catalog, tree, st, self._spark_rows)
                )
            case S.PassToSpark(tree=tree):
                return self._spark_sql(st, tree)
            case _:
                assert_never(stmt)

    def _drop_stmt(self, stmt: S.DropView | S.DropTable) -> SqlResult:
        """``DROP MATERIALIZED VIEW`` or ``DROP TABLE``; the message says if there was one."""
        if isinstance(stmt, S.DropView):
            noun, dropped = "materialized view", self.drop_view(stmt.name, if_exists=stmt.if_exists)
        else:
            noun, dropped = "table", self.drop_table(stmt.name, if_exists=stmt.if_exists)
        message = f"dropped {noun} {stmt.name}" if dropped else f"no {noun} {stmt.name}"
        return self._result(f"DROP {noun.upper()}", "ddl", message)

    def _catalog_or_spark(
        self,
        name: str,
        st: S.Statement,
        what: str,
        kind: StatementKind,
        show: Callable[[TableEntry | ViewEntry], pa.Table | str],
    ) -> SqlResult:
        """``show`` of a catalog table or view; Spark SQL runs the statement for other names."""
        entry = self.catalog.store.find(name)
        if entry is None:
            return self._spark_sql(st, None)
        out = show(entry)
        rows = pa.table({"createtab_stmt": [out]}) if isinstance(out, str) else out
        return self._result(what, kind, f"{what} {entry.name}:", rows=rows)

    def _write_result(self, what: str, w: delta.WriteResult) -> SqlResult:
        """A DML statement's result: the table version, the rows it wrote, the metrics."""
        m: dict[str, MetricValue] = dict(w.metrics)
        detail = ", ".join(
            f"{k}={v}" for k, v in m.items() if k.startswith("num_") and isinstance(v, int) and v
        )
        return self._result(
            what,
            "dml",
            f"{what}: table version {w.version}" + (f" ({detail})" if detail else ""),
            metrics=m,
            affected_rows=affected_rows(m),
        )

    def _describe_view(self, name: str, extended: bool) -> SqlResult:
        entry = self.catalog.view(name)
        status: dict[str, str] = {}
        if extended:
            row = next(r for r in self.show_views().to_pylist() if r["name"] == entry.name)
            status = {
                "Status": str(row["status"]),
                "Last Refresh": str(row["last_refresh"]),
                "Epoch": str(row["epoch"]),
                "Input Versions": str(row["input_versions"]),
            }
        rows = ddl.describe_view(entry, extended=extended, status=status)
        return self._result(
            "DESCRIBE MATERIALIZED VIEW", "describe", f"materialized view {entry.name}:", rows=rows
        )

    def _alter_schedule(self, stmt: S.AlterViewSchedule, st: S.Statement) -> SqlResult:
        """``ALTER MATERIALIZED VIEW v {ADD|ALTER} SCHEDULE ... | DROP SCHEDULE`` (recorded
        in the catalog; the always-on refresher that runs schedules is future work)."""
        entry = self.catalog.view(stmt.name)
        has = entry.options.schedule is not None
        what = f"ALTER MATERIALIZED VIEW {entry.name} {stmt.action} SCHEDULE"
        if stmt.action == "ADD" and has:
            detail = "the view has a schedule already; use ALTER SCHEDULE to change it"
        elif stmt.action != "ADD" and not has:
            detail = "the view has no schedule; use ADD SCHEDULE"
        else:
            detail = ""
        if detail:
            raise StatementError(what, detail, **st.where)
        options = dataclasses.replace(entry.options, schedule=stmt.schedule)
        self.catalog.store.set_view_options(entry.ident, options)
        shown = stmt.schedule.sql() if stmt.schedule is not None else "no schedule"
        return self._result(
            "ALTER MATERIALIZED VIEW", "ddl", f"materialized view {entry.name}: {shown}"
        )

    def _alter_clustering(self, name: str, columns: tuple[str, ...]) -> SqlResult:
        """``ALTER MATERIALIZED VIEW v CLUSTER BY (cols) | CLUSTER BY NONE``: the view table's
        clustering columns change in one commit (catalog.view_clustering); files written from
        then on are sorted by the new columns, files written before stay as they are."""
        from catalog import view_clustering

        entry = self.catalog.view(name)
        check_cluster_columns(
            entry.schema,
            columns,
            view=entry.name,
            partitioned_by=entry.options.partitioned_by,
        )
        if columns or view_clustering.is_clustered(entry.path):
            view_clustering.enable(entry.path, columns, view=entry.name)
        options = dataclasses.replace(entry.options, clustered_by=columns)
        self.catalog.store.set_view_options(entry.ident, options)
        shown = f"CLUSTER BY ({', '.join(columns)})" if columns else "CLUSTER BY NONE"
        return self._result(
            "ALTER MATERIALIZED VIEW", "ddl", f"materialized view {entry.name}: {shown}"
        )

    def _spark_sql(self, st: S.Statement, tree: exp.Expr | None) -> SqlResult:
        """Run ``st`` in Spark SQL; Spark's parse and analysis errors become typed errors.

        A query's result holds Spark's DataFrame (rows computed when asked for); commands
        (Spark's DDL, SHOW, DESCRIBE, ...) run here, as ``spark.sql`` runs them."""
        from pyspark.errors import PySparkException

        try:
            df = self.spark.sql(st.body)
        except PySparkException as exc:
            error_class = exc.getCondition() if hasattr(exc, "getCondition") else None
            first = str(exc).strip().splitlines()
            raise SparkSqlError(
                first[0] if first else type(exc).__name__, spark_error=error_class, **st.where
            ) from exc
        statement, kind = S.spark_statement_kind(tree, st)
        return self._result(statement, kind, "", dataframe=df)

    # -- tables ----------------------------------------------------------------------------
    def _create_table(self, d: S.TableDefinition, st: S.Statement) -> SqlResult:
        if d.location is not None:
            if d.query is not None:
                raise StatementError(
                    "CREATE TABLE", "AS SELECT with LOCATION is not supported", **st.where
                )
            entry = self.catalog.register_table(d.name, d.location)
            if d.schema is not None:
                declared = [(f.name, str(f.type)) for f in d.schema]
                actual = [(f.name, str(f.type)) for f in entry.schema]
                if declared != actual:
                    self.catalog.drop_table(entry.ident)
                    raise StatementError(
                        f"CREATE TABLE {entry.name}",
                        f"declared columns {declared} differ from the Delta table's {actual}",
                        **st.where,
                    )
            self._register(entry)
            return self._result(
                "CREATE TABLE", "ddl", f"registered Delta table {entry.name} at {entry.path}"
            )
        if d.query is not None:
            if d.schema is not None:
                raise StatementError(
                    "CREATE TABLE", "give columns or AS SELECT, not both", **st.where
                )
            ident = parse_identifier(d.name)
            if self.catalog.store.find(ident) is not None and not d.if_not_exists:
                raise NameClashError(str(ident), self.catalog.lookup(ident).kind)
            rows = self._spark_rows(d.query.sql(S.DIALECT))
            schema = pa.schema([pa.field(f.name, f.type, True) for f in rows.schema])
            entry = self.catalog.create_table(ident, schema, if_not_exists=d.if_not_exists)
            from catalog import delta

            if rows.num_rows:
                delta.insert(entry.path, rows.cast(schema))
            self._register(entry)
            return self._result(
                "CREATE TABLE",
                "ddl",
                f"created table {entry.name} ({rows.num_rows} rows)",
                affected_rows=rows.num_rows,
            )
        if d.schema is None:
            raise StatementError("CREATE TABLE", "needs columns, AS SELECT or LOCATION", **st.where)
        entry = self.catalog.create_table(d.name, d.schema, if_not_exists=d.if_not_exists)
        self._register(entry)
        return self._result("CREATE TABLE", "ddl", f"created table {entry.name}")

    def create_table(self, name: str, schema: pa.Schema) -> TableEntry:
        """Create a managed Delta table (change data feed on) from an Arrow schema."""
        entry = self.catalog.create_table(name, schema)
        self._register(entry)
        return entry

    def drop_table(self, name: str, *, if_exists: bool = False) -> bool:
        return self._drop(name, TableEntry, if_exists)

    # -- views -----------------------------------------------------------------------------
    def _create_view_stmt(self, stmt: S.CreateView, st: S.Statement | None) -> SqlResult:
        """``CREATE [OR REPLACE] MATERIALIZED VIEW``: compile first, then record and refresh.

        ``OR REPLACE`` compiles the new definition in memory before touching the old view;
        an error there leaves the old view as it was.  Then the old view is dropped and the
        new one created; should that fail (say its first refresh hits a resource limit), the
        old view is created again from its stored definition.
        """
        ident = parse_identifier(stmt.name)
        existing = self.catalog.store.find(ident)
        replace = None
        if existing is not None:
            if stmt.if_not_exists and isinstance(existing, ViewEntry):
                return self._result("CREATE MATERIALIZED VIEW", "ddl", f"{ident} exists")
            if not (stmt.or_replace and isinstance(existing, ViewEntry)):
                raise NameClashError(str(ident), existing.kind)
            replace = existing
        entry = self._view_entry(ident, stmt)
        if replace is None:
            reports = self._add_views([entry])
            return self._result(
                "CREATE MATERIALIZED VIEW",
                "ddl",
                f"created materialized view {ident}",
                reports=reports,
            )
        return self._replace_view(replace, entry)

    def _view_entry(self, ident: Identifier, stmt: S.CreateView) -> ViewEntry:
        """The catalog entry of a new view (its query planned: errors carry positions)."""
        from sql_frontend import plan as p
        from sql_frontend.compile import output_names
        from sql_frontend.planner import plan_sql

        entries: list[TableEntry | ViewEntry] = [*self.catalog.tables(), *self.catalog.views()]
        known = {e.name: frontend_columns(e.schema) for e in entries}
        node = plan_sql(stmt.located_query, known)  # errors: line, column in the script
        definition, options = stmt.query, stmt.options
        if options.columns:
            definition = _rename_outputs(stmt, output_names(node.schema))
            options = dataclasses.replace(options, query=stmt.query)
            node = plan_sql(definition, known)
        schema = view_schema(
            list(zip(output_names(node.schema), [t for _, t in node.schema], strict=True))
        )
        check_partition_columns(schema, options.partitioned_by, view=str(ident))
        check_cluster_columns(
            schema, options.clustered_by, view=str(ident), partitioned_by=options.partitioned_by
        )
        return ViewEntry(
            ident,
            definition,
            SQL.name,
            tuple(parse_identifier(d) for d in p.tables(node)),
            self.catalog.warehouse.view_path(ident).as_posix(),
            schema,
            "pending",
            options=options,
        )

    def _replace_view(self, old: ViewEntry, new: ViewEntry) -> SqlResult:
        dependents = self.catalog.store.dependents(old.ident)
        if dependents:
            raise DependencyError(str(old.ident), dependents)
        specs = plan_groups(self.catalog, extra=[new])
        build_group(self.catalog, next(s for s in specs if new.ident in {v.ident for v in s.views}))
        self.drop_view(old.name)
        try:
            reports = self._add_views([new])
        except BaseException:
            log.warning("CREATE OR REPLACE of %s failed; restoring the old view", old.name)
            self._add_views([old])
            raise
        return self._result(
            "CREATE MATERIALIZED VIEW",
            "ddl",
            f"replaced materialized view {old.name}",
            reports=reports,
        )

    def create_view(
        self, name: str, query: str | DataFrame, *, options: ViewOptions | None = None
    ) -> list[RefreshReport]:
        """``CREATE MATERIALIZED VIEW name AS query``; returns the first refresh's reports.

        ``query`` is SQL text or a DataFrame built on :attr:`spark` from this warehouse's
        tables and views; a DataFrame is compiled from Spark's analyzed plan
        (:meth:`dataframe_sql`), so Spark resolves its names, types and functions.
        ``options``: what DDL would add (comment, ``PARTITIONED BY``, ``CLUSTER BY``, ...;
        catalog.view_options)."""
        if not isinstance(query, str):
            query = self.dataframe_sql(query)
        stmt = S.CreateView(name, query, query, options=options or ViewOptions())
        return list(self._create_view_stmt(stmt, None).reports)

    def dataframe_sql(self, df: DataFrame) -> str:
        """The SQL query (over this warehouse's tables) equal to ``df``, written from Spark's
        analyzed logical plan (:mod:`sql_frontend.spark_plan`)."""
        import json

        from sql_frontend.errors import UnsupportedSqlError
        from sql_frontend.spark_plan import plan_to_sql

        jdf = getattr(df, "_jdf", None)
        if jdf is None:
            raise UnsupportedSqlError(
                f"a {type(df).__name__} as a view definition",
                reason="give SQL text or a classic (not Spark Connect) pyspark DataFrame",
            )
        if df.sparkSession._jsparkSession != self.spark._jsparkSession:
            raise UnsupportedSqlError(
                "a DataFrame of another SparkSession",
                reason="build it from this Session's spark (session.spark.table('t'))",
            )
        analyzed = jdf.queryExecution().analyzed()
        if "try_cast(" in analyzed.toString().lower():  # the JSON form drops the eval mode
            raise UnsupportedSqlError(
                "try_cast in a DataFrame view", reason="define this view in SQL instead"
            )

        def table_name(ident: dict[str, Any]) -> str | None:
            db = ident.get("database") or "default"
            name = ident["table"] if db == "default" else f"{db}.{ident['table']}"
            return name if self.catalog.store.find(parse_identifier(name)) is not None else None

        return plan_to_sql(json.loads(analyzed.toJSON()), table_name)

    def _add_views(self, entries: Sequence[ViewEntry]) -> list[RefreshReport]:
        """Validate (build the new group in memory), record, then run the first refresh."""
        specs = plan_groups(self.catalog, extra=entries)
        spec = next(s for s in specs if entries[0].ident in {v.ident for v in s.views})
        built = build_group(self.catalog, spec)  # every compile error surfaces here
        created: list[ViewEntry] = []
        try:
            for e in entries:
                created.append(
                    self.catalog.create_view(
                        e.ident,
                        e.definition,
                        e.language,
                        e.dependencies,
                        e.schema,
                        group=spec.name,
                        options=e.options,
                    )
                )
            reports = self._refresh_specs([self._spec_of(str(entries[0].ident))], built=built)
        except BaseException:
            for e in reversed(created):
                self.catalog.drop_view(e.ident, if_exists=True)
            raise
        for e in created:
            self._register(e)
        self._forget_stale_groups()
        self._record([report_event(r) for r in reports])
        return reports

    def _forget_stale_groups(self) -> None:
        """Drop in-memory dataflows of groups that no longer exist (merged into a larger group
        by a new view that reads them, or emptied by DROP): they would hold their state for
        nothing in a long-lived Session (``ivm serve``)."""
        live = {s.name for s in plan_groups(self.catalog)}
        for name in [n for n in self._runtime.built if n not in live]:
            self._runtime.forget(name)

    def drop_view(self, name: str, *, if_exists: bool = False) -> bool:
        dropped = self._drop(name, ViewEntry, if_exists)
        if dropped:
            self._runtime.forget()
        return dropped

    def _lock_group_of(self, view: str) -> str | None:
        """The group whose lock a refresh of ``view`` takes now; ``None`` (the group recorded
        in its entry) when the catalog cannot be planned (e.g. an input is gone)."""
        try:
            return self._spec_of(view).name
        except (CatalogError, PlanError):
            return None

    def _drop(self, name: str, kind: type[TableEntry] | type[ViewEntry], if_exists: bool) -> bool:
        """Drop the ``kind`` entry ``name`` and its Spark registration; False when there is
        none and ``if_exists`` (else the catalog's UnknownTableError / UnknownViewError)."""
        ident = parse_identifier(name)
        tables = kind is TableEntry
        if not isinstance(self.catalog.store.find(ident), kind):
            if if_exists:
                return False
            (self.catalog.table if tables else self.catalog.view)(ident)  # raises
        if tables:
            self.catalog.drop_table(ident)
        else:
            self.catalog.drop_view(ident, group=self._lock_group_of(str(ident)))
        self._unregister(str(ident))
        return True

    def datalog(self, text: str) -> list[RefreshReport]:
        """Create a materialized view per ``.output`` relation of a Datalog program.

        Each ``.input rel`` reads the catalog table (or view) ``rel``, columns by position;
        its types must fit the ``.decl`` (number: an integer column, float: a floating
        column, symbol: a string column).  Rows with a NULL are not facts.
        """
        from datalog import analyze
        from datalog.errors import UnsupportedError

        analysis = analyze(text)
        deps = []
        for rel, decl in analysis.input_schemas.items():
            entry = self.catalog.lookup(rel)
            check_datalog_input(rel, entry.schema, decl, analysis.relations[rel].decl.pos)
            deps.append(entry.ident)
        outputs = analysis.output_schemas
        if not outputs:
            raise UnsupportedError("a program without .output relations defines no view")
        entries = []
        seen: dict[str, str] = {}
        for rel, decl in outputs.items():
            ident = parse_identifier(rel)
            if str(ident) in seen or self.catalog.store.find(ident) is not None:
                raise NameClashError(
                    str(ident),
                    "materialized view" if str(ident) in seen else self.catalog.lookup(ident).kind,
                )
            if rel in analysis.input_schemas:
                raise UnsupportedError(f"relation {rel} is both .input and .output", construct=rel)
            seen[str(ident)] = rel
            schema = pa.schema([pa.field(c, _DATALOG_ARROW[d], False) for c, d in decl])
            entries.append(
                ViewEntry(
                    ident,
                    text,
                    DATALOG.name,
                    tuple(deps),
                    self.catalog.warehouse.view_path(ident).as_posix(),
                    schema,
                    "pending",
                )
            )
        return self._add_views(entries)

    def show_views(self) -> pa.Table:
        """One row per materialized view: name, language, inputs, group, and its freshness.

        ``status`` is ``fresh`` (reflects the current version of every input), ``stale``
        (``behind`` input versions are not reflected yet) or ``failed`` (the last refresh of
        its group failed with ``last_error``); ``last_refresh`` is the time (UTC) of the
        last successful refresh that reached a new epoch, ``epoch`` and ``input_versions`` what the view reflects.
        """
        rows = []
        specs = plan_groups(self.catalog)
        groups = {v.name: s for s in specs for v in s.views}
        seen: dict[str, status_file.ViewStatus] = {}
        for v in self.catalog.views():
            spec = groups.get(v.name)
            group = spec.name if spec is not None else v.group
            st = seen.get(group)
            if st is None:
                tables = {t.name: t.path for t in spec.tables} if spec is not None else {}
                st = seen[group] = status_file.view_status(self.catalog, group, tables)
            rows.append(
                {
                    "name": v.name,
                    "language": v.language,
                    "inputs": ", ".join(str(d) for d in v.dependencies),
                    "group": group,
                    "status": st.status,
                    "last_refresh": st.last_refresh,
                    "epoch": st.epoch,
                    "input_versions": ", ".join(
                        f"{k}@{n}" for k, n in sorted(st.input_versions.items())
                    ),
                    "behind": st.behind,
                    "last_error": st.last_error,
                }
            )
        return pa.Table.from_pylist(rows, schema=_SHOW_VIEWS)

    def read(self, name: str) -> pa.Table:
        """Current rows of a table or view, as Arrow (no Spark)."""
        return self.catalog.read(name)

    # -- refresh ---------------------------------------------------------------------------
    def _spec_of(self, view: str) -> GroupSpec:
        ident = self.catalog.view(view).ident
        return next(s for s in plan_groups(self.catalog) if ident in {v.ident for v in s.views})

    def refresh(self, view: str | None = None, *, full: bool = False) -> list[RefreshReport]:
        """Refresh every view (or the group of ``view``); one report per view.

        Groups are isolated: one that fails is marked failed (``SHOW MATERIALIZED VIEWS``)
        and the others still refresh; then :class:`RefreshFailedError` names the failed
        groups (with one group, its own error is raised).  ``full`` discards the groups'
        checkpoints first and recomputes the views from their inputs (``REFRESH
        MATERIALIZED VIEW v FULL``: the repair for a damaged checkpoint); the view tables
        then receive exactly the difference to the recomputed contents.
        """
        specs = plan_groups(self.catalog) if view is None else [self._spec_of(view)]
        if full:
            for spec in specs:
                log.info("full refresh of group %s: discarding its checkpoint", spec.name)
                self.catalog.checkpoints.clear(spec.name)
                self._runtime.forget(spec.name)
        reports: list[RefreshReport] = []
        failures: dict[str, BaseException] = {}
        try:
            for spec in specs:
                self._emit({"event": "group", "group": spec.name, "views": list(spec.view_names)})
                try:
                    done = self._refresh_specs([spec])
                except Exception as exc:
                    failures[spec.name] = exc
                    log.warning("refresh of group %s failed: %s", spec.name, exc)
                    self._record([failure_event(spec.name, list(spec.view_names), exc)])
                else:
                    reports += done
                    self._record([report_event(r) for r in done])
        finally:
            self.last_reports = reports
        if failures:
            if len(specs) == 1:
                raise next(iter(failures.values()))
            raise RefreshFailedError(failures, list(reports))
        if view is None:
            live = [s.name for s in specs]
            for name in [n for n in self._runtime.built if n not in live]:
                self._runtime.forget(name)  # e.g. merged into another group by a new view
            for name in stale_checkpoint_groups(self.catalog, live):
                log.info("removing the checkpoint of the former group %s", name)
                self.catalog.checkpoints.clear(name)
        return reports

    # -- events ----------------------------------------------------------------------------
    def _emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def _record(self, events: list[Event]) -> None:
        """Log refresh outcomes in the warehouse's event log and pass them to ``on_event``."""
        self._event_log.append(events)
        for e in events:
            self._emit(e)

    def _phase_hook(self, spec: GroupSpec) -> Callable[[str], None] | None:
        """The refresh's step hook: the user's ``refresh_hook``, then a ``phase`` event."""
        user = self.refresh_hook
        if self.on_event is None:
            return user

        def hook(step: str) -> None:
            if user is not None:
                user(step)
            self._emit({"event": "phase", "group": spec.name, "step": step})

        return hook

    def _progress_callback(self) -> Callable[[Progress], None] | None:
        """A refresh's progress as ``progress`` events (only when someone listens)."""
        if self.on_event is None:
            return None
        return lambda p: self._emit(progress_event(p))

    def event_log(self) -> pa.Table:
        """Every refresh and failure logged in this warehouse (spark_exec.events), as Arrow;
        Spark SQL reads the same as the table ``ivm_event_log``."""
        return read_event_log(self.catalog.warehouse.internal_dir)

    def _refresh_specs(
        self, specs: Sequence[GroupSpec], *, built: BuiltGroup | None = None
    ) -> list[RefreshReport]:
        """Refresh ``specs`` in turn under the resource limits; record each one's status."""
        reports: list[RefreshReport] = []
        try:
            for spec in specs:
                try:
                    with ivm_limits.active(self.limits):
                        done = refresh_group(
                            self.catalog,
                            spec,
                            self._runtime,
                            hook=self._phase_hook(spec),
                            built=built,
                            progress=self._progress_callback(),
                            runner=self.executors,
                        )
                except Exception as exc:
                    if isinstance(exc, ivm_limits.ResourceLimitError) and exc.view is None:
                        exc.view = ", ".join(spec.view_names)
                    if built is None:  # a failed CREATE is undone; its group is unchanged
                        status_file.record(self.catalog, spec.name, spec.view_names, error=exc)
                    raise
                if not done:  # its views were dropped meanwhile (catalog.pipeline.run)
                    continue
                status_file.record(self.catalog, spec.name, spec.view_names, epoch=done[0].epoch)
                reports += done
        finally:
            self.last_reports = reports
        return reports

    def explain(self, view: str) -> str:
        """How a view is computed: its plan, its group, and the group's dataflow."""
        entry = self.catalog.view(view)
        spec = self._spec_of(view)
        built = self._runtime.built.get(spec.name)
        if built is None or built.spec.fingerprint != spec.fingerprint:
            built = build_group(self.catalog, spec)
        head = [
            f"materialized view {entry.name} ({entry.language}), table {entry.path}",
            f"refresh group {spec.name}: views {', '.join(spec.view_names)}; base tables "
            f"{', '.join(t.name for t in spec.tables) or '(none)'}",
        ]
        head.extend(language_of(entry).explain_lines(entry))
        head.extend(self.executors.explain_lines(spec))
        return "\n".join(
            [*head, built.plans.get(entry.name, ""), "== Dataflow ==", built.g.explain()]
        )

    def close(self) -> None:
        """Forget in-memory dataflows (state is in the checkpoints)."""
        self._runtime.forget()


def _rename_outputs(stmt: S.CreateView, names: Sequence[str]) -> str:
    """The view's query with its outputs renamed by the column list (``(a COMMENT 'x', b)``)."""
    columns = [c for c, _ in stmt.options.columns]
    what = f"CREATE MATERIALIZED VIEW {stmt.name}"
    if len(columns) != len(names):
        raise StatementError(
            what, f"the column list names {len(columns)} columns; the query gives {len(names)}"
        )
    if len({n.lower() for n in names}) != len(names):
        raise StatementError(what, f"the query's columns {list(names)} repeat a name; alias them")

    def q(n: str) -> str:
        return "`" + n.replace("`", "``") + "`"

    outs = ", ".join(f"{q(n)} AS {q(c)}" for n, c in zip(names, columns, strict=True))
    return f"SELECT {outs} FROM (\n{stmt.query}\n) AS __ivm_columns"


def frontend_catalog(entries: Sequence[TableEntry | ViewEntry]) -> dict[str, list[Any]]:
    """``{name: [(column, type)]}`` for the SQL front end."""
    return {e.name: frontend_columns(e.schema) for e in entries}


def spark_dataframe(session: Session, name: str) -> DataFrame:
    """A table or view by name in Spark SQL."""
    from spark_exec.registry import spark_name

    return session.spark.table(spark_name(name))
