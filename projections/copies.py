"""The copies table: each memory's normalised-text digest and when it was observed.

Recall folds copies of one memory into one item (ADR 0052): memories whose texts are equal
once normalised (:func:`normalise`: case, punctuation, spacing and filler words set aside)
share a digest, and this table finds every visible copy of the digests a recall served. It
also holds each memory's observation time, which recency weighs (ADR 0050), so recall reads
one table for both.

- ``memory.observed``: a row keyed by the event's position: agent, visibility, digest,
  observed time;
- ``memory.archived``: the named rows before the archive get its time (archived copies are
  not served, so not counted);
- ``subject.forgotten``: the subject's earlier rows go, as the lexical index's do (ADR 0039):
  a digest of a text would confirm a guess at it.

Handlers read only their event and the table (DESIGN.md, rule 2).
"""

from __future__ import annotations

import functools
import hashlib
import re
import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

from engram.ledger import Event, chunked
from engram.ledger.catalog import MemoryArchived, MemoryObserved, SubjectForgotten
from engram.projections.base import Projection, Tables
from engram.projections.salience import micros

__all__ = [
    "Copies",
    "Copy",
    "copies_of",
    "dates_one_way",
    "facts",
    "normalise",
    "numbers_apart",
    "numbers_whole",
    "numeric_date",
    "times_one_way",
]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: Words that mark a repetition rather than say something: a copy prefixed with "Note:" or
#: suffixed with "as mentioned before" says what the plain text says.
FILLERS = frozenset(
    [
        "note",
        "notes",
        "reminder",
        "fyi",
        "nb",
        "ps",
        "again",
        "repeat",
        "repeating",
        "repeated",
        "as",
        "mentioned",
        "before",
        "said",
        "earlier",
        "already",
        "update",
        "re",
        "fwd",
    ]
)


#: A number written in groups of three digits, one separator between them ("15,000",
#: "2 500", "1_000_000"): the number written without them (version 2).
_GROUPED = re.compile(
    r"(?<![\d.,])\d{1,3}(?:([,_' \u00a0\u2009\u202f\u2019])\d{3})(?:\1\d{3})*(?![\d])"
)
#: A hyphen between two letters: "e-mail" is "email", "re-use" is "reuse" (version 2).
_HYPHEN = re.compile(r"(?<=[^\W\d_])-(?=[^\W\d_])")
#: A number of thousands written with "k" ("$15k", "2.5k"): the number written whole.
_THOUSANDS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)k\b", re.IGNORECASE)


#: A unit written apart from its number ("3:15 pm", "30 s", "25 GB"): the number's, written
#: with it (version 3).
_UNIT = re.compile(
    r"(?<=\d)[ \u00a0\u202f]+(?=(?:am|pm|ms|s|sec|min|h|hrs?|kb|mb|gb|tb|km|kg|mg|g|cm|mm|m)\b|%)",
    re.IGNORECASE,
)


#: An apostrophe inside a word ("counsel's", "don't"): written or left out, the same word
#: ("counsels", "dont"; version 4).
_APOSTROPHE = re.compile(r"(?<=[^\W\d_])['\u2019](?=[^\W\d_])")


#: An ordinal's suffix: "5th March" is "5 March" (version 4).
_ORDINAL = re.compile(r"(?<=\d)(?:st|nd|rd|th)\b", re.IGNORECASE)
#: The words a stamp opens with: a note written down, sent or received at a time.
_STAMPED = (
    r"(?:logged|noted|recorded|written|updated|added|posted|saved|edited|entered|sent"
    r"|received|emailed|texted|messaged)"
)
#: A time stamp in brackets: a date and time written as logs write them ("[2025-03-01
#: 14:05]", "[13/10 07:02]", "[13/10/2026 07:02]"), or a time after a word of writing down
#: or sending ("(logged 09:12)", "(noted 21:40)", "(sent 09:14)"): when a note was taken,
#: which its event keeps, not what it says (version 4; sending and a day and month before a
#: time, version 6). A time in brackets alone ("Standup (09:30)") is what a note says and
#: stays; so does a date alone ("(13/10)").
_STAMP = re.compile(
    rf"[(\[]\s*(?:{_STAMPED}\s+(?:at\s+|on\s+)?)?"
    r"(?:\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?Z?)?"
    r"|\d{1,2}/\d{1,2}(?:/\d{2}(?:\d{2})?)?,?\s+\d{1,2}:\d{2}(?::\d{2})?)\s*[)\]]"
    rf"|[(\[]\s*{_STAMPED}"
    r"\s+(?:at\s+)?\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]m)?(?:\s*UTC)?\s*[)\]]",
    re.IGNORECASE,
)


