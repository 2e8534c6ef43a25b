"""UTF-8 validation and ``to_char`` (Spark's ``ToCharacter``): numbers written with a number
format, binary written as hex, base64 or UTF-8. Strings of this engine are Python ``str`` and
always valid UTF-8, so the UTF-8 functions need work only for BINARY arguments (Spark reads
BINARY as the bytes of a string, unchecked); over STRING columns they are whole-column numpy.
"""

from __future__ import annotations

import base64
from decimal import Decimal

import numpy as np

from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error
from sql_frontend.expressions.string_functions import digit_run_end
from sql_frontend.expressions.vec import Vec, from_objects, objects
from sql_frontend.sql_types import SqlType

# ---------------------------------------------------------------- UTF-8


def _valid(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _is_valid_utf8(args: list[Vec], t: SqlType) -> Vec:
    (a,) = args
    if a.type.name != "BINARY":
        return Vec(np.ones(len(a), dtype=bool), a.null.copy(), t)
    return elementwise(lambda b: _valid(bytes(b)), args, t)


def _make_valid_utf8(args: list[Vec], t: SqlType) -> Vec:
    (a,) = args
    if a.type.name != "BINARY":
        return Vec(a.data, a.null, t)
    return elementwise(lambda b: bytes(b).decode("utf-8", errors="replace"), args, t)


def _validate(safe: bool):
    def one(b: bytes) -> str | None:
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            if safe:
                return None
            shown = "".join(f"\\x{c:02X}" for c in b)
            raise runtime_error(
                f"[INVALID_UTF8_STRING] Invalid UTF8 byte sequence found in string: {shown}; "
                "use try_validate_utf8 or make_valid_utf8 to get NULL or a replacement"
            ) from None

    def run(args: list[Vec], t: SqlType) -> Vec:
        (a,) = args
        if a.type.name != "BINARY":
            return Vec(a.data, a.null, t)
        return elementwise(lambda b: one(bytes(b)), args, t)

    return run


OPS["is_valid_utf8"] = _is_valid_utf8
OPS["make_valid_utf8"] = _make_valid_utf8
OPS["validate_utf8"] = _validate(safe=False)
OPS["try_validate_utf8"] = _validate(safe=True)

# ---------------------------------------------------------------- to_char of binary

BINARY_FORMATS = ("hex", "base64", "utf-8")


def _binary_to_char(b: bytes, fmt: str) -> str:
    f = fmt.lower()
    if f == "hex":
        return b.hex().upper()
    if f == "base64":
        return base64.b64encode(b).decode("ascii")
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise runtime_error(
            "[MALFORMED_CHARACTER_CODING] Invalid value found when performing `decode` with "
            "utf-8; use make_valid_utf8(x) or to_char(x, 'hex')"
        ) from None


OPS["binary_to_char"] = lambda args, t: elementwise(
    lambda b, f: _binary_to_char(bytes(b), f), args, t
)

# ---------------------------------------------------------------- to_char of numbers

Token = tuple[str, int, bool]
"""``("digits", count, exact)`` (exact: a run before the point that starts with 0), or a
one-element token: ``","``, ``"."``, ``"$"``, ``"S"``, ``"MI"``, ``"<"``, ``">"``."""


def number_tokens(fmt: str) -> list[Token]:
    """The tokens of a Spark number format (already checked by ``number_format``); ``PR``
    becomes an opening ``<`` at the front and a closing ``>`` at its place."""
    f, i, out, point = fmt.upper(), 0, [], False
    while i < len(f):
        c = f[i]
        if c in "09":
            j = digit_run_end(f, i)
            out.append(("digits", j - i, c == "0" and not point))
            i = j
            continue
        if f.startswith("MI", i) or f.startswith("PR", i):
            if f[i] == "P":
                out.insert(0, ("<", 0, False))
            out.append(("MI" if f[i] == "M" else ">", 0, False))
            i += 2
            continue
        sym = {"D": ".", "G": ","}.get(c, c)
        point = point or sym == "."
        out.append((sym, 0, False))
        i += 1
    return out


def _digits_around_point(tokens: list[Token]) -> tuple[int, int]:
    before = after = 0
    point = False
    for kind, n, _ in tokens:
        point = point or kind == "."
        if kind == "digits":
            if point:
                after += n
            else:
                before += n
    return before, after


def _put_space(out: list[str]) -> None:
    """A space, moved in front of a sign or ``<`` just written."""
    out.append(" ")
    i = len(out) - 1
    while i >= 1 and out[i - 1] in "+-<" and out[i] == " ":
        out[i - 1], out[i] = " ", out[i - 1]
        i -= 1


def _put_sign(out: list[str], c: str) -> None:
    """A sign character, moved in front of the spaces just before it."""
    out.append(c)
    i = len(out) - 1
    while i >= 1 and out[i - 1] == " " and out[i] == c:
        out[i - 1], out[i] = c, " "
        i -= 1


def _drop_lone_point(out: list[str]) -> None:
    if "." in out:
        i = out.index(".")
        if i == len(out) - 1 or out[i + 1] == " ":
            out[i] = " "


def _integer_digits(out: list[str], digits: str, exact: bool) -> None:
    """Integer-part digits (right-aligned, space-padded): a pad is ``0`` under ``0`` and a
    space (or nothing) under ``9``."""
    for c in digits:
        if c != " ":
            out.append(c)
        elif exact:
            out.append("0")
        else:
            _put_space(out)


def format_number_as(value: Decimal, fmt: str) -> str:
    """``value`` written with the number format ``fmt`` as Spark's ``to_char`` does: digits
    right-aligned, ``9`` padding with spaces and ``0`` with zeros, ``#`` in every digit place
    when the value does not fit, signs by ``S``/``MI``/``PR`` only."""
    tokens = number_tokens(fmt)
    negative = value < 0
    plain = format(abs(value), "f")
    ip, _, fp = plain.partition(".")
    ip, fp = ip.lstrip("0"), fp.rstrip("0")
    nb, na = _digits_around_point(tokens)
    if len(ip) > nb or len(fp) > na:
        ip, fp = "#" * nb, "#" * na
    ip, fp = " " * (nb - len(ip)) + ip, fp + "0" * (na - len(fp))
    out: list[str] = []
    bi = ai = 0
    point = False
    for kind, n, exact in tokens:
        if kind == "digits" and not point:
            _integer_digits(out, ip[bi : bi + n], exact)
            bi += n
        elif kind == "digits":
            out.extend(fp[ai : ai + n])
            ai += n
        elif kind == ",":
            if out and out[-1].isdigit():
                out.append(",")
            else:
                _put_space(out)
        elif kind == ".":
            if out and out[-1] == " ":
                out[-1] = "0"
            out.append(".")
            point = True
        elif kind == "$":
            out.append("$")
        elif kind == "S":
            _drop_lone_point(out)
            _put_sign(out, "-" if negative else "+")
        elif kind == "MI":
            if negative:
                _drop_lone_point(out)
                _put_sign(out, "-")
            else:
                out.append(" ")
        elif kind == "<":
            if negative:
                out.append("<")
        else:  # ">"
            _drop_lone_point(out)
            if negative:
                _put_sign(out, ">")
            else:
                out.extend("  ")
    _drop_lone_point(out)
    text = "".join(out)
    return "0" if text in ("", "+", "-") else text


def _number_to_char(args: list[Vec], t: SqlType) -> Vec:
    a, f = args
    values = objects(a)
    fmts = objects(f)
    out: list[object] = [None] * len(a)
    for i in np.flatnonzero(~(a.null | f.null)):
        v = values[i]
        d = v if isinstance(v, Decimal) else Decimal(repr(v) if isinstance(v, float) else v)
        out[i] = format_number_as(d, fmts[i])
    return from_objects(out, t)


OPS["number_to_char"] = _number_to_char
