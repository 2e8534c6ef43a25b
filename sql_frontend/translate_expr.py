"""sqlglot scalar expressions → :mod:`sql_frontend.scalar`, with Spark's typing rules.

Operands are cast explicitly to the type an operation computes in (integers to DOUBLE for
``/``, to DECIMAL next to decimals, both sides of a comparison to their common type), so the
evaluator never guesses. An unknown function is refused naming itself and its position.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal

from sqlglot import exp

from sql_frontend import coercion
from sql_frontend.errors import INTERNAL_GAPS, SqlAnalysisError, SqlError, internal_message
from sql_frontend.positions import analysis_error, position, unsupported
from sql_frontend.scalar import Call, Lit, Ref, Scalar, cast_to
from sql_frontend.sql_types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    NULL,
    STRING,
    TIMESTAMP,
    SqlType,
    as_decimal,
    decimal,
    parse_type,
)
from sql_frontend.translate_collections import CollectionTyping
from sql_frontend.translate_encoding import EncodingTyping
from sql_frontend.translate_functions import FunctionTyping
from sql_frontend.translate_lambdas import HigherOrderFunctions
from sql_frontend.translate_nested import NestedTranslation, refuse_maps

Lookup = Callable[[exp.Expr], Scalar | None]


_ARITH = {
    exp.Add: "add",
    exp.Sub: "sub",
    exp.Mul: "mul",
    exp.Div: "div",
    exp.Mod: "mod",
    exp.IntDiv: "intdiv",
}
_CMP = {exp.EQ: "eq", exp.NEQ: "neq", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}
_STRING_FNS: dict[type[exp.Expr], tuple[str, SqlType]] = {
    exp.Upper: ("upper", STRING),
    exp.Lower: ("lower", STRING),
    exp.Length: ("length", INT),
    exp.Initcap: ("initcap", STRING),
}
_DATE_PARTS: dict[type[exp.Expr], str] = {
    exp.Year: "year",
    exp.Month: "month",
    exp.Day: "day",
    exp.DayOfMonth: "day",
    exp.Quarter: "quarter",
    exp.DayOfWeek: "dayofweek",
    exp.DayOfYear: "dayofyear",
}
_ANON = {  # functions sqlglot leaves anonymous: name -> (op, result type or None = arg type)
    "reverse": ("reverse", STRING),
    "instr": ("instr", INT),
    "startswith": ("startswith", BOOLEAN),
    "endswith": ("endswith", BOOLEAN),
    "contains": ("contains", BOOLEAN),
    "repeat": ("repeat", STRING),
    "hour": ("hour", INT),
    "minute": ("minute", INT),
    "second": ("second", INT),
    "char_length": ("length", INT),
}


_FIELD_ALIASES = {
    **dict.fromkeys(("Y", "YEARS", "YR", "YRS"), "YEAR"),
    **dict.fromkeys(("QTR",), "QUARTER"),
    **dict.fromkeys(("MON", "MONS", "MONTHS"), "MONTH"),
    **dict.fromkeys(("W", "WEEKS"), "WEEK"),
    **dict.fromkeys(("D", "DAYS"), "DAY"),
    **dict.fromkeys(("H", "HOURS", "HR", "HRS"), "HOUR"),
    **dict.fromkeys(("M", "MIN", "MINS", "MINUTES"), "MINUTE"),
    **dict.fromkeys(("S", "SEC", "SECONDS", "SECS"), "SECOND"),
}
_SPARK_FIELDS = {
    *_FIELD_ALIASES.values(),
    *("YEAROFWEEK", "DAYOFWEEK", "DOW", "DAYOFWEEK_ISO", "DOW_ISO", "DOY"),
}
"""EXTRACT / date_part fields Spark knows (others are its INVALID_EXTRACT_FIELD)."""


class ExprTranslator(
    FunctionTyping, NestedTranslation, CollectionTyping, HigherOrderFunctions, EncodingTyping
):
    """Translates expressions of one scope; ``column`` resolves a column reference and
    ``lookup`` (tried first, on every node) maps already computed expressions — grouping
    keys, aggregates, window functions, scalar subqueries — to columns."""

    def __init__(self, column: Callable[[exp.Column], Scalar], lookup: Lookup | None = None):
        self.column = column
        self.lookup = lookup

    def __call__(self, node: exp.Expr) -> Scalar:
        try:
            return self.translate(node)
        except SqlAnalysisError as e:
            if e.line is not None:
                raise
            line, column = position(node)
            if line is None:
                raise
            raise SqlAnalysisError(
                str(e), line=line, column=column, construct=e.construct
            ) from None
        except SqlError:
            raise
        except INTERNAL_GAPS as err:
            # a gap in this module, reported typed and located rather than as a Python error
            what = f"cannot translate {node.sql(dialect='spark')}"
            raise analysis_error(internal_message(what, err), node, type(node).__name__) from err

    def cast_call(
        self, name: str, t: SqlType, *args: exp.Expr, result: SqlType | None = None
    ) -> Scalar:
        """The function ``name`` over ``args``, each translated and cast to ``t``; its type is
        ``result`` (default ``t``)."""
        return Call(name, tuple(cast_to(self(a), t) for a in args), t if result is None else result)

    def translate(self, node: exp.Expr) -> Scalar:
        if self.lookup is not None:
            hit = self.lookup(node)
            if hit is not None:
                return hit
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is not None:
            return method(node)
        for cls, name in _ARITH.items():
            if type(node) is cls:
                return self.arith(name, node)
        for cls, name in _CMP.items():
            if type(node) is cls:
                return self.compare(name, self(node.this), self(node.expression))
        if type(node) in _STRING_FNS:
            name, t = _STRING_FNS[type(node)]
            return self.cast_call(name, STRING, node.this, result=t)
        if type(node) in _DATE_PARTS:
            return Call(_DATE_PARTS[type(node)], (self.date_arg(node.this),), INT)
        if type(node).__name__.lower() in _ANON and isinstance(node, exp.Func):
            # newer sqlglot parses some of these as typed nodes (exp.Reverse, exp.Hour, ...)
            args = [node.args[k] for k in ("this", "expression", "times") if node.args.get(k)]
            return self.anon_call(type(node).__name__.lower(), args)
        hit = self.higher_order_call(node)
        if hit is None:
            hit = self.registry_call(node)
        if hit is not None:
            return hit
        if isinstance(node, exp.AggFunc):
            raise unsupported(
                f"aggregate {node.sql_name()} here",
                node,
                "aggregates are allowed in SELECT, HAVING and ORDER BY of a grouped query",
            )
        name = node.sql_name() if isinstance(node, exp.Func) else type(node).__name__
        if isinstance(node, exp.Anonymous):
            name = str(node.name).upper()
        raise unsupported(name, node)

    # ------------------------------------------------------------ leaves
    def _Column(self, node: exp.Column) -> Scalar:
        return self.column(node)

    def _Paren(self, node: exp.Paren) -> Scalar:
        return self(node.this)

    def _Alias(self, node: exp.Alias) -> Scalar:
        return self(node.this)

    def _Null(self, node: exp.Null) -> Scalar:
        return Lit(None, NULL)

    def _Boolean(self, node: exp.Boolean) -> Scalar:
        return Lit(bool(node.this), BOOLEAN)

    def _HexString(self, node: exp.HexString) -> Scalar:
        text = str(node.this)
        try:
            return Lit(bytes.fromhex(text if len(text) % 2 == 0 else "0" + text), BINARY)
        except ValueError:
            raise analysis_error(f"invalid hex literal X'{text}'", node, "X''") from None

    def _Literal(self, node: exp.Literal) -> Scalar:
        text = str(node.this)
        if node.is_string:
            return Lit(text, STRING)
        if "e" in text.lower():
            return Lit(float(text), DOUBLE)
        if "." in text:
            d = Decimal(text)
            _sign, digits, exponent = d.as_tuple()
            assert isinstance(exponent, int)
            scale = max(-exponent, 0)
            precision = max(len(digits), scale, 1)
            return Lit(d, decimal(precision, scale))
        v = int(text)
        if -(2**31) <= v < 2**31:
            return Lit(v, INT)
        if -(2**63) <= v < 2**63:
            return Lit(v, BIGINT)
        return Lit(Decimal(v), decimal(len(text), 0))

    # ------------------------------------------------------------ arithmetic
    def arith(self, name: str, node: exp.Expr) -> Scalar:
        if isinstance(node.expression, exp.Interval) or isinstance(node.this, exp.Interval):
            return self.interval_arith(name, node)
        a, b = self(node.this), self(node.expression)
        dated = coercion.date_arithmetic(name, a.type, b.type)
        if isinstance(dated, SqlType):
            return Lit(None, dated)
        if isinstance(dated, str):
            d, n = (a, b) if a.type == DATE else (b, a)
            return Call(dated, (d, cast_to(n, INT)), DATE)
        if name == "sub" and a.type in (DATE, TIMESTAMP) and b.type in (DATE, TIMESTAMP):
            raise unsupported(f"{a.type} - {b.type} (an interval)", node)
        if (a.type.is_decimal and b.type.is_integral) or (b.type.is_decimal and a.type.is_integral):
            a, b = self.to_exact(a), self.to_exact(b)  # an integer literal counts its digits
        plan = coercion.arithmetic(name, a.type, b.type)
        if plan.left.is_decimal and plan.right.is_decimal:
            return Call(name, (self.to_exact(a), self.to_exact(b)), plan.result)
        return Call(name, (cast_to(a, plan.left), cast_to(b, plan.right)), plan.result)

    @staticmethod
    def to_exact(e: Scalar) -> Scalar:
        if e.type.is_decimal:
            return e
        if e.type.name == "NULL":
            return Lit(None, decimal(1, 0))
        if isinstance(e, Lit) and isinstance(e.value, int) and e.type.is_integral:
            # Spark types an integer literal next to a decimal by its digits (fromLiteral)
            digits = max(len(str(abs(e.value))), 1)
            return Lit(Decimal(e.value), decimal(digits, 0))
        return cast_to(e, as_decimal(e.type))

    def interval_arith(self, name: str, node: exp.Expr) -> Scalar:
        base, interval = node.this, node.expression
        if isinstance(base, exp.Interval):
            base, interval = interval, base
            if name == "sub":
                raise unsupported("INTERVAL - value", node)
        d = self(base)
        if d.type not in (DATE, TIMESTAMP) and d.type != STRING:
            raise unsupported(f"interval arithmetic on {d.type}", node)
        d = cast_to(d, DATE) if d.type == STRING else d
        assert isinstance(interval, exp.Interval)
        unit = str(interval.unit.name if interval.unit else "DAY").upper().rstrip("S")
        amount = self(interval.this)
        if amount.type == STRING and isinstance(amount, Lit):
            amount = Lit(int(str(amount.value).strip()), INT)
        if name == "sub":
            amount = Call("neg", (cast_to(amount, INT),), INT)
        amount = cast_to(amount, INT)
        if d.type == DATE:
            if unit in ("DAY",):
                return Call("date_add", (d, amount), DATE)
            if unit == "WEEK":
                return Call("date_add", (d, Call("mul", (amount, Lit(7, INT)), INT)), DATE)
            if unit == "MONTH":
                return Call("add_months", (d, amount), DATE)
            if unit == "YEAR":
                return Call("add_months", (d, Call("mul", (amount, Lit(12, INT)), INT)), DATE)
        if d.type == TIMESTAMP:
            secs = {"WEEK": 604800, "DAY": 86400, "HOUR": 3600, "MINUTE": 60, "SECOND": 1}
            if unit in secs:
                n = Call("mul", (cast_to(amount, BIGINT), Lit(secs[unit], BIGINT)), BIGINT)
                return Call("ts_add_seconds", (d, n), TIMESTAMP)
            if unit in ("MONTH", "YEAR"):
                months = amount if unit == "MONTH" else Call("mul", (amount, Lit(12, INT)), INT)
                return Call("ts_add_months", (d, months), TIMESTAMP)
        raise unsupported(f"INTERVAL {unit} on {d.type}", node)

    def _Neg(self, node: exp.Neg) -> Scalar:
        a = self(node.this)
        t = coercion.unary_numeric(a.type, "unary -")
        if isinstance(a, Lit) and a.value is not None and a.type.is_numeric:
            v = -a.value  # type: ignore[operator]
            if (a.type, a.value) in ((BIGINT, 2**31), (decimal(19, 0), 2**63)):
                # Spark reads -2147483648 as an INT and -9223372036854775808 as a BIGINT
                return Lit(int(v), INT if a.type == BIGINT else BIGINT)
            bound = {"TINYINT": 2**7, "SMALLINT": 2**15, "INT": 2**31, "BIGINT": 2**63}
            if not (
                a.type.name in bound and v == bound[a.type.name]
            ):  # else: overflows at run time
                return Lit(v, a.type)
        return Call("neg", (cast_to(a, t),), t)

    def _Abs(self, node: exp.Abs) -> Scalar:
        a = self(node.this)
        t = coercion.unary_numeric(a.type, "abs")
        return Call("abs", (cast_to(a, t),), t)

    # ------------------------------------------------------------ comparison and logic
    def compare(self, name: str, a: Scalar, b: Scalar) -> Scalar:
        refuse_maps([a.type, b.type], "comparison", None)
        t = coercion.comparison_type(a.type, b.type)
        return Call(name, (cast_to(a, t), cast_to(b, t)), BOOLEAN)

    def _NullSafeEQ(self, node: exp.NullSafeEQ) -> Scalar:
        a, b = self(node.this), self(node.expression)
        refuse_maps([a.type, b.type], "<=>", node)
        t = coercion.comparison_type(a.type, b.type, "<=>")
        return Call("eq_null_safe", (cast_to(a, t), cast_to(b, t)), BOOLEAN)

    def _NullSafeNEQ(self, node: exp.NullSafeNEQ) -> Scalar:
        return Call("not", (self._NullSafeEQ(node),), BOOLEAN)  # type: ignore[arg-type]

    def boolean(self, node: exp.Expr) -> Scalar:
        e = self(node)
        if e.type not in (BOOLEAN, NULL):
            raise SqlAnalysisError(
                f"expected a BOOLEAN, got {e.type}",
                line=position(node)[0],
                column=position(node)[1],
            )
        return cast_to(e, BOOLEAN)

    def _And(self, node: exp.And) -> Scalar:
        return Call("and", (self.boolean(node.this), self.boolean(node.expression)), BOOLEAN)

    def _Or(self, node: exp.Or) -> Scalar:
        return Call("or", (self.boolean(node.this), self.boolean(node.expression)), BOOLEAN)

    def _Not(self, node: exp.Not) -> Scalar:
        return Call("not", (self.boolean(node.this),), BOOLEAN)

    def _Is(self, node: exp.Is) -> Scalar:
        target = node.expression
        if isinstance(target, exp.Null):
            return Call("is_null", (self(node.this),), BOOLEAN)
        if isinstance(target, exp.Boolean):
            return Call(
                "is_true" if target.this else "is_false", (self.boolean(node.this),), BOOLEAN
            )
        raise unsupported("IS", node)

    def _In(self, node: exp.In) -> Scalar:
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise unsupported(
                "IN (subquery) here", node, "IN subqueries are supported as WHERE conditions"
            )
        x = self(node.this)
        vals = [self(v) for v in node.expressions]
        t = coercion.common_type([x.type, *(v.type for v in vals)], "IN")
        return Call("in", (cast_to(x, t), *(cast_to(v, t) for v in vals)), BOOLEAN)

    def _Between(self, node: exp.Between) -> Scalar:
        x, lo, hi = self(node.this), self(node.args["low"]), self(node.args["high"])
        out = Call("and", (self.compare("ge", x, lo), self.compare("le", x, hi)), BOOLEAN)
        return Call("not", (out,), BOOLEAN) if node.args.get("negate") else out

    def _Like(self, node: exp.Like) -> Scalar:
        return self.like("like", node)

    def _ILike(self, node: exp.ILike) -> Scalar:
        return self.like("ilike", node)

    def _RegexpLike(self, node: exp.RegexpLike) -> Scalar:
        return self.like("rlike", node)

    def like(self, name: str, node: exp.Expr) -> Scalar:
        if node.args.get("escape"):
            raise unsupported("LIKE ... ESCAPE", node)
        out = self.cast_call(name, STRING, node.this, node.expression, result=BOOLEAN)
        # newer sqlglot reads ``x NOT LIKE p`` as Like(negate=True)
        return Call("not", (out,), BOOLEAN) if node.args.get("negate") else out

    def _Escape(self, node: exp.Escape) -> Scalar:
        raise unsupported("LIKE ... ESCAPE", node)

    # ------------------------------------------------------------ conditionals
    def _Case(self, node: exp.Case) -> Scalar:
        operand = self(node.this) if node.this else None
        conds: list[Scalar] = []
        values: list[Scalar] = []
        for branch in node.args.get("ifs") or []:
            if operand is not None:
                conds.append(self.compare("eq", operand, self(branch.this)))
            else:
                conds.append(self.boolean(branch.this))
            values.append(self(branch.args["true"]))
        default = self(node.args["default"]) if node.args.get("default") else Lit(None, NULL)
        return self.case(conds, [*values, default])

    def case(self, conds: list[Scalar], values: list[Scalar], what: str = "CASE") -> Scalar:
        t = coercion.common_type([v.type for v in values], what)
        args: list[Scalar] = []
        for c, v in zip(conds, values, strict=False):
            args += [c, cast_to(v, t)]
        args.append(cast_to(values[-1], t))
        return Call("case", tuple(args), t)

    def _If(self, node: exp.If) -> Scalar:
        f = node.args.get("false")
        return self.case(
            [self.boolean(node.this)],
            [self(node.args["true"]), self(f) if f is not None else Lit(None, NULL)],
            "IF",
        )

    def _Nvl2(self, node: exp.Nvl2) -> Scalar:
        f = node.args.get("false")
        return self.case(
            [Call("is_not_null", (self(node.this),), BOOLEAN)],
            [self(node.args["true"]), self(f) if f is not None else Lit(None, NULL)],
            "NVL2",
        )

    def _Coalesce(self, node: exp.Coalesce) -> Scalar:
        vals = [self(node.this), *(self(e) for e in node.expressions)]
        t = coercion.common_type([v.type for v in vals], "COALESCE")
        return Call("coalesce", tuple(cast_to(v, t) for v in vals), t)

    def _Nullif(self, node: exp.Nullif) -> Scalar:
        a, b = self(node.this), self(node.expression)
        # NULLIF(a, b) is IF(a = b, NULL, a): the comparison is coerced, the result is a's type
        return Call("case", (self.compare("eq", a, b), Lit(None, a.type), a), a.type)

    def _Greatest(self, node: exp.Greatest) -> Scalar:
        return self.extreme("greatest", node)

    def _Least(self, node: exp.Least) -> Scalar:
        return self.extreme("least", node)

    def extreme(self, name: str, node: exp.Expr) -> Scalar:
        vals = [self(node.this), *(self(e) for e in node.expressions)]
        t = coercion.common_type_no_strings([v.type for v in vals], name.upper())
        return Call(name, tuple(cast_to(v, t) for v in vals), t)

    # ------------------------------------------------------------ casts
    def _Cast(self, node: exp.Cast) -> Scalar:
        return self.cast(node, safe=False)

    def _TryCast(self, node: exp.TryCast) -> Scalar:
        return self.cast(node, safe=bool(node.args.get("safe")))

    def cast(self, node: exp.Cast, safe: bool) -> Scalar:
        to = node.args["to"]
        try:
            t = parse_type(to.sql(dialect="spark"))
        except SqlAnalysisError:
            raise unsupported(f"CAST to {to.sql(dialect='spark')}", node) from None
        a = self(node.this)
        if isinstance(a, Lit) and a.type == STRING and t in (DATE, TIMESTAMP):
            from sql_frontend.expressions.casts import _to_date, _to_timestamp

            try:
                v: dt.date = (_to_date if t == DATE else _to_timestamp)(a.value, t)
            except Exception:
                raise SqlAnalysisError(
                    f"[CAST_INVALID_INPUT] invalid {t} literal {a.value!r}",
                    line=position(node)[0],
                    column=position(node)[1],
                ) from None
            return Lit(v, t)
        if a.type == t:
            return a
        coercion.check_cast(a.type, t)
        return Call("try_cast" if safe else "cast", (a,), t)

    def _TsOrDsToDate(self, node: exp.TsOrDsToDate) -> Scalar:
        if node.args.get("format"):
            return self.to_datetime(node, "to_date", "parse_date", [self(node.this)])
        return self.date_arg(node.this)

    @staticmethod
    def time_arg(e: Scalar) -> Scalar:
        """The TIMESTAMP argument of HOUR / MINUTE / SECOND: Spark casts a string to a
        timestamp, and a time alone (``'10:11:12'``) is a time of the current day, so its
        parts are read without a date (``time_parts`` reads both forms)."""
        if e.type == STRING:
            return Call("time_parts", (e,), TIMESTAMP)
        return cast_to(e, TIMESTAMP)

    def date_arg(self, node: exp.Expr) -> Scalar:
        if isinstance(node, exp.TsOrDsToDate) and not node.args.get("format"):
            return self.date_arg(node.this)
        e = self(node)
        if e.type == DATE:
            return e
        return cast_to(e, DATE)

    # ------------------------------------------------------------ strings
    def _DPipe(self, node: exp.DPipe) -> Scalar:
        return self.cast_call("concat", STRING, node.this, node.expression)

    def _Concat(self, node: exp.Concat) -> Scalar:
        return self.cast_call("concat", STRING, *node.expressions)

    def _ConcatWs(self, node: exp.ConcatWs) -> Scalar:
        return self.cast_call("concat_ws", STRING, *node.expressions)

    def _Substring(self, node: exp.Substring) -> Scalar:
        if node.args.get("start") is None:
            raise analysis_error(
                "[WRONG_NUM_ARGS] substring requires 2 or 3 arguments", node, "SUBSTRING"
            )
        args = [cast_to(self(node.this), STRING), cast_to(self(node.args["start"]), INT)]
        if node.args.get("length") is not None:
            args.append(cast_to(self(node.args["length"]), INT))
        return Call("substring", tuple(args), STRING)

    def _Left(self, node: exp.Left) -> Scalar:
        return Call(
            "left", (cast_to(self(node.this), STRING), cast_to(self(node.expression), INT)), STRING
        )

    def _Right(self, node: exp.Right) -> Scalar:
        return Call(
            "right", (cast_to(self(node.this), STRING), cast_to(self(node.expression), INT)), STRING
        )

    def _Trim(self, node: exp.Trim) -> Scalar:
        pos = str(node.args.get("position") or "").upper()
        s = cast_to(self(node.this), STRING)
        if node.expression is not None:
            op = {"LEADING": "ltrim_chars", "TRAILING": "rtrim_chars"}.get(pos, "trim_chars")
            return Call(op, (s, cast_to(self(node.expression), STRING)), STRING)
        return Call({"LEADING": "ltrim", "TRAILING": "rtrim"}.get(pos, "trim"), (s,), STRING)

    def _Replace(self, node: exp.Replace) -> Scalar:
        repl = node.args.get("replacement")
        return Call(
            "replace",
            (
                cast_to(self(node.this), STRING),
                cast_to(self(node.expression), STRING),
                cast_to(self(repl), STRING) if repl is not None else Lit("", STRING),
            ),
            STRING,
        )

    def _StrPosition(self, node: exp.StrPosition) -> Scalar:
        if node.args.get("position") is not None:
            sub, text = self(node.args["substr"]), self(node.this)
            start = cast_to(self(node.args["position"]), INT)
            return Call("locate", (cast_to(sub, STRING), cast_to(text, STRING), start), INT)
        return self.cast_call("instr", STRING, node.this, node.args["substr"], result=INT)

    def _Pad(self, node: exp.Pad) -> Scalar:
        fill = node.args.get("fill_pattern")
        return Call(
            "lpad" if node.args.get("is_left") else "rpad",
            (
                cast_to(self(node.this), STRING),
                cast_to(self(node.expression), INT),
                cast_to(self(fill), STRING) if fill is not None else Lit(" ", STRING),
            ),
            STRING,
        )

    def _Anonymous(self, node: exp.Anonymous) -> Scalar:
        name = str(node.name).lower()
        hit = self.higher_order_call(node)
        if hit is None:
            hit = self.registry_call(node)
        if hit is not None:
            return hit
        if name not in _ANON:
            raise unsupported(
                f"function {node.name}",
                node,
                "see docs/sql-support.md for the functions views support",
            )
        return self.anon_call(name, list(node.expressions))

    def anon_call(self, name: str, arg_nodes: list[exp.Expr]) -> Scalar:
        op, t = _ANON[name]
        args = [self(a) for a in arg_nodes]
        if op in ("hour", "minute", "second"):
            args = [self.time_arg(a) for a in args]
        elif op in ("repeat",):
            args = [cast_to(args[0], STRING), cast_to(args[1], INT)]
        else:
            args = [cast_to(a, STRING) for a in args]
        return Call(op, tuple(args), t)

    # ------------------------------------------------------------ the function registry
    def registry_call(self, node: exp.Expr) -> Scalar | None:
        """A call of a function of :mod:`sql_frontend.expressions.registry`, or None."""
        from sql_frontend.expressions import registry

        found = registry.call_of(node)
        if found is None:
            return None
        name, arg_nodes = found
        args = [self(a) for a in arg_nodes]
        if name in registry.CASTS:
            if len(args) != 1:
                raise self.arity(node, name, "1")
            t = registry.CASTS[name]
            if args[0].type == t:
                return args[0]
            coercion.check_cast(args[0].type, t)
            return Call("cast", (args[0],), t)
        if name in registry.CONSTANTS:
            if args:
                raise self.arity(node, name, "0")
            return Lit(registry.CONSTANTS[name], DOUBLE)
        if name in registry.MACROS:
            want = 2 if name == "equal_null" else 1
            if len(args) != want:
                raise self.arity(node, name, str(want))
            a = args[0]
            if name == "equal_null":
                t = coercion.comparison_type(a.type, args[1].type, "equal_null")
                return Call("eq_null_safe", (cast_to(a, t), cast_to(args[1], t)), BOOLEAN)
            if not a.type.is_numeric:
                raise coercion.mismatch(name, [a.type])
            zero = Lit(0, a.type) if a.type.is_integral else cast_to(Lit(0, INT), a.type)
            if name == "zeroifnull":  # Spark: nvl(x, 0), typed as COALESCE types it
                t = coercion.common_type([a.type, INT], name)
                return Call("coalesce", (cast_to(a, t), cast_to(Lit(0, INT), t)), t)
            return Call("case", (Call("eq", (a, zero), BOOLEAN), Lit(None, a.type), a), a.type)
        fn = registry.FUNCTIONS[name]
        if fn.typing is not None:
            rule = getattr(self, f"typing_{fn.typing}")
            return rule(node, name, fn, args)
        if fn.op == "murmur3":  # variadic, any types
            if not args:
                raise self.arity(node, name, "1 or more")
            return Call(fn.op, tuple(args), fn.result or INT)
        n_required = len(fn.args) - len(fn.defaults)
        if not n_required <= len(args) <= len(fn.args):
            raise self.arity(node, name, f"{n_required}..{len(fn.args)}")
        for default, target in zip(
            fn.defaults[len(args) - n_required :], fn.args[len(args) :], strict=False
        ):
            args.append(Lit(default, target or NULL))
        args[0] = self.untyped_arg(name, fn.op, args[0]) if fn.args[0] is None else args[0]
        typed = [
            a
            if want is None or (a.type == BINARY and fn.op in registry.BYTES_IN)
            else cast_to(a, want)
            for a, want in zip(args, fn.args, strict=True)
        ]
        t = fn.result if fn.result is not None else typed[0].type
        return Call(fn.op, tuple(typed), t)

    @staticmethod
    def untyped_arg(name: str, op: str, a: Scalar) -> Scalar:
        """The first argument of a registry function that keeps its type, checked as Spark
        types it: integral for shifts and bit_count, numeric for positive, integral / STRING /
        BINARY for hex (a STRING read as BIGINT where a number is needed)."""
        t = a.type
        if op in ("is_null", "is_not_null"):
            return a
        if op == "bitmap_count":  # a BINARY bitmap only (not even NULL)
            if t == BINARY:
                return a
            raise coercion.mismatch(name, [t])
        if op == "hex":
            if t.is_integral:
                return cast_to(a, BIGINT)
            if t in (STRING, BINARY):
                return a
        elif op in ("identity", "format_number"):
            if t.is_numeric or (op == "format_number" and t == NULL):
                return a
        elif t.is_integral:
            return a if t.name == "BIGINT" else cast_to(a, INT)
        elif t in (STRING, NULL):
            return cast_to(a, BIGINT)
        raise coercion.mismatch(name, [t])

    @staticmethod
    def arity(node: exp.Expr, name: str, expected: str) -> SqlAnalysisError:
        return analysis_error(f"[WRONG_NUM_ARGS] {name} takes {expected} arguments", node, name)

    def _Log(self, node: exp.Log) -> Scalar:
        x = node.expression
        if x is None:
            return self.cast_call("ln", DOUBLE, node.this)
        base = node.this
        if isinstance(base, exp.Literal) and str(base.this) in ("10", "2"):
            op = "log10" if str(base.this) == "10" else "log2"
            return self.cast_call(op, DOUBLE, x)
        return self.cast_call("log_base", DOUBLE, base, x)

    def _Negative(self, node: exp.Expr) -> Scalar:
        return self._Neg(node)  # type: ignore[arg-type]

    def _TimestampTrunc(self, node: exp.TimestampTrunc) -> Scalar:
        unit = node.args.get("unit")
        text = unit.name if isinstance(unit, exp.Expr) else str(unit)
        ts = cast_to(self(node.this), TIMESTAMP)
        return Call("date_trunc", (Lit(text, STRING), ts), TIMESTAMP)

    def _DateTrunc(self, node: exp.DateTrunc) -> Scalar:
        unit = node.args.get("unit")
        u = self(unit) if isinstance(unit, exp.Expr) else Lit(str(unit), STRING)
        return Call("trunc", (self.date_arg(node.this), cast_to(u, STRING)), DATE)

    def time_format(self, node: exp.Expr) -> Scalar:
        """A format sqlglot has read into strftime form (``%Y-%m-%d``), as Python runs it."""
        f = node.args.get("format")
        if not (isinstance(f, exp.Literal) and f.is_string):
            raise unsupported(f"{node.key.upper()} with a non-constant format", node)
        text = str(f.this).replace("strict", "")
        if re.search(r"[A-Za-z]{2,}", re.sub(r"%.", "", text)):
            raise unsupported(f"the date format of {node.sql(dialect='spark')}", node)
        return Lit(text, STRING)

    def _TimeToStr(self, node: exp.TimeToStr) -> Scalar:
        x = node.this.this if isinstance(node.this, exp.TimeStrToTime) else node.this
        return Call("date_format", (cast_to(self(x), TIMESTAMP), self.time_format(node)), STRING)

    def _UnixToStr(self, node: exp.UnixToStr) -> Scalar:
        return Call(
            "from_unixtime", (cast_to(self(node.this), BIGINT), self.time_format(node)), STRING
        )

    def _StrToUnix(self, node: exp.StrToUnix) -> Scalar:
        x = self(node.this)
        if x.type in (STRING, NULL):
            return self.to_datetime(node, "unix_timestamp", "parse_unix", [x])
        return Call("unix_timestamp", (cast_to(x, TIMESTAMP),), BIGINT)

    # ------------------------------------------------------------ math
    def _Round(self, node: exp.Round) -> Scalar:
        a = self(node.this)
        d = self(node.args["decimals"]) if node.args.get("decimals") is not None else Lit(0, INT)
        if not isinstance(d, Lit) or not isinstance(d.value, int):
            raise unsupported("ROUND with a non-constant scale", node)
        t = a.type
        if t.is_decimal:
            p, scale = t.precision, t.scale
            assert p is not None and scale is not None
            int_digits = p - scale + 1  # rounding may carry one digit
            if d.value < 0:
                t = SqlType("DECIMAL", min(max(int_digits, 1 - d.value), 38), 0)
            else:
                s = min(d.value, scale)
                t = SqlType("DECIMAL", min(int_digits + s, 38), s)
        elif t.name in ("STRING", "NULL"):
            a, t = cast_to(a, DOUBLE), DOUBLE
        elif not t.is_numeric:
            raise coercion.mismatch("ROUND", [t])
        return Call("round", (a, d), t)

    def _Floor(self, node: exp.Floor) -> Scalar:
        return self.floor_ceil("floor", node)

    def _Ceil(self, node: exp.Ceil) -> Scalar:
        return self.floor_ceil("ceil", node)

    def floor_ceil(self, name: str, node: exp.Expr) -> Scalar:
        if node.args.get("decimals") is not None:
            raise unsupported(f"{name.upper()} with a scale", node)
        a = self(node.this)
        if a.type.is_decimal:
            assert a.type.precision is not None and a.type.scale is not None
            return Call(name, (a,), decimal(a.type.precision - a.type.scale + 1, 0))
        return Call(name, (cast_to(a, DOUBLE) if not a.type.is_integral else a,), BIGINT)

    def _Sqrt(self, node: exp.Sqrt) -> Scalar:
        return self.cast_call("sqrt", DOUBLE, node.this)

    def _Exp(self, node: exp.Exp) -> Scalar:
        return self.cast_call("exp", DOUBLE, node.this)

    def _Ln(self, node: exp.Ln) -> Scalar:
        return self.cast_call("ln", DOUBLE, node.this)

    def _Pow(self, node: exp.Pow) -> Scalar:
        return self.cast_call("power", DOUBLE, node.this, node.expression)

    def _Sign(self, node: exp.Sign) -> Scalar:
        return self.cast_call("sign", DOUBLE, node.this)

    # ------------------------------------------------------------ dates
    def _TsOrDsAdd(self, node: exp.TsOrDsAdd) -> Scalar:
        unit_node = node.args.get("unit")
        unit = str(unit_node.name if unit_node is not None else "DAY").upper()
        if unit != "DAY":
            raise unsupported(f"DATE_ADD by {unit}", node)
        n = self(node.expression)
        return Call("date_add", (self.date_arg(node.this), cast_to(n, INT)), DATE)

    def _DateAdd(self, node: exp.DateAdd) -> Scalar:
        return self._TsOrDsAdd(node)  # type: ignore[arg-type]

    def _DateSub(self, node: exp.DateSub) -> Scalar:
        return Call(
            "date_sub", (self.date_arg(node.this), cast_to(self(node.expression), INT)), DATE
        )

    def _DateDiff(self, node: exp.DateDiff) -> Scalar:
        unit = node.args.get("unit")
        if unit is not None and str(unit.name).upper() not in ("DAY", ""):
            raise unsupported(f"DATEDIFF in {unit.name}", node)
        return Call("datediff", (self.date_arg(node.this), self.date_arg(node.expression)), INT)

    def _AddMonths(self, node: exp.AddMonths) -> Scalar:
        return Call(
            "add_months", (self.date_arg(node.this), cast_to(self(node.expression), INT)), DATE
        )

    def _LastDay(self, node: exp.LastDay) -> Scalar:
        return Call("last_day", (self.date_arg(node.this),), DATE)

    def _Extract(self, node: exp.Extract) -> Scalar:
        part = str(node.this.name).upper()
        part = _FIELD_ALIASES.get(part, part)
        if part not in _SPARK_FIELDS:
            raise analysis_error(
                f"[INVALID_EXTRACT_FIELD] Cannot extract {part} from a date or timestamp",
                node,
                "EXTRACT",
            )
        ops = {
            "WEEK": "weekofyear",
            "YEAR": "year",
            "MONTH": "month",
            "DAY": "day",
            "QUARTER": "quarter",
            "DAYOFWEEK": "dayofweek",
            "DOW": "dayofweek",
            "DOY": "dayofyear",
            "HOUR": "hour",
            "MINUTE": "minute",
            "SECOND": "second",
        }
        if part not in ops:
            raise unsupported(f"EXTRACT({part})", node)
        arg = self(node.expression)
        if part == "SECOND":  # seconds with their fraction, as DECIMAL(8,6)
            return Call("second_fraction", (self.time_arg(arg),), decimal(8, 6))
        if ops[part] in ("hour", "minute", "second"):
            return Call(ops[part], (self.time_arg(arg),), INT)
        return Call(ops[part], (cast_to(arg, DATE) if arg.type != TIMESTAMP else arg,), INT)

    def _Subquery(self, node: exp.Subquery) -> Scalar:
        raise unsupported(
            "subquery here",
            node,
            "only uncorrelated scalar subqueries that are "
            "global aggregates, and correlated ones sqlglot can unnest",
        )

    def _Exists(self, node: exp.Exists) -> Scalar:
        hof = self.higher_order_call(node)  # exists(array, x -> ...)
        if hof is not None:
            return hof
        raise unsupported("EXISTS here", node, "EXISTS is supported as a WHERE condition")

    def _Window(self, node: exp.Window) -> Scalar:
        raise unsupported(
            "window function here", node, "window functions are supported in the SELECT list"
        )

    def _Ref(self, node: exp.Expr) -> Ref:  # pragma: no cover - never an AST node
        raise AssertionError
