"""A value's format: which attribute a structured value gives, where words may not (ADR 0115).

"eu-west-1" for "ap-south-1", "2.5.0" for "3.1.0", "02:30" for "05:15": two values written in
one notation are two values of one attribute, whatever words surround them. Detection
(:mod:`engram.agents.candidacy`, :mod:`engram.agents.supersession`) reads a change so.
"""

from __future__ import annotations

import re

from engram.agents.matching import codes
from engram.agents.occurrences import TIME_OF_DAY

__all__ = ["same_format", "value_format"]


def same_format(text: str, old: str) -> bool:
    """Say whether ``text`` gives one value in place of one of ``old``'s, written in the same
    structured format (:func:`value_format`): "eu-west-1" for "ap-south-1", "2.5.0" for
    "3.1.0", "02:30" for "05:15". Each quotes exactly one code the other does not: one value
    of one attribute replaced (ADR 0115)."""
    mine, theirs = set(codes(text)), set(codes(old))
    if len(mine - theirs) != 1 or len(theirs - mine) != 1:
        return False
    (given,), (gone,) = mine - theirs, theirs - mine
    shape = value_format(given)
    return shape is not None and shape == value_format(gone)


_CLOCK = re.compile(r"\d{1,2}:\d{2}")
_SHAPE_RUN = re.compile(r"[^\W\d_]+|\d+")


def value_format(code: str) -> str | None:
    """Return the format ``code`` is written in, or None where it is not a value's notation.

    The format is the code's shape (each run of letters "a", of digits "9", separators kept:
    "eu-west-1" is "a-a-9") up to its second separator, so a release's pre-release tag is
    still a release ("4.0.0-rc1" and "2.4.1" are "9.9."). A value's notation has structure:
    two separators (a region, a release, a date, an address) or a clock's colon. A code with
    one separator is a word of prose as often ("15-minute", "13-14", an id like "HE-85"),
    and says nothing of which attribute it gives (ADR 0115). A time of day is "9:" however
    written ("6pm", "5:30pm", "17:30"; ADR 0160)."""
    if TIME_OF_DAY.fullmatch(code.lower()) or _CLOCK.fullmatch(code):
        return "9:"  # "6pm" is a time as "5:30pm" and "17:30" are (ADR 0160)
    shape = _SHAPE_RUN.sub(lambda m: "9" if m.group()[0].isdigit() else "a", code)
    separators = [i for i, c in enumerate(shape) if c not in "a9"]
    if len(separators) < 2 and ":" not in shape:
        return None
    return shape if len(separators) < 2 else shape[: separators[1] + 1]