def without_stamps(text: str) -> str:
    """Return ``text`` with its time stamps in brackets set aside (:data:`_STAMP`)."""
    return _STAMP.sub(" ", text) if "(" in text or "[" in text else text


def _joined(match: re.Match[str]) -> str:
    return match.group().replace(match.group(1), "")


def _whole(match: re.Match[str]) -> str:
    value = float(match.group(1)) * 1000
    return str(int(value)) if value.is_integer() else match.group()


def _case(word: str) -> str:
    """Return ``word`` lowercased, but an opaque key written in both cases with a digit
    ("Nf8XkQ2pLm3z"), whose case tells it apart from another, as written (version 2)."""
    mixed = any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)
    if mixed and any(c.isdigit() for c in word):
        return word
    return word.casefold()


def numbers_whole(text: str) -> str:
    """Return ``text`` with each number written whole: its digit groups joined ("15,000" is
    "15000") and its thousands written out ("15k" is "15000")."""
    return _THOUSANDS.sub(_whole, _GROUPED.sub(_joined, text))


#: A unit written onto a number that is a word of its own ("22fps", "3:15pm", "12500kg"; not
#: the tail of an id, "3f9a1c").
_ONTO = re.compile(r"\b(\d+(?:[.,:]\d+)*)([^\W\d_]{1,5})\b")


@functools.lru_cache(maxsize=8192)
def numbers_apart(text: str) -> str:
    """Return ``text`` with each number written whole (:func:`numbers_whole`), without an
    ordinal's suffix ("5th" is "5"), and apart from a unit written onto it ("22fps" is "22
    fps"), a stamp in brackets set aside ("(logged 09:12)"): a text's words as a set,
    whatever way its numbers were written. Recall's folding
    reads every candidate through it: a text without a digit is returned as it is, at the
    cost of one search."""
    if _DIGIT.search(text) is None:
        return text
    return _ONTO.sub(r"\1 \2", numbers_whole(_ORDINAL.sub("", _STAMP.sub(" ", text))))


_DIGIT = re.compile(r"\d")


def normalise(text: str) -> str:
    """Return ``text``'s words, lowercased (but opaque keys written in both cases), filler
    words dropped, one space apart; a number's digit groups joined ("15,000" is "15000"), its
    thousands written whole ("15k" is "15000"), a unit written with its number ("30 s" is
    "30s", "25 GB" is "25GB"), and words joined by a hyphen or an apostrophe written as one
    ("e-mail" is "email", "counsel's" is "counsels"), an ordinal's suffix dropped ("5th" is
    "5"), a time stamp in brackets ("(logged 09:12)") set aside, and times of day written on
    one clock ("7:30pm" is "19:30", :func:`times_one_way`)."""
    text = times_one_way(_STAMP.sub(" ", text))
    text = _APOSTROPHE.sub("", _HYPHEN.sub("", numbers_whole(_ORDINAL.sub("", text))))
    text = _UNIT.sub("", text)
    words = [_case(w) for w in _WORD.findall(text)]
    kept = [w for w in words if w.casefold() not in FILLERS]
    return " ".join(kept or words)


