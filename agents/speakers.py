"""Whom a statement told in the first person speaks of (ADR 0116): its speaker, whose name
it does not say ("I moved to Berlin in March", "User: my manager is Priya"), where it is one
short sentence and no name comes before its first-person word; and what it says of them.
Supersession detection (:mod:`engram.agents.candidacy`) compares such statements of one
speaker without their first-person words.
"""

from __future__ import annotations

import re

from engram.agents.matching import STOPWORDS, stem, stems_of
from engram.agents.statements import NAME_RUN, before, opens
from engram.projections import lexical

__all__ = ["PERSON_WORDS", "changed_unsaid", "first_person", "impersonal", "label"]


#: A speaker's label opening a turn of a transcript: "User: ...", "Caroline: ...", "Dr Lee: ".
_SPEAKER = re.compile(r"\A\s*([A-Za-z][\w'-]{0,31}(?: [A-Z][\w'-]{0,31})?):\s")
#: The words by which a statement speaks of its speaker ("us" lower-case only: "US" is a
#: country), with the contractions of "I" and "we".
_PERSON = re.compile(
    r"\b(?:(?:I|[Ww]e)'(?:m|ve|d|ll|re)|I|[Mm]y|[Mm]e|[Mm]ine|[Mm]yself|[Ww]e|[Oo]urs?"
    r"|[Oo]urselves|us)\b"
)


#: The most words a memory told in the first person may hold to be weighed as one fact of
#: its speaker: "I moved to Berlin in March", "User: btw my new email is sam@reyes.dev, the
#: gmail one is dead". A longer first-person sentence is talk: a request, a worry, a story,
#: where "now" and "new" say nothing changed (ADR 0116).
PERSON_WORDS = 20
#: A sentence's end inside a text: what ends it, a blank, and a capital opening the next;
#: not the point of a title or an initial ("Dr. Okafor", "Mrs. Reyes", "the U.S. Army").
_BREAK = re.compile(
    r"(?:(?<!\b[A-Z])(?<!\b[A-Z][a-z])(?<!\b[A-Z][a-z]{2})\.|[!?])[\"')\]]*\s+(?=[\"'(]?[A-Z])"
)


#: A possessive first-person word: what follows it is the speaker's ("my manager", "our
#: router"), and the statement speaks of the speaker only where it gives what that is.
_POSSESSIVE = frozenset(("my", "our", "mine", "ours"))
#: The first person as an object, and a subject a determiner opens before it.
_OBJECTS = frozenset(("me", "us"))
_DETERMINED = re.compile(r"\s*(?:the|a|an|this|that|these|those)\s+[a-z]", re.IGNORECASE)
#: What a possessive gives of its speaker: the thing it names, in at most three words, then a
#: copula or the "to" of a change ("my manager is Priya", "my new email is ...", "switched
#: our internet provider to Sonic").
_GIVEN = re.compile(r"(?:\s+[\w'-]+){1,3}?\s+(?:is|are|was|were|to)\b", re.IGNORECASE)


#: A first-person word that reports, asks or wonders about something else ("I think Jonas is
#: coming", "tell me how the book club goes"): the statement speaks of what it reports, not
#: of its speaker (ADR 0126).
_REPORTS = re.compile(
    r"\b(?:I|[Ww]e)\s+(?:think|thought|guess|suppose|believe|hope|wonder|heard|hear|reckon"
    r"|feel|felt|told|said|asked|know|knew|mean|bet|doubt|suspect|imagine|assume|expect)\b"
    r"|\b(?:tell|told|let|show|give|ask|asked|remind)\s+(?:me|us)\b"
)


