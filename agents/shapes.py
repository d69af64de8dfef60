"""What a statement's shape says of what it may replace (ADR 0123): the value after its
copula or its last preposition, the attribute it names after a possessive, whether it tells
a plan or an event, and whether it is another statement with one value given anew.

Supersession detection (:mod:`engram.agents.candidacy`) weighs these beside what
:mod:`engram.agents.statements` reads of the subject: two notes of one template about two
things, or two attributes of one thing, replace neither; the same sentence with one number
given anew replaces the old one without a word of change.
"""

from __future__ import annotations

import re

from engram.agents import statements
from engram.agents.attributes import PREDICATES, named_attribute
from engram.agents.matching import CLITICS, STOPWORDS, codes, stem
from engram.agents.quoted import references
from engram.agents.statements import (
    CALENDAR,
    CHANGE_WORDS,
    COPULA_WORDS,
    NAME,
    VALUE_HEADS,
    content,
    content_stems,
)
from engram.projections import copies, lexical

__all__ = [
    "AUXILIARIES", "DETERMINERS", "ONE_AT_A_TIME", "STATING", "STATUSES", "additive",
    "asked_attribute", "attribute_one_sided", "attribute_unsaid", "attributes_apart",
    "dated_apart", "given_attribute", "instances_apart", "keeps_names", "many_valued", "planned",
    "planned_change", "possessive", "recorded_occurrence", "said_of_another", "same_value",
    "told_event", "value_anew", "words_apart",
]  # fmt: skip

_BARE_COPULA = re.compile(r"\b(?:is|are|was|were)\b", re.IGNORECASE)


def said_of_another(text: str, other: str) -> bool:
    """Say whether the two texts say one thing of two things: what follows the first copula
    of each holds the same content words, and what precedes it does not ("Mrs Bello's
    falls risk score is medium" and "Mr Grieve's falls risk score is medium"; "Opposing
    counsel in the Ashford matter is Lyle & Fenwick" and "... in the Brandt matter is ...").
    A value changed is another value said of one thing; the same value said of another
    thing replaces nothing (ADR 0123)."""
    mine, theirs = _BARE_COPULA.search(text), _BARE_COPULA.search(other)
    if mine is None or theirs is None:
        return False
    said = content(text[mine.end() :])
    return (
        bool(said)
        and said == content(other[theirs.end() :])
        and content(text[: mine.start()]) != content(other[: theirs.start()])
    )


#: A copula or a preposition: what follows the last one in a statement is the value it gives
#: ("... is medium", "... recorded at Koto Sound", "... serviced in June").
_GIVES = re.compile(r"\b(?:is|are|was|were|in|at|on|to|for|by|from|with)\b", re.IGNORECASE)


def same_value(text: str, other: str) -> bool:
    """Say whether the two texts give the same value of two things or two attributes: what
    follows the last copula or preposition of each holds the same content words, and what
    precedes it does not ("The flat's boiler was last serviced in June" and "The flat's
    lease ends in June"). Where both have a copula, what follows it is the value ("is a
    product manager at Stripe", "is a director of engineering at Stripe": one attribute, two
    values), and this says no. Weighed where no change is announced: "is no longer allergic to
    peanuts" gives the value of "is allergic to peanuts" again, to say it stopped (ADR
    0123)."""
    if _BARE_COPULA.search(text) and _BARE_COPULA.search(other):
        return False  # both give a state: what follows the copula is the value (said_of_another)
    mine, theirs = list(_GIVES.finditer(text)), list(_GIVES.finditer(other))
    if not mine or not theirs:
        return False
    given = content(text[mine[-1].end() :])
    return (
        bool(given)
        and given == content(other[theirs[-1].end() :])
        and content(text[: mine[-1].start()]) != content(other[: theirs[-1].start()])
    )


#: What says a plan or a task, not a state: "Ms Ostrowski will cover the choir club on
#: Wednesday", "Need to send Nora the photos from Geneva".
_PLAN = re.compile(
    r"\b(?:will|shall|going to|need to|needs to|have to|has to|must|should|remember to"
    r"|planning to|plan to|plans to)\b|'ll\b",
    re.IGNORECASE,
)


def planned(text: str) -> bool:
    """Say whether ``text`` tells a plan ("will cover the club on Wednesday"): a plan replaces
    a plan, never a state ("runs the club"), unless a change is announced (ADR 0123)."""
    return bool(_PLAN.search(text))


