"""Spark Declarative Pipelines projects, with their materialized views maintained incrementally.

``spark-pipelines run`` recomputes every materialized view of a pipeline in full on every run
(``../shared/design/spark-declarative-pipelines.md``).  :func:`run_pipeline` reads the same
project — the spec (``spark-pipeline.yml``: ``name``, ``storage``, ``libraries``, ``catalog``,
``database``, ``configuration``) and its SQL and Python source files — and turns each
materialized view into a view of a :class:`~spark_exec.session.Session`: the first run creates
it (one full computation), later runs refresh it from the changes of its inputs only.

* SQL files: ``CREATE [OR REFRESH] MATERIALIZED VIEW v AS query``, ``CREATE [TEMPORARY] VIEW v
  AS query`` (maintained the same way: a temporary view is a maintained view that other
  datasets read), ``SET``/``USE`` are noted and skipped.
* Python files are imported as ``spark-pipelines`` imports them (a global ``spark``, under a
  graph registration context); ``@dp.materialized_view`` / ``@dp.temporary_view`` functions are
  called in dependency order and their DataFrames compiled from Spark's analyzed plan
  (:mod:`sql_frontend.spark_plan`).
* Streaming tables, flows, sinks and Auto CDC are refused by name: keep running those with
  ``spark-pipelines run --refresh <their names>``, which leaves the other datasets alone.

The table layout a dataset asks for is applied to its view's Delta table: ``PARTITIONED BY`` /
``CLUSTER BY`` (and ``COMMENT``, ``TBLPROPERTIES``) of a SQL materialized view,
``partition_cols`` / ``cluster_by`` (and ``comment``, ``table_properties``) of
``@dp.materialized_view`` (catalog.view_partitions, catalog.view_clustering).

Datasets must read the warehouse's tables (or each other) by name.  A view whose definition
or layout changed since the last run is replaced (dropped and created again from its inputs).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.view_options import ViewOptions
from ivm.errors import IvmError

if TYPE_CHECKING:
    from catalog.pipeline import RefreshReport
    from spark_exec.session import Session

log = logging.getLogger("ivm.pipelines")

SPEC_FILE_NAMES = ("spark-pipeline.yml", "spark-pipeline.yaml")
SPEC_FIELDS = {"name", "storage", "libraries", "catalog", "database", "schema", "configuration"}


class PipelineError(IvmError, ValueError):
    """A pipeline project that cannot be run: its spec, a source file, or a dataset kind."""


@dataclass(frozen=True)
class PipelineSpec:
    path: Path
    name: str
    storage: str
    libraries: tuple[str, ...]
    database: str | None = None
    configuration: dict[str, str] = field(default_factory=dict)

    def source_files(self) -> list[Path]:
        """The ``.sql`` and ``.py`` files the spec's ``libraries`` include, in listing order."""
        out: list[Path] = []
        for include in self.libraries:
            if include.endswith("/**"):
                root = self.path.parent / include[:-3]
                files = sorted(p for p in root.rglob("*") if p.is_file())
            elif any(ch in include for ch in "*?["):
                raise PipelineError(
                    f"{self.path}: library glob {include!r}: give a file or 'dir/**' "
                    "(the patterns spark-pipelines accepts)"
                )
            else:
                files = [self.path.parent / include]
            out += [p for p in files if p.suffix in (".sql", ".py") and p not in out]
        return out


def find_spec(start: Path) -> Path:
    """``start`` itself when it is a file, else the spec file in it or its ancestors."""
    if start.is_file():
        return start
    for d in [start, *start.parents]:
        for name in SPEC_FILE_NAMES:
            if (d / name).is_file():
                return d / name
    raise PipelineError(f"no {' or '.join(SPEC_FILE_NAMES)} in {start} or its parents")


