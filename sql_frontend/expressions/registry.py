"""The registry of Spark functions the views accept beyond the translator's own methods: per
Spark name, the operation, the types its arguments are cast to, the result type, and how it is
evaluated (``numpy``: whole columns; ``python``: per row, a last resort). The support table
``docs/sql-support.md`` is generated from this module (``python -m
sql_frontend.expressions.registry``) and a test holds the two equal."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from sql_frontend.sql_types import (
    BIGINT,
    DATE,
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP,
    SqlType,
)

BINARY = SqlType("BINARY")
SMALLINT = SqlType("SMALLINT")
TINYINT = SqlType("TINYINT")
FLOAT = SqlType("FLOAT")
BOOLEAN = SqlType("BOOLEAN")


@dataclass(frozen=True)
class Fn:
    op: str
    args: tuple[SqlType | None, ...]
    """Cast targets of the arguments (None: as given); a shorter tuple means optional
    trailing arguments, filled from ``defaults``."""
    result: SqlType | None
    """None: the type of the first argument."""
    kernel: str = "numpy"
    defaults: tuple[object, ...] = ()
    typing: str | None = None
    """A typing rule of the translator (``typing_<rule>`` of
    :class:`sql_frontend.translate_functions.FunctionTyping`) for functions whose argument and
    result types depend on the arguments (``bround``, ``pmod``, ``try_add`` ...)."""


D, S, I = DOUBLE, STRING, INT  # noqa: E741
SKETCH = "python (Apache DataSketches)"


def _sketch_functions() -> dict[str, Fn]:
    """Scalar functions over sketch bytes Spark's sketch aggregates wrote."""
    out = {
        "hll_sketch_estimate": Fn("hll_sketch_estimate", (BINARY,), BIGINT, SKETCH),
        "hll_union": Fn("hll_union", (BINARY, BINARY, BOOLEAN), BINARY, SKETCH, (False,)),
        "theta_sketch_estimate": Fn("theta_sketch_estimate", (BINARY,), BIGINT, SKETCH),
        "theta_union": Fn(
            "theta_union", (BINARY, BINARY, I), BINARY, SKETCH, (12,), typing="kll_constant"
        ),
        "theta_intersection": Fn("theta_intersection", (BINARY, BINARY), BINARY, SKETCH),
        "theta_difference": Fn("theta_difference", (BINARY, BINARY), BINARY, SKETCH),
    }
    for kind, item in (("double", D), ("float", FLOAT)):
        for what, args, result in (
            ("n", (BINARY,), BIGINT),
            ("quantile", (BINARY, D), item),
            ("rank", (BINARY, item), D),
        ):
            name = f"kll_sketch_get_{what}_{kind}"
            typing = "kll_constant" if what != "n" else None
            out[name] = Fn(name, args, result, SKETCH, typing=typing)
    return out


def _named(
    args: tuple[SqlType | None, ...], result: SqlType | None, names: str, kernel: str = "python"
) -> dict[str, Fn]:
    """Functions of one signature whose engine operation has the Spark function's name."""
    return {n: Fn(n, args, result, kernel) for n in names.split()}


