"""Words and numbers a copy may write otherwise, written one way (ADR 0052, 0117, 0139).

Recall's folding (:mod:`engram.agents.folding`) compares two memories' content words once
each is written here one way: a time stamp in brackets set aside, dates and times of day
on one clock, numbers spelt out in digits, common abbreviations in full ("10 mins", "Tues",
"Garden Rm"), a street's kind after its name, "Doctor" as "Dr", "every" as "each".
"""

from __future__ import annotations

import functools
import re
import unicodedata

from engram.projections import copies

__all__ = ["NUMBER_AFTER", "rewritten", "written"]


#: Numbers spelt out, as a copy may write them in digits ("twenty minutes", "20 minutes";
#: "the first of every month", "the 1st"): compared as digits. "one" is left as it is (the
#: one on the left), and an ordinal only as a day of a month ("the first of"): "the second
#: schema" is no number.
_UNITS = (
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)  # fmt: skip
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_ORDINALS = (
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
    "tenth", "eleventh", "twelfth",
)  # fmt: skip
_VALUE = {w: i + 1 for i, w in enumerate(_UNITS)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}
_VALUE |= {w: i + 1 for i, w in enumerate(_ORDINALS)}
_TENS_RUN, _UNIT_RUN = "|".join(_TENS), "|".join(_UNITS[:9])
_MONTH_RUN = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DAYS = (
    r"mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:rs(?:day)?)?|fri(?:day)?|sat(?:urday)?"
    rf"|sun(?:day)?|{_MONTH_RUN}"
)
_SPELT = re.compile(
    rf"\b(?:({_TENS_RUN})(?:[- ]({_UNIT_RUN}))?|({'|'.join(_UNITS[1:])})"
    # An ordinal before "of", a day or a month names a date ("the first Monday", "1st
    # Monday"); elsewhere it is a word ("at first", "the first time").
    rf"|({'|'.join(_ORDINALS)})(?=\s+(?:of|{_DAYS})\b))\b",
    re.IGNORECASE,
)


#: An ordinal in digits that dates nothing ("before the 1st flight"): a copy spells it as
#: often; one before "of", a day or a month is a date's, read as such (ADR 0185).
_ORDINAL_DIGITS = re.compile(
    rf"\b(1[0-2]|[1-9])(?:st|nd|rd|th)\b(?!\s+(?:of|{_DAYS})\b)", re.IGNORECASE
)
#: A decimal written without its leading zero (".125 inch").
_BARE_DECIMAL = re.compile(r"(?<![\w.])\.(\d)")
#: A sum's pence or cents written as none ("£185.00" is "£185").
_WHOLE_SUM = re.compile(r"([£$€])\s?(\d[\d,]*)\.00(?!\d)")
#: A span of days before their month, written with a dash or a word ("10-24 March", "10th
#: - 24th Mar", "10 to 24 March"): "10 to 24" each way (ADR 0187).
_DAY_RANGE = re.compile(
    r"\b([0-3]?\d)(?:st|nd|rd|th)?\s*(?:-|\u2013|\u2014|to|until|till|through|thru)\s*"
    rf"([0-3]?\d)(?:st|nd|rd|th)?(?=\s+(?:of\s+)?(?:{_MONTH_RUN})\b)",
    re.IGNORECASE,
)
#: A day and month in two digits each, no year ("13/06"): read as a date only where one of
#: them is above 12; "24/7" and "16/9" are no dates, their numbers unpadded (ADR 0187).
_SHORT_DATE = re.compile(r"(?<![\d/.])(\d{2})/(\d{2})(?![\d/])")


def _number(match: re.Match[str]) -> str:
    """Return the number ``match`` spells, in digits; a match the case-blind pattern made of
    letters only alike in case ("ſecond", "fıve") is left as written."""
    tens, unit, *alone = match.groups()
    word = next((w for w in alone if w is not None), None)
    if word is not None:
        value = _VALUE.get(word.lower())
        return match[0] if value is None else str(value)
    first, then = _VALUE.get(tens.lower()), _VALUE.get(unit.lower()) if unit else 0
    return match[0] if first is None or then is None else str(first + then)


#: Two times of day joined as a span ("15:30-18:30", "9:00 – 17:00"): "from ... to ..." in
#: one copy is the dash in another (ADR 0162).
_CLOCK_RANGE = re.compile(r"\b(\d{1,2}:\d{2})\s*[-\u2013]\s*(\d{1,2}:\d{2})\b")


