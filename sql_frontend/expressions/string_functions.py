"""String functions of Spark 4 beyond :mod:`functions` and :mod:`more_functions`, evaluated
per row in Python (no columnar kernel here; the registry says so): ``soundex``, ``overlay``,
``elt``, ``mask``, ``quote``, ``format_number``, ``format_string``, ``encode``/``decode``,
``unbase64``, ``to_binary``, ``url_decode``, ``parse_url``, ``locate`` from a position,
``levenshtein`` with a threshold, trimming of given characters and ``json_array_length``."""

from __future__ import annotations

import base64
import binascii
import math
import re
from decimal import ROUND_HALF_EVEN, Context, Decimal
from urllib.parse import unquote_plus, urlsplit

from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error
from sql_frontend.expressions.functions import _substring
from sql_frontend.expressions.more_functions import _levenshtein
from sql_frontend.expressions.vec import Vec, from_objects, objects
from sql_frontend.sql_types import SqlType


def _reg(name: str, fn) -> None:
    OPS[name] = lambda args, t: elementwise(fn, args, t)


# American soundex codes of A..Z; '7' marks H and W, which do not separate equal codes
_SOUNDEX = "01230127022455012623017202"


def _soundex(s: str) -> str:
    if not s:
        return s
    first = s[0].upper() if "a" <= s[0] <= "z" else s[0]
    if not "A" <= first <= "Z":
        return s
    out, last = [first], _SOUNDEX[ord(first) - 65]
    for c in s[1:]:
        c = c.upper() if "a" <= c <= "z" else c
        if not "A" <= c <= "Z":
            last = "0"
            continue
        code = _SOUNDEX[ord(c) - 65]
        if code == "7":
            continue
        if code != "0" and code != last:
            out.append(code)
            if len(out) == 4:
                break
        last = code
    return "".join(out).ljust(4, "0")


_reg("soundex", _soundex)


def _overlay(s: str, rep: str, pos: int, length: int) -> str:
    n = len(rep) if length < 0 else length
    return _substring(s, 1, pos - 1) + rep + _substring(s, pos + n)


_reg("overlay", _overlay)


def _elt(args: list[Vec], t: SqlType) -> Vec:
    idx = objects(args[0])
    cols = [objects(a) for a in args[1:]]
    out: list[object] = []
    for i, n in enumerate(idx):
        if n is None:
            out.append(None)
        elif 1 <= n <= len(cols):
            out.append(cols[n - 1][i])
        else:
            raise runtime_error(
                f"[INVALID_ARRAY_INDEX] elt: the index {n} is out of bounds; the function has "
                f"{len(cols)} arguments to choose from"
            )
    return from_objects(out, t)


OPS["elt"] = _elt


def _mask(args: list[Vec], t: SqlType) -> Vec:
    """mask(s, upper, lower, digit, other): a NULL replacement keeps those characters."""
    s, *reps = (objects(a) for a in args)
    out: list[object] = []
    for i, v in enumerate(s):
        if v is None:
            out.append(None)
            continue
        up, lo, dg, ot = (r[i] for r in reps)
        chars = []
        for c in v:
            if c.isupper():
                r = up
            elif c.islower():
                r = lo
            elif c.isdecimal():
                r = dg
            else:
                r = ot
            chars.append(c if r is None else r[:1])
        out.append("".join(chars))
    return from_objects(out, t)


OPS["mask"] = _mask
_reg("quote", lambda s: "'" + s.replace("'", "\\'") + "'")


_WIDE = Context(prec=1000, rounding=ROUND_HALF_EVEN, Emax=10**6, Emin=-(10**6))


def _format_number(x: object, d: int) -> str | None:
    """Java's DecimalFormat ``#,###,##0.00...``: HALF_EVEN on the exact value."""
    if d < 0:
        return None
    if d > 340:  # Java's DecimalFormat shows at most 340 fraction digits
        raise runtime_error(f"[INVALID_PARAMETER_VALUE] format_number: {d} decimal places")
    if isinstance(x, float):
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return ("-" if x < 0 else "") + "\u221e"
        exact = Decimal(x)
    else:
        exact = x if isinstance(x, Decimal) else Decimal(int(x))  # type: ignore[call-overload]
    return format(exact.quantize(Decimal(1).scaleb(-d), context=_WIDE), f",.{d}f")


_reg("format_number", _format_number)

_SPEC = re.compile(r"%(?:(\d+)\$)?([-#+ 0,(]*)(\d+)?(?:\.(\d+))?([a-zA-Z%])")


