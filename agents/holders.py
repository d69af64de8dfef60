"""What two memories name, read for detection (ADRs 0106, 0150, 0155, 0157, 0160): the one
noun both open with as their subject, whether each names a thing the other does not, and
whether one gives only who holds a role the other names anew.
"""

from __future__ import annotations

import re

from engram.agents import shapes, statements
from engram.agents.announcing import CHANGE_PHRASES, announced_at, changes
from engram.agents.matching import stem, stems_of
from engram.agents.statements import CALENDAR, content_stems, uncoded
from engram.projections import lexical

__all__ = ["held_role", "holder_anew", "of_changed", "opening_head", "other_things"]


#: What may follow a sentence's opening noun for the noun to be its subject: a copula or an
#: auxiliary ("The lift is back in service", "The trial was pushed back", "The canteen now
#: closes at 3pm").
_AFTER_HEAD = frozenset(("is", "are", "was", "were", "has", "have", "had", "will", "now"))
#: The same verbs by their stems, so a plural's verb counts as its singular's ("Previews
#: begin", "The lesson begins"; ADR 0160).
_VERB_STEMS = frozenset(stem(w) for w in (*shapes.STATING, *shapes.ONE_AT_A_TIME))


def opening_head(text: str, other: str) -> tuple[str, ...]:
    """Return the one content word (stemmed) both texts open with as their subject, after a
    determiner or opening the text, before a verb: a copula or an auxiliary ("The lift is
    out of service", "The lift is back in service" -> ("lift",); ADR 0155), a verb of state
    or of where one lives or works ("Grandma lives in Leeds", "Previews begin on 3 March"),
    or the word announcing a change ("Grandma moved to York", "Previews have been pushed
    back", "The rent went up to 950"; ADR 0160); () where either opens otherwise. A noun
    before another noun ("Tennis lessons", "The book club") opens a compound, no subject
    of its own: shared by both, :func:`~engram.agents.statements.shared_phrase` finds it."""

    def head(said: str) -> str:
        words = lexical.tokens(said)[:4]
        at = 1 if words and words[0] in statements.DETERMINERS else 0
        if len(words) < at + 2 or not words[at].isalpha():
            return ""
        after = words[at + 1]
        at_after = re.search(rf"\b{re.escape(after)}\b", said, re.IGNORECASE)
        verb = (
            after in _AFTER_HEAD or after in shapes.AUXILIARIES or stem(after) in _VERB_STEMS
            or changes(after)
            or (at_after is not None and CHANGE_PHRASES.match(said, at_after.start()))
        )  # fmt: skip
        return statements.content_stems(words[at])[0] if verb else ""

    mine = head(text)
    return (mine,) if mine and mine == head(other) else ()


#: A copula and what follows it in its sentence: the value a state is given.
_COPULA_ON = re.compile(r"\b(?:is|are|was|were)\b[^.;!?]*", re.IGNORECASE)