def planned_change(text: str) -> bool:
    """Say whether the only change ``text`` announces is the one it plans ("Will upgrade
    payments-api to version 4.4.0 on Thursday", "plans to add Friday sessions starting in
    June": a change word after the plan is the plan's): a change planned has not happened,
    and replaces nothing; "The standup will now be at 10:00" announces one ("now")."""
    words = lexical.tokens(text)
    said = [i for i, w in enumerate(words) if stem(w) in CHANGE_WORDS]
    plan = _PLAN.search(text)
    if plan is None:
        return False
    opens = len(lexical.tokens(text[: plan.start()]))
    return bool(said) and all(i >= opens and words[i] not in _NOT_VERBS for i in said)


#: What says a fact is held beside another, not in its place (ADR 0126): "Mrs Adeyemi is
#: also allergic to latex", "speaks Portuguese as well", "In addition, ..."; and an event
#: once more beside its first time ("was tested again on 7 April", ADR 0139).
_ADDITIVE = re.compile(
    r"\b(?:also|additionally|in\s+addition|again)\b|\bas\s+well\b(?!\s+as)"
    r"|,?\s+too\s*[.!]?\s*$",
    re.IGNORECASE,
)


def additive(text: str) -> bool:
    """Say whether ``text`` gives a value beside another ("is also allergic to latex",
    "speaks Portuguese too"): held beside the old value, no change announced, it replaces
    none (ADR 0126)."""
    return bool(_ADDITIVE.search(text))


#: Change words that are no verb a plan could hold: "will now be at 10:00" announces one.
_NOT_VERBS = frozenset(("now", "currently", "nowadays", "instead", "longer", "anymore", "new"))


#: Verbs in the past tense that tell an event, a thing done or said ("Had lunch with Maya",
#: "Bruno recommended a restaurant", "Tyrell asked for a discount"): what happened once stays
#: true beside what happened again, and says no state changed (ADR 0123).
_IRREGULAR_PAST = frozenset(
    (
        "had", "went", "met", "saw", "lent", "gave", "took", "made", "got", "bought", "told",
        "said", "sent", "ran", "ate", "drank", "wrote", "spoke", "came", "brought", "found",
        "lost", "paid", "won", "heard", "felt", "thought", "did", "held", "kept", "sang",
        "taught", "caught", "flew", "drove", "rode", "set", "put",
        # More of the commonest (ADR 0143): "The couple chose favours from ...", "Tomasz
        # spent three hours diagnosing ...", "The panel began its review ...".
        "chose", "spent", "began", "broke", "built", "drew", "fell", "fought", "forgot",
        "froze", "hid", "hit", "hurt", "knew", "laid", "led", "meant", "rang", "sat", "shook",
        "shot", "sold", "stood", "stole", "struck", "swam", "threw", "understood", "woke",
        "wore", "dug", "fed", "fled", "hung", "lit", "read", "sought", "spun", "stuck", "swept",
        "tore", "withdrew", "overran", "mislaid", "oversaw", "undertook",
    )
)  # fmt: skip
#: The words before a sentence's verb (its subject) told events at most this far in: "The
#: Royal Society panel rejected ...", "Gemma Rhodes from Pinewood Studios attended ...".
_SUBJECT_WORDS = 8
#: Words that end a subject without being its verb in the simple past: a copula or an
#: auxiliary says the sentence tells a state, a perfect or a plan ("has enrolled 31", "is
#: booked in", "will visit").
AUXILIARIES = frozenset(
    (
        "is", "are", "was", "were", "be", "been", "being", "am", "has", "have", "having",
        "will", "would", "shall", "should", "can", "could", "may", "might", "must", "does",
        "do", "doesn", "don", "isn", "aren", "wasn", "weren", "hasn", "haven",
    )
)  # fmt: skip
#: Words after which a past participle describes a noun ("the rejected proposal", "a
#: finished report"): no verb of the sentence.
DETERMINERS = _DETERMINERS = statements.DETERMINERS | frozenset(
    ("every", "each", "some", "any", "no")
)


