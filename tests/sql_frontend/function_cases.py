"""Per registry function, expressions over the harness's tables (random rows with NULLs),
compared with Spark SQL: ``SCALAR_VIEWS`` holds them, a few functions per view, so one Spark
query checks them all. ``test_every_registry_function_has_a_case`` holds the list complete."""

from __future__ import annotations

T_CASES: dict[str, list[str]] = {
    "cbrt": ["cbrt(v)", "cbrt(x)"],
    "expm1": ["expm1(x)"],
    "sin": ["sin(x)"],
    "cos": ["cos(v)"],
    "tan": ["tan(x)"],
    "asin": ["asin(x / 10)", "asin(x)"],
    "acos": ["acos(x / 10)"],
    "atan": ["atan(v)"],
    "sinh": ["sinh(x)"],
    "cosh": ["cosh(x)"],
    "tanh": ["tanh(v)"],
    "degrees": ["degrees(x)"],
    "radians": ["radians(v)"],
    "cot": ["cot(x)"],
    "log10": ["log10(v)", "log10(x)"],
    "log2": ["log2(v)"],
    "log1p": ["log1p(x)"],
    "log": ["log(3, v)", "log(x, 8)", "log(x)"],
    "atan2": ["atan2(v, x)"],
    "hypot": ["hypot(v, x)"],
    "nanvl": ["nanvl(x, v)"],
    "factorial": ["factorial(v)", "factorial(v + 15)"],
    "positive": ["positive(v)", "positive(m)"],
    "isnull": ["isnull(s)"],
    "isnotnull": ["isnotnull(v)"],
    "ascii": ["ascii(s)"],
    "chr": ["chr(v + 64)", "chr(v * 100)"],
    "char": ["char(v + 97)"],
    "bit_length": ["bit_length(s)"],
    "octet_length": ["octet_length(s)"],
    "space": ["space(v)"],
    "translate": ["translate(s, 'ab', 'x')", "translate(s, 'a ', 'AB')"],
    "split_part": ["split_part(concat(s, ',', v), ',', 2)", "split_part(s, 'b', -1)"],
    "substring_index": ["substring_index(concat(s, '.', v, '.z'), '.', 2)"],
    "levenshtein": ["levenshtein(s, 'abc')"],
    "md5": ["md5(s)"],
    "sha1": ["sha1(s)"],
    "sha": ["sha(s)"],
    "sha2": ["sha2(s, 256)", "sha2(s, 512)", "sha2(s, 7)"],
    "crc32": ["crc32(s)"],
    "base64": ["base64(s)"],
    "hex": ["hex(s)", "hex(v)"],
    "regexp_replace": ["regexp_replace(s, '[ab]+', '<$0>')", "regexp_replace(s, '(a)(b)?', '$1-')"],
    "regexp_extract": ["regexp_extract(s, '([a-z])([a-z])', 2)", "regexp_extract(s, '(b.*)')"],
    "date_trunc": ["date_trunc('MONTH', d)", "date_trunc('WEEK', d)", "date_trunc('YEAR', d)"],
    "trunc": ["trunc(d, 'MM')", "trunc(d, 'QUARTER')", "trunc(d, 'DD')"],
    "date_format": ["date_format(d, 'yyyy-MM-dd')", "date_format(d, 'dd/MM/yy')"],
    "from_unixtime": ["from_unixtime(v * 86400 * 40)", "from_unixtime(v, 'yyyy-MM-dd')"],
    "unix_timestamp": ["unix_timestamp(d)"],
    "weekofyear": ["weekofyear(d)"],
    "make_date": ["make_date(2024, least(v + 4, 12), 1)"],
    "hash": ["hash(v)", "hash(s)", "hash(k, s, x)", "hash(m)", "hash(d)", "hash(x, NULL, v)"],
    "tinyint": ["tinyint(v)"],
    "smallint": ["smallint(v)"],
    "int": ["int(x)"],
    "bigint": ["bigint(m)"],
    "float": ["float(v)"],
    "double": ["double(m)"],
    "string": ["string(d)"],
    "boolean": ["boolean(v)"],
    "date": ["date(d)"],
    "timestamp": ["timestamp(d)"],
}

EV_CASES: dict[str, list[str]] = {
    "date_trunc": ["date_trunc('HOUR', ts)", "date_trunc('QUARTER', ts)", "date_trunc('DD', ts)"],
    "date_format": ["date_format(ts, 'yyyy-MM-dd HH:mm:ss')"],
    "unix_timestamp": ["unix_timestamp(ts)"],
    "hex": ["hex(qty - 10)"],
    "hash": ["hash(ts, amt, ok, qty, cat)"],
}


def _views(table: str, cases: dict[str, list[str]], per_view: int = 40) -> dict[str, str]:
    exprs = [e for es in cases.values() for e in es]
    out = {}
    for i in range(0, len(exprs), per_view):
        cols = ", ".join(f"{e} AS c{j}" for j, e in enumerate(exprs[i : i + per_view]))
        out[f"fn_{table}_{i // per_view}"] = f"SELECT {cols} FROM {table}"
    return out


SCALAR_VIEWS = {**_views("t", T_CASES), **_views("ev", EV_CASES)}