FUNCTIONS: dict[str, Fn] = {
    # one signature, the engine operation named as the Spark function
    **_named(
        (D,),
        D,
        "cbrt expm1 sin cos tan asin acos atan sinh cosh tanh degrees radians cot log10 log2 log1p"
        " asinh acosh atanh sec csc rint",
        kernel="numpy",
    ),
    **_named((D, D), D, "atan2 hypot nanvl", kernel="numpy"),
    **_named((None, I), None, "shiftleft shiftright shiftrightunsigned", kernel="numpy"),
    **_named((S,), S, "md5 sha1 base64 url_encode soundex quote url_decode try_url_decode"),
    **_named((S,), I, "ascii bit_length octet_length json_array_length"),
    **_named((TIMESTAMP,), BIGINT, "unix_timestamp unix_seconds unix_millis unix_micros"),
    **_named((DATE,), I, "weekofyear weekday unix_date"),
    **_named((BIGINT,), TIMESTAMP, "timestamp_seconds timestamp_millis timestamp_micros"),
    **_named((S, S), I, "find_in_set regexp_count regexp_instr"),
    **_named((BIGINT,), S, "chr bin"),
    **_named((S, S, S), S, "translate regexp_replace"),
    **_named((S, S, I), S, "split_part substring_index"),
    **_named((DATE, S), DATE, "trunc next_day"),
    **_named((DATE,), S, "dayname monthname"),
    **_named((S,), BINARY, "unhex unbase64"),
    **_named((TIMESTAMP, S), TIMESTAMP, "from_utc_timestamp to_utc_timestamp"),
    **_named((BIGINT,), BIGINT, "bitmap_bit_position bitmap_bucket_number"),
    # the others
    "log": Fn("log_base", (D, D), D),
    "factorial": Fn("factorial", (I,), BIGINT),
    "positive": Fn("identity", (None,), None),
    "isnull": Fn("is_null", (None,), BOOLEAN),
    "isnotnull": Fn("is_not_null", (None,), BOOLEAN),
    "char": Fn("chr", (BIGINT,), S, "python"),
    "space": Fn("space", (I,), S, "python"),
    "levenshtein": Fn("levenshtein", (S, S), I, "python", typing="optional"),
    "sha": Fn("sha1", (S,), S, "python"),
    "sha2": Fn("sha2", (S, I), S, "python"),
    "crc32": Fn("crc32", (S,), BIGINT, "python"),
    "hex": Fn("hex", (None,), S, "python"),
    "regexp_extract": Fn("regexp_extract", (S, S, I), S, "python", (1,)),
    "date_trunc": Fn("date_trunc", (S, TIMESTAMP), TIMESTAMP, "python"),
    "date_format": Fn("date_format", (TIMESTAMP, S), S, "python"),
    "from_unixtime": Fn("from_unixtime", (BIGINT, S), S, "python", ("%Y-%m-%d %H:%M:%S",)),
    "make_date": Fn("make_date", (I, I, I), DATE, "python"),
    "hash": Fn("murmur3", (), I, "numpy (strings, decimals per row)"),
    "isnan": Fn("isnan", (D,), BOOLEAN),
    "bit_count": Fn("bit_count", (None,), I),
    "date_from_unix_date": Fn("date_from_unix_date", (I,), DATE, "python"),
    "regexp_substr": Fn("regexp_substr", (S, S), S, "python"),
    "regexp": Fn("rlike", (S, S), BOOLEAN, "python"),
    "luhn_check": Fn("luhn_check", (S,), BOOLEAN, "python"),
    "btrim": Fn("trim", (S,), S, "python", typing="optional"),
    # math
    "bround": Fn("bround", (None, I), None, "python", typing="round"),
    "pmod": Fn("pmod", (None, None), None, "numpy, negative remainders per row", typing="arith"),
    **{
        f"try_{n}": Fn(
            f"try_{op}",
            (None, None),
            None,
            "numpy; rows that raise retried one by one",
            typing="arith",
        )
        for n, op in (
            ("add", "add"),
            ("subtract", "sub"),
            ("multiply", "mul"),
            ("divide", "div"),
            ("mod", "mod"),
        )
    },
    "width_bucket": Fn("width_bucket", (D, D, D, BIGINT), BIGINT, "python"),
    "getbit": Fn("getbit", (None, I), TINYINT, "python", typing="getbit"),
    "bit_get": Fn("getbit", (None, I), TINYINT, "python", typing="getbit"),
    "conv": Fn("conv", (S, I, I), S, "python"),
    # strings
    "overlay": Fn("overlay", (S, S, I, I), S, "python", (-1,)),
    "elt": Fn("elt", (), S, "python", typing="variadic"),
    "mask": Fn("mask", (S, S, S, S, S), S, "python", typing="mask"),
    "format_number": Fn("format_number", (None, I), S, "python"),
    "format_string": Fn("format_string", (), S, "python", typing="variadic"),
    "printf": Fn("format_string", (), S, "python", typing="variadic"),
    "encode": Fn("encode", (S, S), BINARY, "python"),
    "decode": Fn("decode", (BINARY, S), S, "python", typing="binary_args"),
    "to_binary": Fn("to_binary", (S, S), BINARY, "python", typing="binary_args"),
    "try_to_binary": Fn("try_to_binary", (S, S), BINARY, "python", typing="binary_args"),
    "parse_url": Fn("parse_url", (S, S), S, "python", typing="optional"),
    "try_parse_url": Fn("try_parse_url", (S, S), S, "python", typing="optional"),
    # dates and times
    "months_between": Fn(
        "months_between", (TIMESTAMP, TIMESTAMP, BOOLEAN), D, "python", typing="bool_default"
    ),
    "make_timestamp": Fn("make_timestamp", (), TIMESTAMP, "python", typing="timestamp_parts"),
    "make_timestamp_ltz": Fn("make_timestamp", (), TIMESTAMP, "python", typing="timestamp_parts"),
    "try_make_timestamp": Fn(
        "try_make_timestamp", (), TIMESTAMP, "python", typing="timestamp_parts"
    ),
    "date_part": Fn("date_part", (S, None), None, "numpy / built in", typing="datepart"),
    "datepart": Fn("date_part", (S, None), None, "numpy / built in", typing="datepart"),
    # hashes and types
    "xxhash64": Fn("xxhash64", (), BIGINT, "python", typing="variadic"),
    "to_timestamp": Fn("parse_timestamp", (), TIMESTAMP, "python", typing="to_datetime"),
    "to_timestamp_ltz": Fn("parse_timestamp", (), TIMESTAMP, "python", typing="to_datetime"),
    "try_to_timestamp": Fn("try_parse_timestamp", (), TIMESTAMP, "python", typing="to_datetime"),
    "try_to_date": Fn("try_parse_date", (), DATE, "python", typing="to_datetime"),
    "to_unix_timestamp": Fn("parse_unix", (), BIGINT, "python", typing="to_datetime"),
    "try_make_timestamp_ltz": Fn(
        "try_make_timestamp", (), TIMESTAMP, "python", typing="timestamp_parts"
    ),
    "bitmap_count": Fn("bitmap_count", (None,), BIGINT, "python"),
    "assert_true": Fn("assert_true", (BOOLEAN, S), SqlType("NULL"), "numpy", typing="assert"),
    "raise_error": Fn("raise_error", (S,), SqlType("NULL"), "numpy", typing="assert"),
    "to_number": Fn("to_number", (S, S), None, "python", typing="number_format"),
    "try_to_number": Fn("try_to_number", (S, S), None, "python", typing="number_format"),
    "typeof": Fn("typeof", (None,), S, "constant (the argument's type)", typing="typeof"),
    # arrays, maps and structs (sql_frontend/expressions/nested.py)
    **{
        n: Fn(op, (), None, kernel, typing="nested")
        for n, op, kernel in (
            ("array", "array", "numpy (rows zipped into tuples)"),
            ("map", "map", "python (keys checked per row)"),
            ("struct", "struct", "numpy (rows zipped into tuples)"),
            ("named_struct", "struct", "numpy (rows zipped into tuples)"),
            ("element_at", "element_at", "python (per row)"),
            ("try_element_at", "try_element_at", "python (per row)"),
            ("size", "size", "numpy"),
            ("cardinality", "size", "numpy"),
            ("array_size", "size", "numpy"),
        )
    },
    # array and map functions (sql_frontend/expressions/collection_functions.py)
    **{
        n: Fn(n, (), None, "python (per row)", typing="collection")
        for n in [
            "array_contains",
            "array_distinct",
            "array_except",
            "array_intersect",
            "array_union",
            "arrays_overlap",
            "array_join",
            "array_max",
            "array_min",
            "array_position",
            "array_remove",
            "array_repeat",
            "array_append",
            "array_prepend",
            "array_insert",
            "array_compact",
            "flatten",
            "get",
            "sequence",
            "slice",
            "sort_array",
            "arrays_zip",
            "map_concat",
            "map_contains_key",
            "map_entries",
            "map_from_arrays",
            "map_from_entries",
            "map_keys",
            "map_values",
            "str_to_map",
            "split",
            "regexp_extract_all",
        ]
    },
    # vectors: ARRAY<FLOAT> (sql_frontend/expressions/vector_functions.py)
    **{
        f"vector_{n}": Fn(f"vector_{n}", (), None, "python (per row, float32)", typing="collection")
        for n in ("cosine_similarity", "inner_product", "l2_distance", "norm", "normalize")
    },
    # JSON and nested values (sql_frontend/expressions/json_functions.py)
    **{
        n: Fn(n, (), None, "python (per row, the json module)", typing="collection")
        for n in ("get_json_object", "json_object_keys", "to_json", "from_json", "schema_of_json")
    },
    # UTF-8 and collations (views compare strings as UTF8_BINARY)
    **{
        n: Fn(n, (None,), r, "numpy (a STRING is valid UTF-8); BINARY per row", typing="utf8")
        for n, r in (
            ("is_valid_utf8", BOOLEAN),
            ("make_valid_utf8", S),
            ("validate_utf8", S),
            ("try_validate_utf8", S),
        )
    },
    "schema_of_csv": Fn(
        "schema_of_csv", (S,), S, "constant (inferred when compiled)", typing="schema_of_csv"
    ),
    "collation": Fn("collation", (None,), S, "constant (UTF8_BINARY)", typing="collation"),
    "collate": Fn(
        "collate", (None, S), S, "identity (UTF8_BINARY; others refused)", typing="collation"
    ),
    **{
        n: Fn(
            "to_char",
            (None, S),
            S,
            "python (numbers, BINARY); dates as date_format",
            typing="to_char",
        )
        for n in ("to_char", "to_varchar")
    },
    **{
        f"xpath_{k}": Fn(f"xpath_{k}", (S, S), r, "python (lxml's XPath 1.0)", typing="xpath")
        for k, r in (
            ("boolean", BOOLEAN),
            ("double", D),
            ("number", D),
            ("float", FLOAT),
            ("int", I),
            ("long", BIGINT),
            ("short", SMALLINT),
            ("string", S),
        )
    },
    **_sketch_functions(),
    **{
        n: Fn(n, (BINARY, BINARY), BINARY, "python (cryptography's AES)", typing="aes")
        for n in ("aes_encrypt", "aes_decrypt", "try_aes_decrypt")
    },
}
"""Spark name → its evaluation in the engine."""

