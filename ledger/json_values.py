"""JSON values a caller hands the ledger to keep, checked before anything is written.

The framework adapters keep values and items as JSON text in sealed payload fields
(``store.put`` values, ``session.items_added`` items): what is put must read back as it was
put. :func:`check_json` refuses what would not, naming the field, before any event exists.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = [
    "JSON_KINDS", "LONE_SURROGATE", "MAX_DEPTH", "MAX_LINE_DEPTH", "check_json", "nested_deeper",
    "short", "unicode",
]  # fmt: skip

#: The deepest a value may nest (dicts and lists): deeper ones would meet Python's recursion
#: limit in the JSON codecs that write and read them back (a projection decodes them in the
#: caller's thread, under whatever stack it already has).
MAX_DEPTH = 256
#: What a JSON value may hold, as error messages spell it.
JSON_KINDS = "JSON (str, int, float, bool, None, list, dict with str keys)"


def short(value: Any) -> str:
    """Return ``value``'s repr, cut to fit an error message."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}...{text[-12:]}"


def unicode(text: str) -> bool:
    """Say whether ``text`` is valid unicode (no lone surrogate): what UTF-8 can encode."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_json(value: Any, root: str, what: str, where: str = "") -> None:
    """Refuse ``value`` unless it is JSON that reads back as it was put; name the bad field.

    ``root`` names the value in messages (``value``, ``items[0]``), ``what`` says what it is
    (``store values``), ``where`` is appended (``; put to ('u',), key 'k'``). Tuples pass,
    as JSON arrays (they read back as lists). Walks without recursion, so a value nested
    too deep is refused rather than overflowing. Raises TypeError or ValueError.
    """
    rule = f"{what} must be {JSON_KINDS}"
    tail = f"; {where}" if where else ""
    # Each entry: (node, its parent entry, its key or index there, depth); the path is spelled
    # only for an error.
    stack: list[tuple[Any, Any, Any, int]] = [(value, None, root, 0)]
    while stack:
        entry = stack.pop()
        node, _, _, depth = entry
        kind = type(node)
        if kind is str:
            if not unicode(node):
                raise ValueError(
                    f"{_path(entry)} is not valid unicode (it holds a lone surrogate): {rule}{tail}"
                )
        elif kind is float:
            if not math.isfinite(node):
                raise ValueError(
                    f"{_path(entry)} is {node!r}: {rule}, which has no NaN or infinity{tail}"
                )
        elif node is None or kind is int or kind is bool:
            continue
        elif isinstance(node, dict | list | tuple):
            if depth >= MAX_DEPTH:
                raise ValueError(
                    f"{root} is nested more than {MAX_DEPTH} levels deep (dicts and lists):"
                    f" {what} may nest at most {MAX_DEPTH} levels{tail}"
                )
            if isinstance(node, dict):
                for key in node:
                    if type(key) is not str:
                        raise TypeError(
                            f"{_path(entry)} has the key {short(key)} ({type(key).__name__}):"
                            f" {rule}{tail}"
                        )
                    if not unicode(key):
                        raise ValueError(
                            f"{_path(entry)} has a key that is not valid unicode (it holds a"
                            f" lone surrogate), {short(key)}: {rule}{tail}"
                        )
                stack.extend(
                    (child, entry, key, depth + 1) for key, child in reversed(node.items())
                )
            else:
                stack.extend((node[i], entry, i, depth + 1) for i in range(len(node) - 1, -1, -1))
        else:
            raise TypeError(f"{_path(entry)} is {kind.__name__}: {rule}{tail}")


def _path(entry: tuple[Any, Any, Any, int]) -> str:
    """Spell where ``entry`` is: its root's name, then each key or index down to it."""
    labels = []
    while entry[1] is not None:
        label = entry[2]
        labels.append(f"[{label}]" if type(label) is int else f"[{short(label)}]")
        entry = entry[1]
    return str(entry[2]) + "".join(reversed(labels))


#: The deepest nesting a line of JSON handed in whole may have (``engram append``'s lines, a
#: pack's nodes): far beyond any payload's, and far below the interpreter's recursion limit,
#: which a decoder, or a reader walking the value later, would otherwise reach (a
#: 100,000-deep line ended in a RecursionError raised wherever the stack happened to be; a
#: pack's 600-deep payload broke every ``engram log`` after it; ADR 0188).
MAX_LINE_DEPTH = 200
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_OPENS = frozenset(b"[{")
_CLOSES = frozenset(b"]}")


def nested_deeper(raw: bytes | str, limit: int = MAX_LINE_DEPTH) -> bool:
    """Say whether the JSON text ``raw`` nests brackets deeper than ``limit`` (its strings
    left out), before it is decoded; a text with fewer opening brackets than that is never
    read twice."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    depth = 0
    for byte in _STRING.sub(b'""', data):
        if byte in _OPENS:
            depth += 1
            if depth > limit:
                return True
        elif byte in _CLOSES:
            depth -= 1
    return False


#: A JSON escape of a surrogate not in a pair: a high one not followed by a low one, or a
#: low one not after a high one (read only once a decoder refused the text: it says
#: "truncated" of some).
_HIGH, _LOW = r"\\u[dD][89abAB][0-9a-fA-F]{2}", r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
LONE_SURROGATE = re.compile(rf"{_HIGH}(?!{_LOW})|(?<!{_HIGH}){_LOW}")
