"""Relations a subject holds with one named thing at a time, and the words that give them.

Where a person lives and where they work are the facts that change most often, and the
words that say the change are seldom the words that gave the fact: "Marta lives in Berlin",
then "Marta relocated to Porto"; "Nikos works at Hooli", then "Nikos left for a position at
Northwind Bank". A neural embedder hears the two as one attribute; hash vectors and words
alone do not, so detection missed the most common change there is (ADR 0154).

Each family below is one relation: the words that state it and the words that change it.
Two memories give one attribute of their subject when each holds a word of one family
followed, at once or after one word, by one of the family's prepositions and that by a named
thing (a capitalised word, articles aside, no day or month: "Porto", "the Northwind Bank"):
the relation says which attribute the name is the value of, as a value's format does
(:func:`engram.agents.candidacy.same_format`, ADR 0115). Word forms, not stems, as
:data:`engram.agents.shapes.ONE_AT_A_TIME` reads them.
"""

from __future__ import annotations

import re

__all__ = ["FAMILIES", "KIN", "owner_given", "relative_unsaid", "same_relation"]


def _forms(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The relations, each the word forms that state or change it, and the prepositions that
#: bring its named thing ("lives in", "moved to", "a position at", "works for").
FAMILIES: tuple[tuple[frozenset[str], frozenset[str]], ...] = (
    # Where the subject lives.
    (
        _forms(
            """live lives lived living reside resides resided residing home apartment move
            moves moved moving relocate relocates relocated relocating"""
        ),
        _forms("in to into at near"),
    ),
    # Where the subject works.
    (
        _forms(
            """work works worked working employed job position transfer transfers
            transferred transferring"""
        ),
        _forms("at for by to in"),
    ),
)
_WORD = re.compile(r"[^\W\d_][\w'-]*")
#: Words between a relation's word and its preposition ("moved back to", "a position at").
_BETWEEN = 1
#: What may come between the preposition and the named thing.
_ARTICLES = frozenset(("the", "a", "an"))
#: Named, but a time, not a thing: "moved the call to Friday".
_TIMES = _forms(
    """monday tuesday wednesday thursday friday saturday sunday january february march
    april may june july august september october november december"""
)


def _relations(text: str) -> frozenset[int]:
    """Return the families ``text`` states a relation of, each with its named thing."""
    words = _WORD.findall(text)
    found = set()
    for i, word in enumerate(words):
        lowered = word.lower()
        for number, (forms, prepositions) in enumerate(FAMILIES):
            if lowered in forms and _named(words, i + 1, prepositions):
                found.add(number)
    return frozenset(found)


def _named(words: list[str], start: int, prepositions: frozenset[str]) -> bool:
    """Say whether a preposition of ``prepositions`` comes within :data:`_BETWEEN` words of
    ``start`` and brings a named thing (a capitalised word, articles aside, not a day or a
    month)."""
    for at in range(start, min(start + _BETWEEN + 1, len(words))):
        if words[at].lower() not in prepositions:
            continue
        after = at + 1
        while after < len(words) and words[after].lower() in _ARTICLES:
            after += 1
        return (
            after < len(words) and words[after][0].isupper() and words[after].lower() not in _TIMES
        )
    return False


def same_relation(text: str, old: str) -> bool:
    """Say whether ``text`` and ``old`` each state one relation of :data:`FAMILIES` with a
    named thing ("moved to Porto", "has an apartment in Nairobi")."""
    mine = _relations(text)
    return bool(mine) and bool(mine & _relations(old))


#: A person's relatives and the people they live beside: each another person than whose
#: relative they are ("Kofi's mother", "my flatmate").
KIN = _forms(
    """mother mum mom father dad parent parents sister sisters brother brothers sibling
    siblings wife husband spouse son sons daughter daughters kid kids child children
    grandmother grandfather grandma grandpa granny grandparents aunt uncle cousin niece
    nephew fiance fiancee fiancé fiancée girlfriend boyfriend stepmother stepfather stepson
    stepdaughter flatmate roommate housemate neighbour neighbor in-laws"""
)
#: A relative opening a text as what it speaks of: an owner's possessive or a possessive
#: pronoun, a word at most between, and the relative, not followed by their own name ("my
#: sister Ana" is Ana).
_RELATIVE = re.compile(
    r"^\s*(?:[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*(?:'s|\u2019s)|my|our|his|her|their|your)"
    rf"\s+(?:[a-z][\w-]*\s+)??({'|'.join(sorted(KIN, key=len, reverse=True))})\b"
    r"(?!\s+(?-i:[A-Z]))",
    re.IGNORECASE,
)


def _relative(text: str) -> str:
    found = _RELATIVE.match(text)
    return found.group(1).lower() if found else ""


def relative_unsaid(text: str, other: str) -> bool:
    """Say whether one of the two texts speaks of its subject's relative ("Kofi's mother
    lives in Kumasi, Ghana") and the other names no such relative ("Kofi and the family
    relocated to Roundhay"): a relative is another person, whose facts a change of the
    subject's leaves as they were (ADR 0187)."""
    mine, theirs = _relative(text), _relative(other)
    words = (frozenset(re.findall(r"[\w-]+", text.lower())),
             frozenset(re.findall(r"[\w-]+", other.lower())))  # fmt: skip
    return bool(mine and mine.rstrip("s") not in {w.rstrip("s") for w in words[1]}) or bool(
        theirs and theirs.rstrip("s") not in {w.rstrip("s") for w in words[0]}
    )


#: Who owns a thing, as a memory gives it: "is owned by Dr Soltani", "The Players own a
#: Transit van", "belongs to Harbour Trust", "its owner is ...".
_OWNER = re.compile(
    r"\b(?:(?:is|are|was|were)\s+(?:\w+ly\s+)?(?:owned|run)\s+by|owns?|belongs?\s+to"
    r"|owners?\s+(?:is|are))\b",
    re.IGNORECASE,
)


def owner_given(text: str) -> bool:
    """Say whether ``text`` gives who owns a thing: a sale of the thing replaces it, whoever
    the seller is said to be ("The partners sold Hollybrook Vets to IVC Evidensia" of
    "Hollybrook Vets is independently owned by Dr Soltani and Dr Whitlow"; ADR 0187)."""
    return _OWNER.search(text) is not None
