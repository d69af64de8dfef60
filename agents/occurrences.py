"""Whether an earlier memory quotes the occurrences a new one does (ADRs 0106, 0109): ids and
numbered occurrences name one thing each, so two memories quoting different ones speak of two
things, unless the codes are the values a change gives, of one kind.
"""

from __future__ import annotations

import re

from engram.agents.matching import codes
from engram.agents.statements import labels, state_values

__all__ = ["TIME_OF_DAY", "same_occurrences", "spaced_times"]


def same_occurrences(
    ids: set[str],
    numbered: frozenset[str],
    old_text: str,
    change: bool,
    values: frozenset[str] = frozenset(),
) -> bool:
    """Say whether an earlier memory may be replaced as far as ids and numbered occurrences
    go: it quotes the same ones as the new memory (an id or "round 26" names one thing: two
    incidents, two rounds, both stay true). When the new memory announces a change, they
    may be the values it changes ("moved the gateway to port 9090" of "listens on port
    8080", "rescheduled to 04:30" of "runs at 02:00"): then both quote ids or neither, and
    both number the same words (ADR 0106). An event numbered by a word the new memory does
    not number ("ran the migration on shard 25") stays out. Without a change announced, a
    state said again with another value may replace it: ``values`` are the codes the new
    memory says of a state that holds now (:func:`state_values`), and the old memory's
    codes after its copula may differ from them where every other code is the same ("The
    gateway is on release 2.5.0" of "was upgraded to version 2.4.1"; ADR 0109)."""
    theirs, their_labels = set(codes(old_text)) | spaced_times(old_text), labels(old_text)
    if theirs == ids and their_labels == numbered:
        return True
    if change:
        # A quantity ("1.5", "800k") is a value the change may give where the old memory
        # gave a whole number ("3 mg" -> "reduced to 1.5 mg"), not an id (ADR 0123).
        theirs, ids = _unquantified(theirs), _unquantified(ids)
        return (
            bool(theirs) == bool(ids)
            and _kinds(theirs - ids) == _kinds(ids - theirs)
            and {lab.rsplit(" ", 1)[0] for lab in their_labels}
            == {lab.rsplit(" ", 1)[0] for lab in numbered}
        )
    their_values = state_values(old_text)
    return (
        bool(values)
        and bool(their_values)
        and ids - values == theirs - their_values
        and _kinds(their_values) == _kinds(values)
        and their_labels == numbered
    )


#: A quantity: a number with a unit of up to three letters ("1.5", "800k", "40%"), or a rate
#: written with a slash ("164/month", "28/hr": ADR 0185).
_QUANTITY = re.compile(
    r"\d+(?:\.\d+)?(?:[a-z%]{0,3}|/(?:hr|hour|day|night|wk|week|mo|month|yr|year|person|head))"
)


def _unquantified(quoted: set[str]) -> set[str]:
    """Return ``quoted`` codes without the quantities among them ("1.5", "800k", "40%")."""
    return {
        code
        for code in quoted
        if not _QUANTITY.fullmatch(code.lower()) or _TIME_OF_DAY.fullmatch(code.lower())
    }


#: An hour written apart from its "am" or "pm" ("11 am", "7 p.m."): the time "11am" is, which
#: no code quotes (ADR 0185); "10:30 am" quotes "10:30" already.
_SPACED = re.compile(r"(?<![\d:.,])\b(\d{1,2})\s+([ap])\.?m\b\.?", re.IGNORECASE)


def spaced_times(text: str) -> set[str]:
    """Return the hours ``text`` writes apart from their "am" or "pm", as "11am" (ADR 0185):
    "Weekday service starts at 11 am" gives a time as "... at 10:30 am" does, so a change of
    one to the other gives a value of one kind in place of another."""
    return {f"{m[1]}{m[2].lower()}m" for m in _SPACED.finditer(text)}


#: A time of day, written with its minutes or without: "9am" is a time as "9:30am" is, and
#: as "9.30am" is, written the British way (ADR 0185).
TIME_OF_DAY = _TIME_OF_DAY = re.compile(r"\d{1,2}(?:[:.]\d{2})?[ap]\.?m\.?")


#: A range of hours: two numbers or times of day of at most two digits, joined by a dash.
_HOUR = r"\d{1,2}(?::\d{2})?(?:[ap]\.?m\.?)?"
_RANGE = re.compile(rf"{_HOUR}-{_HOUR}")


def _kinds(quoted: set[str] | frozenset[str]) -> frozenset[str]:
    """Return the kinds of ``quoted`` codes: each one's first character's class and its first
    separator ("2.5.0" and "4.0.0-rc1" are "9.", a version; "05:15" is "9:", a time;
    "eu-west-1", "Harbour2023" and "Lantern-88" are "a": "-" and "_" join words, ADR 0126;
    "9am" is a time as "9:30am" is, ADR 0143; so is a range of hours, ADR 0182).
    A value is replaced by a value of its kind: a release by a release, never a time by a
    region (ADR 0109)."""
    return frozenset(
        "9:"
        # ... and a range of hours is one: "10-12", "9:30-11:30", "8am-4pm" (ADR 0182).
        if _TIME_OF_DAY.fullmatch(c.lower()) or _RANGE.fullmatch(c.lower())
        else ("9" if c[0].isdigit() else "a") + next((s for s in c if s in "-_./:"), "").strip("-_")
        for c in quoted
    )
