"""The Session's SQL dialect: Spark SQL plus the materialized-view DDL of Spark and Databricks.

sqlglot's Spark dialect already reads ``CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS]
v [(a COMMENT 'x', b)] [COMMENT ...] [TBLPROPERTIES ...] [PARTITIONED BY | CLUSTER BY ...] AS q``
and ``DROP MATERIALIZED VIEW``.  :class:`IvmSpark` extends its tokenizer and parser (not the
text: comments anywhere are the tokenizer's business) with

* ``SCHEDULE [REFRESH] EVERY n {MINUTE|HOUR|DAY|WEEK}[S]`` and ``TRIGGER ON UPDATE`` as
  properties of ``CREATE`` (:class:`ScheduleProperty`);
* ``REFRESH MATERIALIZED VIEW[S] [v] [FULL] [SYNC]`` (:class:`RefreshMaterializedView`);
* ``DESCRIBE [EXTENDED] MATERIALIZED VIEW v`` and ``EXPLAIN MATERIALIZED VIEW v``
  (``EXPLAIN`` is a ``DESCRIBE``-class token here; any other ``EXPLAIN`` stays a Command);
* ``SHOW MATERIALIZED VIEWS`` and ``SHOW CREATE TABLE v`` (other ``SHOW``\\ s stay Commands);
* ``ALTER MATERIALIZED VIEW v {ADD|ALTER} SCHEDULE ... | DROP SCHEDULE`` and
  ``ALTER MATERIALIZED VIEW v CLUSTER BY (cols) | CLUSTER BY NONE``.

Everything else parses exactly as in sqlglot's Spark dialect.

>>> import sqlglot
>>> t = sqlglot.parse_one("/* x */ REFRESH MATERIALIZED VIEW v -- y\\n FULL", read=IvmSpark)
>>> type(t).__name__, t.this.name, t.args["full"]
('RefreshMaterializedView', 'v', True)
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import TokenType
from sqlglot.trie import new_trie

UNITS = ("MINUTE", "HOUR", "DAY", "WEEK")


class ScheduleProperty(exp.Property):
    """``SCHEDULE [REFRESH] EVERY n unit`` (``every``, ``unit``) or ``TRIGGER ON UPDATE``."""

    arg_types: ClassVar[dict[str, bool]] = {"every": False, "unit": False, "on_update": False}


class RefreshMaterializedView(exp.Expression):
    """``REFRESH MATERIALIZED VIEW [v] [FULL]`` (no ``this``: every view)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": False, "full": False}


class DescribeMaterializedView(exp.Expression):
    arg_types: ClassVar[dict[str, bool]] = {"this": True, "extended": False}


class ExplainMaterializedView(exp.Expression):
    arg_types: ClassVar[dict[str, bool]] = {"this": True}


class ShowMaterializedViews(exp.Expression):
    arg_types: ClassVar[dict[str, bool]] = {}


class ShowCreateTable(exp.Expression):
    arg_types: ClassVar[dict[str, bool]] = {"this": True}


class AlterMaterializedView(exp.Expression):
    """``ALTER MATERIALIZED VIEW v {ADD|ALTER|DROP} SCHEDULE`` (``action`` is the verb) or
    ``ALTER MATERIALIZED VIEW v CLUSTER BY (cols) | CLUSTER BY NONE`` (``action`` ``CLUSTER``,
    ``cluster`` the columns; none for ``NONE``)."""

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "action": True,
        "schedule": False,
        "cluster": False,
    }


def _schedule(self: Any) -> ScheduleProperty:
    """After ``SCHEDULE``: ``[REFRESH] EVERY n unit`` (or ``TRIGGER ON UPDATE``)."""
    self._match_text_seq("REFRESH")
    if self._match_text_seq("TRIGGER"):
        return _trigger(self)
    if not self._match_text_seq("EVERY"):
        self.raise_error("expected EVERY n HOURS (or MINUTES, DAYS, WEEKS) after SCHEDULE")
    number = self._parse_number()
    if number is None:
        self.raise_error("expected a number of time units after SCHEDULE EVERY")
    unit = self._curr.text.upper().rstrip("S") if self._curr else ""
    if unit not in UNITS:
        self.raise_error("expected MINUTES, HOURS, DAYS or WEEKS after SCHEDULE EVERY n")
    self._advance()
    return self.expression(ScheduleProperty(every=number, unit=exp.var(unit)))


def _trigger(self: Any) -> ScheduleProperty:
    """After ``TRIGGER``: ``ON UPDATE``."""
    if not self._match_text_seq("ON", "UPDATE"):
        self.raise_error("expected ON UPDATE after TRIGGER")
    return self.expression(ScheduleProperty(on_update=exp.true()))