def other_things(
    text: str, other: str, *, names_given: bool = False, given_at: int | None = None
) -> bool:
    """Say whether each text names a thing the other does not: a run of two or more content
    words sharing no word with the other text ("the billing exporter" beside "the report
    builder": the rate limits of two things, not one limit changed; ADR 0106).

    ``names_given``: the texts' names (runs of capitalised words) are values given, not
    things spoken of, as a change announced gives them ("Rob Nuttall took over as practice
    manager" of "The practice manager is Helen Garside": two holders of one role; ADR 0150);
    so is what follows a copula in both ("The vegetarian main is now a roasted squash
    gnocchi" of "... is a mushroom risotto": one dish's two values, not two things; ADR 0157),
    and what follows the word announcing the change, at ``given_at`` in ``text``, beside
    what follows the other's copula ("Vegan main changed to a harissa aubergine" of "The
    vegan main is a roasted cauliflower steak"; ADR 0160).
    """
    whole: tuple[str, ...] = ()
    if names_given:
        if _COPULA_ON.search(other) and not _COPULA_ON.search(text) and given_at:
            text, other = text[:given_at], _COPULA_ON.sub("", other)
        elif _COPULA_ON.search(text) and _COPULA_ON.search(other):  # a value beside a value
            # Where the other gives only a role's holder, a run is another thing's where
            # the other holds none of its words anywhere: the role one gives after its
            # copula is what the other names before its own ("Sam Okafor is our new
            # volunteer coordinator" of "The volunteer coordinator is Priya"; ADR 0187).
            whole = (_unnamed(text), _unnamed(other)) if held_role(text, other) else ()
            text, other = _COPULA_ON.sub("", text), _COPULA_ON.sub("", other)
        text, other = _unnamed(text), _unnamed(other)

    def own(a: list[str], b: list[str]) -> bool:
        held, run = set(b), 0
        for word in [*a, ""]:
            if word and word not in held:
                run += 1
                continue
            if run >= 2:
                return True
            run = 0
        return False

    # An id or code is a value ("moved the shipper to eu-west-1"), never the thing spoken
    # of: same_occurrences weighs codes (ADR 0109); so is a day ("the first Tuesday", "the
    # second Thursday": when a committee meets, not two committees; ADR 0143).
    mine, theirs = (
        [w for w in content_stems(uncoded(t)) if w not in CALENDAR and w not in _NTH]
        for t in (text, other)
    )
    my_whole, their_whole = (content_stems(uncoded(t)) for t in whole) if whole else ([], [])
    return own(mine, [*theirs, *their_whole]) and own(theirs, [*mine, *my_whole])


def holder_anew(text: str, old: str) -> bool:
    """Say whether ``old`` gives only who holds a thing ("The fleet coordinator is Owen
    Pryce": nothing is left of it once its names and the run of words both texts hold are
    taken out) and ``text`` names a holder too ("Nadia Quinn has taken over as fleet
    coordinator"): the names are the values, as one value given anew (ADR 0150)."""
    return bool(held_role(text, old))


#: A memory giving only who holds a role of one word: "The treasurer is Sam Hill."
_ROLE_IS = re.compile(
    r"(?:(?:[Tt]he|[Oo]ur|[Tt]heir|[Ii]ts|[Mm]y|[Yy]our|[Hh]is|[Hh]er)\s+)?([A-Za-z][a-z-]+)"
    r"\s+(?:is|was)\s+(?:[A-Z][\w'.-]*\s+)*[A-Z][\w'-]*\s*[.!]?"
)


def held_role(text: str, old: str) -> tuple[str, ...]:
    """Return the role (stems) whose holder ``old`` alone gives and ``text`` names anew
    (:func:`holder_anew`): the run of words both hold, or the one content word ``old``
    holds beside its names, where ``text`` holds it too ("The treasurer is Sam Hill", "Jo
    Park took over as treasurer"; ADR 0160); () where there is none."""
    if not statements.name_runs(_unnamed_days(old)):
        return ()
    # A verb of holding is the role's own ("Raj owns the billing service"; ADR 0187).
    left = [w for w in content_stems(_unnamed(old)) if w and w not in _HOLDING]
    # Names aside: the old holder named again ("Kieran Doyle replaced Sandra Oakes as
    # practice manager") is no phrase of the role (ADR 0187).
    phrase = statements.shared_phrase(_unnamed(text), _unnamed(old))
    role = _ROLE_IS.fullmatch(old.strip())
    if not phrase and role and re.search(rf"(?i)\b{re.escape(role[1])}\b", text):
        phrase = tuple(content_stems(role[1]))
    if not phrase or any(w not in phrase for w in left):
        return ()
    # The old holder is a name, not a label numbering its thing: "The Glen Sannox is IMO
    # 9794513" gives no holder of the Glen Sannox (ADR 0182).
    given = [m for m in statements.NAME_RUN.finditer(_unnamed_days(old))
             if any(w not in phrase for w in content_stems(m.group()) if w)]  # fmt: skip
    if given and all(_NUMBERED.match(old, m.end()) for m in given):
        return ()
    # A holder is a name beside the role's words: "Okafor" in "Okafor hearing postponed" is
    # the thing's own name, no holder given anew.
    holders = [
        run for run in statements.name_runs(_unnamed_days(text))
        if any(w not in phrase for w in content_stems(run) if w)
    ]  # fmt: skip
    return phrase if holders else ()