def told_event(text: str) -> bool:
    """Say whether ``text`` tells an event in the past tense: its verb, the first word within
    :data:`_SUBJECT_WORDS` of its start that is no part of its subject, is in the simple past
    ("Had lunch with Maya on Monday", "Bruno recommended a restaurant in Lisbon", "The Royal
    Society panel rejected the 'Coral Reef' proposal", "Gemma Rhodes from Pinewood Studios
    attended the webinar"; ADR 0123, ADR 0143), a change word aside ("moved", "switched":
    those announce a change). A copula or an auxiliary met first tells a state ("has
    enrolled 31 participants", "is booked in for a service"); a participle after a
    determiner describes a thing ("the rejected proposal is back")."""
    words = lexical.tokens(text)[: _SUBJECT_WORDS + 2]
    for i, word in enumerate(words[: _SUBJECT_WORDS + 1]):
        if word in AUXILIARIES:
            # Told in the passive, the past is an event as well: "'The Overstory' was
            # returned damaged to Bertrams" (ADR 0143); "was moved" announces a change, and
            # a participle a value follows sets it ("was set to 500", "was pushed back to").
            return (
                word in ("was", "were")
                and i + 2 < len(words)
                and _past(words[i + 1])
                and words[i + 1] not in _STATUSES
                and words[i + 2] not in _VALUE_SET
            )
        if _past(word) and (i == 0 or words[i - 1] not in _DETERMINERS):
            return True
    return False


#: Participles that give a status in the passive, a state's new value, not an event: "RFI-051
#: was closed", "the claim was rejected", "the licence was granted" (ADR 0143).
STATUSES = _STATUSES = frozenset(
    (
        "closed", "opened", "reopened", "approved", "rejected", "granted", "refused", "declined",
        "accepted", "cancelled", "canceled", "confirmed", "suspended", "resumed", "completed",
        "resolved", "withdrawn", "retired", "archived", "deprecated", "decommissioned",
        "discontinued", "released", "published", "launched", "sold", "offered", "denied",
        "finished", "abandoned", "shelved", "paused", "delayed", "blocked", "unblocked",
    )
)  # fmt: skip
#: Words after a participle that say a value was set: "was set to 500", "was pushed back".
_VALUE_SET = frozenset(("to", "back", "forward", "up", "down", "from", "at", "as"))
#: Nouns naming an occurrence: a record opening with one and holding no verb of state
#: ("Site visit at Leeds Corn Exchange with the Silva couple on 24 January", "Call with Ben
#: Carter at Ravenscar Bank: ...", "Condition check of the Ming vase: stable") tells one
#: occurrence among others (ADR 0143).
_OCCURRENCES = frozenset(
    (
        "visit", "visits", "call", "calls", "meeting", "meetings", "appointment",
        "appointments", "session", "sessions", "interview", "interviews", "viewing",
        "viewings", "demo", "demos", "webinar", "webinars", "workshop", "workshops",
        "consultation", "consultations", "inspection", "inspections", "tasting", "tastings",
        "fitting", "fittings", "lesson", "lessons", "class", "classes", "training",
        "trainings", "rehearsal", "rehearsals", "reception", "receptions", "party", "parties",
        "dinner", "dinners", "event", "events", "check", "checks", "reading", "readings",
        "briefing", "briefings", "delivery", "deliveries", "enquiry", "enquiries", "inquiry",
        "inquiries", "request", "requests", "survey", "surveys", "audit", "audits", "incident",
        "incidents", "booking", "bookings", "order", "orders", "feedback", "screening",
        "screenings", "callout", "callouts", "talk", "talks", "scan", "scans", "transfusion",
        "transfusions", "drill", "drills",
    )
)  # fmt: skip
#: The words of a record's opening an occurrence noun is looked for in.
_RECORD_OPENING = 3


def recorded_occurrence(text: str) -> bool:
    """Say whether ``text`` records one occurrence, a session, a visit, a call, without a
    verb of state: an occurrence noun among its first words and no copula or auxiliary in
    it ("Tasting session with Velvet Linen for the MacLeod wedding on 4 April"; not "The
    tasting session is on 4 April", which gives the session's date)."""
    words = lexical.tokens(text)
    return any(w in _OCCURRENCES for w in words[:_RECORD_OPENING]) and not any(
        w in AUXILIARIES or w in STATING for w in words
    )