HIGHER_ORDER: dict[str, str] = {
    **{
        n: "per element: the lambda vectorized over all elements of the batch"
        for n in ("transform", "filter", "exists", "forall", "map_filter", "transform_values")
    },
    "transform_keys": "per element: the lambda vectorized over all entries; keys checked per row",
    "zip_with": "per element: the lambda vectorized over all element pairs",
    "aggregate": "per element: the lambda vectorized once per element position",
    "reduce": "per element: the lambda vectorized once per element position",
    "array_sort": "python sort per row (a comparator lambda vectorized over all pairs)",
    "map_zip_with": "python key matching per row; the lambda vectorized over all keys",
}
"""Higher-order functions (``sql_frontend/translate_lambdas.py``, evaluated by
``expressions/higher_order.py``): a lambda is evaluated per element, over the elements of all
rows of a batch at once."""

GENERATORS: dict[str, str] = {
    **{n: "numpy (elements flattened)" for n in ("explode", "explode_outer", "posexplode")},
    **{n: "numpy (elements flattened)" for n in ("posexplode_outer", "inline", "inline_outer")},
    "stack": "numpy",
    "json_tuple": "python (a JSON parse per row)",
    "LATERAL VIEW [OUTER] generator(...) t AS c1, c2": "as its generator",
}
"""Generators (``sql_frontend/translate_generators.py``, ``expressions/generators.py``), in the
SELECT list or in LATERAL VIEW: a Generate plan node, a flat-map, maintained per change."""