_NUMBERED = re.compile(r"\s*#?\d")
#: Verbs whose subject holds their object as a role's holder holds the role (stems).
_HOLDING = frozenset(("own", "run", "lead", "manag", "head", "chair", "maintain"))


def _unnamed_days(text: str) -> str:
    """Return ``text`` with its days and months taken out (a run left is then a name)."""
    return _sieved(text, keep_days=False)


def _unnamed(text: str) -> str:
    """Return ``text`` without its names (runs of capitalised words), days and months kept."""
    return _sieved(text, keep_days=True)


def _sieved(text: str, *, keep_days: bool) -> str:
    """Return ``text`` keeping, of its runs of capitalised words, the days and months
    (``keep_days``) or the others."""

    def kept(m: re.Match[str]) -> str:
        day = all(stem(w) in CALENDAR for w in lexical.tokens(m.group()))
        return m.group() if day == keep_days else " "

    return statements.NAME_RUN.sub(kept, text)


#: Ordinals that pick a day of a period ("the first Tuesday", "the last Friday").
_NTH = frozenset(stem(w) for w in ("first", "second", "third", "fourth", "fifth", "last"))


def of_changed(text: str, old: str, subject: str, phrase: tuple[str, ...]) -> bool:
    """Say whether ``old`` may speak of what ``text`` changes where ``text`` names its
    ``subject`` before its change word ("Extractor hire is now £8 per weekend"): ``old``
    names the subject, the ``phrase`` both share stands before the change word too ("Alice
    Moreau" of "SECRETWORD Alice Moreau moved to Zurich"), or ``old`` holds the role ``text``
    hands over ("Nadia Quinn has taken over as fleet coordinator" of "The fleet coordinator
    is Owen Pryce"). The subject may be who made the change ("The AGM voted to put adult
    membership up to £135"): then the phrase stands between the change word and the value it
    gives, and ``old`` names no one of its own ("Adult membership is £120"; "Julia Novak got a
    new number" is not Oscar Brennan's). A phrase shared only after the value is the value's
    ("£8 per weekend", "£3 per weekend"), not the thing (ADR 0185). A subject named after the
    change word may be its new value (ADR 0149): any ``old`` may."""
    at = announced_at(text)
    named = stems_of(text[:at]).every
    value = _VALUE.search(text, at)
    changed = stems_of(text[at : value.start() if value else len(text)]).every
    # Who joins something changes where they belong, no one else's role ("Tom Baker joined
    # the mobile team" of "Priya leads the mobile team"; ADR 0187).
    joined = _JOINED.match(text, at) is not None and stem(subject) in named
    return (
        stem(subject) not in named
        or stem(subject) in stems_of(old).every
        or (not joined and (
            (bool(phrase) and set(phrase) <= named)
            or bool(held_role(text, old))
            or (bool(phrase) and set(phrase) <= changed and not _names_someone(old))
        ))
    )  # fmt: skip


_JOINED = re.compile(r"(?:has\s+|have\s+)?join(?:ed|s)?\b", re.IGNORECASE)


#: Where a value starts: a digit, or a currency's sign before one.
_VALUE = re.compile(r"[$\u00a3\u20ac]?\d")


def _names_someone(text: str) -> bool:
    """Say whether ``text`` names someone or something: a run of two or more capitalised
    words, or one inside a sentence (a word opening it is capitalised by it alone)."""
    return any(
        len(run.split()) > 1 or not statements.opens(text, text.find(run))
        for run in statements.name_runs(text)
    )