#: A code's letters and its number joined by a hyphen ("WD-40"): a copy writes it joined as
#: often ("WD40"; ADR 0185).
_CODE_HYPHEN = re.compile(r"(?<![\w-])([A-Za-z]{1,5})-(\d{1,5})\b")


#: A prefix joined by a hyphen to its word: a copy writes it joined as often ("re-imaging").
_PREFIX_HYPHEN = re.compile(r"\b(re|pre|co|non|un|sub)-(?=[a-z])", re.IGNORECASE)


@functools.lru_cache(maxsize=8192)
def written(text: str) -> str:
    """Return ``text`` with its numbers written alike: spelt ones in digits ("twenty",
    "first"), then as :func:`~engram.projections.copies.numbers_apart` writes them, a time's
    "am" or "pm" kept on its number ("6:40 am" and "6:40 pm" are two times; "am" alone is a
    function word, and folding would read the first inside the second)."""
    # Each pass runs only where the text holds a word it rewrites (recall writes every
    # candidate it folds); a stamp goes first, or its date written one way is none (0173).
    text = copies.without_stamps(text)
    if not text.isascii():  # a name's accent dropped in a copy: "Tomas" is "Tomás" (0178)
        text = "".join(
            c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c)
        )
    if "'t" in text or "\u2019t" in text:  # "don't" is "do not" (ADR 0178)
        text = _CONTRACTION.sub(_uncontracted, text)
    words = set(_LETTERS.findall(text.casefold()))
    if "/" in text:  # "13/06" is "13 June" (ADR 0187)
        text = _SHORT_DATE.sub(lambda m: copies.numeric_date(m[1], m[2]) or m[0], text)
    plain = _CLOCK_RANGE.sub(r"\1 to \2", copies.times_one_way(copies.dates_one_way(text)))
    plain = _DAY_RANGE.sub(r"\1 to \2", plain)  # "10-24 March" (ADR 0187)
    if not words.isdisjoint(_SAME):
        plain = _ALIKE.sub(_alike, plain)
    if not words.isdisjoint(_SHORTENED):
        plain = _SHORT.sub(_unshortened, plain)
        if "st" in words:
            plain = _STREET.sub(r"\1Street", plain)
        words = set(_LETTERS.findall(plain.casefold()))
    if _ORDINAL_DIGITS.search(plain):  # "the 1st flight" is "the first flight" (ADR 0185)
        plain = _ORDINAL_DIGITS.sub(lambda m: _ORDINALS[int(m[1]) - 1], plain)
        words = set(_LETTERS.findall(plain.casefold()))
    if not words.isdisjoint(_VALUE):
        plain = _SPELT.sub(_number, plain)
    if "." in plain:  # ".125" is "0.125" (ADR 0185), "£185.00" is "£185" (ADR 0187)
        plain = _WHOLE_SUM.sub(r"\1\2", _BARE_DECIMAL.sub(r"0.\1", plain))
    if "no" in words:  # "acct no: 558-20417" is its number (ADR 0187)
        plain = _NUMBER_WORD.sub("number", plain)
    if "-" in plain:  # "WD-40" is "WD40" (ADR 0185), "re-imaging" "reimaging" (ADR 0187)
        plain = _PREFIX_HYPHEN.sub(r"\1", _CODE_HYPHEN.sub(r"\1\2", plain))
    out = copies.numbers_apart(plain)
    if not copies.holds_digit(out):
        return out
    out = _RATE.sub(r"\1 per \2", out)  # "$28/hour" is "$28 an hour" (ADR 0182)
    return _MERIDIEM.sub(lambda m: f"{m[1]}{m[2].lower()}m", out)


#: An amount a unit, written three ways: "$28/hour", "$28 an hour", "$28 per hour"; a
#: measure or an item as a time ("£1.15/metre", "£6.50 a pair"; ADR 0187).
_RATE = re.compile(
    r"(\d)\s*(?:/\s*|\s+(?:per|an?)\s+)(hour|day|night|week|month|year|person|head|mile"
    r"|metre|meter|km|kg|litre|liter|pair|unit|item|page|guest|seat|ticket|session|lesson)\b",
    re.IGNORECASE,
)
#: What follows "no" or "No." when it is a number's word ("acct no: 558-20417"), not a
#: negation (folding's polarity reads it so too).
NUMBER_AFTER = r"\.?\s*[:#]?\s*\d"
_NUMBER_WORD = re.compile(rf"\b[Nn]o(?={NUMBER_AFTER})\.?")