CASTS: dict[str, SqlType] = {
    "tinyint": TINYINT,
    "smallint": SMALLINT,
    "int": INT,
    "bigint": BIGINT,
    "float": FLOAT,
    "double": DOUBLE,
    "string": STRING,
    "boolean": BOOLEAN,
    "date": DATE,
    "timestamp": TIMESTAMP,
    "decimal": SqlType("DECIMAL", 10, 0),
    "binary": SqlType("BINARY"),
}
"""Spark's cast functions (``int(x)`` is ``CAST(x AS INT)``)."""

CONSTANTS: dict[str, float] = {"e": 2.718281828459045, "pi": 3.141592653589793}
"""Functions of no argument: their DOUBLE value (Java's Math.E and Math.PI)."""

BYTES_IN = frozenset(["md5", "sha1", "sha2", "crc32", "base64"])
"""Operations whose STRING parameter is Spark's BINARY one: a BINARY argument is passed as
its bytes (a STRING one as its UTF-8 bytes), not cast to STRING."""

MACROS = ("zeroifnull", "nullifzero", "equal_null")
"""Functions the translator writes as other expressions (COALESCE, CASE, ``<=>``)."""

NodeTable = dict[type[exp.Expr], tuple[str, tuple[str, ...]]]


def _snake(name: str) -> str:
    """``UnixDate`` → ``unix_date``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _by_name(names: str, spark_name: Callable[[str], str], keys: tuple[str, ...]) -> NodeTable:
    """sqlglot nodes whose Spark function is named after the node class."""
    return {getattr(exp, n): (spark_name(n), keys) for n in names.split()}


NODES: NodeTable = {
    **_by_name(
        "Cbrt Sin Cos Tan Asin Acos Atan Sinh Cosh Tanh Asinh Acosh Atanh Sec Csc Cot Degrees"
        " Radians Rint Factorial Ascii Space MD5 Hex Unhex Soundex IsNan WeekOfYear Dayname"
        " Monthname Typeof",
        str.lower,
        ("this",),
    ),
    **_by_name(
        "BitLength UnixDate UnixSeconds UnixMillis UnixMicros DateFromUnixDate BitmapBitPosition"
        " BitmapBucketNumber BitmapCount",
        _snake,
        ("this",),
    ),
    **_by_name("Atan2 Nanvl Getbit", str.lower, ("this", "expression")),
    **_by_name(
        "EqualNull NextDay RegexpCount RegexpSubstr RegexpInstr", _snake, ("this", "expression")
    ),
    exp.Chr: ("chr", ("expressions",)),
    exp.Translate: ("translate", ("this", "from_", "to")),
    exp.SplitPart: ("split_part", ("this", "delimiter", "part_index")),
    exp.SubstringIndex: ("substring_index", ("this", "delimiter", "count")),
    exp.SHA: ("sha1", ("this",)),
    exp.SHA2: ("sha2", ("this", "length")),
    exp.ToBase64: ("base64", ("this",)),
    exp.RegexpReplace: ("regexp_replace", ("this", "expression", "replacement")),
    exp.RegexpExtract: ("regexp_extract", ("this", "expression", "group")),
    exp.Pi: ("pi", ()),
    exp.BitwiseLeftShift: ("shiftleft", ("this", "expression")),
    exp.BitwiseRightShift: ("shiftright", ("this", "expression")),
    exp.BitwiseCount: ("bit_count", ("this",)),
    exp.Levenshtein: ("levenshtein", ("this", "expression", "ins_cost")),
    exp.SafeAdd: ("try_add", ("this", "expression")),
    exp.SafeSubtract: ("try_subtract", ("this", "expression")),
    exp.SafeMultiply: ("try_multiply", ("this", "expression")),
    exp.SafeDivide: ("try_divide", ("this", "expression")),
    exp.WidthBucket: ("width_bucket", ("this", "min_value", "max_value", "num_buckets")),
    exp.Overlay: ("overlay", ("this", "expression", "from_", "for_")),
    exp.Elt: ("elt", ("this", "expressions")),
    exp.Format: ("format_string", ("this", "expressions")),
    exp.Encode: ("encode", ("this", "charset")),
    exp.Decode: ("decode", ("this", "charset")),
    exp.FromBase64: ("unbase64", ("this",)),
    exp.ToBinary: ("to_binary", ("this", "format")),
    exp.ParseUrl: ("parse_url", ("this", "part_to_extract", "key")),
    exp.MonthsBetween: ("months_between", ("this", "expression", "roundoff")),
    exp.TimestampFromParts: (
        "make_timestamp",
        ("year", "month", "day", "hour", "min", "sec", "nano"),
    ),
    exp.AtTimeZone: ("from_utc_timestamp", ("this", "zone")),
    exp.FromTimeZone: ("to_utc_timestamp", ("this", "zone")),
    exp.ToNumber: ("to_number", ("this", "format")),
    exp.StrToTime: ("to_timestamp", ("this", "format")),
    **_by_name(
        "ArrayDistinct ArrayMax ArrayMin ArrayCompact Flatten MapFromEntries MapKeys",
        _snake,
        ("this",),
    ),
    **_by_name(
        "ArrayContains ArrayExcept ArrayPosition ArrayRemove ArrayAppend ArrayPrepend",
        _snake,
        ("this", "expression"),
    ),
    exp.ArrayIntersect: ("array_intersect", ("expressions",)),
    exp.ArrayToString: ("array_join", ("this", "expression", "null")),
    exp.ArrayInsert: ("array_insert", ("this", "position", "expression")),
    exp.GenerateSeries: ("sequence", ("start", "end", "step")),
    exp.ArraySlice: ("slice", ("this", "start", "end")),
    exp.ArraySort: ("sort_array", ("this", "asc")),
    exp.ArraysZip: ("arrays_zip", ("expressions",)),
    exp.MapContainsKey: ("map_contains_key", ("this", "key")),
    exp.StrToMap: ("str_to_map", ("this", "pair_delim", "key_value_delim")),
    exp.RegexpSplit: ("split", ("this", "expression", "limit")),
    exp.RegexpExtractAll: ("regexp_extract_all", ("this", "expression", "group")),
    exp.JSONExtractScalar: ("get_json_object", ("this", "expression")),
    exp.JSONKeys: ("json_object_keys", ("this",)),
    exp.JSONFormat: ("to_json", ("this",)),
    exp.FromJson: ("from_json", ("this", "expression")),
    exp.ToChar: ("to_char", ("this", "format")),
    exp.Collate: ("collate", ("this", "expression")),
    exp.Collation: ("collation", ("this",)),
}
"""sqlglot's typed nodes for registry functions: the Spark name and the argument keys in
Spark's argument order."""