#: Verbs in the present that give a thing's value, as a copula does ("The tasting menu costs
#: £85 per person", "The piano lesson lasts an hour"): a statement of state, not a record
#: (ADR 0157).
STATING = frozenset(
    (
        "costs", "holds", "seats", "sleeps", "takes", "lasts", "weighs", "measures", "runs",
        "opens", "closes", "starts", "begins", "ends", "finishes", "meets", "pays", "charges",
        "earns", "serves", "fits", "contains", "includes", "covers", "needs", "requires",
        "uses", "sells",
    )
)  # fmt: skip


#: Relations a subject holds with many values at once: two allergies, two languages, two
#: things liked are both true, unless a change is said (ADR 0143).
_MANY_VALUED = frozenset(
    (
        "allergic", "intolerant", "speaks", "speak", "likes", "loves", "enjoys", "hates",
        "dislikes", "collects",
    )
)  # fmt: skip


def dated_apart(text: str, old: str) -> bool:
    """Say whether ``text`` and ``old`` each give a day, other days, and differ by more than
    that one value ("The Cedar Suite is booked by Northwind on 12 May" / "... by Bright
    Futures on 20 May"; "The weekly roster review is every Monday at 10:00" / "The weekly
    fatigue review is every Thursday at 14:00"): two dated occurrences, not one date said
    anew, which :func:`value_anew` tells ("The wedding is on 14 June" -> "... on 21 June";
    ADR 0143)."""
    mine, theirs = _days(text), _days(old)
    return bool(mine) and bool(theirs) and mine != theirs and not value_anew(text, old)


def dated_one_sided(text: str, old: str) -> bool:
    """Say whether one of ``text`` and ``old`` gives a day and the other none ("Full council
    meetings are held in the Guildhall chamber" / "Full council meets on the first Tuesday of
    each month"): when a thing happens beside where or what it is, two attributes, not one
    value said anew (ADR 0157)."""
    return bool(_days(text)) != bool(_days(old)) and not value_anew(text, old)


def counted_apart(text: str, old: str) -> bool:
    """Say whether what one of ``text`` and ``old`` says anew is numbers alone and what the
    other says anew holds none ("Breakfast is served from 7 to 10" / "... in the Lantern
    Room"; "9 qualified ride leaders" / "Jenny Walsh is a qualified ride leader"): a time or
    a count beside a place or a name, two attributes (ADR 0158)."""
    mine, theirs = content(text), content(old)
    given, gone = mine - theirs, theirs - mine
    if not given or not gone:
        return False
    numeric = [all(w[0].isdigit() for w in side) for side in (given, gone)]
    counted = [any(w[0].isdigit() for w in side) for side in (given, gone)]
    return (numeric[0] and not counted[1]) or (numeric[1] and not counted[0])


def _days(text: str) -> frozenset[str]:
    """Return the days ``text`` names: weekdays and months (stemmed), and "12 May" whole,
    its dates read one way first (:func:`~engram.projections.copies.dates_one_way`)."""
    words = lexical.tokens(copies.dates_one_way(text))
    out = set()
    for i, word in enumerate(words):
        if stem(word) in CALENDAR:
            out.add(stem(word))
            if i and words[i - 1].isdigit():
                out.add(f"{words[i - 1]} {stem(word)}")
    return frozenset(out)


def many_valued(text: str, old: str) -> bool:
    """Say whether ``text`` and ``old`` state one relation a subject holds with many values
    at once ("Guest Martin Brennan is allergic to peanuts" / "... to shellfish")."""
    shared = set(lexical.tokens(text)) & set(lexical.tokens(old))
    return bool(shared & _MANY_VALUED)


def _past(word: str) -> bool:
    """Say whether ``word`` is a verb in the simple past that no change word is."""
    if stem(word) in CHANGE_WORDS:
        return False
    return word in _IRREGULAR_PAST or (len(word) > 4 and word.endswith("ed"))


#: A possessive: what follows is an attribute of what precedes ("the van's MOT"; ADR 0176).
_OWNED = re.compile(r"(\w+)['\u2019]s\s(?![A-Z][a-z])")
#: Words whose "'s" is "is" or "has", no possessive ("there's something new", "it's done").
_CONTRACTED = frozenset(
    ("it", "that", "there", "here", "what", "who", "where", "when", "how", "he", "she", "let")
)