_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_MONTH = (
    r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_NUMERIC_DATE = re.compile(r"\b(\d{1,2})[/.](\d{1,2})[/.](\d{4})\b")
_MONTH_FIRST = re.compile(
    rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?", re.IGNORECASE
)
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?!\w)", re.IGNORECASE)


def _month(name: str) -> int:
    """Return the number of the month ``name`` abbreviates, 0 for none: the case-blind
    patterns also match letters only alike in case ("ſeptember"), which name no month."""
    return next((i + 1 for i, m in enumerate(_MONTHS) if m.lower().startswith(name[:3].lower())), 0)


def _day_month(day: str, month: int, year: str | None) -> str:
    if not 1 <= month <= 12 or not 1 <= int(day) <= 31:
        return ""
    return f"{int(day)} {_MONTHS[month - 1]}" + (f" {year}" if year else "")


_DIGIT = re.compile(r"\d")


def holds_digit(text: str) -> bool:
    """Say whether ``text`` holds a decimal digit (what ``\\d`` matches, any script's)."""
    return _DIGIT.search(text) is not None


def numeric_date(first: str, second: str, year: str | None = None) -> str:
    """Return the date two numbers give as day and month, in either order, written as
    :func:`dates_one_way` writes it ("29 November 2026"), where one of them is above 12 and
    so the day; "" where either order could be meant ("3/4") or none can."""
    a, b = int(first), int(second)
    if a > 12 >= b:
        return _day_month(first, b, year)
    if b > 12 >= a:
        return _day_month(second, a, year)
    return ""


def dates_one_way(text: str) -> str:
    """Return ``text`` with its dates written one way, the day first and the month named in
    full ("29 Nov 2026", "November 29th, 2026", "29/11/2026" and "2026-11-29" are all "29
    November 2026"): a copy may write its date any way (ADR 0143). A numeric date is read
    only where it is unambiguous (a day above 12); "3/4/2026" is left as it is."""
    if not holds_digit(text):
        return text

    def iso(m: re.Match[str]) -> str:
        return _day_month(m[3], int(m[2]), m[1]) or m[0]

    def numeric(m: re.Match[str]) -> str:
        return numeric_date(m[1], m[2], m[3]) or m[0]

    def month_first(m: re.Match[str]) -> str:
        return _day_month(m[2], _month(m[1]), m[3]) or m[0]

    def day_first(m: re.Match[str]) -> str:
        return _day_month(m[1], _month(m[2]), None) or m[0]

    text = _NUMERIC_DATE.sub(numeric, _ISO_DATE.sub(iso, text))
    return _DAY_FIRST.sub(day_first, _MONTH_FIRST.sub(month_first, text))


#: A time of day on the twelve-hour clock: "3pm", "7:30 pm", "7.30p.m.", "11 AM" (the dot
#: only before a meridiem: "7.30" alone is a number).
_TWELVE = re.compile(
    r"(?<![\w:.])(1[0-2]|0?[1-9])(?:([:.])([0-5]\d))?\s?([ap])\.?\s?m\b"
    r"(?:\.(?=\s*[,;:)]|\s+(?-i:[a-z\d])))?",  # "p.m." inside a sentence: its point too
    re.IGNORECASE,
)
#: A time of day on the 24-hour clock: "14:00", "09:05", "7:30" (not a ratio's "3:2", nor a
#: duration's or a clock's seconds: "1:30:00").
_TWENTY_FOUR = re.compile(r"(?<![\w:.])([01]?\d|2[0-3]):([0-5]\d)(?![\d:])")


def times_one_way(text: str) -> str:
    """Return ``text`` with its times of day written one way, on the 24-hour clock, the hour
    without a leading zero ("3pm", "3 p.m." and "15:00" are all "15:00"; "7.30pm" and "19:30"
    are "19:30"; "09:05" is "9:05"): a copy may write its time either way, and "at 4:45pm"
    and "at 16:45" say one time, not two (ADR 0157)."""
    if not holds_digit(text):
        return text

    def twelve(m: re.Match[str]) -> str:
        hour = int(m[1]) % 12 + (12 if m[4].lower() == "p" else 0)
        return f"{hour}:{m[3] or '00'}"

    def twenty_four(m: re.Match[str]) -> str:
        return f"{int(m[1])}:{m[2]}"

    return _TWENTY_FOUR.sub(twenty_four, _TWELVE.sub(twelve, text))


