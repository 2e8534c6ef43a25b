"""``SqlResult``: what ``Session.sql`` returns for every statement, DDL to query.

One class for every kind of statement, so code and notebooks handle results one way:

==============  ==========================================================  ==================
``kind``        statements                                                   ``to_arrow()``
==============  ==========================================================  ==================
``ddl``         CREATE / DROP / ALTER (tables, materialized views, Spark's)  the refresh
                                                                             reports of a
                                                                             CREATE MV, else
                                                                             one summary row
``dml``         INSERT, UPDATE, DELETE, MERGE                                one row:
                                                                             ``num_affected_rows``
                                                                             and the write's
                                                                             ``num_*`` metrics
``refresh``     REFRESH MATERIALIZED VIEW                                    one row per view
``query``       SELECT and anything else Spark SQL answers with rows         the rows
``show``        SHOW MATERIALIZED VIEWS, SHOW CREATE TABLE, Spark's SHOW     the rows
``describe``    DESCRIBE [EXTENDED] MATERIALIZED VIEW, DESCRIBE HISTORY, ...  the rows
``explain``     EXPLAIN MATERIALIZED VIEW                                    one row: the plan
``empty``       a script with no statement                                   one summary row
==============  ==========================================================  ==================

``affected_rows`` is the rows a DML statement wrote (inserted + updated + deleted) or the
rows a CREATE / REFRESH of views wrote to the view tables; ``None`` where it means nothing.
A query's rows are computed by Spark when first asked for (``to_arrow()``, ``show()``, ...),
and ``toDF()`` hands back Spark's DataFrame itself; every other result's rows are Arrow
already, and ``toDF()`` turns them into a DataFrame of the Session's SparkSession.

>>> r = SqlResult("INSERT", "dml", "INSERT: table version 1", affected_rows=2,
...               metrics={"num_added_rows": 2})
>>> r.to_arrow().to_pylist()
[{'statement': 'INSERT', 'message': 'INSERT: table version 1', 'num_affected_rows': 2, 'num_added_rows': 2}]
>>> r
SqlResult(statement='INSERT', kind='dml', message='INSERT: table version 1', affected_rows=2)
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import pyarrow as pa

from catalog.pipeline import RefreshReport
from ivm.errors import IvmError

if TYPE_CHECKING:
    import pandas
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "MetricValue",
    "MissingDependencyError",
    "NoSparkSessionError",
    "SqlResult",
    "StatementKind",
    "affected_rows",
]

StatementKind = Literal["ddl", "dml", "refresh", "query", "show", "describe", "explain", "empty"]
#: a write's operation metric (delta-rs and view-table commits: counts, times in ms)
MetricValue = int | float | str | bool | None

SHOW_ROWS = 20


class MissingDependencyError(IvmError, ImportError):
    """An optional package a call needs is not installed (``what`` needs ``package``)."""

    def __init__(self, what: str, package: str, instead: str) -> None:
        self.package = package
        super().__init__(
            f"{what} needs the optional package {package!r}, which is not installed: "
            f"pip install {package} (or use {instead})"
        )


class NoSparkSessionError(IvmError, RuntimeError):
    """``toDF()`` of a result made without a Session that can start Spark."""


_AFFECTED = (
    "num_added_rows",  # INSERT (delta-rs write)
    "num_deleted_rows",  # DELETE
    "num_target_rows_inserted",  # UPDATE and MERGE
    "num_target_rows_updated",
    "num_target_rows_deleted",
)


def affected_rows(metrics: Mapping[str, MetricValue]) -> int | None:
    """The rows a DML write inserted, updated or deleted, from its delta-rs metrics.

    >>> affected_rows({"num_added_rows": 2, "num_added_files": 1})
    2
    >>> affected_rows({"num_target_rows_updated": 1, "num_target_rows_copied": 5})
    1
    """
    found = [v for k in _AFFECTED if isinstance(v := metrics.get(k), int)]
    return sum(found) if found else None


#: the columns of :func:`report_table`: (column, attribute of the report, Arrow type)
_REPORT_COLUMNS = (
    ("view", "view", pa.string()),
    ("group", "group", pa.string()),
    ("epoch", "epoch", pa.int64()),
    ("committed", "committed", pa.bool_()),
    ("version", "version", pa.int64()),
    ("input_changes", "rows_in", pa.int64()),
    ("differences", "differences", pa.int64()),
    ("rows_written", "rows_written", pa.int64()),
    ("files_written", "files_written", pa.int64()),
    ("seconds", "seconds", pa.float64()),
    ("recomputed", "recomputed", pa.bool_()),
    ("executor", "executor", pa.string()),  # "local" or "spark <master>" (docs/executors.md)
)


def report_table(reports: Sequence[RefreshReport]) -> pa.Table:
    """One row per refresh report (the columns of the event log's ``refresh`` events)."""
    return pa.Table.from_pydict(
        {col: [getattr(r, attr) for r in reports] for col, attr, _ in _REPORT_COLUMNS},
        schema=pa.schema([(col, t) for col, _, t in _REPORT_COLUMNS]),
    )


class SqlResult:
    """The result of one statement (see the module docstring for what each kind holds).

    ``statement``: the statement's name (``"CREATE MATERIALIZED VIEW"``, ``"SELECT"``, ...);
    ``kind``: its :data:`StatementKind`; ``message``: one line saying what it did;
    ``reports``: the refresh reports of a CREATE / REFRESH of views; ``metrics``: a DML
    write's operation metrics; ``affected_rows``: see the module docstring.
    """

    __slots__ = (
        "_dataframe",
        "_rows",
        "_spark",
        "affected_rows",
        "kind",
        "message",
        "metrics",
        "reports",
        "statement",
    )

    def __init__(
        self,
        statement: str,
        kind: StatementKind,
        message: str,
        *,
        rows: pa.Table | None = None,
        reports: Sequence[RefreshReport] = (),
        metrics: Mapping[str, MetricValue] | None = None,
        affected_rows: int | None = None,
        dataframe: DataFrame | None = None,
        spark: Callable[[], SparkSession] | None = None,
    ) -> None:
        self.statement = statement
        self.kind: StatementKind = kind
        self.message = message
        self.reports: tuple[RefreshReport, ...] = tuple(reports)
        self.metrics: dict[str, MetricValue] = dict(metrics or {})
        if affected_rows is None and self.reports:  # a refresh: the rows it wrote
            affected_rows = sum(r.rows_written for r in self.reports)
        self.affected_rows = affected_rows
        self._rows = rows
        self._dataframe = dataframe
        self._spark = spark

    # -- rows ------------------------------------------------------------------------------
    @property
    def rows(self) -> pa.Table:
        """The result's rows as Arrow (the same as :meth:`to_arrow`)."""
        return self.to_arrow()

    def to_arrow(self) -> pa.Table:
        """The result's rows as an Arrow table (a query runs in Spark on the first call)."""
        if self._rows is None:
            self._rows = self._make_rows()
        return self._rows

    def _make_rows(self) -> pa.Table:
        if self._dataframe is not None:
            return self._dataframe.toArrow()
        if self.reports:
            return report_table(self.reports)
        summary: dict[str, MetricValue] = {"statement": self.statement, "message": self.message}
        if self.affected_rows is not None:
            summary["num_affected_rows"] = self.affected_rows
        summary.update(
            (k, v) for k, v in self.metrics.items() if k.startswith("num_") and k not in summary
        )
        return pa.Table.from_pylist([summary])

    def to_pandas(self) -> pandas.DataFrame:
        """The rows as a pandas DataFrame (needs pandas: :class:`MissingDependencyError`)."""
        try:
            import pandas  # noqa: F401
        except ImportError:
            raise MissingDependencyError("SqlResult.to_pandas()", "pandas", "to_arrow()") from None
        return self.to_arrow().to_pandas()

    def toDF(self) -> DataFrame:
        """The rows as a Spark DataFrame: a query's own DataFrame, else one made from the
        Arrow rows in the Session's SparkSession (started if need be)."""
        if self._dataframe is not None:
            return self._dataframe
        if self._spark is None:
            raise NoSparkSessionError(
                f"this {self.statement} result was made without a Session; "
                "use to_arrow(), or spark.createDataFrame(result.to_arrow())"
            )
        return self._spark().createDataFrame(self.to_arrow())

    def collect(self) -> list[dict[str, object]]:
        """The rows as Python dicts."""
        return list(self.to_arrow().to_pylist())

    # -- display ---------------------------------------------------------------------------
    def show(self, n: int = SHOW_ROWS) -> None:
        """Print the message and the first ``n`` rows as a text table."""
        print(self._text(n))

    def _text(self, n: int) -> str:
        lines = [self.message] if self.message else []
        if self.kind in ("query", "show", "describe"):
            lines.append(format_table(self._head(n), total=self._total()))
        lines.extend(f"  {r}" for r in self.reports)
        return "\n".join(lines)

    def _head(self, n: int) -> pa.Table:
        if self._rows is None and self._dataframe is not None:
            return self._dataframe.limit(n).toArrow()  # not every row of a big query
        return self.to_arrow().slice(0, n)

    def _total(self) -> int | None:
        return self._rows.num_rows if self._rows is not None else None

    def __str__(self) -> str:
        return self._text(50)

    def __repr__(self) -> str:
        parts = [
            f"statement={self.statement!r}",
            f"kind={self.kind!r}",
            f"message={self.message!r}",
        ]
        if self.affected_rows is not None:
            parts.append(f"affected_rows={self.affected_rows}")
        if self._rows is not None and (self.kind in ("query", "show", "describe")):
            parts.append(f"rows={self._rows.num_rows}")
        return f"SqlResult({', '.join(parts)})"

    def _repr_html_(self) -> str:
        """A notebook's view: the message, then the first rows as an HTML table."""
        t = self._head(SHOW_ROWS)
        head = "".join(f"<th>{html.escape(n)}</th>" for n in t.column_names)
        body = "".join(
            "<tr>"
            + "".join(
                f"<td>{'NULL' if v is None else html.escape(str(v))}</td>" for v in r.values()
            )
            + "</tr>"
            for r in t.to_pylist()
        )
        total = self._total()
        more = (
            f"<p>showing {t.num_rows} of {total} rows</p>"
            if total is not None and total > t.num_rows
            else ""
        )
        return (
            f"<div><p><b>{html.escape(self.statement)}</b> ({self.kind}): "
            f"{html.escape(self.message)}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}</div>"
        )


def format_table(t: pa.Table, limit: int = 50, *, total: int | None = None) -> str:
    """``t``'s first ``limit`` rows as a text table (``total``: rows of the whole result)."""
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
    shown = min(t.num_rows, limit)
    whole = t.num_rows if total is None else total
    if whole > shown:
        out.append(f"({whole - shown} more rows)")
    return "\n".join(out)
