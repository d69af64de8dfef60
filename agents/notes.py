"""Terse notes read as the sentences they stand for (ADR 0158): "Gate code 7314" and "Wi-Fi
password: seaview!88" say what "The gate code is 7314." says, so detection weighs them beside
the memories they change.
"""

from __future__ import annotations

import re

from engram.projections import lexical

__all__ = ["as_stated"]


#: A note written as a label and its value, after a colon: "Wi-Fi password: seaview!88",
#: "Emergency contact: 07700 900835" (a label of two to six words: one word before a colon
#: is a speaker's, "Caroline: ...", or a heading's, "Note: ...").
_COLON_NOTE = re.compile(
    r"^\s*([A-Za-z][\w'\u2019-]*(?:\s+[A-Za-z][\w'\u2019-]*){1,5})\s*:\s+(\S.{0,80}?)\s*[.!]?\s*$"
)
#: The same without a colon, its value a code or a number of three digits or more: "Gate code
#: 7314", "Grant code RG-52930", "Reception direct line 01326 550 940".
_CODE_NOTE = re.compile(
    r"^\s*([A-Za-z][A-Za-z'\u2019-]*(?:\s+[A-Za-z][A-Za-z'\u2019-]*){1,4})\s+"
    r"((?:[A-Z]{1,4}-?)?\d{3,}(?:[\s-]?\d+)*|\d+[A-Z]+\d*|[A-Z]+-?\d+[A-Z]*)\s*[.!]?\s*$"
)


def as_stated(text: str) -> str:
    """Return a note written as a label and its value as the sentence it stands for: "Gate
    code 7314" and "Gate code: 7314" say "The gate code is 7314." (a value of a few words,
    holding a digit or one word alone); any other text as it is. Detection reads a terse note
    so beside "The gate code is 2580": one sentence with its value given anew (ADR 0158).
    A participle's clause opening it is set aside: "Following the AGM, two-bedroom rents
    rise to £815" states what the clause after it says (ADR 0174); so are a greeting, an
    email's or minutes' heading ("Hi all, ", "Subject: wardrobe - ", "Noted: ", "Item 3: ",
    "FYI "; ADR 0178)."""
    lead = _OPENER.match(text) or _LEADING.match(text)
    while lead is not None and lead.end() < len(text):
        # The rest as written: a common word it opens with is not capitalised into a name.
        text = text[lead.end() :].lstrip()
        lead = _OPENER.match(text) or _LEADING.match(text)
    found = _COLON_NOTE.match(text) or _CODE_NOTE.match(text)
    if found is None:
        return text
    label, value = found[1], found[2]
    if len(value.split()) > 6 or (len(value.split()) > 1 and not any(c.isdigit() for c in value)):
        return text
    first = label.split()[0]
    if any(w in _NOT_STATED for w in lexical.tokens(label)):
        return text  # a verb or a function word: a sentence, not a label
    if all(w[:1].isupper() for w in label.split()):
        return text  # a name: a speaker's ("Dr Shah: ..."), not an attribute
    if first[1:] == first[1:].lower():  # "Gate code" is "gate code", "Wi-Fi" and "DB" stay
        label = first[0].lower() + label[1:]
    return f"The {label} is {value}."


#: A participle opening a sentence before a determiner, its clause to the first comma
#: within eight words: "Following the committee meeting, ", "Pending a review, ".
_LEADING = re.compile(
    r"[A-Z][a-z]+ing\s+(?:the|a|an|this|that|next|last|our|their|its)\b(?:\s+[^\s,]+){0,6},\s*"
)
#: What opens a note without being what it says: a greeting, an email's heading (a subject
#: line to its dash), a minutes' or a log's marker (ADR 0178); an action's stays (a task).
_OPENER = re.compile(
    r"\s*(?:(?:hi|hello|hey|morning|afternoon|evening|dear)\s+(?:all|team|everyone|folks|both"
    r"|guys)\b\s*[,!.:;\u2013\u2014-]\s*"
    r"|(?:re|fw|fwd|subject|subj)\s*:\s*(?:[^:\n]{1,60}?\s[-\u2013\u2014]\s)?"
    r"|(?:noted|agreed|resolved|decided|decision|update|note|nb|reminder|aob|fyi"
    r"|(?:item|point|agenda\s+item)\s+\d+[a-z]?)\s*(?::|\s[-\u2013\u2014])\s*"
    r"|fyi\s+)",
    re.IGNORECASE,
)
#: A task given to someone, as minutes and logs write one: "Action: Derek to chase the
#: council", "TODO - Sue Lambert to get quotes" (ADR 0178).
_TASK = re.compile(
    r"\s*(?:actions?|todo|to\s+do|task)\s*(?::|\s[-\u2013\u2014])\s*"
    r"[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?\s+to\s+[a-z]+\b",
    re.IGNORECASE,
)


def is_task(text: str) -> bool:
    """Say whether ``text`` is a task marked as one and given to someone: what is still to
    be done changes nothing, so it replaces no memory (ADR 0178)."""
    return _TASK.match(text) is not None


#: Words a label holds none of: a copula, an auxiliary or a pronoun makes it a sentence.
_NOT_STATED = frozenset(
    ("is", "are", "was", "were", "be", "been", "has", "have", "had", "will", "would", "can",
     "i", "we", "you", "he", "she", "they", "it", "my", "our", "your", "the", "a", "an")
)  # fmt: skip