def possessive(text: str) -> re.Match[str] | None:
    """Return the first possessive's "'s" in ``text`` (a contraction's is none)."""
    return next((m for m in _OWNED.finditer(text) if m[1].lower() not in _CONTRACTED), None)


#: The most words an attribute is given in ("the level's target frame rate is 60 fps").
_ATTRIBUTE_WORDS = 6


def _attribute_words(text: str, *, contractions: bool = True) -> list[str]:
    """Return the attribute's stems after a possessive, head last; recall's reading (without
    ``contractions``) opens none at "there's", ends at a past verb or a number (0164, 0179)."""
    found = _OWNED.search(text) if contractions else possessive(text)
    if found is None:
        return []
    words = lexical.tokens(text[found.end() :])
    for i, word in enumerate(words[: _ATTRIBUTE_WORDS + 1]):
        past = not contractions and i and (_past(word) or word[:1].isdigit())  # its value
        past = past or (not i and word[:1].isdigit())  # "it's 555-0199" names none (0187)
        if past or word in COPULA_WORDS or word == "now" or stem(word) in CHANGE_WORDS:
            return [
                stem(w) for w in words[:i]
                if w not in STOPWORDS and w not in copies.FILLERS and w not in CLITICS
            ]  # fmt: skip
    return []


def attributes_apart(text: str, other: str) -> bool:
    """Say whether the two texts give values of two attributes ("the account's carrier is
    MSC", "the account's delivery address is Shed 7"; "the billing contact", "the billing
    address"): each names one after a possessive, and the two share no word or end in two
    head nouns, or one head noun each modifies by words the other does not hold ("the work
    email", "the personal email"; ADR 0139); or without a possessive ("The door code for Elm
    block is 7720": :func:`~engram.agents.attributes.named_attribute`, ADR 0173). Two
    attributes of one thing both stay true (ADR 0123)."""
    return words_apart(
        _attribute_words(text) or named_attribute(text),
        _attribute_words(other) or named_attribute(other),
    )


def asked_attribute(question: str) -> list[str]:
    """Return the attribute a question asks of a possessive, stemmed, its head last ("What
    is Beatrice Hale's shoe size?" -> ["shoe", "size"]): at most :data:`_ATTRIBUTE_WORDS`
    content words after it, to a function word or the question's end (ADR 0164)."""
    found = possessive(question)
    if found is None:
        return []
    words: list[str] = []
    for word in lexical.tokens(question[found.end() :])[:_ATTRIBUTE_WORDS]:
        if word in STOPWORDS or word in CLITICS or not word.isalpha() or word in PREDICATES:
            break
        words.append(stem(word))
    return words


def given_attribute(text: str) -> list[str]:
    """Return the attribute ``text`` gives a value of after a possessive (stems, head last;
    "Oscar Brennan's car is a black Ford Ranger" -> ["car"]), [] where it gives none."""
    return _attribute_words(text, contractions=False)


def words_apart(mine: list[str], theirs: list[str]) -> bool:
    """Say whether two attributes (stems, head last) are two: they share no word or end in
    two head nouns, or one head noun each modifies by words the other does not hold."""
    if not mine or not theirs:
        return False
    if not set(mine) & set(theirs) or mine[-1] != theirs[-1]:
        return True
    return bool(mine[:-1]) and bool(theirs[:-1]) and not set(mine[:-1]) & set(theirs[:-1])


def attribute_unsaid(text: str, other: str) -> bool:
    """Say whether ``text`` names the attribute it changes after a possessive ("Kasia's
    dentist appointment was moved to 17 March") and ``other`` holds none of its words
    ("Kasia is in Year 2 at St Bride's"): a change of one attribute leaves another as it was
    (ADR 0162)."""
    mine = _attribute_words(text)
    return bool(mine) and not set(mine) & set(content_stems(other))


def keeps_names(text: str, other: str) -> bool:
    """Say whether ``other``'s value is a name that ``text`` gives again ("Pablo is visiting
    Lisbon in June" of "Pablo lives in Lisbon"): it does not replace that value, so without a
    change announced it replaces nothing (ADR 0123). A value is what follows the first
    copula, or without one the last preposition ("is a product manager at Stripe" gives a
    role, not Stripe)."""
    found = _BARE_COPULA.search(other) or next(reversed(list(_GIVES.finditer(other))), None)
    if found is None:
        return False
    value = content(other[found.end() :])
    given = other[found.end() :]
    names = {stem(w) for m in NAME.finditer(given) for w in lexical.tokens(m.group())}
    return bool(value) and value <= names and value <= content(text)