def call_of(node: exp.Expr) -> tuple[str, list[exp.Expr]] | None:
    """The registry name and argument nodes of a function call, or None."""
    if isinstance(node, exp.Anonymous):
        name = str(node.name).lower()
        known = name in FUNCTIONS or name in CASTS or name in CONSTANTS or name in MACROS
        return (name, list(node.expressions)) if known else None
    spec = NODES.get(type(node))
    if spec is None:
        return None
    args: list[exp.Expr] = []
    for k in spec[1]:
        v = node.args.get(k)
        if isinstance(v, list):
            args += v
        elif isinstance(v, exp.Expr):
            args.append(v)
    if isinstance(node, exp.Collate) and isinstance(node.expression, (exp.Var, exp.Column)):
        args[1] = exp.Literal.string(node.expression.name)  # s COLLATE UTF8_BINARY
    return spec[0], args


def registry_names() -> list[str]:
    return sorted({*FUNCTIONS, *HIGHER_ORDER, *CASTS, *CONSTANTS, *MACROS})


INCREMENTAL = "incremental"
PER_GROUP = "recomputed per affected group"
PER_PARTITION = "recomputed per affected partition"
REFUSED = "refused"

AGGREGATES: dict[str, str] = {
    **{n: INCREMENTAL for n in ("count", "count(*)", "sum", "avg", "min", "max")},
    **{n: INCREMENTAL for n in ("count(DISTINCT x)", "agg(...) FILTER (WHERE ...)", "count_if")},
    **{n: INCREMENTAL for n in ("bool_and", "bool_or", "every", "some")},
    **{n: INCREMENTAL for n in ("stddev", "stddev_samp", "stddev_pop", "std")},
    **{n: INCREMENTAL for n in ("variance", "var_samp", "var_pop")},
    **{n: PER_GROUP for n in ("sum(DISTINCT x)", "avg(DISTINCT x)", "count(DISTINCT a, b)")},
    **{n: PER_GROUP for n in ("max_by", "min_by", "percentile", "median", "percentile_cont")},
    **{n: PER_GROUP for n in ("collect_list", "collect_set")},
    **{n: REFUSED for n in ("first", "last", "any_value")},
    **{n: REFUSED for n in ("percentile_approx", "approx_count_distinct", "corr", "covar_pop")},
    **{n: REFUSED for n in ("covar_samp", "kurtosis", "skewness", "mode", "listagg")},
}
"""How each aggregate is maintained (a test compiles each and checks the claim)."""

