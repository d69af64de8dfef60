"""The attribute a statement gives of a named thing without a possessive (ADR 0173).

Detection reads an attribute after a possessive ("Elm block's door code is 7720";
:func:`engram.agents.shapes.attributes_apart`). English gives one as often in two other
forms, which this module reads:

- **of a name**: the statement opens with the attribute, then "of", "for", "in", "at" or "on"
  and the name ("The door entry code for Elm block is 7720", "The roof of Rowan block was
  replaced in 2019");
- **after a name**: the statement opens with the name and its attribute's nouns, then a
  copula ("The Rowan block lift was repaired on Thursday").

Either way a copula (or "now", or a word announcing a change) follows within a few words,
so a verb after the name ("Alice lives in Paris") gives no attribute.

How often a thing is done is an attribute of its own (:func:`tells_how_often`): "The lift in
Rowan block is inspected twice a year" tells nothing of "The lift in Rowan block is out of
order" (ADR 0174).
"""

from __future__ import annotations

import re

from engram.agents.matching import STOPWORDS, stem
from engram.agents.statements import CHANGE_WORDS, COPULA_WORDS
from engram.projections import lexical

__all__ = ["PREDICATES", "named_attribute", "tells_how_often"]

#: Words a question puts after the attribute it asks of, saying what it asks of it ("When is
#: the van's insurance due?": the insurance, not a "due"; ADR 0176).
PREDICATES = frozenset(
    ("due", "ready", "valid", "open", "closed", "available", "done", "finished", "expired",
     "expiring", "booked", "paid", "late", "back", "over", "free", "up", "renewed", "fixed")
)  # fmt: skip
#: The most words an attribute is given in, as after a possessive.
_WORDS = 6
#: What ends the attribute's words: a copula, "has" ("has been fixed"), "now".
_ENDS = COPULA_WORDS | {"has", "have", "had", "now"}

#: The attribute, a preposition, the name: "The door entry code for Elm block ...".
_OF_NAME = re.compile(
    r"\s*(?:the\s+)?((?:[a-z][a-z-]*\s+){0,3}[a-z][a-z-]*)\s+(?:of|for|in|at|on)\s+"
    r"(?:the\s+)?(?-i:[A-Z])",
    re.IGNORECASE,
)
#: "The", then the name (capitalised words, a number among them): "The Rowan block lift was
#: ..."; the article makes the capitalised word a name, not a sentence's first word.
_AFTER_NAME = re.compile(
    r"\s*the\s+(?-i:[A-Z][\w-]*)(?:\s+(?-i:[A-Z0-9][\w-]*)){0,3}\s+", re.IGNORECASE
)
#: A lowercase word as written.
_LOWER = re.compile(r"[a-z][a-z-]*")


def named_attribute(text: str) -> list[str]:
    """Return the attribute ``text`` gives of a name without a possessive (stems, the head
    noun last), [] where it gives none so."""
    found = _OF_NAME.match(text)
    if found is not None:
        attribute = [w for w in lexical.tokens(found[1]) if w not in STOPWORDS]
        rest = lexical.tokens(text[found.end() - 1 :])
        # The name's words, then the copula: "... for Elm block is 7720".
        for i, word in enumerate(rest[: _WORDS + 1]):
            if word in _ENDS or stem(word) in CHANGE_WORDS:
                return [stem(w) for w in attribute] if attribute and i else []
        return []
    found = _AFTER_NAME.match(text)
    if found is None:
        return []
    nouns: list[str] = []
    for word in text[found.end() :].split()[: _WORDS + 1]:
        bare = word.strip(",;:.")
        if bare.lower() in _ENDS or stem(bare) in CHANGE_WORDS:
            return [stem(w) for w in nouns if w not in STOPWORDS]
        if not _LOWER.fullmatch(bare) or bare != word:
            return []  # a name, a number or a clause's end before any copula
        nouns.append(bare)
    return []


#: How often: "twice a year", "3 times a week", "every 6 months", "annually".
_HOW_OFTEN = re.compile(
    r"\b(?:once|twice|\d+\s+times|(?:three|four|five|six)\s+times)\s+(?:a|an|per|each)\s+"
    r"(?:day|week|fortnight|month|quarter|year)\b|\bevery\s+\d+\s+(?:days|weeks|months|years)\b"
    r"|\b(?:annually|quarterly|fortnightly)\b",
    re.IGNORECASE,
)


def tells_how_often(text: str) -> bool:
    """Say whether ``text`` tells how often something is done (:data:`_HOW_OFTEN`)."""
    return _HOW_OFTEN.search(text) is not None
