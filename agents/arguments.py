"""Checks of recall's and archival's arguments: clear errors that name what was wrong."""

from __future__ import annotations

import math
import unicodedata
import warnings
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from engram.projections.errors import QueryError
from engram.projections.lexical import MAX_TEXT


def checked_numbers(
    given: Mapping[str, float], defaults: Mapping[str, float], what: str
) -> dict[str, float]:
    """Return ``defaults`` overridden by ``given``: known names, numbers >= 0."""
    if not isinstance(given, Mapping):
        raise QueryError(f"{what} must be a mapping of name to number, got {given!r}")
    unknown = set(given) - set(defaults)
    if unknown:
        raise QueryError(f"{what}: unknown name(s) {sorted(unknown)}; known: {list(defaults)}")
    merged = dict(defaults)
    for name, value in given.items():
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not 0 <= value < math.inf
        ):
            raise QueryError(f"{what}[{name!r}] must be a number >= 0, got {value!r}")
        merged[name] = float(value)
    return merged


def checked_paths(paths: Sequence[str], known: Sequence[str]) -> frozenset[str]:
    """Return ``paths`` as a set: a non-empty sequence drawn from ``known``."""
    if isinstance(paths, str) or not isinstance(paths, Sequence) or not paths:
        raise QueryError(
            f"paths must be a non-empty sequence drawn from {tuple(known)}, got {paths!r}"
        )
    unknown = set(paths) - set(known)
    if unknown:
        raise QueryError(f"paths: unknown path(s) {sorted(unknown)}; known: {list(known)}")
    return frozenset(paths)


def checked_positions(positions: Sequence[int]) -> list[int]:
    """Return ``positions`` as a list: ledger positions (ints >= 1), none repeated."""
    if isinstance(positions, str | bytes) or not isinstance(positions, Sequence) or not positions:
        raise QueryError(f"positions must be a non-empty sequence of ints, got {positions!r}")
    for position in positions:
        if not isinstance(position, int) or isinstance(position, bool) or not 1 <= position < 2**63:
            raise QueryError(f"positions must be ledger positions (ints >= 1), got {position!r}")
    if len(set(positions)) != len(positions):
        raise QueryError(f"positions must not repeat, got {list(positions)}")
    return list(positions)


#: The longest query recall takes, in characters: a question or a task, not a document. A
#: longer one is refused before anything is read or recorded (its ``memory.recalled`` would
#: not fit the ledger's payload limit once sealed, and every word costs a lookup).
MAX_QUERY = 100_000


def check_query(query: object, what: str = "query") -> str:
    """Return ``query`` checked to be a non-empty string of at most :data:`MAX_QUERY`
    characters, else raise :class:`QueryError` saying which (without echoing a long one)."""
    if not isinstance(query, str):
        raise QueryError(f"{what} must be a non-empty string, got {type(query).__name__}")
    if not query.strip():
        raise QueryError(f"{what} must be a non-empty string, got {query[:40]!r}")
    if len(query) > MAX_QUERY:
        raise QueryError(
            f"{what} is {len(query):,} characters long; at most {MAX_QUERY:,} are taken"
            " (a question or a task, not a document)"
        )
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: no index nor ledger holds it
        raise QueryError(f"{what} must be valid UTF-8 text; character {exc.start} is not") from None
    return query


class DetectionWarning(UserWarning):
    """A memory was stored, but finding what it replaces failed (the projections could not
    be read): the observation stands, unlinked; a retry would store it twice (ADR 0168)."""


class LongTextWarning(UserWarning):
    """A memory's text is longer than recall reads of it: its first :data:`MAX_TEXT`
    characters are searched and embedded, the rest kept in the ledger only (ADR 0131)."""


def check_text(text: object, what: str = "text") -> None:
    """Refuse a memory's text that holds nothing to remember: only blanks or control
    characters, or that holds a NUL character (a text of another type is the ledger's to
    refuse, naming the field). Warn
    (:class:`LongTextWarning`) of a text longer than recall reads."""
    if isinstance(text, bytes | bytearray | memoryview):
        # The ledger would encode them as base64 and say they do not read back (ADR 0168).
        raise QueryError(f"{what} must be a string, got {type(text).__name__}: decode it first")
    if isinstance(text, str) and len(text) > MAX_TEXT:
        warnings.warn(
            LongTextWarning(
                f"{what} is {len(text):,} characters: recall searches and embeds its first"
                f" {MAX_TEXT:,}; the rest is kept in the ledger but never found by a query"
                " (store long texts as several memories to have all of them found)"
            ),
            stacklevel=3,
        )
    refuse_unwritable(text, what)