#: A negation contracted: "don't", "can't", "won't" (the last two written irregularly).
_CONTRACTION = re.compile(r"\b(\w+?)n['\u2019]t\b", re.IGNORECASE)
_IRREGULAR = {"ca": "can", "wo": "will", "sha": "shall"}


def _uncontracted(match: re.Match[str]) -> str:
    return f"{_IRREGULAR.get(match[1].lower(), match[1])} not"


#: Words written two ways for one meaning: a title and its abbreviation ("Doctor Okafor",
#: "Dr. Okafor"), "every" and "each" before a unit of time (ADR 0139).
_SAME = {
    "doctor": "Dr", "professor": "Prof", "mister": "Mr", "every": "each",
    # How often, in one word or two ("daily", "every day"; ADR 0160).
    "daily": "each day", "nightly": "each night", "weekly": "each week",
    "monthly": "each month", "yearly": "each year", "annually": "each year",
}  # fmt: skip
_ALIKE = re.compile(rf"\b(?:{'|'.join(_SAME)})\b", re.IGNORECASE)


def _alike(match: re.Match[str]) -> str:
    return _SAME.get(match[0].lower(), match[0])


#: Common abbreviations, written lowercase ("Max" is a name, "max" is "maximum"; ADR 0143):
#: "Arrive 10 mins before" is "Arrive 10 minutes before".
_LONG = {
    "mins": "minutes", "hrs": "hours", "hr": "hour", "secs": "seconds", "wks": "weeks",
    "yrs": "years", "approx": "approximately", "max": "maximum", "dept": "department",
    "appt": "appointment", "appts": "appointments", "mgr": "manager", "info": "information",
    "repo": "repository", "repos": "repositories", "thru": "through",
    # Capitalised: the kind of street after its name ("Mill Ln", "Mill Lane"), and "Max"
    # before a number ("Max 2 dogs a class"), where "Max" alone is a name (ADR 0148).
    "Ln": "Lane", "Rd": "Road", "Ave": "Avenue", "Ct": "Court", "Blvd": "Boulevard",
    # A month shortened, capitalised ("from Nov to March"; ADR 0160).
    "Jan": "January", "Feb": "February", "Mar": "March", "Apr": "April", "Jun": "June",
    "Jul": "July", "Aug": "August", "Sep": "September", "Sept": "September",
    "Oct": "October", "Nov": "November", "Dec": "December",
    # A day shortened, capitalised, or lowercase where it is no word ("Tues 10am"), and a
    # room, a station, "please" (ADR 0178).
    "Mon": "Monday", "Tue": "Tuesday", "Tues": "Tuesday", "Wed": "Wednesday",
    "Thu": "Thursday", "Thur": "Thursday", "Thurs": "Thursday", "Fri": "Friday",
    "Sat": "Saturday", "Sun": "Sunday", "tues": "Tuesday", "weds": "Wednesday", "Weds": "Wednesday",
    "thurs": "Thursday", "Rm": "Room", "stn": "station", "pls": "please", "plz": "please",
    "acct": "account", "hols": "holiday",  # (ADR 0187)
}  # fmt: skip
_SHORT = re.compile(rf"\b(?:{'|'.join(_LONG)})\b\.?|\bMax(?=\s+\d)")
#: "St" after a name, before none, is a street ("Canal St"); "St Mary's" is a saint (0173).
_STREET = re.compile(r"\b([A-Za-z]{2,}\s+)(?:St|st|ST)\b\.?(?!\s*[A-Z])")


def _unshortened(match: re.Match[str]) -> str:
    return _LONG.get(match[0].rstrip("."), "maximum")


_MERIDIEM = re.compile(r"(\d)\s*([ap])\.?\s?m\b\.?", re.IGNORECASE)

_LETTERS = re.compile(r"[a-z]+")
#: Every word a pass of :func:`written` rewrites.
_SHORTENED = frozenset(w.casefold() for w in _LONG) | {"st"}
_REWRITTEN = frozenset(_SAME) | _SHORTENED | frozenset(_VALUE)


def rewritten(text: str) -> bool:
    """Say whether :func:`written` may write ``text`` otherwise (a digit, or a word it
    rewrites), at a fraction of its cost."""
    return copies.holds_digit(text) or not _REWRITTEN.isdisjoint(_LETTERS.findall(text.casefold()))