def _schedule_clause(self: Any) -> ScheduleProperty | None:
    if self._match_text_seq("SCHEDULE"):
        return _schedule(self)
    if self._match_text_seq("TRIGGER"):
        return _trigger(self)
    return None


class IvmSpark(Spark):
    """Spark SQL with the materialized-view statements of Spark and Databricks."""

    class Tokenizer(Spark.Tokenizer):
        KEYWORDS: ClassVar[dict[str, TokenType]] = {
            **Spark.Tokenizer.KEYWORDS,
            "EXPLAIN": TokenType.DESCRIBE,
        }
        COMMANDS: ClassVar[set[TokenType]] = Spark.Tokenizer.COMMANDS - {TokenType.SHOW}

    class Parser(SparkParser):
        PROPERTY_PARSERS: ClassVar[dict[str, Any]] = {
            **SparkParser.PROPERTY_PARSERS,
            "SCHEDULE": lambda self: _schedule(self),
            "TRIGGER": lambda self: _trigger(self),
        }
        STATEMENT_PARSERS: ClassVar[dict[TokenType, Any]] = {
            **SparkParser.STATEMENT_PARSERS,
            TokenType.REFRESH: lambda self: self._parse_ivm_refresh(),
            TokenType.DESCRIBE: lambda self: self._parse_ivm_describe(),
            TokenType.ALTER: lambda self: self._parse_ivm_alter(),
            TokenType.SHOW: lambda self: self._parse_show(),
        }
        SHOW_PARSERS: ClassVar[dict[str, Any]] = {
            **SparkParser.SHOW_PARSERS,
            "MATERIALIZED VIEWS": lambda self: self.expression(ShowMaterializedViews()),
            "CREATE TABLE": lambda self: self.expression(
                ShowCreateTable(this=self._parse_table_parts())
            ),
        }
        SHOW_TRIE: ClassVar[dict[str, Any]] = new_trie(k.split(" ") for k in SHOW_PARSERS)

        def _parse_ivm_refresh(self) -> exp.Expr:
            start = self._index
            if not self._match_text_seq("MATERIALIZED"):
                return self._parse_refresh()
            if not self._match_texts(("VIEW", "VIEWS")):
                self._retreat(start)
                return self._parse_refresh()
            end = self._curr is None or self._curr.token_type == TokenType.SENTINEL
            named = not end and self._curr.text.upper() != "FULL"
            this = self._parse_table_parts() if named else None
            full = self._match_text_seq("FULL")
            if self._match_text_seq("ASYNC"):
                self.raise_error("REFRESH ... ASYNC needs the always-on refresher; leave it out")
            self._match_text_seq("SYNC")  # what every REFRESH does
            return self.expression(RefreshMaterializedView(this=this, full=full))

        def _parse_ivm_describe(self) -> exp.Expr:
            keyword = self._prev
            start = self._index
            extended = self._match_texts(("EXTENDED", "FORMATTED"))
            if self._match_text_seq("MATERIALIZED", "VIEW"):
                this = self._parse_table_parts()
                if keyword.text.upper() == "EXPLAIN":
                    if extended:
                        self.raise_error("EXPLAIN MATERIALIZED VIEW takes no EXTENDED")
                    return self.expression(ExplainMaterializedView(this=this))
                return self.expression(DescribeMaterializedView(this=this, extended=extended))
            self._retreat(start)
            if keyword.text.upper() == "EXPLAIN":
                return self._parse_as_command(keyword)
            return self._parse_describe()

        def _parse_ivm_alter(self) -> exp.Expr:
            start = self._index
            if not self._match_text_seq("MATERIALIZED", "VIEW"):
                return self._parse_alter()
            this = self._parse_table_parts()
            action = self._curr.text.upper() if self._curr else ""
            if self._match(TokenType.CLUSTER_BY):
                if self._match_text_seq("NONE"):
                    cols: list[exp.Expr] = []
                else:
                    cols = self._parse_wrapped_csv(self._parse_column)
                return self.expression(
                    AlterMaterializedView(
                        this=this, action=exp.var("CLUSTER"), cluster=exp.Tuple(expressions=cols)
                    )
                )
            if action not in ("ADD", "ALTER", "DROP"):
                self._retreat(start)
                return self._parse_as_command(self._prev)
            self._advance()
            if action == "DROP":
                if not self._match_text_seq("SCHEDULE") and not self._match_text_seq(
                    "TRIGGER", "ON", "UPDATE"
                ):
                    self.raise_error("expected DROP SCHEDULE")
                schedule = None
            else:
                schedule = _schedule_clause(self)
                if schedule is None:
                    self.raise_error(f"expected {action} SCHEDULE EVERY ... or TRIGGER ON UPDATE")
            return self.expression(
                AlterMaterializedView(this=this, action=exp.var(action), schedule=schedule)
            )
