"""The scalar ``xpath_*`` functions: an XPath 1.0 expression evaluated over an XML string, as
Spark's ``UDFXPathUtil`` does through Java's XPath, converted by XPath 1.0's ``boolean()``,
``number()`` and ``string()`` and then as Java narrows a double (``(int) d``: NaN → 0,
saturating). libxml2's XPath 1.0 (through ``lxml``) evaluates; per row, the path compiled once.
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache
from typing import Any

import numpy as np

from sql_frontend.expressions.evaluate import OPS, runtime_error
from sql_frontend.expressions.vec import Vec, from_objects, objects
from sql_frontend.sql_types import SqlType

WRAP = {"boolean": "boolean({})", "string": "string({})", "raw": "{}"}
"""Result kind → the XPath 1.0 conversion to it (numbers: ``number``)."""

_INT_RANGE = {"int": 2**31, "short": 2**31, "long": 2**63}


_TOKEN = re.compile(
    r"""\s*(?:("[^"]*"|'[^']*')|(\d+(?:\.\d*)?|\.\d+)|(//|::|\.\.|!=|<=|>=|[/.@,()\[\]|+=<>*$-])"""
    r"|([A-Za-z_][\w.-]*(?::(?:[A-Za-z_][\w.-]*|\*))?))"
)
_NODE_TYPES = frozenset(["node", "text", "comment", "processing-instruction"])
_OPERATOR_NAMES = frozenset(["and", "or", "mod", "div"])


def from_document(path: str) -> str:
    """``path`` with each relative location path outside predicates made absolute: Java
    evaluates from the document node, libxml2 (through lxml) from the root element; from the
    document node, ``a/b`` is ``/a/b`` and ``.`` is ``/.`` (XPath 1.0, section 3.7's rules tell
    an operand from an operator)."""
    out: list[str] = []
    depth, prev, pos = 0, None, 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            return path  # not XPath 1.0: libxml2 reports it
        literal, number, sym, name = m.groups()
        token = literal or number or sym or name
        operand = prev is None or prev in ("@", "::", "(", "[", ",", "/", "//", "|", "+", "-")
        operand = operand or prev in ("=", "!=", "<", "<=", ">", ">=", "*mul", *_OPERATOR_NAMES)
        after = path[m.end() :].lstrip()
        starts_path = depth == 0 and prev not in ("/", "//", "@", "::") and operand
        kind = "*mul" if sym == "*" and not operand else token  # multiplication, not a name test
        if starts_path and (
            sym in (".", "..", "@", "*")
            or (name and (after.startswith("::") or not after.startswith("(")))
            or (name in _NODE_TYPES and after.startswith("("))
        ):
            out.append(path[pos : m.end() - len(token)] + " /" + token)
        else:
            out.append(m.group(0))
        depth += {"[": 1, "]": -1}.get(sym or "", 0)
        prev = kind
        pos = m.end()
    return "".join(out)


@lru_cache(maxsize=128)
def compiled(path: str, kind: str) -> Any:
    """``path`` compiled, wrapped in the XPath conversion of ``kind``; XPATH errors typed."""
    from lxml import etree

    try:
        return etree.XPath(WRAP.get(kind, "number({})").format(from_document(path)))
    except etree.XPathSyntaxError as e:
        raise runtime_error(
            f"[INVALID_XPATH] the XPath {path!r} is invalid: {e}; write an XPath 1.0 expression"
        ) from None


_DEFAULT_NAMESPACE = re.compile(r"""\s+xmlns\s*=\s*("[^"]*"|'[^']*')""")


def _document(xml: str) -> Any:
    """The parsed document; default namespace declarations dropped, since Java's parser in
    Spark is not namespace-aware (``a/b`` finds ``<a xmlns="urn:x"><b>``)."""
    from lxml import etree

    xml = _DEFAULT_NAMESPACE.sub("", xml)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    try:
        return etree.fromstring(xml.encode("utf-8"), parser).getroottree()
    except etree.XMLSyntaxError as e:
        raise runtime_error(
            f"[INVALID_XML] the XML document {xml[:60]!r} cannot be parsed: {e}"
        ) from None


def java_narrow(d: float, kind: str) -> object:
    """A double narrowed as Java's ``Double.intValue()`` / ``shortValue()`` /
    ``longValue()`` / ``floatValue()`` do."""
    if kind in ("double", "number"):
        return d
    if kind == "float":
        return float(np.float32(d))
    if d != d:
        return 0
    bound = _INT_RANGE[kind]
    n = (
        int(max(min(d, bound - 1), -bound))
        if abs(d) != float("inf")
        else (bound - 1 if d > 0 else -bound)
    )
    if kind == "short":
        n = (n + 2**15) % 2**16 - 2**15
    return n


def evaluate_xpath(xml: str, path: str, kind: str) -> object:
    """One row: None for an empty document or path, as Spark gives."""
    if not xml or not path:
        return None
    from lxml import etree

    try:
        doc = _document(xml)
        value = compiled(path, kind)(doc)
    except etree.XPathEvalError as e:
        raise runtime_error(
            f"[INVALID_XPATH] the XPath {path!r} cannot be evaluated: {e}"
        ) from None
    if kind == "boolean":
        return bool(value)
    raw = compiled(path, "raw")(doc)
    if kind != "string":
        if isinstance(raw, (list, str)):  # a string read as XPath 1.0's Number: no exponent
            value = java_string_number(str(compiled(path, "string")(doc)))
        return java_narrow(float(value), kind)
    if isinstance(raw, bool):
        return "true" if raw else "false"
    return java_number(raw) if isinstance(raw, float) else str(value)


_NUMBER = re.compile(r"\s*(-?(?:\d+(?:\.\d*)?|\.\d+))\s*")


def java_string_number(text: str) -> float:
    """XPath 1.0's ``number()`` of a string: a plain decimal or NaN (no exponent)."""
    m = _NUMBER.fullmatch(text)
    return float(m.group(1)) if m else float("nan")


def java_number(d: float) -> str:
    """XPath 1.0's string of a number as Java writes it: no exponent, no ``.0``."""
    if d != d:
        return "NaN"
    if d in (float("inf"), float("-inf")):
        return "Infinity" if d > 0 else "-Infinity"
    if d == int(d):
        return str(int(d))
    return format(Decimal(repr(d)), "f")


def _xpath(kind: str):
    def run(args: list[Vec], t: SqlType) -> Vec:
        xml, path = args
        xs, ps = objects(xml), objects(path)
        out: list[object] = [None] * len(xml)
        for i in np.flatnonzero(~(xml.null | path.null)):
            out[i] = evaluate_xpath(xs[i], ps[i], kind)
        return from_objects(out, t)

    return run


KINDS = ("boolean", "double", "float", "int", "long", "number", "short", "string")
for _kind in KINDS:
    OPS[f"xpath_{_kind}"] = _xpath(_kind)
