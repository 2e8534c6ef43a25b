"""``ivm.Session``: tables, materialized views and refreshes over one warehouse, with Spark.

>>> import ivm, tempfile                                    # doctest: +SKIP
>>> s = ivm.Session(warehouse=tempfile.mkdtemp())           # doctest: +SKIP
>>> s.sql("CREATE TABLE edges (src BIGINT, dst BIGINT)")     # doctest: +SKIP
>>> s.sql("INSERT INTO edges VALUES (1, 2), (2, 3)")         # doctest: +SKIP
>>> s.sql("CREATE MATERIALIZED VIEW out_deg AS "
...       "SELECT src, count(*) AS n FROM edges GROUP BY src")  # doctest: +SKIP
>>> s.sql("DELETE FROM edges WHERE src = 1"); s.refresh()   # doctest: +SKIP
>>> s.spark.sql("SELECT * FROM out_deg").show()             # doctest: +SKIP

What a Session does, and where the work happens:

* statements (``s.sql``) are split, recognised and run by :mod:`spark_exec.statements`; DDL
  and DML go to the catalog (:mod:`catalog`), queries to Spark SQL (``s.sql("SELECT ...")``
  returns a Spark DataFrame);
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

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from catalog import Catalog
from catalog.errors import NameClashError
from catalog.names import parse_identifier
from catalog.pipeline import (
    BuiltGroup,
    GroupRuntime,
    GroupSpec,
    RefreshReport,
    build_group,
    check_datalog_input,
    plan_groups,
    refresh_group,
    stale_checkpoint_groups,
)
from catalog.sql_types import frontend_columns, view_schema
from catalog.store import TableEntry, ViewEntry
from ivm import limits as ivm_limits
from spark_exec import statements as S
from spark_exec import status as status_file
from spark_exec.errors import RefreshFailedError, SparkSqlError, StatementError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("ivm.session")

DEFAULT_WAREHOUSE = "warehouse"
_DATALOG_ARROW = {"int64": pa.int64(), "float64": pa.float64(), "str": pa.string()}

__all__ = ["RefreshReport", "Result", "Session"]


@dataclass(frozen=True)
class Result:
    """What a statement did: a message, rows (SHOW) or refresh reports (CREATE / REFRESH)."""

    statement: str
    message: str
    rows: pa.Table | None = None
    reports: tuple[RefreshReport, ...] = ()
    metrics: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [self.message]
        if self.rows is not None:
            lines.append(_format_table(self.rows))
        lines.extend(f"  {r}" for r in self.reports)
        return "\n".join(lines)


def _format_table(t: pa.Table, limit: int = 50) -> str:
    names = t.column_names
    rows = [
        [("NULL" if v is None else str(v)) for v in r.values()]
        for r in t.slice(0, limit).to_pylist()
    ]
    widths = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [
        line,
        "| " + " | ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)) + " |",
        line,
    ]
    out += [
        "| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |" for r in rows
    ]
    out.append(line)
    if t.num_rows > limit:
        out.append(f"({t.num_rows - limit} more rows)")
    return "\n".join(out)


class Session:
    """Incrementally maintained SQL and Datalog views over the Delta tables of a warehouse.

    ``warehouse``: the directory holding tables, views, catalog and checkpoints (default
    ``./warehouse``).  ``spark``: a SparkSession to use; without one, a local session is
    started on first use (``spark_exec.spark_session.local_spark``).  ``refresh_hook`` is
    called with the name of each step of a refresh (crash-injection for tests).

    Resource limits of a refresh, checked between the iterations of every loop (recursive
    SQL, Datalog recursion): ``max_iterations`` rounds of one loop per refresh (default
    10,000), ``max_state_rows`` rows held in a group's arrangements (default 200 million),
    ``memory_budget`` resident bytes of this process (default: 80% of the machine's memory).  ``None`` lifts a
    limit.  Past one, the refresh is rolled back and
    :class:`~ivm.limits.ResourceLimitError` names the views and the setting to change.
    """

    def __init__(
        self,
        spark: SparkSession | None = None,
        warehouse: str | os.PathLike[str] | None = None,
        *,
        refresh_hook: Callable[[str], None] | None = None,
        max_iterations: int | None = ivm_limits.DEFAULT_MAX_ITERATIONS,
        max_state_rows: int | None = ivm_limits.DEFAULT_MAX_STATE_ROWS,
        memory_budget: int | None = ivm_limits.default_memory_budget(),
    ) -> None:
        self.limits = ivm_limits.Limits(max_iterations, max_state_rows, memory_budget)
        self.catalog = Catalog(
            warehouse if warehouse is not None else Path.cwd() / DEFAULT_WAREHOUSE
        )
        self._spark = spark
        self._registered = False
        self._runtime = GroupRuntime()
        self.refresh_hook = refresh_hook
        self.last_reports: list[RefreshReport] = []
        if spark is not None:
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

            self._spark = local_spark(self.catalog.warehouse.spark_warehouse_dir)
        if not self._registered:
            self._register_all()
        return self._spark

    def _register_all(self) -> None:
        self._registered = True
        entries: list[TableEntry | ViewEntry] = [*self.catalog.tables(), *self.catalog.views()]
        for e in entries:
            self._register(e)

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
    def sql(self, text: str) -> Any:
        """Run one or more ``;``-separated statements; returns the last one's result.

        Materialized-view statements, ``CREATE / DROP TABLE`` and DML on catalog tables give a
        :class:`Result`; queries and other Spark statements give a Spark DataFrame.
        """
        results = self.run_script(text)
        return results[-1] if results else None

    def run_script(self, text: str) -> list[Any]:
        """Run every statement of ``text`` in order; one result per statement."""
        return [self._run(st) for st in S.split_statements(text)]

    def _run(self, st: S.Statement) -> Any:
        kind = S.classify(st)
        match kind:
            case S.CreateView(name=name, query=query, if_not_exists=ine):
                return self._create_view(name, query, st, if_not_exists=ine)
            case S.DropView(name=name, if_exists=ie):
                dropped = self.drop_view(name, if_exists=ie)
                return Result(
                    "DROP MATERIALIZED VIEW",
                    f"dropped materialized view {name}"
                    if dropped
                    else f"no materialized view {name}",
                )
            case S.RefreshView(name=name, full=full):
                reports = self.refresh(name, full=full)
                return Result(
                    "REFRESH MATERIALIZED VIEW",
                    f"refreshed {len(reports)} view(s)",
                    reports=tuple(reports),
                )
            case S.ExplainView(name=name):
                return Result("EXPLAIN MATERIALIZED VIEW", self.explain(name))
            case S.ShowViews():
                return Result(
                    "SHOW MATERIALIZED VIEWS", "materialized views:", rows=self.show_views()
                )
            case S.Parsed(tree=tree):
                return self._run_parsed(tree, st)
        raise AssertionError(kind)  # pragma: no cover

    def _run_parsed(self, tree: Any, st: S.Statement) -> Any:
        from sqlglot import exp

        from sql_frontend.errors import UnsupportedSqlError

        if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE":
            return self._create_table(S.table_definition(tree, st), st)
        if (
            isinstance(tree, exp.Create)
            and str(tree.args.get("kind", "")).upper() == "VIEW"
            and tree.find(exp.MaterializedProperty) is not None
        ):
            raise UnsupportedSqlError(
                "this form of CREATE MATERIALIZED VIEW",
                line=st.line,
                column=st.column,
                reason="use CREATE MATERIALIZED VIEW name AS query",
            )
        if isinstance(tree, exp.Drop) and str(tree.args.get("kind", "")).upper() == "TABLE":
            name = S.table_name(
                tree.this
                if hasattr(tree, "this") and tree.this is not None
                else tree.args["tables"][0]
            )
            existed = self.drop_table(name, if_exists=bool(tree.args.get("exists")))
            return Result("DROP TABLE", f"dropped table {name}" if existed else f"no table {name}")
        if isinstance(tree, exp.Insert):
            w = S.insert(self.catalog, tree, st, self._spark_rows)
            return _write_result("INSERT", w)
        if isinstance(tree, exp.Delete):
            return _write_result("DELETE", S.delete(self.catalog, tree, st))
        if isinstance(tree, exp.Update):
            return _write_result("UPDATE", S.update(self.catalog, tree, st))
        if isinstance(tree, exp.Merge):
            return _write_result("MERGE", S.merge(self.catalog, tree, st, self._spark_rows))
        return self._spark_sql(st)

    def _spark_sql(self, st: S.Statement) -> Any:
        """Run ``st`` in Spark SQL; Spark's parse and analysis errors become typed errors."""
        from pyspark.errors import PySparkException

        try:
            return self.spark.sql(st.body)
        except PySparkException as exc:
            error_class = exc.getCondition() if hasattr(exc, "getCondition") else None
            first = str(exc).strip().splitlines()
            raise SparkSqlError(
                first[0] if first else type(exc).__name__,
                spark_error=error_class,
                line=st.line,
                column=st.column,
            ) from exc

    # -- tables ----------------------------------------------------------------------------
    def _create_table(self, d: S.TableDefinition, st: S.Statement) -> Result:
        if d.location is not None:
            if d.query is not None:
                raise StatementError(
                    "CREATE TABLE",
                    "AS SELECT with LOCATION is not supported",
                    line=st.line,
                    column=st.column,
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
                        line=st.line,
                        column=st.column,
                    )
            self._register(entry)
            return Result("CREATE TABLE", f"registered Delta table {entry.name} at {entry.path}")
        if d.query is not None:
            if d.schema is not None:
                raise StatementError(
                    "CREATE TABLE",
                    "give columns or AS SELECT, not both",
                    line=st.line,
                    column=st.column,
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
            return Result("CREATE TABLE", f"created table {entry.name} ({rows.num_rows} rows)")
        if d.schema is None:
            raise StatementError(
                "CREATE TABLE",
                "needs columns, AS SELECT or LOCATION",
                line=st.line,
                column=st.column,
            )
        entry = self.catalog.create_table(d.name, d.schema, if_not_exists=d.if_not_exists)
        self._register(entry)
        return Result("CREATE TABLE", f"created table {entry.name}")

    def create_table(self, name: str, schema: pa.Schema) -> TableEntry:
        """Create a managed Delta table (change data feed on) from an Arrow schema."""
        entry = self.catalog.create_table(name, schema)
        self._register(entry)
        return entry

    def drop_table(self, name: str, *, if_exists: bool = False) -> bool:
        ident = parse_identifier(name)
        if not isinstance(self.catalog.store.find(ident), TableEntry):
            if if_exists:
                return False
            self.catalog.table(ident)  # raises UnknownTableError
        self.catalog.drop_table(ident)
        self._unregister(str(ident))
        return True

    # -- views -----------------------------------------------------------------------------
    def _create_view(
        self, name: str, query: str, st: S.Statement | None, *, if_not_exists: bool = False
    ) -> Result:
        from sql_frontend import plan as p
        from sql_frontend.compile import output_names
        from sql_frontend.planner import plan_sql

        ident = parse_identifier(name)
        existing = self.catalog.store.find(ident)
        if existing is not None:
            if if_not_exists and isinstance(existing, ViewEntry):
                return Result("CREATE MATERIALIZED VIEW", f"{ident} exists")
            raise NameClashError(str(ident), existing.kind)
        entries: list[TableEntry | ViewEntry] = [*self.catalog.tables(), *self.catalog.views()]
        known = {e.name: frontend_columns(e.schema) for e in entries}
        node = plan_sql(st.text if st is not None else query, known)  # errors: line, column
        deps = p.tables(node)
        schema = view_schema(
            list(zip(output_names(node.schema), [t for _, t in node.schema], strict=True))
        )
        entry = ViewEntry(
            ident,
            query,
            "sql",
            tuple(parse_identifier(d) for d in deps),
            self.catalog.warehouse.view_path(ident).as_posix(),
            schema,
            "pending",
        )
        reports = self._add_views([entry])
        return Result(
            "CREATE MATERIALIZED VIEW", f"created materialized view {ident}", reports=tuple(reports)
        )

    def create_view(self, name: str, query: str) -> list[RefreshReport]:
        """``CREATE MATERIALIZED VIEW name AS query``; returns the first refresh's reports."""
        return list(self._create_view(name, query, None).reports)

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
                        e.ident, e.definition, e.language, e.dependencies, e.schema, group=spec.name
                    )
                )
            reports = self._refresh_specs([self._spec_of(str(entries[0].ident))], built=built)
        except BaseException:
            for e in reversed(created):
                self.catalog.drop_view(e.ident, if_exists=True)
            raise
        for e in created:
            self._register(e)
        return reports

    def drop_view(self, name: str, *, if_exists: bool = False) -> bool:
        ident = parse_identifier(name)
        if not isinstance(self.catalog.store.find(ident), ViewEntry):
            if if_exists:
                return False
            self.catalog.view(ident)  # raises UnknownViewError
        self.catalog.drop_view(ident)
        self._unregister(str(ident))
        self._runtime.forget()
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
                    "datalog",
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
        schema = pa.schema(
            [
                ("name", pa.string()),
                ("language", pa.string()),
                ("inputs", pa.string()),
                ("group", pa.string()),
                ("status", pa.string()),
                ("last_refresh", pa.string()),
                ("epoch", pa.int64()),
                ("input_versions", pa.string()),
                ("behind", pa.int64()),
                ("last_error", pa.string()),
            ]
        )
        return pa.Table.from_pylist(rows, schema=schema)

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
                try:
                    reports += self._refresh_specs([spec])
                except Exception as exc:
                    failures[spec.name] = exc
                    log.warning("refresh of group %s failed: %s", spec.name, exc)
        finally:
            self.last_reports = reports
        if failures:
            if len(specs) == 1:
                raise next(iter(failures.values()))
            raise RefreshFailedError(failures, list(reports))
        if view is None:
            live = [s.name for s in specs]
            for name in stale_checkpoint_groups(self.catalog, live):
                log.info("removing the checkpoint of the former group %s", name)
                self.catalog.checkpoints.clear(name)
        return reports

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
                            self.catalog, spec, self._runtime, hook=self.refresh_hook, built=built
                        )
                except Exception as exc:
                    if isinstance(exc, ivm_limits.ResourceLimitError) and exc.view is None:
                        exc.view = ", ".join(spec.view_names)
                    if built is None:  # a failed CREATE is undone; its group is unchanged
                        status_file.record(self.catalog, spec.name, spec.view_names, error=exc)
                    raise
                status_file.record(
                    self.catalog, spec.name, spec.view_names, epoch=done[0].epoch if done else None
                )
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
        if entry.language == "sql":
            head.append(f"definition: {entry.definition}")
        return "\n".join(
            [*head, built.plans.get(entry.name, ""), "== Dataflow ==", built.g.explain()]
        )

    def close(self) -> None:
        """Forget in-memory dataflows (state is in the checkpoints)."""
        self._runtime.forget()


def _write_result(what: str, w: Any) -> Result:
    m = dict(w.metrics)
    detail = ", ".join(
        f"{k}={v}" for k, v in m.items() if k.startswith("num_") and isinstance(v, int) and v
    )
    return Result(
        what, f"{what}: table version {w.version}" + (f" ({detail})" if detail else ""), metrics=m
    )


def frontend_catalog(entries: Sequence[TableEntry | ViewEntry]) -> dict[str, list[Any]]:
    """``{name: [(column, type)]}`` for the SQL front end."""
    return {e.name: frontend_columns(e.schema) for e in entries}


def spark_dataframe(session: Session, name: str) -> DataFrame:
    """A table or view by name in Spark SQL."""
    from spark_exec.registry import spark_name

    return session.spark.table(spark_name(name))