def load_spec(path: Path) -> PipelineSpec:
    """The pipeline spec at ``path`` (YAML), checked as ``spark-pipelines`` checks it."""
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PipelineError(f"{path}: cannot read the pipeline spec: {exc}") from None
    if not isinstance(doc, dict):
        raise PipelineError(f"{path}: the pipeline spec must be a mapping")
    unknown = sorted(set(doc) - SPEC_FIELDS)
    if unknown:
        raise PipelineError(
            f"{path}: unexpected field {unknown[0]!r}; known: {sorted(SPEC_FIELDS)}"
        )
    for required in ("name", "storage"):
        if not doc.get(required):
            raise PipelineError(f"{path}: the spec needs a {required!r}")
    libraries = []
    for lib in doc.get("libraries") or []:
        include = (lib or {}).get("glob", {}).get("include") if isinstance(lib, dict) else None
        if not isinstance(include, str):
            raise PipelineError(f"{path}: each library is {{glob: {{include: PATH}}}}, got {lib!r}")
        libraries.append(include)
    return PipelineSpec(
        path=path,
        name=str(doc["name"]),
        storage=str(doc["storage"]),
        libraries=tuple(libraries),
        database=doc.get("database") or doc.get("schema"),
        configuration={str(k): str(v) for k, v in (doc.get("configuration") or {}).items()},
    )


# -- datasets ------------------------------------------------------------------------------