def digest(text: str) -> str:
    """Return the hex sha256 of ``text`` normalised (the first 16 bytes)."""
    return hashlib.sha256(normalise(text).encode()).hexdigest()[:32]


class Copy(NamedTuple):
    """One memory's row: its digest, when it was observed (epoch us), whether archived."""

    position: int
    digest: str
    observed_us: int
    agent: str
    visibility: str
    archived: bool


class Copies(Projection):
    """Each memory's normalised-text digest and observation time."""

    name = "copies"
    # 2: digit groups, thousands, hyphens, keys' case; 3: units; 4: apostrophes in words;
    # 5: times of day on one clock
    version = 6
    kinds = (MemoryObserved, MemoryArchived, SubjectForgotten)
    tables = ("copies",)

    def create(self, db: Tables) -> None:
        """Create the table and the digest index copies are found by."""
        table = db["copies"]
        db.conn.execute(
            f"""CREATE TABLE {table} (
                position    INTEGER PRIMARY KEY,
                digest      TEXT NOT NULL,
                observed_us INTEGER NOT NULL,
                agent       TEXT NOT NULL,
                visibility  TEXT NOT NULL,
                archived_us INTEGER
            )"""
        )
        name = table.strip('"')
        db.conn.execute(f'CREATE INDEX "{name}_digest" ON {table} (digest, position)')

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Apply each event, in position order."""
        table = db["copies"]
        for e in events:
            p = e.payload
            if e.kind == "memory.observed":
                db.conn.execute(
                    f"INSERT OR IGNORE INTO {table} VALUES (?, ?, ?, ?, ?, NULL)",
                    (e.position, digest(p.text), micros(e.at), p.agent, p.visibility),
                )
            elif e.kind == "memory.archived":
                db.conn.executemany(
                    f"UPDATE {table} SET archived_us = ? WHERE position = ?"
                    " AND position < ? AND archived_us IS NULL",
                    [(micros(e.at), position, e.position) for position in p.positions],
                )
            else:
                db.conn.execute(
                    f"DELETE FROM {table} WHERE agent = ? AND position < ?",
                    (p.subject, e.position),
                )


_COLUMNS = "position, digest, observed_us, agent, visibility, archived_us IS NOT NULL"


def facts(conn: sqlite3.Connection, positions: Sequence[int]) -> dict[int, Copy]:
    """Return the rows of ``positions`` (those the table holds)."""
    found: dict[int, Copy] = {}
    for chunk in chunked(sorted(set(positions))):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"SELECT {_COLUMNS} FROM copies WHERE position IN ({marks})", list(chunk)
        ):
            found[row[0]] = Copy(row[0], row[1], row[2], row[3], row[4], bool(row[5]))
    return found


def copies_of(
    conn: sqlite3.Connection, digests: Sequence[str], *, agent: str, as_of_us: int | None = None
) -> dict[str, list[int]]:
    """Return the positions of each digest's memories ``agent`` may read, oldest first.

    Archived ones are left out (as of ``as_of_us``: archived after it still count), and so
    are memories observed after it.
    """
    found: dict[str, list[int]] = {}
    cut = as_of_us if as_of_us is not None else (1 << 62)
    for chunk in chunked(sorted(set(digests))):
        marks = ",".join("?" * len(chunk))
        for d, position in conn.execute(
            f"SELECT digest, position FROM copies WHERE digest IN ({marks})"
            " AND (agent = ? OR visibility = 'public') AND observed_us <= ?"
            " AND (archived_us IS NULL OR archived_us > ?) ORDER BY digest, position",
            [*chunk, agent, cut, cut],
        ):
            found.setdefault(d, []).append(position)
    return found