def first_person(text: str) -> str | None:
    """Return whom ``text`` speaks of in the first person: its speaker's label, lower-cased
    ("" when the text has none), when it is one sentence and a first-person word ("I",
    "my", "we", "our") comes before any name inside it, a possessive one ("my manager")
    followed by what it gives ("... is Tomasz"); None when it speaks of someone or something
    else ("my car needs new tyres" speaks of the car), or says several things.

    "I live in Lisbon" and "User: my manager is Priya" speak of their speaker, whose name
    the text does not say: the subject is the speaker. "Priya hired me" speaks of Priya
    (a name opening a sentence counts when it is two words or more, "Mei Chen told me",
    since one capitalised word opening a sentence may be any word; ADR 0116)."""
    found = _SPEAKER.match(text)
    label, body = (found.group(1).lower(), text[found.end() :]) if found else ("", text)
    if _BREAK.search(body.strip()) or len(lexical.tokens(body)) > PERSON_WORDS:
        return None  # a turn of several sentences, or a long one, says several things
    pronoun = _PERSON.search(body)
    if pronoun is None or _REPORTS.search(body):
        return None
    if pronoun.group().lower() in _POSSESSIVE and not _GIVEN.match(body, pronoun.end()):
        return None  # "my car needs new tyres" speaks of the car, "my manager is Tomasz" of me
    if pronoun.group().lower() in _OBJECTS and _DETERMINED.match(body, 0, pronoun.start()):
        return None  # "The church asks us to stack the chairs" speaks of the church (0182)
    for run in NAME_RUN.finditer(body, 0, pronoun.start()):
        if run.group() == "I" or before(body, run.start()).isdigit():
            continue
        if not opens(body, run.start()) or len(run.group().split()) > 1:
            return None
    return label


def possessed_unsaid(text: str, old: str) -> bool:
    """Say whether ``text`` and ``old``, both spoken in the first person, speak of two things:
    one gives an attribute of its speaker by a possessive ("our rehearsals move to
    Thursdays", "Our PMR system is ProScript Connect") or changes a thing it names after
    the change's verb ("We moved the fuel cards over to Shell Fleet", "I've put the lesson
    price up to £42"), and the other holds none of its words (not every word of the thing
    changed): a change of one thing of the speaker's leaves the others as they were (ADR
    0182, 0184)."""
    theirs, mine = _stems(old), _stems(text)
    changed = {stem(w) for w in _changed(text)}  # the thing changed, named whole
    counted, counted_old = _counted(text), _counted(old)
    return (
        _unsaid(_possessed(text), theirs)
        or _unsaid(_possessed(old), mine)
        or (bool(changed) and not changed <= theirs)
        # Counts of two things: "We have 3 bright tanks", "we've got 8 fermenters" (0185).
        or (bool(counted) and bool(counted_old) and not counted & counted_old)
    )


#: A number and up to three words after it, the first plural among them the thing counted.
_COUNT = re.compile(
    r"\b(?:\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
    r"((?:\s+[A-Za-z][\w-]*){1,3})",
    re.IGNORECASE,
)


def _counted(text: str) -> frozenset[str]:
    """Return the stems of the things ``text`` counts ("3 bright tanks" -> {"tank"})."""
    found = set()
    for m in _COUNT.finditer(text):
        for word in m[1].lower().split():
            if word in STOPWORDS:
                break  # "12 on Saturdays" counts no Saturdays
            if word.endswith("s") and not word.endswith(("ss", "us", "is")):
                found.add(stem(word))
                break
    return frozenset(found)


def _stems(text: str) -> frozenset[str]:
    return stems_of(text).every


def _unsaid(words: list[str], other: frozenset[str]) -> bool:
    return bool(words) and not other & {stem(w) for w in words}


def _possessed(text: str) -> list[str]:
    """Return the words of the attribute ``text`` gives of its speaker by a possessive."""
    found = _SPEAKER.match(text)
    body = text[found.end() :] if found else text
    pronoun = _PERSON.search(body)
    if pronoun is None or pronoun.group().lower() not in _POSSESSIVE:
        return []
    given = _GIVEN.match(body, pronoun.end())
    return lexical.tokens(given.group())[:-1] if given else []


