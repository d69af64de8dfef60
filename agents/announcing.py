"""Whether a memory announces a change of state, and where (ADRs 0075, 0106, 0119, 0123,
0126, 0143).

A change is announced by a change word as written or inflected (:func:`changes`: "moved",
"now", "no longer", "rescheduling"; not "no change", "a scale and polish"), not describing a
thing ("for the new laptop", "the updated log" within an event) nor naming a thing done
("raised 12 findings"), or by a phrase no one word makes (:data:`CHANGE_PHRASES`: "gave up
... for", "these days", a hand-over, a date moved, a value from a day on). Detection
(:mod:`engram.agents.candidacy`) lowers its threshold for an announced change and lets it
replace what a state said otherwise would not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engram.agents import shapes
from engram.agents.matching import stem
from engram.agents.statements import CHANGE_FORMS, CHANGE_WORDS
from engram.projections import lexical

__all__ = ["CHANGE_PHRASES", "FROM_ON", "announced", "announced_at", "announces", "changes"]


def announces(text: str) -> bool:
    """Say whether ``text`` announces a change of state: a change word (:func:`changes`)
    that describes no thing and names no thing done, or a phrase of
    :data:`CHANGE_PHRASES`."""
    words = lexical.tokens(text)
    event: bool | None = None  # whether the text tells an event, read once if asked
    for i, w in enumerate(words):
        if not changes(w) or _described(words, i) or _done(words, i) or _side(words, i):
            continue
        describes = i >= 1 and w.endswith("ed") and words[i - 1] in shapes.DETERMINERS
        # "New patient Mr Daniel Kim registered": "new" opening the subject of an event.
        opening = w == "new" and (i == 0 or (i == 1 and words[0] in shapes.DETERMINERS))
        if (w.endswith("ing") or describes or opening) and (
            event if event is not None else (event := shapes.told_event(text))
        ):
            # Within an event told in the past tense, a change word describing a thing or
            # how it was done tells no change of its own ("reminded the site to file the
            # updated log", "resolved the clash by moving 7B to Room 12"; ADR 0143).
            continue
        return True
    return bool(CHANGE_PHRASES.search(text))


def changes(word: str) -> bool:
    """Say whether ``word`` (lowercased) is a change word: one of
    :data:`~engram.agents.statements.CHANGE_FORMS` as written, or another form of one ending
    in "-ed" or "-ing" ("rescheduling", "reassigned"). The base form of a change verb is a
    noun or an order as often ("no change", "a scale and polish", "Windows update", "a
    double period", "switch it off"), and announces nothing (ADR 0143)."""
    return word in CHANGE_FORMS or (word.endswith(("ed", "ing")) and stem(word) in CHANGE_WORDS)


#: Verbs that set an amount anew ("raised the limit to 500", "was cut") and also name a
#: thing done ("raised 12 findings", "raised a ticket", "cut the ribbon"; ADR 0143).
_AMOUNT_VERBS = frozenset(
    stem(w) for w in ("raised", "lowered", "increased", "decreased", "reduced", "cut")
)
#: Words that say an amount verb sets a value: its new value or its step follows.
_SETS = frozenset(("to", "by", "from", "until", "till"))
#: Words before an amount verb that make it a passive or a perfect: "was raised", "got cut".
_BEFORE_SET = frozenset(("is", "are", "was", "were", "be", "been", "being", "got", "gets"))


def _done(words: Sequence[str], i: int) -> bool:
    """Say whether ``words[i]``, an amount verb, names a thing done rather than a value set
    anew: no new value or step follows it ("to 500", "by 10%") and no form of "be" precedes
    it ("Monitor Rory Campbell visited the Exeter site and raised 12 findings")."""
    if stem(words[i]) not in _AMOUNT_VERBS:
        return False
    if i >= 1 and words[i - 1] in _BEFORE_SET:
        return False
    return not _SETS & set(words[i + 1 : i + 1 + _VALUE_REACH])


#: How far after an amount verb its new value is looked for ("raised the price of Transit
#: brake pads to 79").
_VALUE_REACH = 8


#: Prepositions whose object a "new" describes ("for the new laptop", "near the new station").
_OBJECT_OF = frozenset(("for", "at", "near", "to", "with", "from", "about", "in", "on", "by"))


def _described(words: Sequence[str], i: int) -> bool:
    """Say whether ``words[i]`` is "new" describing a preposition's object ("Set aside $280
    for the new laptop"): a thing named, not a value given anew ("my new email is ...", "has
    a new time"; ADR 0126)."""
    if words[i] != "new":
        return False
    j = i - 1 if i >= 1 and words[i - 1] in ("the", "a", "an", "this", "that", "our", "my") else i
    return j >= 1 and words[j - 1] in _OBJECT_OF


#: Words before "left" that make it a side ("the left foreleg", "upstage left", "keep
#: left"), and words after it that it names the side of ("left hand", "left wing").
_SIDE_BEFORE = frozenset(
    ("the", "a", "an", "his", "her", "their", "its", "my", "your", "our", "upstage",
     "downstage", "stage", "far", "top", "bottom", "upper", "lower", "front", "rear", "back",
     "turn", "second", "first", "third", "next", "keep", "hard", "sharp", "bear")
)  # fmt: skip
_SIDE_AFTER = frozenset(
    ("hand", "handed", "side", "wing", "lane", "turn", "foot", "leg", "arm", "eye", "ear",
     "knee", "hip", "shoulder", "foreleg", "hind", "fore", "front", "rear", "upper", "lower",
     "paw", "corner", "door", "exit", "entrance", "wheel", "field")
)  # fmt: skip


#: Words after "left" that make it a thing left as it was ("scaffolding left up", "a
#: salmon left out", "the door left open"), not a leaving.
_LEFT_AS_IT_WAS = frozenset(
    ("up", "out", "open", "over", "behind", "unattended", "untouched", "outside",
     "running", "alone", "unlocked", "unplugged")
)  # fmt: skip


def _side(words: Sequence[str], i: int) -> bool:
    """Say whether ``words[i]`` is "left" naming a side or a thing left as it was, not a
    leaving ("limping on the left foreleg", "enters from upstage left", "scaffolding left up
    on Bridge Street"; "She left the firm" announces; ADR 0148, 0152)."""
    if words[i] != "left":
        return False
    before = i >= 1 and words[i - 1] in _SIDE_BEFORE
    after = words[i + 1] if i + 1 < len(words) else ""
    return before or after in _SIDE_AFTER or after in _LEFT_AS_IT_WAS


def announced(text: str) -> bool:
    """Say whether ``text`` announces a change that happened (:func:`announces`), not only
    one it plans ("Will upgrade payments-api to version 4.4.0 on Thursday",
    :func:`shapes.planned_change`; ADR 0123)."""
    if not announces(text):
        return False
    return bool(CHANGE_PHRASES.search(text)) or not shapes.planned_change(text)


_STATUS_RUN = "|".join(sorted(shapes.STATUSES))
_DAYS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
)
#: A value from a day on, ending its clause: "The cellar door opens at 10am from May", "The
#: fee rises to 62 from 1 April" (not "the invoice from March is unpaid"; ADR 0160).
_FROM_ON = (
    rf"\bfrom\s+(?:the\s+)?(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?:{_DAYS})"
    r"(?:\s+\d{1,2}(?:st|nd|rd|th)?)?(?:\s+\d{4})?\s*(?:[.;,!]|$)"
)
#: :data:`_FROM_ON` alone: what comes before it is the value, not what changed.
FROM_ON = re.compile(_FROM_ON, re.IGNORECASE)
#: A thing or a person working again: back in use, on the roster, returned to service,
#: repaired (ADR 0167).
_RETURNED = (
    r"\bback\s+(?:in\s+use|in\s+action|on\s+the\s+(?:roster|rota|road)|at\s+work|to\s+work"
    r"|on\s+duty|up\s+and\s+running|in\s+service|in\s+operation|online)\b"
    r"|\b(?:returned|returns|return)\s+to\s+(?:service|work|use|duty)\b"
    r"|\b(?:was|were|has\s+been|have\s+been|got|is\s+now|are\s+now)\s+"
    r"(?:fixed|repaired|mended)\b(?!\s+(?:at|for|to|rate|term|price)\b)"
    r"|\b(?:fit|well|working)\s+again\b"
)
RETURNED = re.compile(_RETURNED, re.IGNORECASE)
#: A thing or a person out of action: what a return to work replaces, whatever else the two
#: memories say (ADR 0167).
OUT_OF_ACTION = re.compile(
    r"\b(?:broken|broke\s+down|out\s+of\s+(?:service|order|action|use)|not\s+working|faulty"
    r"|leaking|(?:is|are|was|were|went)\s+down\b|offline|in\s+(?:heavy\s+)?maintenance"
    r"|in\s+for\s+(?:repair|service)|awaiting\s+(?:repair|parts|a\s+part)"
    r"|(?:on|off)\s+sick(?:\s+leave)?|off\s+work|signed\s+off)\b",
    re.IGNORECASE,
)


