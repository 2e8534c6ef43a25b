"""Where a construct stands in the SQL text, and the refusal that says so.

Its own module so that the rewrite rules (which :mod:`sql_frontend.analyze` runs) can refuse a
construct without importing the analyzer back; ``analyze`` re-exports both names.
"""

from __future__ import annotations

from sqlglot import exp

from sql_frontend.errors import SqlAnalysisError, UnsupportedSqlError

__all__ = ["analysis_error", "position", "unsupported"]


def position(node: exp.Expr | None) -> tuple[int | None, int | None]:
    """Line and column of ``node`` in the SQL text (of its first token that has one)."""
    if node is None:
        return None, None
    for n in node.walk():
        meta = getattr(n, "_meta", None) or {}
        if "line" in meta:
            col = meta.get("col")
            if col is not None and "start" in meta and "end" in meta:
                col -= meta["end"] - meta["start"]  # sqlglot reports a token's last column
            return meta["line"], col
    parent = node.parent
    while parent is not None:  # a node without positions: report its nearest ancestor's
        meta = getattr(parent, "_meta", None) or {}
        if "line" in meta:
            return meta["line"], meta.get("col")
        parent = parent.parent
    return None, None


def unsupported(
    construct: str, node: exp.Expr | None, reason: str | None = None
) -> UnsupportedSqlError:
    line, col = position(node)
    return UnsupportedSqlError(construct, line=line, column=col, reason=reason)


def analysis_error(message: str, node: exp.Expr | None, construct: str) -> SqlAnalysisError:
    """A :class:`SqlAnalysisError` about ``construct`` located at ``node``."""
    line, col = position(node)
    return SqlAnalysisError(message, line=line, column=col, construct=construct)