WINDOWS: dict[str, str] = {
    **{n: PER_PARTITION for n in ("row_number", "rank", "dense_rank", "ntile")},
    **{n: PER_PARTITION for n in ("lag", "lead", "first_value", "last_value")},
    **{n: PER_PARTITION for n in ("percent_rank", "cume_dist", "aggregate OVER (...)")},
    **{n: PER_PARTITION for n in ("ROWS BETWEEN n PRECEDING AND m FOLLOWING",)},
    **{n: PER_PARTITION for n in ("RANGE BETWEEN UNBOUNDED/CURRENT ROW",)},
    **{n: REFUSED for n in ("RANGE BETWEEN with an offset", "IGNORE NULLS", "nth_value")},
}

TRANSLATOR_FUNCTIONS = [
    "abs",
    "add_months",
    "and",
    "between",
    "case",
    "cast",
    "ceil",
    "ceiling",
    "char_length",
    "character_length",
    "coalesce",
    "concat",
    "concat_ws",
    "contains",
    "date_add",
    "date_diff",
    "date_sub",
    "dateadd",
    "datediff",
    "day",
    "dayofmonth",
    "dayofweek",
    "dayofyear",
    "div",
    "endswith",
    "exp",
    "extract",
    "floor",
    "greatest",
    "hour",
    "if",
    "ifnull",
    "ilike",
    "in",
    "initcap",
    "instr",
    "last_day",
    "lcase",
    "least",
    "left",
    "len",
    "length",
    "like",
    "ln",
    "locate",
    "lower",
    "lpad",
    "ltrim",
    "minute",
    "mod",
    "month",
    "negative",
    "not",
    "nullif",
    "nvl",
    "nvl2",
    "or",
    "position",
    "pow",
    "power",
    "quarter",
    "regexp_like",
    "repeat",
    "replace",
    "reverse",
    "right",
    "rlike",
    "round",
    "rpad",
    "rtrim",
    "second",
    "sign",
    "signum",
    "sqrt",
    "startswith",
    "substr",
    "substring",
    "to_date",
    "trim",
    "ucase",
    "upper",
    "when",
    "year",
]
"""Functions the expression translator maps itself (methods of ``ExprTranslator``); ``and``,
``or``, ``not``, ``in``, ``between``, ``case``, ``when``, ``cast`` and ``div`` are the SQL
operators and keywords Spark also lists as functions."""