def refuse_unwritable(text: object, what: str = "text") -> None:
    """Refuse a text (QueryError) that holds nothing to remember, only blanks or control
    characters, or that holds a NUL (:func:`check_nul`); an empty text is the ledger's to
    refuse, naming the field, as any payload's. What :func:`check_text` refuses of a memory
    observed, a pack's memory imported is refused (ADR 0160)."""
    if (
        isinstance(text, str)
        and text
        and not any(c.isprintable() and not c.isspace() for c in text)
    ):
        raise QueryError(
            f"{what} holds nothing to remember (only blanks or control characters),"
            f" got {text[:40]!r}; nothing was written"
        )
    check_nul(text, what)


def check_agent(agent: object) -> None:
    """Refuse an agent's name that is not a non-empty string, or holds a control character
    (:func:`check_name`; QueryError)."""
    if not isinstance(agent, str) or not agent:
        raise QueryError(f"agent must be a non-empty string, got {agent!r}")
    check_name(agent, "agent")


def checked_tags(tags: object, source: object) -> list[str]:
    """Return a memory's ``tags`` as a list, refusing (QueryError) tags that are not a
    sequence, and a tag or a ``source`` holding a NUL (:func:`check_nul`; ADR 0160); the
    ledger refuses the other wrong types, naming the field."""
    if isinstance(tags, str | bytes) or not isinstance(tags, Iterable):
        raise QueryError(f"tags must be a sequence of strings, got {tags!r}")
    listed = list(tags)
    for i, tag in enumerate(listed):
        check_nul(tag, f"tags[{i}]")
    check_nul(source, "source")
    return listed


def check_key(value: object, what: str, *, longest: int = 512) -> str:
    """Return ``value``, a key naming a stored thing (an id or its prefix, a session, a plan,
    a path), refusing (QueryError) one that is not a string, is longer than ``longest``
    characters, or holds a NUL or what UTF-8 cannot write (a lone surrogate): no stored key
    could be it, and the store's driver failed on it with its own error (ADR 0160)."""
    if not isinstance(value, str):
        raise QueryError(f"{what} must be a string, got {type(value).__name__}")
    if len(value) > longest:
        raise QueryError(f"{what} is {len(value):,} characters, at most {longest:,}")
    if "\x00" in value or (not value.isascii() and _unwritable(value)):
        raise QueryError(f"{what} holds a NUL or a lone surrogate: {value[:40]!r}")
    return value


def _unwritable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_name(name: object, what: str) -> None:
    """Refuse a name (an agent's, a reviewer's; QueryError) that holds a control character:
    a terminal would run an escape sequence in it ("ev\\x1b[31mil") where a listing shows
    it, and no one could type it to name it again (ADR 0160); nor a character that reorders
    the text around it ("\\u202e", a right-to-left override: a listing would show the name
    otherwise than it is typed; ADR 0175)."""
    if isinstance(name, str) and any(
        unicodedata.category(c) == "Cc" or c in BIDI_CONTROLS for c in name
    ):
        raise QueryError(f"{what} holds a control character: {name[:40]!r}; nothing was written")


#: The characters that reorder the text around them: marks, embeddings, overrides, isolates.
BIDI_CONTROLS = frozenset(
    "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def check_nul(text: object, what: str) -> None:
    """Refuse a string holding a NUL character (QueryError): no tool reading the store could
    show or search it as written (a memory's text, tags and source alike; ADR 0160)."""
    if isinstance(text, str) and "\x00" in text:
        raise QueryError(
            f"{what} holds a NUL character at offset {text.index(chr(0))} (no tool reading the"
            " store could show or search it as written); nothing was written"
        )


def check_valid_at(valid_at: object, scope: str) -> None:
    """Refuse a ``valid_at`` that is not a datetime, or given to a ``scope`` other than
    memories: it asks what was true at a time, and only memories are replaced (``as_of``
    asks what the store knew then, of every scope)."""
    if valid_at is None:
        return
    if not isinstance(valid_at, datetime):
        raise QueryError(f"valid_at must be a datetime, got {type(valid_at).__name__}")
    if scope != "memories":
        raise QueryError(
            f"valid_at asks what was true at a time, of memories: scope {scope!r} has no"
            " replacements (as_of asks what the store knew then)"
        )