def _java_format(fmt: str, values: list[object], bits: list[int]) -> str:
    """Java's ``String.format`` for the conversions s S d x X o f e E b B c % n."""
    out, pos, nxt = [], 0, 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        index, flags, width, prec, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if conv == "n":
            out.append("\n")
            continue
        k = int(index) - 1 if index is not None else nxt
        if index is None:
            nxt += 1
        v = values[k] if k < len(values) else _MISSING
        if v is _MISSING:
            raise runtime_error(f"[INVALID_PARAMETER_VALUE] format_string: no argument for {m[0]}")
        out.append(_one(conv, flags, width, prec, v, m[0], bits[k]))
    out.append(fmt[pos:])
    return "".join(out)


_MISSING = object()


def _one(
    conv: str, flags: str, width: str | None, prec: str | None, v: object, spec: str, bits: int
) -> str:
    """One conversion; ``bits``: the width of an integral argument (its two's complement is
    what %x and %o show of a negative number)."""
    c = conv.lower()
    if prec is not None and c in ("d", "x", "o", "c"):
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE] format_string: {spec} may not have a precision (Java's "
            "IllegalFormatPrecisionException)"
        )
    if c in ("s", "b"):
        text = ("false" if v is None else "true") if c == "b" and not isinstance(v, bool) else v
        text = "null" if text is None else _java_str(text)
        if prec is not None:
            text = text[: int(prec)]
    elif v is None:  # Java shows "null", cut to the precision, for every conversion
        text = "null" if prec is None else "null"[: int(prec)]
    elif c in ("d", "x", "o") and isinstance(v, int) and not isinstance(v, bool):
        text = _integral(c, flags, width, v, bits)
    elif c in ("f", "e") and isinstance(v, float | Decimal) and not isinstance(v, bool):
        text = _fractional(c, flags, width, prec, v)
    elif c == "c" and isinstance(v, int) and not isinstance(v, bool):
        text = chr(v)
    else:
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE] format_string: {spec} does not take a "
            f"{type(v).__name__} argument (Java's IllegalFormatConversionException)"
        )
    if conv.isupper():
        text = text.upper()
    if width is not None and len(text) < int(width):
        text = text.ljust(int(width)) if "-" in flags else text.rjust(int(width))
    return text


def _integral(c: str, flags: str, width: str | None, v: int, bits: int) -> str:
    """``%d`` (sign, grouping, parentheses, zero padding) or ``%x``/``%o`` (of the two's
    complement on ``bits`` bits for a negative number; ``#`` adds the radix prefix)."""
    if c == "d":
        text = format(abs(v), "," if "," in flags else "d")
        sign = "-" if v < 0 else "+" if "+" in flags else " " if " " in flags else ""
        if "(" in flags and v < 0:
            text = "(" + text + ")"
            sign = ""
        if "0" in flags and width is not None:
            text = text.rjust(int(width) - len(sign), "0")
        return sign + text
    u = v if v >= 0 else v + 2**bits
    text = format(u, "x" if c == "x" else "o")
    if "#" in flags:
        text = ("0x" if c == "x" else "0") + text
    if "0" in flags and width is not None:
        text = text.rjust(int(width), "0")
    return text


def _fractional(c: str, flags: str, width: str | None, prec: str | None, v: float | Decimal) -> str:
    """``%f`` (sign, grouping, zero padding) or ``%e`` (Java's two-digit exponent), of the
    exact decimal value; NaN and infinities as Java spells them."""
    p = 6 if prec is None else int(prec)
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        if math.isnan(v):
            return "NaN"
        return ("-" if v < 0 else "+" if "+" in flags else "") + "Infinity"
    d = Decimal(repr(v)) if isinstance(v, float) else v
    if c == "e":
        mant, _, exp_ = format(d, f".{p}e").partition("e")
        return f"{mant}e{exp_[0]}{exp_[1:].rjust(2, '0')}"
    text = format(d, ("+" if "+" in flags else "") + ("," if "," in flags else "") + f".{p}f")
    if "0" in flags and width is not None:
        sign = text[0] if text[0] in "+-" else ""
        text = sign + text[len(sign) :].rjust(int(width) - len(sign), "0")
    return text


