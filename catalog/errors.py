"""Typed errors of the catalog: tables, views, Delta I/O, checkpoints and refresh commits.

Every error derives from :class:`CatalogError` (itself an :class:`ivm.errors.IvmError`) and,
where one fits, from the matching builtin, so ``except KeyError`` / ``except ValueError`` keep
working for callers that do not know this package.  Messages name the object concerned.

>>> try:
...     raise UnknownTableError("edges")
... except KeyError as exc:
...     print(exc)
unknown table or view 'edges'
"""

from __future__ import annotations

from typing import Unpack

from ivm.errors import IvmError, SourceError, Where


class CatalogError(IvmError):
    """Root of every catalog failure."""


class UnknownTableError(CatalogError, KeyError):
    """A table or view name that the catalog does not know."""

    def __init__(
        self, name: str, *, known: tuple[str, ...] = (), kind: str = "table or view"
    ) -> None:
        self.name = name
        self.kind = kind
        self.known = known
        hint = f"; known: {', '.join(known)}" if known else ""
        super().__init__(f"unknown {kind} {name!r}{hint}")

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class UnknownViewError(UnknownTableError):
    """A view name that the catalog does not know (it may be a table)."""

    def __init__(self, name: str, *, known: tuple[str, ...] = ()) -> None:
        super().__init__(name, known=known, kind="materialized view")


class NameClashError(CatalogError, ValueError):
    """Creating a table or view whose name is already taken."""

    def __init__(self, name: str, existing_kind: str) -> None:
        self.name = name
        self.existing_kind = existing_kind
        super().__init__(f"cannot create {name!r}: a {existing_kind} with that name exists")


class InvalidIdentifierError(CatalogError, ValueError):
    """A table, view or database name that is not a valid identifier."""

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"invalid identifier {text!r}: {reason}")


class InvalidPathError(CatalogError, ValueError):
    """A location that is not acceptable (escapes the warehouse, bad scheme, ...)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"invalid path {path!r}: {reason}")


class NotADeltaTableError(CatalogError, ValueError):
    """A location that holds no Delta table.

    ``name``: the table it was given for; ``found``: what the location holds instead
    (catalog.table_check), e.g. "a directory of 3 Parquet files and no _delta_log".
    """

    def __init__(self, path: str, *, name: str | None = None, found: str | None = None) -> None:
        self.path = path
        self.name = name
        self.found = found
        table = f"table {name!r}: " if name else ""
        holds = f"; it holds {found}" if found else ""
        super().__init__(f"{table}no Delta table at {path!r}{holds}")


class DroppedInputError(CatalogError):
    """An input of a view whose Delta table has disappeared or was dropped."""

    def __init__(
        self, name: str, path: str, view: str | None = None, *, found: str | None = None
    ) -> None:
        self.name = name
        self.path = path
        self.view = view
        self.found = found
        of_view = f" (input of view {view!r})" if view else ""
        holds = f"; it holds {found}" if found else ""
        super().__init__(f"table {name!r}{of_view} was dropped: no Delta table at {path!r}{holds}")


class ChangesUnavailableError(CatalogError):
    """An input's changes between two versions cannot be read (e.g. its files were vacuumed).

    The refresh then recomputes the views that read it from the input's current snapshot.
    """

    def __init__(self, name: str, path: str, detail: str) -> None:
        self.name = name
        self.path = path
        self.detail = detail
        super().__init__(
            f"the changes of table {name!r} at {path!r} cannot be read: {detail}; "
            "the views reading it must be recomputed from its current contents"
        )


class TableReplacedError(ChangesUnavailableError):
    """An input whose Delta table was dropped and recreated at the same location."""

    def __init__(self, name: str, path: str, detail: str) -> None:
        super().__init__(name, path, f"the table was replaced ({detail})")


class RefreshBusyError(CatalogError, TimeoutError):
    """Another process held a view group's writer lock for longer than the wait allowed."""

    def __init__(self, group: str, waited: float, holder: dict[str, object]) -> None:
        self.group = group
        self.waited = waited
        self.holder = holder
        who = (
            f" (held by pid {holder.get('pid')} on {holder.get('host')})"
            if holder.get("pid")
            else ""
        )
        super().__init__(
            f"view group {group!r} is being refreshed by another process{who}; waited "
            f"{waited:g} s. Retry later, or raise the wait with IVM_LOCK_TIMEOUT (seconds)"
        )


class SchemaChangeError(CatalogError, ValueError):
    """An input whose schema changed incompatibly since a view was defined on it."""

    def __init__(self, name: str, detail: str) -> None:
        self.name = name
        self.detail = detail
        super().__init__(f"incompatible schema change of {name!r}: {detail}")