def attribute_one_sided(text: str, other: str) -> bool:
    """Say whether one of the two texts gives an attribute after a possessive and the other
    gives none ("Globex's billing contact is Carlos Diaz", "Globex prefers contact by
    phone"): without a change announced, a memory that does not name the attribute does not
    give it anew (ADR 0123)."""
    return bool(_attribute_words(text)) != bool(_attribute_words(other))


#: A value written as a code: a quantity, a release or a time of day ("3.5.0", "v2.4.1",
#: "08:30"; value_anew, ADR 0143).
_VALUE_CODE = re.compile(r"v?\d+(?:\.\d+)*[a-z%]{0,3}|\d{1,2}:\d{2}(?:[ap]\.?m\.?)?")


#: A text's words as value_anew compares them: a number written whole, with its decimals or
#: its clock's colon ("5.4", "09:30"), is one word.
_VALUE_WORD = re.compile(r"[^\W_]+(?:[.:][^\W_]+)*")
#: The most words a value given anew may span ("Sister Mwangi", "Charge Nurse Olawale").
_VALUE_WORDS = 3


def _lead(mine: list[str], theirs: list[str]) -> int:
    """Return how many words, from the first, two texts' words share (case aside)."""
    lead = 0
    while lead < min(len(mine), len(theirs)) and mine[lead].lower() == theirs[lead].lower():
        lead += 1
    return lead


def value_anew(text: str, old: str) -> bool:
    """Say whether ``text`` gives one value in place of ``old``'s and says nothing else anew:
    the two are the same words but for one span of at most :data:`_VALUE_WORDS` words, a
    number in both ("The open playtest has 200 slots" -> "... has 500 slots", "runs Unreal
    Engine 5.2" -> "... 5.4"), or a name in both after a copula ("The charge nurse on night
    shift is Sister Brennan" -> "... is Sister Mwangi"). The same sentence with its one
    value changed is a state said anew, whether or not a change is announced (ADR 0123). The
    values are quantities: an id quoted in place of another ("AB-123", "AB-124") is not."""
    mine = _VALUE_WORD.findall(copies.numbers_apart(text))
    theirs = _VALUE_WORD.findall(copies.numbers_apart(old))
    # A noun naming the kind of value on one side only names nothing else ("The stage door
    # code is 1357" -> "Stage door: 8642", read "The stage door is 8642"; ADR 0158).
    heads = [{w for w in ws if stem(w.lower()) in VALUE_HEADS} for ws in (mine, theirs)]
    if bool(heads[0]) != bool(heads[1]):
        mine, theirs = (
            [w for w in ws if w not in h] for ws, h in zip((mine, theirs), heads, strict=True)
        )
    lead = _lead(mine, theirs)
    if 0 < lead < len(mine) and mine[lead - 1].lower() in DETERMINERS:
        # A modifier the old memory puts before the words both name the thing by, which the
        # new one leaves out ("The alarm code is 4471" of "The office alarm code is 5820",
        # read from "Alarm code: 4471"): one thing, named more briefly (ADR 0160).
        word = mine[lead].lower()
        j = next(
            (j for j in range(lead, min(lead + 3, len(theirs))) if theirs[j].lower() == word), 0
        )
        if j > lead and all(
            w.isalpha() and w.islower() and w not in STOPWORDS for w in theirs[lead:j]
        ):
            theirs = theirs[:lead] + theirs[j:]
            lead = _lead(mine, theirs)
    tail = 0
    while (
        tail < min(len(mine), len(theirs)) - lead
        and mine[-1 - tail].lower() == theirs[-1 - tail].lower()
    ):
        tail += 1
    given, gone = mine[lead : len(mine) - tail], theirs[lead : len(theirs) - tail]
    if not given or not gone or len(given) > _VALUE_WORDS or len(gone) > _VALUE_WORDS:
        return False
    if {c for c in set(codes(text)) ^ set(codes(old)) if not _VALUE_CODE.fullmatch(c.lower())}:
        return False  # an id one character off ("AB-123", "AB-124") names another thing
    if set(references(text)) != set(references(old)):
        return False  # "PR #5229" and "PR #5228" are two requests (ADR 0126)
    if all(w[0].isdigit() for w in given) and all(w[0].isdigit() for w in gone):
        # A number of eight digits or more is an id, never a quantity (ADR 0122).
        return all(sum(c.isdigit() for c in w) < 8 for w in (*given, *gone))
    copula = any(w.lower() in COPULA_WORDS for w in mine[:lead])
    return (
        copula
        and all(w[0].isupper() for w in given)
        and all(w[0].isupper() for w in gone)
        and not {w.lower() for w in given} & {w.lower() for w in gone}
    )