#: A change and the thing it changes, named after its verb up to where the change's value
#: starts: "moved the fuel cards over to", "changed the cancellation policy:", "put the
#: manual lesson price up to" (ADR 0184).
_CHANGED = re.compile(
    r"(?i)\b(?:moved|changed|switched|put|turned|migrated|raised|lowered|cut|increased"
    r"|reduced|swapped|updated|extended|shortened|sold)\s+(?:"
    r"(?:the|our|my|their|its|his|her|your)\s+((?:[a-z][\w'-]*\s+){0,3}?[a-z][\w'-]*)"
    r"(?=\s+(?:to|from|up|down|over|into|by|for|off|on|at)\b|\s*[:;,.\u2013\u2014-]|\s*$)"
    # Without a determiner, a plural or a mass noun the value follows ("We moved tastings
    # to the tasting room", "switched linen to Celebration Linens"; ADR 0187).
    r"|(?!(?:to|from|up|down|over|into|in|on|at|by|for|off|out|back|away|it|them|that"
    r"|this|everything|all|house|home|jobs?|careers?|teams?|sides?)\b)"
    r"((?:[a-z][\w'-]*\s+){0,2}?[a-z][\w'-]*)(?=\s+(?:to|into|over)\b))"
)


def changed_object(text: str, old: str) -> tuple[str, ...]:
    """Return the thing ``text`` changes, named after the change's verb ("We moved the van to
    bay 7": "van"), as stems, where ``old`` names it whole, every word of it; else ()."""
    words = tuple(stem(w) for w in _changed(text))
    return words if words and set(words) <= _stems(old) else ()


def _changed(text: str) -> list[str]:
    """Return the words of the thing ``text`` changes, named after the change's verb."""
    found = _CHANGED.search(text)
    thing = found and (found.group(1) or found.group(2))
    words = [w for w in lexical.tokens(thing) if w not in STOPWORDS] if thing else []
    while words and words[-1] in _PARTICLES:  # "put adult membership up to £135"
        words.pop()
    return words


#: Words that end a phrasal verb, not the thing it changes.
_PARTICLES = frozenset(("up", "down", "back", "over", "out", "off", "away"))


def changed_unsaid(text: str, old: str) -> bool:
    """Say whether ``text`` changes a thing it names after the change's verb ("Kofi switched
    his broadband to Zen Internet") that ``old`` does not name whole, where ``old`` speaks
    of another thing of its owner's, by a possessive the new text does not hold ("Kofi wants
    to redesign his website"; ADR 0184, 0187). An old memory naming no thing of its own
    may give the changed thing's value without its name ("Loki keeps logs for 14 days", "We
    cut Loki retention to 7 days")."""
    changed = {stem(w) for w in _changed(text)}
    owned = [w for m in _OWNED.finditer(old) for w in lexical.tokens(m[1]) if w not in STOPWORDS]
    lowered = text.lower()
    return (
        bool(changed) and not changed <= _stems(old)
        and bool(owned) and not any(w in lowered for w in owned)
    )  # fmt: skip


#: A thing of a third person's, named after the possessive: "his website", "their van".
_OWNED = re.compile(r"\b(?:his|her|their|its)\s+([a-z][\w-]*(?:\s+[a-z][\w-]*)?)", re.I)


def label(text: str) -> str:
    """Return the speaker label opening ``text`` ("Maya: ..." -> "Maya"), or ""."""
    found = _SPEAKER.match(text)
    return found.group(1) if found else ""


def impersonal(text: str) -> str:
    """Return ``text`` without its speaker's label and its first-person words: what it says
    of its speaker ("I moved to Berlin in March" -> "moved to Berlin in March")."""
    found = _SPEAKER.match(text)
    body = text[found.end() :] if found else text
    return " ".join(_PERSON.sub(" ", body).split()) or body