class UnsupportedTypeError(CatalogError, TypeError):
    """A Delta/Arrow column type that the engine cannot carry."""

    def __init__(self, column: str, arrow_type: str) -> None:
        self.column = column
        self.arrow_type = arrow_type
        super().__init__(f"column {column!r} has unsupported type {arrow_type}")


class DependencyError(CatalogError, ValueError):
    """Dropping an object that other views still read."""

    def __init__(self, name: str, dependents: tuple[str, ...]) -> None:
        self.name = name
        self.dependents = dependents
        super().__init__(
            f"cannot drop {name!r}: materialized view(s) {', '.join(dependents)} depend on it"
        )


class DeltaOperationError(CatalogError, ValueError):
    """A Delta write (insert, delete, update, merge) that delta-rs refused."""

    def __init__(self, operation: str, path: str, detail: str) -> None:
        self.operation = operation
        self.path = path
        self.detail = detail
        super().__init__(f"{operation} on Delta table {path!r} failed: {detail}")


class UnsupportedProtocolError(DeltaOperationError):
    """A Delta table whose protocol (reader/writer version, table features) delta-rs, and so
    spark-ivm, cannot read or write.  ``name`` / ``view``: the table and the view reading it,
    when known; ``protocol``: the table's protocol action, when its log shows it."""

    def __init__(
        self,
        operation: str,
        path: str,
        detail: str,
        *,
        name: str | None = None,
        view: str | None = None,
        protocol: dict[str, object] | None = None,
    ) -> None:
        self.operation = operation
        self.path = path
        self.detail = detail
        self.name = name
        self.view = view
        self.protocol = protocol
        table = f"table {name!r} at {path!r}" if name else f"the Delta table at {path!r}"
        of_view = f" (input of view {view!r})" if view else ""
        needs = f" ({_protocol_text(protocol)})" if protocol else ""
        CatalogError.__init__(
            self,
            f"{table}{of_view} uses a Delta protocol spark-ivm cannot {operation}{needs}: "
            f"{detail}; write it with the protocol and table features delta-rs supports, or "
            "read it with delta-spark only (not as an input of a materialized view)",
        )

    def named(self, name: str, view: str | None = None) -> UnsupportedProtocolError:
        """The same error, naming the table (and the view reading it)."""
        return UnsupportedProtocolError(
            self.operation, self.path, self.detail, name=name, view=view, protocol=self.protocol
        )


def _protocol_text(protocol: dict[str, object]) -> str:
    keys = ("minReaderVersion", "minWriterVersion", "readerFeatures", "writerFeatures")
    return ", ".join(f"{k}={protocol[k]}" for k in keys if protocol.get(k) is not None)


class CheckpointError(CatalogError):
    """A state checkpoint that cannot be written or read."""


class RecoveryError(CatalogError):
    """Warehouse state that the refresh protocol cannot reconcile (e.g. a lost checkpoint)."""


class ValueOutOfRangeError(CatalogError, ArithmeticError):
    """A computed value that its column's type cannot hold (Spark's ANSI mode raises for it):
    a SUM past 64 bits, a decimal with more digits than its precision.  The refresh is
    rolled back; nothing is written."""

    def __init__(
        self, view: str | None, column: str, type_name: str, value: object, detail: str = ""
    ) -> None:
        self.view = view
        self.column = column
        self.type_name = type_name
        self.value = value
        self.detail = detail
        where = f"view {view!r}, column {column!r}" if view else f"column {column!r}"
        code = "NUMERIC_VALUE_OUT_OF_RANGE" if "decimal" in type_name else "ARITHMETIC_OVERFLOW"
        super().__init__(
            f"[{code}] {where}: {value} does not fit {type_name}. The refresh was "
            "rolled back and nothing was written; widen the column in the view's definition "
            "(e.g. CAST to DECIMAL(38, 0) or DOUBLE before aggregating), or fix the input rows"
        )


class StorageError(CatalogError, OSError):
    """The warehouse cannot be written (read-only, no permission, disk full).  Nothing was
    made current: the previous state stays valid."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(
            f"cannot write {path!r}: {detail}. The warehouse must be writable (check its "
            "permissions, mount and free space); nothing was changed"
        )


class StatementError(CatalogError, SourceError, ValueError):
    """A statement that parses but cannot be applied (wrong arity, unknown column, ...).

    >>> str(StatementError("INSERT INTO edges", "3 values for 2 columns", line=1, column=1))
    'INSERT INTO edges: 3 values for 2 columns (line 1, column 1)'
    """

    def __init__(self, statement: str, detail: str, **where: Unpack[Where]) -> None:
        self.statement = statement
        self.detail = detail
        super().__init__(f"{statement}: {detail}", construct=statement, **where)