def _java_str(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        from sql_frontend.expressions.casts import to_str
        from sql_frontend.sql_types import DOUBLE

        return to_str(v, DOUBLE)
    if isinstance(v, bytes):
        return "[B@binary"
    return str(v)


def _format_string(args: list[Vec], t: SqlType) -> Vec:
    fmt = objects(args[0])
    cols = [objects(a) for a in args[1:]]
    widths = {"TINYINT": 8, "SMALLINT": 16, "INT": 32}
    bits = [widths.get(a.type.name, 64) for a in args[1:]]
    out: list[object] = []
    for i, f in enumerate(fmt):
        out.append(None if f is None else _java_format(f, [c[i] for c in cols], bits))
    return from_objects(out, t)


OPS["format_string"] = _format_string

_CHARSETS = {
    "US-ASCII": "ascii",
    "ISO-8859-1": "latin-1",
    "UTF-8": "utf-8",
    "UTF-16BE": "utf-16-be",
    "UTF-16LE": "utf-16-le",
    "UTF-16": "utf-16",
    "UTF-32": "utf-32-be",
}


def _codec(charset: str, fn: str) -> str:
    c = _CHARSETS.get(charset.upper())
    if c is None:
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE.CHARSET] {fn}: expects one of the charsets "
            f"{', '.join(map(repr, _CHARSETS)).lower()}, but got {charset!r}"
        )
    return c


def _encode(s: str, charset: str) -> bytes:
    c = _codec(charset, "encode")
    try:
        b = b"\xfe\xff" + s.encode("utf-16-be") if c == "utf-16" else s.encode(c)
    except UnicodeEncodeError:
        raise runtime_error(
            f"[MALFORMED_CHARACTER_CODING] encode: invalid value found when processing with "
            f"{charset}"
        ) from None
    return b


def _decode(b: bytes, charset: str) -> str:
    c = _codec(charset, "decode")
    try:
        raw = bytes(b)
        if c == "utf-16" and raw[:2] not in (b"\xfe\xff", b"\xff\xfe"):
            c = "utf-16-be"  # Java reads UTF-16 without a byte order mark as big-endian
        return raw.decode(c)
    except UnicodeDecodeError:
        raise runtime_error(
            f"[MALFORMED_CHARACTER_CODING] decode: invalid value found when processing with "
            f"{charset}"
        ) from None


_reg("encode", _encode)
_reg("decode", _decode)


def _unbase64(s: str) -> bytes:
    """Lenient, as Spark's MIME decoder: characters outside the alphabet are skipped and the
    first '=' ends the input; a last lone character fails (Java: "Last unit does not have
    enough valid bits", an error Spark leaves without a class)."""
    head, pad, tail = s.partition("=")
    text = re.sub(r"[^A-Za-z0-9+/]", "", head)
    if pad and (len(text) % 4 in (0, 1) or (len(text) % 4 == 2 and not tail.startswith("="))):
        raise runtime_error(
            f"[CONVERSION_INVALID_INPUT] unbase64({s!r}): the input has a wrong 4-byte ending unit"
        )
    if re.search(r"[A-Za-z0-9+/]", tail):
        raise runtime_error(
            f"[CONVERSION_INVALID_INPUT] unbase64({s!r}): the input has an incorrect ending byte"
        )
    if len(text) % 4 == 1:
        raise runtime_error(
            f"[CONVERSION_INVALID_INPUT] unbase64({s!r}): the last unit does not have enough "
            "valid bits"
        )
    return base64.b64decode(text + "=" * (-len(text) % 4))


def _to_binary(s: str, fmt: str, safe: bool) -> bytes | None:
    f = fmt.lower()
    if f == "hex":
        text = s if len(s) % 2 == 0 else "0" + s
        try:
            return bytes.fromhex(text) if re.fullmatch(r"[0-9a-fA-F]*", text) else _bad(s, f, safe)
        except ValueError:
            return _bad(s, f, safe)
    if f in ("utf-8", "utf8"):
        return s.encode("utf-8")
    if f == "base64":
        if not re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", s) or len(s) % 4 == 1:
            return _bad(s, f, safe)
        try:
            return base64.b64decode(s + "=" * (-len(s) % 4))
        except (binascii.Error, ValueError):
            return _bad(s, f, safe)
    raise runtime_error(
        f"[INVALID_PARAMETER_VALUE.BINARY_FORMAT] to_binary: expects one of the binary formats "
        f"'base64', 'hex', 'utf-8', but got {fmt!r}"
    )


def _bad(s: str, fmt: str, safe: bool) -> bytes | None:
    if safe:
        return None
    raise runtime_error(
        f"[CONVERSION_INVALID_INPUT] The value {s!r} (STRING) cannot be converted to BINARY "
        f"in the format {fmt.upper()}"
    )


_reg("unbase64", _unbase64)
_reg("to_binary", lambda s, f: _to_binary(s, f, False))
_reg("try_to_binary", lambda s, f: _to_binary(s, f, True))


