"""A small TPC-DS database generator (our own, following the spec's shapes) and the 99 queries.

The 24 tables and their columns come from the kit's DDL (``tests/fixtures/third_party/tpcds/schema.sql``),
typed as Spark types them (``integer`` → INT, ``char``/``varchar`` → STRING, ``decimal(p,s)``
and ``date`` kept). The queries are Spark's own variants (``tests/fixtures/third_party/tpcds/q*.sql``,
103 files: q14, q23, q24 and q39 come in parts a and b).

Data, at a tiny scale:

* ``date_dim`` is the real calendar 1998-01-01 … 2003-12-31 (``d_date_sk`` is the Julian day
  number as in the kit, ``d_month_seq`` 1200 is January 2000); ``time_dim`` has a row every
  five minutes; fact dates fall mostly in 1999–2002, the years the queries ask about.
* every ``*_sk`` column of a fact or dimension row is a key of the table it names, so joins
  join; non-key columns are NULL 4% of the time (keys never: the kit's ``not null`` ones).
* string and number columns draw half their values from the literals the queries compare that
  column with (harvested from the queries with sqlglot), so predicates such as
  ``i_category IN ('Books', 'Home')`` or ``hd_dep_count = 4`` select rows.
* returns are drawn from sales (same ticket/order, item and customer, a later date).

:class:`TpcdsGen` also makes change batches on the fact tables: new sales with some returns,
deleted rows, and updated rows (a delete plus a modified copy).
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "third_party" / "tpcds"


def _spark_type(ddl_type: str) -> str:
    t = ddl_type.lower()
    if t.startswith(("char", "varchar")):
        return "string"
    if t == "integer":
        return "int"
    return t  # decimal(p,s), date


def _load_schemas() -> tuple[dict[str, list[tuple[str, str]]], set[tuple[str, str]]]:
    schemas: dict[str, list[tuple[str, str]]] = {}
    not_null: set[tuple[str, str]] = set()
    text = (FIXTURES / "schema.sql").read_text()
    for name, body in re.findall(r"create table (\w+)\s*\((.*?)\n\);", text, re.S):
        cols = []
        for line in body.splitlines():
            m = re.match(r"\s*(\w+)\s+(\w+(?:\(\d+(?:,\d+)?\))?)\s*(not null)?", line)
            if m and m.group(1) != "primary":
                cols.append((m.group(1), _spark_type(m.group(2))))
                if m.group(3):
                    not_null.add((name, m.group(1)))
        schemas[name] = cols
    return schemas, not_null


SCHEMAS, NOT_NULL = _load_schemas()


def _query_order(name: str) -> tuple[int, str]:
    m = re.fullmatch(r"q(\d+)([ab]?)", name)
    assert m, name
    return int(m.group(1)), m.group(2)


def _strip_header(text: str) -> str:
    lines = text.splitlines()
    while lines and lines[0].startswith("--"):
        lines.pop(0)
    return "\n".join(lines).strip().rstrip(";")


QUERIES: dict[str, str] = {
    p.stem: _strip_header(p.read_text())
    for p in sorted(FIXTURES.glob("q*.sql"), key=lambda p: _query_order(p.stem))
}

FACTS = (
    "store_sales",
    "store_returns",
    "catalog_sales",
    "catalog_returns",
    "web_sales",
    "web_returns",
    "inventory",
)
SIZES = {
    "customer_address": 60,
    "customer_demographics": 60,
    "household_demographics": 40,
    "income_band": 20,
    "item": 60,
    "customer": 80,
    "store": 6,
    "warehouse": 4,
    "call_center": 4,
    "web_site": 4,
    "web_page": 10,
    "catalog_page": 20,
    "promotion": 10,
    "reason": 8,
    "ship_mode": 10,
}
"""Rows per dimension table (``date_dim`` and ``time_dim`` are calendars)."""

# the table a key column refers to, by its name's ending (longest first)
_KEY_TABLES = [
    ("catalog_page_sk", "catalog_page"),
    ("call_center_sk", "call_center"),
    ("income_band_sk", "income_band"),
    ("ship_mode_sk", "ship_mode"),
    ("warehouse_sk", "warehouse"),
    ("web_page_sk", "web_page"),
    ("web_site_sk", "web_site"),
    ("customer_sk", "customer"),
    ("reason_sk", "reason"),
    ("cdemo_sk", "customer_demographics"),
    ("hdemo_sk", "household_demographics"),
    ("promo_sk", "promotion"),
    ("store_sk", "store"),
    ("item_sk", "item"),
    ("addr_sk", "customer_address"),
    ("date_sk", "date_dim"),
    ("time_sk", "time_dim"),
    ("page_sk", "web_page"),
    ("site_sk", "web_site"),
]

FIRST_DAY, LAST_DAY = dt.date(1998, 1, 1), dt.date(2003, 12, 31)
JULIAN = 1721425  # date.toordinal() + JULIAN is the Julian day number (the kit's d_date_sk)


def harvest_literals(queries: dict[str, str]) -> dict[str, list[Any]]:
    """Per column name, the literals the queries compare it with (=, <>, <, IN, BETWEEN)."""
    pools: dict[str, set[Any]] = defaultdict(set)

    def lit(e: exp.Expression) -> Any:
        e = e.unnest()
        if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal):
            return -Decimal(e.this.this)
        if isinstance(e, exp.Literal):
            return e.this if e.is_string else Decimal(e.this)
        return None

    for sql in queries.values():
        for node in sqlglot.parse_one(sql, read="spark").walk():
            if isinstance(node, exp.Binary) and isinstance(
                node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
            ):
                sides = [(node.left, node.right), (node.right, node.left)]
            elif isinstance(node, exp.In):
                sides = [(node.this, e) for e in node.expressions]
            elif isinstance(node, exp.Between):
                sides = [(node.this, node.args["low"]), (node.this, node.args["high"])]
            else:
                continue
            for col, other in sides:
                col = col.unnest()
                if isinstance(col, exp.Substring):
                    col = col.this
                v = lit(other)
                if isinstance(col, exp.Column) and v is not None:
                    pools[col.name.lower()].add(v)
    return {c: sorted(vs, key=str) for c, vs in pools.items()}


POOLS = harvest_literals(QUERIES)

_WORDS = ["able", "ought", "pri", "bar", "eing", "ation", "anti", "cally", "ese", "n st"]


def date_row(day: dt.date, cols: list[str]) -> tuple:
    """One ``date_dim`` row: the calendar attributes the queries read."""
    sk = day.toordinal() + JULIAN
    week = (day - dt.date(1900, 1, 1)).days // 7 + 1
    month_seq = (day.year - 1900) * 12 + day.month - 1
    qoy = (day.month - 1) // 3 + 1
    v = {
        "d_date_sk": sk,
        "d_date_id": f"AAAAAAAA{sk:08d}",
        "d_date": day,
        "d_month_seq": month_seq,
        "d_week_seq": week,
        "d_quarter_seq": (day.year - 1900) * 4 + qoy - 1,
        "d_year": day.year,
        "d_dow": (day.weekday() + 1) % 7,
        "d_moy": day.month,
        "d_dom": day.day,
        "d_qoy": qoy,
        "d_fy_year": day.year,
        "d_fy_quarter_seq": (day.year - 1900) * 4 + qoy - 1,
        "d_fy_week_seq": week,
        "d_day_name": day.strftime("%A"),
        "d_quarter_name": f"{day.year}Q{qoy}",
        "d_holiday": "Y" if (day.month, day.day) in ((1, 1), (7, 4), (12, 25)) else "N",
        "d_weekend": "Y" if day.weekday() >= 5 else "N",
        "d_following_holiday": "N",
        "d_first_dom": day.replace(day=1).toordinal() + JULIAN,
        "d_same_day_ly": sk - 365,
        "d_same_day_lq": sk - 91,
        "d_current_day": "N",
        "d_current_week": "N",
        "d_current_month": "N",
        "d_current_quarter": "N",
        "d_current_year": "N",
    }
    return tuple(v.get(c) for c in cols)


def time_row(sec: int, cols: list[str]) -> tuple:
    h, m = divmod(sec // 60, 60)
    meal = (
        "breakfast"
        if 6 <= h < 9
        else "lunch"
        if 11 <= h < 14
        else "dinner"
        if 17 <= h < 20
        else None
    )
    v = {
        "t_time_sk": sec,
        "t_time_id": f"AAAAAAAA{sec:08d}",
        "t_time": sec,
        "t_hour": h,
        "t_minute": m,
        "t_second": 0,
        "t_am_pm": "AM" if h < 12 else "PM",
        "t_shift": "first" if h < 8 else "second" if h < 16 else "third",
        "t_sub_shift": "morning" if h < 12 else "afternoon" if h < 18 else "night",
        "t_meal_time": meal,
    }
    return tuple(v.get(c) for c in cols)


class TpcdsGen:
    """The tables of one seeded database (``tables``) and change batches on its fact tables."""

    def __init__(self, seed: int, sales: int = 600) -> None:
        self.rng = random.Random(seed)
        self.cols = {t: [c for c, _ in cols] for t, cols in SCHEMAS.items()}
        self.types = {t: dict(cols) for t, cols in SCHEMAS.items()}
        self.tables: dict[str, list[tuple]] = {}
        days = (LAST_DAY - FIRST_DAY).days + 1
        self.tables["date_dim"] = [
            date_row(FIRST_DAY + dt.timedelta(days=i), self.cols["date_dim"]) for i in range(days)
        ]
        self.tables["time_dim"] = [time_row(s, self.cols["time_dim"]) for s in range(0, 86400, 300)]
        self.keys: dict[str, list[int]] = {
            "date_dim": [r[0] for r in self.tables["date_dim"]],
            "time_dim": [r[0] for r in self.tables["time_dim"]],
        }
        self.keys.update({t: list(range(1, n + 1)) for t, n in SIZES.items()})
        for t in SIZES:
            self.tables[t] = [self._row(t, {self.cols[t][0]: k}) for k in self.keys[t]]
        self._unique_business_keys()
        self.next_number = 1
        for t in FACTS:
            self.tables[t] = []
        self.tables["inventory"] = [self._inventory_row() for _ in range(sales // 2)]
        self.apply(self.new_sales(sales))

    def _unique_business_keys(self) -> None:
        """``c_customer_id`` is one customer's business key in the kit (``customer`` keeps no
        history): unique and never NULL, so q74's ``ORDER BY customer_id ... LIMIT`` has no
        ties. Set after the rows are drawn, so every other value stays as the seed gives it."""
        i = self.cols["customer"].index("c_customer_id")
        self.tables["customer"] = [
            (*row[:i], f"AAAAAAAA{row[0]:08d}", *row[i + 1 :]) for row in self.tables["customer"]
        ]

    # -- values ---------------------------------------------------------------------------

    def _fact_day(self) -> int:
        r = self.rng
        lo, hi = (
            (dt.date(1999, 1, 1), dt.date(2002, 12, 31))
            if r.random() < 0.8
            else (FIRST_DAY, LAST_DAY)
        )
        return (lo + dt.timedelta(days=r.randint(0, (hi - lo).days))).toordinal() + JULIAN

    def _value(self, table: str, col: str) -> Any:
        r, ty = self.rng, self.types[table][col]
        if (table, col) not in NOT_NULL and r.random() < 0.04:
            return None
        if col.endswith("_sk"):
            for suffix, target in _KEY_TABLES:
                if col.endswith(suffix):
                    if target == "date_dim" and table in FACTS:
                        return self._fact_day()
                    return r.choice(self.keys[target])
            return r.randint(1, 40)  # ticket-like numbers ending in _sk: none in the kit
        pool = POOLS.get(col, [])
        if ty == "date":
            return FIRST_DAY + dt.timedelta(days=r.randint(0, (LAST_DAY - FIRST_DAY).days))
        if ty == "string":
            strings = [v for v in pool if isinstance(v, str)]
            if strings and r.random() < 0.7:
                return r.choice(strings)
            if col.endswith("_id"):
                return f"AAAAAAAA{r.randint(1, 30):08d}"
            return r.choice(_WORDS) + ("" if r.random() < 0.5 else str(r.randint(1, 3)))
        numbers = [v for v in pool if not isinstance(v, str)]
        if ty.startswith("decimal"):
            scale = int(ty.split(",")[1].rstrip(")"))
            if numbers and r.random() < 0.5:
                base = Decimal(r.choice(numbers)) + Decimal(r.randint(-100, 100)) / 100
            else:
                base = Decimal(r.randint(-5000, 30000)) / 100
            q = Decimal(1).scaleb(-scale)
            bound = Decimal(10) ** (int(ty[8:].split(",")[0]) - scale) - 1
            return max(-bound, min(bound, base.quantize(q)))
        if numbers and r.random() < 0.6:
            return int(r.choice(numbers)) + r.choice([0, 0, 0, 1, -1])
        return r.randint(0, 100)

    def _row(self, table: str, fixed: dict[str, Any]) -> tuple:
        return tuple(fixed[c] if c in fixed else self._value(table, c) for c in self.cols[table])

    def _inventory_row(self) -> tuple:
        return self._row("inventory", {"inv_date_sk": self._fact_day()})

    # -- change batches -------------------------------------------------------------------

    def new_sales(self, n: int) -> dict[str, list[tuple]]:
        """``n`` new sales spread over the three channels, with returns for about a fifth."""
        out: dict[str, list[tuple]] = {t: [] for t in FACTS}
        channels = [
            ("store_sales", "store_returns", "ss_", "sr_", "ticket_number"),
            ("catalog_sales", "catalog_returns", "cs_", "cr_", "order_number"),
            ("web_sales", "web_returns", "ws_", "wr_", "order_number"),
        ]
        for i in range(n):
            sales, returns, sp, rp, number = channels[0 if i % 2 == 0 else 1 + (i // 2) % 2]
            ticket = self.next_number
            self.next_number += 1
            for _ in range(self.rng.randint(1, 3)):  # items of one ticket/order
                row = self._row(sales, {f"{sp}{number}": ticket})
                out[sales].append(row)
                if self.rng.random() < 0.2:
                    out[returns].append(self._return_of(sales, returns, sp, rp, number, row))
        out["inventory"] = [self._inventory_row() for _ in range(n // 4)]
        return out

    def _return_of(
        self, sales: str, returns: str, sp: str, rp: str, number: str, sale: tuple
    ) -> tuple:
        s = dict(zip(self.cols[sales], sale, strict=True))
        sold = s[f"{sp}sold_date_sk"]
        fixed: dict[str, Any] = {
            f"{rp}{number}": s[f"{sp}{number}"],
            f"{rp}item_sk": s[f"{sp}item_sk"],
            f"{rp}returned_date_sk": None if sold is None else sold + self.rng.randint(1, 120),
        }
        customer = s.get("ss_customer_sk", s.get(f"{sp}bill_customer_sk"))
        for c in self.cols[returns]:
            if c.endswith(("customer_sk", "refunded_customer_sk")) and "returning" not in c:
                fixed[c] = customer
        return self._row(returns, fixed)

    def changes(self, n_new: int, n_delete: int, n_update: int) -> dict[str, tuple[list, list]]:
        """One batch per fact table as (inserted rows, deleted rows); updates are both."""
        new = self.new_sales(n_new)
        batch: dict[str, tuple[list, list]] = {}
        for t in FACTS:
            cur = self.tables[t]
            gone = self.rng.sample(cur, min(n_delete, len(cur)))
            ins = list(new[t])
            for old in self.rng.sample(cur, min(n_update, len(cur))):
                if old in gone:
                    continue
                gone.append(old)
                ins.append(self._updated(t, old))
            batch[t] = (ins, gone)
        self.apply({t: ins for t, (ins, _) in batch.items()}, {t: d for t, (_, d) in batch.items()})
        return batch

    def _updated(self, table: str, row: tuple) -> tuple:
        """``row`` with its non-key measures redrawn (quantities, prices, amounts)."""
        cols = self.cols[table]
        return tuple(
            v if c.endswith(("_sk", "_number")) else self._value(table, c)
            for c, v in zip(cols, row, strict=True)
        )

    def apply(
        self, inserted: dict[str, list[tuple]], deleted: dict[str, list] | None = None
    ) -> None:
        for t, rows in (deleted or {}).items():
            for r in rows:
                self.tables[t].remove(r)
        for t, rows in inserted.items():
            self.tables[t].extend(rows)