@dataclass
class Dataset:
    """One dataset of the graph: SQL text, or a Python function returning a DataFrame."""

    name: str
    kind: str  # materialized view | temporary view
    source: Path
    sql: str | None = None
    build: Callable[[], Any] | None = None
    options: ViewOptions = field(default_factory=ViewOptions)

    @property
    def layout(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The view table's partition and clustering columns."""
        return layout(self.options)


def layout(options: ViewOptions) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return options.partitioned_by, options.clustered_by


def sql_datasets(path: Path) -> tuple[list[Dataset], list[str]]:
    """The datasets of one SQL file, and notes on statements skipped."""
    import sqlglot
    from sqlglot import exp

    from spark_exec.statements import create_view, split_statements

    datasets, notes = [], []
    for st in split_statements(path.read_text(encoding="utf-8")):
        where = f"{path.name}:{st.line}"
        try:
            tree = sqlglot.parse_one(st.text, read="spark")
        except sqlglot.errors.ParseError as exc:
            raise PipelineError(f"{where}: cannot parse: {exc}") from None
        if isinstance(tree, (exp.Set, exp.Use)):
            notes.append(f"{where}: skipped {tree.key.upper()} (no effect on maintained views)")
            continue
        head = " ".join(st.text.split()[:4]).upper()
        if not isinstance(tree, exp.Create) or tree.args.get("kind") != "VIEW":
            raise PipelineError(
                f"{where}: {head}...: only materialized and temporary views are maintained; "
                "run streaming tables and flows with `spark-pipelines run --refresh <names>`"
            )
        props = tree.args.get("properties")
        materialized = props is not None and any(
            isinstance(p, exp.MaterializedProperty) for p in props.expressions
        )
        name = tree.this.sql(dialect="spark") if isinstance(tree.this, exp.Table) else None
        query = tree.args.get("expression")
        if name is None or query is None:
            raise PipelineError(f"{where}: {head}...: a view needs a name and AS <query>")
        kind = "materialized view" if materialized else "temporary view"
        # a materialized view's options (COMMENT, TBLPROPERTIES, PARTITIONED BY, CLUSTER BY) as the Session
        # reads them; refusals carry the line and column in the file
        options = create_view(tree, st).options if materialized else ViewOptions()
        datasets.append(Dataset(name, kind, path, sql=query.sql(dialect="spark"), options=options))
    return datasets, notes


class _Registry:
    """Collects what ``@dp.*`` decorators register while a Python file is imported."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.outputs: dict[str, Any] = {}
        self.flows: list[Any] = []

    def register_output(self, output: Any) -> None:
        self.outputs[output.name] = output

    def register_flow(self, flow: Any) -> None:
        self.flows.append(flow)

    def register_auto_cdc_flow(self, flow: Any) -> None:
        raise PipelineError(f"{self.path}: Auto CDC flow {flow.name!r}: not maintained here")

    def register_sql(self, sql_text: str, file_path: Path) -> None:
        raise PipelineError(f"{file_path}: SQL registered from Python: put it in a .sql file")


def python_datasets(path: Path, spark: Any) -> list[Dataset]:
    """The datasets ``@dp.materialized_view`` / ``@dp.temporary_view`` define in ``path``."""
    from pyspark.pipelines.graph_element_registry import (
        GraphElementRegistry,
        graph_element_registration_context,
    )

    registry = _Registry(path)
    GraphElementRegistry.register(_Registry)  # a virtual subclass: the context checks nothing
    spec = importlib.util.spec_from_file_location(f"_ivm_pipeline_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise PipelineError(f"{path}: cannot import")
    module = importlib.util.module_from_spec(spec)
    module.__dict__["spark"] = spark
    with graph_element_registration_context(registry):  # type: ignore[arg-type]
        spec.loader.exec_module(module)
    kinds = {"MaterializedView": "materialized view", "TemporaryView": "temporary view"}
    out = []
    for flow in registry.flows:
        output = registry.outputs.get(flow.target)
        what = type(output).__name__ if output is not None else "flow"
        kind = kinds.get(what)
        if kind is None or flow.name != flow.target:
            raise PipelineError(
                f"{path}: {what} {flow.target!r}: only "
                "materialized and temporary views are maintained; run the others with "
                "`spark-pipelines run --refresh <names>`"
            )
        out.append(Dataset(flow.target, kind, path, build=flow.func, options=_options(output)))
    return out


def _options(output: Any) -> ViewOptions:
    """What ``@dp.materialized_view(comment=, table_properties=, partition_cols=,
    cluster_by=)`` asks of the view's table (a temporary view: its comment only).

    Table properties are set on the view's Delta table, as ``TBLPROPERTIES`` of the DDL are;
    ``delta.*`` keys are refused (spark-ivm manages the Delta settings of a view's table).
    """
    properties = dict(getattr(output, "table_properties", None) or {})
    managed = sorted(k for k in properties if k.lower().startswith("delta."))
    if managed:
        raise PipelineError(
            f"{getattr(output, 'name', '?')}: table_properties {managed}: spark-ivm manages the "
            "Delta settings of a view's table; give your own keys"
        )
    return ViewOptions(
        comment=getattr(output, "comment", None),
        properties=tuple((str(k), str(v)) for k, v in properties.items()),
        partitioned_by=tuple(getattr(output, "partition_cols", None) or ()),
        clustered_by=tuple(getattr(output, "cluster_by", None) or ()),
    )


# -- running -------------------------------------------------------------------------------


@dataclass
class PipelineRun:
    """What one run did: datasets created, refreshed or replaced, and the reports."""

    spec: PipelineSpec
    created: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reports: list[RefreshReport] = field(default_factory=list)
    seconds: float = 0.0

    def __str__(self) -> str:
        lines = [f"pipeline {self.spec.name}: {self.seconds:.2f}s"]
        for what in ("created", "replaced", "refreshed"):
            names = getattr(self, what)
            if names:
                lines.append(f"  {what}: {', '.join(names)}")
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  {r}" for r in self.reports]
        return "\n".join(lines)


def _qualified(spec: PipelineSpec, name: str) -> str:
    return name if "." in name or not spec.database else f"{spec.database}.{name}"


def _definition(session: Session, ds: Dataset) -> str:
    if ds.sql is not None:
        return ds.sql
    assert ds.build is not None
    return session.dataframe_sql(ds.build())


def _missing_table(exc: BaseException) -> bool:
    """Whether ``exc`` says a dataset reads a table that is not defined (yet)."""
    from sql_frontend.errors import SqlAnalysisError

    if isinstance(exc, SqlAnalysisError):
        return str(exc).startswith("table ") and "not found" in str(exc)
    return "TABLE_OR_VIEW_NOT_FOUND" in str(exc)


def run_pipeline(session: Session, spec_path: str | Path) -> PipelineRun:
    """Run the pipeline at ``spec_path`` (a spec file or a directory with one): create new
    views, replace changed ones (and the views that read them), then refresh every view
    incrementally."""
    started = time.perf_counter()
    spec = load_spec(find_spec(Path(spec_path)))
    if spec.database:
        session.spark.sql(f"CREATE DATABASE IF NOT EXISTS `{spec.database}`")
    run = PipelineRun(spec)
    datasets: list[Dataset] = []
    for path in spec.source_files():
        if path.suffix == ".sql":
            found, notes = sql_datasets(path)
            datasets += found
            run.notes += notes
        else:
            with _quiet_imports():
                datasets += python_datasets(path, session.spark)
    changed = _define_in_order(session, spec, run, datasets)
    if changed:
        dropped = _drop_with_dependents(
            session, changed, {_qualified(spec, d.name) for d in datasets}
        )
        again = [d for d in datasets if _qualified(spec, d.name) in dropped]
        _define_in_order(session, spec, run, again)
        run.replaced = [n for n in run.created if n in dropped]
        run.created = [n for n in run.created if n not in dropped]
        run.refreshed = [n for n in run.refreshed if n not in dropped]
    run.reports += session.refresh()
    run.seconds = time.perf_counter() - started
    return run


def _define_in_order(
    session: Session, spec: PipelineSpec, run: PipelineRun, pending: list[Dataset]
) -> list[str]:
    """Create every dataset that does not exist; one that reads a dataset not defined yet waits
    for the next round (how spark-pipelines resolves its graph).  Returns the names of existing
    views whose definition changed (left untouched)."""
    from catalog.names import parse_identifier

    changed: list[str] = []
    while pending:
        waiting: list[Dataset] = []
        last: BaseException | None = None
        for ds in pending:
            name = _qualified(spec, ds.name)
            try:
                definition = _definition(session, ds)
                existing = session.catalog.store.find(parse_identifier(name))
                if existing is None:
                    run.reports += session.create_view(name, definition, options=ds.options)
                    run.created.append(name)
                elif getattr(existing, "definition", None) == definition and (
                    layout(existing.options) == ds.layout  # type: ignore[union-attr]
                ):
                    run.refreshed.append(name)
                else:
                    changed.append(name)
            except Exception as exc:
                if not _missing_table(exc):
                    raise
                waiting.append(ds)
                last = exc
        if len(waiting) == len(pending):
            names = ", ".join(d.name for d in waiting)
            raise PipelineError(f"cannot resolve {names}: {last}") from last
        pending = waiting
    return changed


def _drop_with_dependents(session: Session, changed: list[str], ours: set[str]) -> set[str]:
    """Drop the changed views and every view that reads them, readers first; refuses when a
    reader is not one of the pipeline's datasets (it would be lost)."""
    from catalog.names import parse_identifier

    views = {v.name: v for v in session.catalog.views()}
    doomed: list[str] = []

    def visit(name: str) -> None:
        if name in doomed:
            return
        for reader in views.values():
            if parse_identifier(name) in reader.dependencies:
                visit(reader.name)
        doomed.append(name)

    for name in changed:
        visit(str(parse_identifier(name)))
    foreign = [n for n in doomed if n not in {str(parse_identifier(o)) for o in ours}]
    if foreign:
        raise PipelineError(
            f"the definition of {', '.join(changed)} changed, but view(s) {', '.join(foreign)} "
            "outside the pipeline read it; drop them first"
        )
    for name in doomed:  # readers were appended first
        session.drop_view(name)
    return set(doomed)


@contextmanager
def _quiet_imports() -> Iterator[None]:
    before = set(sys.modules)
    try:
        yield
    finally:
        for name in set(sys.modules) - before:
            if name.startswith("_ivm_pipeline_"):
                del sys.modules[name]