def _url_decode(s: str, safe: bool) -> str | None:
    if re.search(r"%(?![0-9a-fA-F]{2})", s):
        if safe:
            return None
        raise runtime_error(f"[CANNOT_DECODE_URL] The provided URL cannot be decoded: {s}")
    return unquote_plus(s, errors="replace")


_reg("url_decode", lambda s: _url_decode(s, False))
_reg("try_url_decode", lambda s: _url_decode(s, True))

_URL_OK = re.compile(r"^[^\s\"<>\\^`{|}]*$")


def _parse_url(url: str, part: str, key: str | None = None, safe: bool = True) -> str | None:
    if not _URL_OK.match(url):
        if safe:
            return None
        raise runtime_error(f"[INVALID_URL] The url is invalid: {url}")
    u = urlsplit(url)
    if part == "QUERY":
        if key is None:
            return u.query or None
        m = re.search(r"(&|^)" + re.escape(key) + r"=([^&]*)", u.query)
        return m.group(2) if m and u.query else None
    if key is not None:
        return None
    netloc = u.netloc
    userinfo, _, hostport = netloc.rpartition("@") if "@" in netloc else ("", "", netloc)
    host = (
        hostport.rsplit(":", 1)[0] if ":" in hostport and not hostport.endswith("]") else hostport
    )
    if part == "HOST":
        return host or None
    if part == "PATH":
        return u.path if u.scheme or u.path else None
    if part == "REF":
        return u.fragment or None
    if part == "PROTOCOL":
        return u.scheme or None
    if part == "FILE":
        return u.path + ("?" + u.query if u.query else "") if (u.path or u.query) else None
    if part == "AUTHORITY":
        return netloc or None
    if part == "USERINFO":
        return userinfo or None
    return None


OPS["parse_url"] = lambda args, t: _parse_url_op(args, t, False)
OPS["try_parse_url"] = lambda args, t: _parse_url_op(args, t, True)


def _parse_url_op(args: list[Vec], t: SqlType, safe: bool) -> Vec:
    if len(args) == 2:
        return elementwise(lambda u, p: _parse_url(u, p, None, safe), args, t)
    return elementwise(lambda u, p, k: _parse_url(u, p, k, safe), args, t)


def _locate(args: list[Vec], t: SqlType) -> Vec:
    """locate(substr, str, pos): 0 for a NULL or non-positive start."""
    sub, s, pos = (objects(a) for a in args)
    out: list[object] = []
    for a, b, p in zip(sub, s, pos, strict=True):
        if p is None or p < 1:
            out.append(0)
        elif a is None or b is None:
            out.append(None)
        elif a == "":
            out.append(1)  # Spark: the empty string is found at 1 from any start
        else:
            out.append(b.find(a, p - 1) + 1 if p - 1 <= len(b) else 0)
    return from_objects(out, t)


OPS["locate"] = _locate


def _levenshtein_max(a: str, b: str, limit: int) -> int:
    d = _levenshtein(a, b)
    return d if d <= limit else -1


_reg("levenshtein_max", _levenshtein_max)
_reg("ltrim_chars", lambda s, c: s.lstrip(c))
_reg("rtrim_chars", lambda s, c: s.rstrip(c))
OPS["parse_url_key"] = OPS["parse_url"]
OPS["try_parse_url_key"] = OPS["try_parse_url"]


def _json_array_length(s: str) -> int | None:
    """The number of elements of the JSON array that starts ``s`` (text after it is not
    read, as Spark's streaming parser stops there); NULL for anything else or bad JSON."""
    import json

    def no_constants(name: str) -> object:
        raise ValueError(name)

    try:
        value, _ = json.JSONDecoder(parse_constant=no_constants).raw_decode(s.lstrip())
    except ValueError:
        return None
    return len(value) if isinstance(value, list) else None


_reg("json_array_length", _json_array_length)


def digit_run_end(f: str, i: int) -> int:
    """The end of the run of format digits (``0`` and ``9``) starting at ``i``."""
    while i < len(f) and f[i] in "09":
        i += 1
    return i