#: The determiners that point at one known thing ("the Mill Lane flat", "our Leeds store").
_DEFINITE = frozenset(("the", "this", "that", "our", "their", "its", "my", "your", "his", "her"))
#: The relations a subject holds with one thing at a time: where it lives, works,
#: is based, studies, parks. Under any other verb ("handles repairs at", "supplies",
#: "covers") a subject may hold the relation with several things of one kind at once. Word
#: forms, not stems: "Site visit at ..." is no "sits" (ADR 0143).
ONE_AT_A_TIME = frozenset(
    (
        "live", "lives", "lived", "living", "reside", "resides", "resided", "residing", "stay",
        "stays", "stayed", "staying", "work", "works", "worked", "working", "sit", "sits",
        "sat", "sitting", "report", "reports", "reported", "reporting", "belong", "belongs",
        "belonged", "belonging", "attend", "attends", "attended", "attending", "based",
        "located", "headquartered", "park", "parks", "parked", "parking", "sleep", "sleeps",
        "slept", "sleeping", "drive", "drives", "drove", "driven", "driving", "study",
        "studies", "studied", "studying", "bank", "banks", "banked", "banking", "move",
        "moves", "moved", "moving", "relocate", "relocates", "relocated", "relocating",
        "transfer", "transfers", "transferred", "transferring", "join", "joins", "joined",
        "joining",
    )
)  # fmt: skip


def instances_apart(text: str, old: str) -> bool:
    """Say whether ``text`` and ``old`` state a relation with two things of one kind, each
    named by its own modifier of the same noun after a definite determiner, where they first
    differ ("Pike Plumbing handles repairs at the Heron Close flat" and "... at the Canal
    Wharf flat"; "Windows update on the Galway laptop returned 0xA9B4DDBE" and "... on the
    Durban laptop returned 0x143A5F61"): two things, not one value said anew, whatever else
    each says of its own. The relation before them must be no copula ("is on the Atlas
    team" and "is on the Orion team" give one attribute twice) and none a subject holds with
    one thing at a time (:data:`ONE_AT_A_TIME`: "lives in the Mill Lane flat"). Only an
    announced change ("took over the Canal Wharf flat instead") makes the newer replace the
    older (ADR 0132).
    """
    mine, theirs = _VALUE_WORD.findall(text), _VALUE_WORD.findall(old)
    lead = _lead(mine, theirs)
    if not lead or mine[lead - 1].lower() not in _DEFINITE:
        return False
    reach = lead + 1 + _VALUE_WORDS
    if lead < min(len(mine), len(theirs)) and (
        mine[lead].lower() in {w.lower() for w in theirs[lead + 1 : reach]}
        or theirs[lead].lower() in {w.lower() for w in mine[lead + 1 : reach]}
    ):
        return False  # a modifier on one side only: one thing named briefly (ADR 0160)
    # The noun both name again first, within a few words of where they part.
    spans = [
        (i + j, i, j)
        for i in range(1, _VALUE_WORDS + 1)
        for j in range(1, _VALUE_WORDS + 1)
        if lead + i < len(mine) and lead + j < len(theirs)
        and mine[lead + i].lower() == theirs[lead + j].lower()
    ]  # fmt: skip
    if not spans:
        return False
    _, i, j = min(spans)
    given, gone, head = mine[lead : lead + i], theirs[lead : lead + j], mine[lead + i].lower()
    if not all(w.isalpha() for w in (*given, *gone)):
        return False  # a number or a code said anew is a value, not a thing's name
    if head in STOPWORDS or not head.isalpha():
        return False
    relation = [w.lower() for w in mine[:lead]]
    return not any(w in COPULA_WORDS or w in ONE_AT_A_TIME for w in relation)