def back_in_action(new: str, old: str) -> bool:
    """Say whether ``new`` tells a thing or a person working again (:data:`RETURNED`) and
    ``old`` told it out of action (:data:`OUT_OF_ACTION`): one attribute's two values,
    however little else the two say alike ("The ice machine is broken; an engineer is
    booked for Thursday" / "The ice machine was fixed this morning, it needed a new pump";
    ADR 0167)."""
    return (
        bool(RETURNED.search(new))
        and bool(OUT_OF_ACTION.search(old))
        and not (RETURNED.search(old))
    )


#: Phrases that announce a change where no one word does: "gave up the harp for the
#: saxophone", "sold the old car", "these days prefers amber", "used to live in Lyon" (ADR
#: 0119), a hand-over (ADR 0143). "The old" alone does not ("a leftover from the old
#: experiment"), nor "passed the exam".
CHANGE_PHRASES = re.compile(
    r"\b(?:gave|give|given|giving)\s+up\b|\bthese\s+days\b|\bused\s+to\b|\bno\s+more\b"
    r"|\b(?:sold|ditched|scrapped|retired|swapped|traded|abandoned)\s+"
    r"(?:the|her|his|their|my|our|its)\s+old\b"
    # An amount that moved, and a value from a time on (ADR 0126): "the stock is down to 35
    # doses", "went up to 72 euros", "rose to 72" (not "grew up in Porto"), "from this
    # month the clinic closes at 4pm", "as of today", "starting next week".
    r"|\b(?:is|are|was|were|now|went|gone|goes|go)\s+(?:up|down)\b"
    r"|\b(?:rises|rose|risen|falls|fell|fallen|drops|dropped|climbs|climbed|grew|grown|shrank)"
    r"\s+(?:to|by|from)\b"
    # Their plain form before an amount: "two-bedroom rents rise to £815" (ADR 0174), not
    # "rise to the occasion".
    r"|\b(?:rise|fall|drop|climb)\s+(?:to|by)\s+(?:[$\u00a3\u20ac]\s?)?\d"
    # ... and told as under way: "day pass going up to £13.50", "rising to 62" (ADR 0182).
    r"|\b(?:going|rising|falling|dropping|climbing)\s+(?:(?:up|down)\s+)?(?:to|by)\s+\W?\d"
    r"|\bfrom\s+(?:this|next|today|tomorrow|now\s+on)\b|\bas\s+of\s+(?:today|now|this|next)\b"
    r"|\bstarting\s+(?:today|tomorrow|this|next)\b"
    # A hand-over (ADR 0143): "ownership of the service passed to Lucia", "Imogen passed the
    # book club to Felix", "handed the Horizon bids over to Yusra", "took over the rota",
    # "stepped down".
    r"|\b(?:passed|passes|handed|hands)\s+(?:(?!(?:to|through|by|along|across|past|on|in|at|around)\b)[\w'-]+\s+){0,6}?(?:over\s+)?to\b"
    r"|\b(?:handed|hands|took|takes|taken|taking)\s+over\b|\bstep(?:ped|s)?\s+down\b"
    # A named thing sold to a named buyer: "Tom Hadley sold Ashworth Aero to Skyworks" (0185).
    r"|\b(?:sold|sells)\s+(?:the\s+)?(?-i:[A-Z])[\w&'.-]*(?:\s+[\w&'.-]+){0,5}?\s+to\s+(?-i:[A-Z])"
    # A date moved: "was pushed back to 31 July", "brought forward to Monday"; a value
    # from a day on, opening its clause: "From March the shop opens at 9am" (not "runs from
    # March to May").
    r"|\b(?:pushed|put|set)\s+back\b|\b(?:brought|pulled)\s+forward\b"
    # ... with its object between ("pushed the Jennings trial back to 12 May"; ADR 0148).
    r"|\b(?:pushed|put|moved|brought|pulled)\s+(?:the|a|an|our|their|his|her|its|my)\s+"
    r"(?:[\w'-]+\s+){0,5}?(?:back|forward)\s+(?:(?:to|by|until)\s+)?(?:\d|next\b|later\b"
    rf"|tomorrow\b|(?:early|mid|late)\b|an?\s+(?:day|week|month|year)|one\b|two\b|three\b|{_DAYS})"
    # A state returned to, and a status reached, no object after it: "SC-12 is back in
    # service", "the claim has settled", "the lease has expired" (ADR 0151).
    r"|\bback\s+(?:in\s+service|in\s+stock|online|in\s+operation|to\s+normal)\b"
    # ... and a thing or a person working again (ADR 0167): "is back in use", "back on the
    # roster", "returned to service", "the ice machine was fixed this morning", "has been
    # repaired" (not "the rate was fixed at 4%"), an amount put or turned up or down ("put the
    # cat dental price up to 245", "turned the cold store down to 3°C", "we're up to 78
    # members"; ADR 0184), a plan changed ("Change of plan:").
    rf"|{_RETURNED}"
    r"|\b(?:put|puts|putting|turned|turns|turning)\s+(?:[\w'-]+\s+){0,5}?(?:up|down)\s+(?:to|by)\s+\W?\d"
    # ... or dropped, raised, lowered with its object between: "We've dropped the reef display
    # to 24°C" (ADR 0185).
    r"|\b(?:dropped|raised|lowered|reduced|increased|cut)\s+(?:the|our|its|their|his|her|my)\s+"
    r"(?:[\w'-]+\s+){0,5}?(?:to|by)\s+\W?\d"
    r"|(?:'|\u2019)(?:re|s)\s+(?:up|down)\s+(?:to|by)\s+\W?\d"
    r"|\bchange\s+of\s+plans?\b"
    r"|\b(?:has|have)\s+(?:settled|closed|reopened|resumed|ended|expired|lapsed)\b"
    r"(?!\s+(?:the|a|an|its|their|his|her|our|my|this|that|these|those|\d)\b)"
    # A status given in the passive: "the order was cancelled", "RFI-051 has been closed".
    rf"|\b(?:was|were|has\s+been|have\s+been)\s+(?:{_STATUS_RUN})\b"
    # ... or a day of it ("From 1 July flight EZ8412 departs at 07:40", "Since the 3rd of
    # March the clinic opens at 8"; ADR 0155).
    rf"|(?:^|[.;,:]\s*)(?:from|since)\s+(?:the\s+)?(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?)?"
    rf"(?:(?:early|mid|late)[- ])?(?:{_DAYS})\b"
    r"(?!\s+(?:to|until|till|through|and)\b)"
    # ... or ending its clause (_FROM_ON); a date moved to a day ("Harvest start pushed to
    # 29 September"; ADR 0160).
    rf"|{_FROM_ON}"
    rf"|\b(?:pushed|put)\s+to\s+(?:the\s+)?(?:\d|next\b|{_DAYS})",
    re.IGNORECASE,
)


_WORD = re.compile(r"[^\W_]+")


def announced_at(text: str) -> int:
    """Return where the first word announcing a change starts in ``text`` (its length when
    none does)."""
    phrase = CHANGE_PHRASES.search(text)
    end = phrase.start() if phrase else len(text)
    found = list(_WORD.finditer(text, 0, end))
    words = [f.group().casefold() for f in found]
    for i, word in enumerate(words):
        if changes(word) and not _described(words, i) and not _side(words, i):
            return found[i].start()
    return end