def number_format(fmt: str) -> tuple[str, int, int, bool]:
    """Spark's number format (``to_number``): the regular expression its input must match,
    the precision and scale of the DECIMAL it gives, and whether the leading digit group is
    fixed (starts with 0). Raises :class:`ValueError` naming what is wrong."""
    f = fmt.upper()
    i, parts, digits, scale = 0, [], 0, 0
    seen_point = seen_dollar = seen_sign = False
    while i < len(f):
        c = f[i]
        if c in "09":
            j = digit_run_end(f, i)
            n = j - i
            digits += n
            if seen_point:
                scale += n
                parts.append(("frac", n, False))
            else:
                parts.append(("int", n, c == "0"))
            i = j
        elif c in ".D":
            if seen_point:
                raise ValueError("more than one decimal point")
            seen_point = True
            parts.append(("point", 0, False))
            i += 1
        elif c in ",G":
            if seen_point or not parts or parts[-1][0] != "int":
                raise ValueError("a grouping separator not between digits")
            parts.append(("group", 0, False))
            i += 1
        elif c == "$":
            if seen_dollar:
                raise ValueError("more than one '$'")
            seen_dollar = True
            parts.append(("dollar", 0, False))
            i += 1
        elif c == "S" or f.startswith("MI", i) or f.startswith("PR", i):
            n = 1 if c == "S" else 2
            if seen_sign or (i != 0 and i + n != len(f)):
                raise ValueError(f"the sign {f[i : i + n]!r} not at the start or end")
            seen_sign = True
            parts.append((f[i : i + n], 0, False))
            i += n
        else:
            raise ValueError(f"the character {fmt[i]!r}")
    if digits == 0:
        raise ValueError("no digits")
    if parts[-1][0] == "group":
        raise ValueError("a grouping separator not between digits")
    return fmt, digits, scale, False


def _to_number(s: str, fmt: str, safe: bool) -> Decimal | None:
    """``s`` read with the number format ``fmt``; None (try_) or INVALID_FORMAT where the
    text does not fit."""
    f, text, negative = _number_sign(fmt.upper(), s.replace(" ", ""))  # spaces are skipped
    if "$" in f:
        k = f.index("$")
        if k == 0:
            ok = text.startswith("$")
            text = text[1:]
        else:
            ok = text.endswith("$")
            text = text[:-1]
        f = f.replace("$", "")
        if not ok:
            return _number_mismatch(s, fmt, safe)
    fi, _, ff = f.replace("D", ".").replace("G", ",").partition(".")
    ti, point, tf = text.partition(".")
    if point and "." not in f.replace("D", "."):
        return _number_mismatch(s, fmt, safe)
    if len(tf) > len(ff) or (tf and not tf.isdigit()):
        return _number_mismatch(s, fmt, safe)
    if (ti == "" and not tf) or not _integer_part_fits(ti, fi):
        return _number_mismatch(s, fmt, safe)
    value = Decimal((ti.replace(",", "") or "0") + "." + (tf or "0"))
    scale = len(ff)
    value = value.quantize(Decimal(1).scaleb(-scale))
    return -value if negative else value


def _number_sign(f: str, text: str) -> tuple[str, str, bool]:
    """The format and text without their sign element (``S``, ``MI`` or ``PR``, leading or
    trailing), and whether the text is negative."""
    negative = False
    if f.startswith("S"):
        if text[:1] in "+-":
            negative, text = text[0] == "-", text[1:]
        f = f[1:]
    elif f.endswith("S"):
        if text[-1:] in "+-":
            negative, text = text[-1] == "-", text[:-1]
        f = f[:-1]
    elif f.endswith("MI"):
        if text.endswith("-"):
            negative, text = True, text[:-1]
        f = f[:-2]
    elif f.startswith("MI"):
        if text.startswith("-"):
            negative, text = True, text[1:]
        f = f[2:]
    elif f.endswith("PR"):
        if text.startswith("<") and text.endswith(">"):
            negative, text = True, text[1:-1]
        f = f[:-2]
    return f, text, negative


def _integer_part_fits(ti: str, fi: str) -> bool:
    """Whether the integer part ``ti`` fits the format's ``fi``: digits with separators where
    the format has them (counted from the right); a format digit sequence starting with 0
    needs all its digits."""
    groups_f = fi.split(",")
    groups_t = ti.split(",")
    if len(groups_t) > len(groups_f) or not all(g.isdigit() for g in groups_t if ti):
        return False
    if ti:
        for k, g in enumerate(reversed(groups_t)):
            want = list(reversed(groups_f))[k]
            last = k == len(groups_t) - 1
            if len(g) > len(want) or (not last and len(g) != len(want)):
                return False
            if last and want.startswith("0") and len(g) != len(want):
                return False
    return not (fi.startswith("0") and len("".join(groups_t)) != len(fi.replace(",", "")))


def _number_mismatch(s: str, fmt: str, safe: bool) -> Decimal | None:
    if safe:
        return None
    raise runtime_error(
        f"[INVALID_FORMAT.MISMATCH_INPUT] The input {s!r} does not match the format {fmt!r}"
    )


_reg("to_number", lambda s, f: _to_number(s, f, False))
_reg("try_to_number", lambda s, f: _to_number(s, f, True))