def support_table() -> str:
    """``docs/sql-support.md``, generated from this module."""
    lines = [
        "# Spark SQL support of views",
        "",
        "Generated by `python -m sql_frontend.expressions.registry > docs/sql-support.md`;",
        "`tests/sql_frontend/test_coverage.py` fails when this file and the code disagree.",
        "Every scalar function is evaluated per change (incremental wherever it stands).",
        "",
        "## Aggregates",
        "",
        "| aggregate | maintenance |",
        "| --- | --- |",
        *(f"| `{n}` | {how} |" for n, how in AGGREGATES.items()),
        "",
        "## Window functions and frames",
        "",
        "| window | maintenance |",
        "| --- | --- |",
        *(f"| `{n}` | {how} |" for n, how in WINDOWS.items()),
        "",
        "## Generators",
        "",
        "| generator | maintenance | evaluation |",
        "| --- | --- | --- |",
        *(f"| `{n}` | {INCREMENTAL} (a flat-map) | {how} |" for n, how in GENERATORS.items()),
        "",
        "## Scalar functions",
        "",
        "| function | evaluation |",
        "| --- | --- |",
        *(f"| `{n}` | numpy / built in |" for n in TRANSLATOR_FUNCTIONS),
        *(f"| `{n}` | {FUNCTIONS[n].kernel} |" for n in sorted(FUNCTIONS)),
        *(f"| `{n}` | {HIGHER_ORDER[n]} |" for n in sorted(HIGHER_ORDER)),
        *(f"| `{n}(x)` | cast |" for n in CASTS),
        *(f"| `{n}()` | constant |" for n in CONSTANTS),
        *(f"| `{n}` | rewritten (COALESCE / CASE / <=>) |" for n in MACROS),
        "",
        f"{len(TRANSLATOR_FUNCTIONS) + len(registry_names())} scalar functions in all.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(support_table(), end="")
