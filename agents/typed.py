"""The kind of value a question asks for, and whether a memory holds one (ADR 0120).

"What is Priya's phone number?" asks for a phone number: a memory about Priya that holds
none ("Priya lives in Pune") does not answer it, however near its words and meaning are. A
few kinds of value are written in a form a pattern can tell: a phone number, an email
address, an IP address, a web address. Where a question asks for one of them, a candidate
holding no value of that kind is relevant at most :data:`NO_VALUE` (under recall's default
floor, so such a question nothing in memory answers gets nothing by default; with
``min_score=0`` the candidates are still served, those holding a value first).

The question's words must name the kind plainly ("phone number", "email address", "IP
address", "URL", "link to", a price or a fee): "Did she change her phone?" asks of a phone,
"Which website did we launch?" of a site, not for a number or an address.

A question asking of one numbered thing ("Does Van 12 have a tail lift?") is not answered
by a memory of another one ("Van 7 has a tail lift"): such a memory is relevant at most
:data:`NO_VALUE` too (:class:`Numbered`, ADR 0159; a thing lettered, numbered before its
name, titled or named after "the", ADR 0161); nor is a question asking an attribute of a
possessive by a memory giving another one so (:class:`Attributed`, ADR 0164).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from engram.agents import shapes
from engram.agents.matching import MONTH_WORDS, STOPWORDS, stems_of
from engram.agents.statements import TITLES
from engram.projections import lexical

if TYPE_CHECKING:
    from engram.agents.matching import Matching

__all__ = [
    "ASKED",
    "MONEY",
    "NO_VALUE",
    "Attributed",
    "Both",
    "Joint",
    "Kind",
    "Numbered",
    "Owned",
    "Week",
    "asked",
    "days_of",
    "joined",
    "kind_texts",
    "lettered",
    "measures_apart",
    "numbered",
    "owned",
    "owner",
    "same_kind",
]

#: The most relevance of a candidate holding no value of the kind a question asks for: half
#: recall's default floor (0.05), so the default serves none of them.
NO_VALUE = 0.025


class Kind(NamedTuple):
    """A kind of value: its name, how a question asks for it, how a text writes one."""

    name: str
    question: re.Pattern[str]
    value: re.Pattern[str]

    def held(self, text: str) -> bool:
        """Say whether ``text`` holds a value of this kind."""
        return self.value.search(text) is not None


_PHONE_VALUE = re.compile(r"(?<![\w.])\+?\(?\d(?:[\d\s().-]{5,}\d)(?![\w.]*\d)")
KINDS = (
    Kind(
        "phone number",
        re.compile(
            r"\b(?:phone|mobile|cell|telephone|landline|fax)\s*(?:number|no\b|#)|\bnumber to"
            r" (?:call|reach|text)\b"
            # A line or an extension to dial (ADR 0148): "direct phone line", "direct dial".
            r"|\b(?:phone|telephone|direct)\s+(?:line|dial|extension)(?=\s*(?:[?.!,]|$)|\s+"
            r"(?:for|of|to|at|is|was)\b)"
            r"|\bextension\s+number\b",
            re.IGNORECASE,
        ),
        _PHONE_VALUE,
    ),
    Kind(
        "email address",
        re.compile(r"\be-?mail\s+address|\be-?mail\s*\?|\be-?mail\s*$", re.IGNORECASE),
        re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    ),
    Kind(
        "IP address",
        re.compile(r"\bIP\s+(?:address|of|for)\b|\bIPv[46]\b", re.IGNORECASE),
        re.compile(
            r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.]*\d)|\b[0-9a-f]{1,4}(?::[0-9a-f]{0,4}){2,7}\b",
            re.IGNORECASE,
        ),
    ),
    Kind(
        "web address",
        re.compile(
            r"\burl\b|\bweb\s+address|\bweb\s*site\s+address|\blink\s+to\b"
            # "What is Portbase's website?": the site's address, where "Which website did
            # we launch?" asks which site (ADR 0148).
            r"|\bwhat(?:'s|\u2019s|\s+(?:is|was|are))\s+(?:[\w'\u2019-]+\s+){0,4}?web\s*site"
            r"(?=\s*(?:[?.!]|$)|\s+(?:of|for)\b)",
            re.IGNORECASE,
        ),
        re.compile(
            r"https?://\S+|\bwww\.\S+|\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|dev|app|co|ai"
            r"|edu|gov|info|me|uk|de|fr|eu)\b",
            re.IGNORECASE,
        ),
    ),
)


#: The words that name a sum of money (not an allowance or a budget, which may be of pints,
#: days or minutes as often: "the staff drink allowance", "the error budget"; ADR 0184).
_SUM = (
    r"(?:price|prices|priced|cost|costs|fee|fees|fare|fares|rent|salary|salaries|wage|wages"
    r"|deposit|refund|charge|charges|tuition|stipend|bonus|bonuses)"
)
#: A share: "5.8%", "10 per cent".
_SHARE_RUN = r"\d\s?(?:%|per\s?cent\b)"
#: What may follow a sum's word in a question that asks for it: the question's end, or a
#: word that opens the rest of the clause ("the fee for", "the rent now", "the deposit we
#: paid"); another word is a noun the sum's word modifies ("the rent day", "the cost
#: centre"), which the question asks for instead.
_SUM_ENDS = (
    r"(?=\s*(?:[?.!,;:]|$)|\s+(?:for|at|of|on|in|to|per|this|that|now|each|every|a|an|the"
    r"|when|from|after|before|if|and|or|we|i|you|they|he|she|it|paid|charged|due|last|next"
    r"|today|going|these|those|there|here)\b)"
)
#: A sum of money: a question asking what something costs or pays ("What is the parking
#: fee at the Reno warehouse?", "How much did I pay for the boiler?", "What does the course
#: cost?") is answered by a memory holding an amount ("$370", "65 euros", "110k", "free"),
#: not by another fact of the same thing ("Reno warehouse cutoff is now 2pm"; ADR 0131).
#: The question must ask for the sum itself: "how much", "what fee", "what is the ... fee",
#: "what does it cost"; "When does Hannah pay rent?", "How are court fees paid?" and "Which
#: department owns the cost centre?" ask for a day, a way and a department (ADR 0134).
#: Asked for only, never a kind detection compares values by: two sums are as often two
#: things' as one thing's twice.
MONEY = Kind(
    "sum of money",
    re.compile(
        # ... not "How much notice is needed to get a refund?", which names what it measures
        # ("notice") before its verb (ADR 0185).
        rf"\bhow much\b(?!\s+(?!{_SUM}\b|money\b|cash\b)[a-z]+\s+(?:is|are|was|were|do|does|did"
        r"|will|would|should|can|could|must|has|have|had)\b)"
        r"[^?]*\b(?:pay|paid|spend|spent|owe|owed|earn|earns|earned|charge|charged"
        rf"|{_SUM})\b"
        # "How much is the allowance?", "How much are tickets?": a price, where "How much
        # time is left?" names what it measures before its verb (ADR 0148).
        r"|\bhow much\s+(?:is|are|was|were)\b"
        rf"|\b(?:what|which)\s+{_SUM}\b"
        r"|\bwhat(?:'s|\u2019s|\s+(?:is|was|are|were|will\s+be))\s+(?:[\w'\u2019-]+\s+){0,4}?"
        rf"{_SUM}\b{_SUM_ENDS}"
        r"|\bwhat\s+(?:does|did|do|will|would)\b[^?]*\b(?:cost|costs|pay|charge|charges|earn"
        r"|earns)\b",
        re.IGNORECASE,
    ),
    re.compile(
        # (A number inside a code is none: "GV7K9M2P" holds no 2p; ADR 0182.)
        r"[$€£¥₹]\s?\d|(?<![^\W\d_])\d[\d,.]*\s?(?:dollars?|euros?|pounds?|yen|rupees?|francs?|usd|eur"
        r"|gbp|chf|cad|aud|k|quid|bucks|cents?|pence|p|kroner|kronor|krona|kronur|zloty|zł"
        r"|yuan|rmb|won|rand|pesos?|reais|real|lira|liras|dirhams?|rupiah|ringgit|baht|forint"
        r"|sek|nok|dkk|pln|jpy|inr|cny|mxn|brl|zar|nzd|sgd|hkd)\b"
        r"|\b(?:free|no charge|nothing|waived)\b"
        # A share of a price is one ("Deposit is 25% on booking", "commission is 10 per
        # cent"; ADR 0173).
        rf"|{_SHARE_RUN}",
        re.IGNORECASE,
    ),
)
#: The kinds a question may ask for.
ASKED = (*KINDS, MONEY)
#: A share ("5.8%", "10 per cent") and a sum in a currency ("£5.10", "12 dollars").
_SHARE = re.compile(_SHARE_RUN, re.IGNORECASE)
_CURRENCY = re.compile(
    r"[$€£¥₹]\s?\d|(?<![^\W\d_])\d[\d,.]*\s?(?:dollars?|euros?|pounds?|quid|bucks|pence)\b",
    re.IGNORECASE,
)


def measures_apart(text: str, other: str) -> bool:
    """Say whether one text gives a share and no sum, the other a sum and no share ("Furnace
    is our 5.8% oatmeal stout", "A pint of Furnace stout is £5.10"), or one a sum in a
    currency and the other no value of money at all ("Studio C mix sessions are $85 an hour",
    "Studio C is the mix room"): told without a change, two attributes (ADR 0185)."""
    mine, theirs = _measured(text), _measured(other)
    if {mine, theirs} == {(True, False), (False, True)}:
        return True
    return (mine[1] and not MONEY.value.search(other)) or (
        theirs[1] and not MONEY.value.search(text)
    )


def _measured(text: str) -> tuple[bool, bool]:
    """Say whether ``text`` gives a share, and whether it gives a sum in a currency."""
    return _SHARE.search(text) is not None, _CURRENCY.search(text) is not None


def same_kind(text: str, other: str, *, exact: bool = False) -> bool:
    """Say whether two texts give different values of one kind ("+44 20 7946 0011" and
    "+351 21 555 0199"): the kind says which attribute they give, where their words may not
    ("'s phone number is", "you can reach her on"; ADR 0119). ``exact``: only the kinds
    whose pattern no other value matches (an email, an IP or a web address; a phone
    number's digits may be a date's)."""
    for kind in KINDS[1:] if exact else KINDS:
        mine = {m.group() for m in kind.value.finditer(text)}
        theirs = {m.group() for m in kind.value.finditer(other)}
        if mine and theirs and mine != theirs:
            return True
    return False


class Numbered(NamedTuple):
    """A numbered thing a question asks of ("Does Van 12 have a tail lift?", "... in bed 6"):
    a memory giving the same word another number, and not this one, speaks of another of
    them ("Van 7 has a tail lift"), as an id one character off names another thing (ADR
    0159). So do a thing lettered ("Block A" beside "Block C"), a number before a name
    ("16 Larch Avenue" beside "14 larch avenue") and a title before a surname ("Mr Patel"
    beside "Mrs Patel"; ADR 0161): ``number`` is the letter, the number or the title, and
    ``way`` says where it stands. A memory labelling nothing by that word is left as it is."""

    name: str
    word: str
    number: str
    #: "after" the word ("Van 12"), "before" it ("16 Larch"), "title", "named", "joined"
    way: str = "after"

    def held(self, text: str) -> bool:
        """Say whether ``text`` may speak of this numbered thing."""
        if self.way == "after":
            found = {n for w, n in numbered(text) | lettered(text) if w == self.word}
        elif self.way == "joined":
            found = {n for n, w in joined(text) if w == self.word}
        elif self.way == "named":
            if re.search(rf"\b{re.escape(self.number)}\b", text, re.IGNORECASE):
                return True
            found = {
                m.lower() for m in re.findall(rf"\b([A-Z][a-z]{{2,30}})\s+{self.word}\b", text)
            }
        else:
            before = _TITLED if self.way == "title" else _BEFORE
            found = {
                m[1].lower().rstrip(".")
                for m in re.finditer(rf"{before}\s+{re.escape(self.word)}\b", text, re.IGNORECASE)
            }
        return not found or self.number in found


#: A word and the number it labels ("Van 12", "bed 6", "Room 305"; a code such as "B12" is an
#: id's, ADR 0117): a function word, a month or a day, or a plural or a verb in the third
#: person ("has 4", "costs 180", "runs 2") labels nothing.
_NUMBERED = re.compile(r"\b([A-Za-z][A-Za-z'-]{1,30})\s+#?(\d+[A-Za-z]?)\b")
#: A word and the capital letter it labels ("Block A", "Plan B", "rack D", "Hall A's PUE";
#: ADR 0173, 0179), not "I", nor an initial ("J.K. Rowling").
_LETTERED = re.compile(r"\b([A-Za-z][a-z]{2,30})\s+([A-HJ-Z])\b(?![.-]?\w|['\u2019](?!s\b)\w)")
#: A number before a name ("16 Larch Avenue", "221B Baker Street") and a title before a
#: surname ("Mr Patel", "Mrs. Patel"): the labels :meth:`Numbered.held` reads beside a name.
_BEFORE = r"\b(\d{1,5}[A-Za-z]?)"
_TITLED = r"\b(mr|mrs|ms|miss|mx)\.?"
_NAMED_AT = re.compile(r"\b(\d{1,5}[A-Za-z]?)\s+([A-Z][a-z]{2,30})\b")
#: A name given to a kind of thing after "the" ("the Whitcombe probate", "the Hartley
#: divorce") or a preposition ("the door code for Rowan block"): another name given to that
#: kind names another of them (ADR 0161, 0173).
_THE_NAMED = re.compile(
    r"\b(?:[Tt]he|of|for|in|at|on|from)\s+([A-Z][a-z]{2,30})\s+([a-z]{3,30})\b(?!['\u2019-])"
)
#: A number joined to a noun ("a three-bedroom flat", "the 2-litre jug"): another number so
#: joined to it is another of them (ADR 0173).
_JOINED = re.compile(
    r"\b(\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)-([a-z]{3,30})\b"
    r"(?!-)",
    re.IGNORECASE,
)
_TITLE_OF = re.compile(r"\b(Mr|Mrs|Ms|Miss|Mx)\.?\s+([A-Z][a-z]{1,30})\b")


_NOT_LABELS = MONTH_WORDS | frozenset(
    ("the", "a", "an", "of", "in", "on", "at", "to", "for", "by", "from", "with", "and", "or",
     "is", "are", "was", "were", "be", "has", "have", "had", "about", "around", "over", "under",
     "after", "before", "since", "until", "than", "per", "every", "each", "all", "only", "just",
     "top", "last", "next", "first", "page", "step", "monday", "tuesday", "wednesday",
     "thursday", "friday", "saturday", "sunday")
)  # fmt: skip


def numbered(text: str) -> frozenset[tuple[str, str]]:
    """Return the (word, number) labels ``text`` gives, lower-cased."""
    out = set()
    for word, number in _NUMBERED.findall(text):
        w = word.lower()
        if w in _NOT_LABELS or (len(w) > 3 and w[-1] == "s" and not w.endswith(("ss", "us", "is"))):
            continue
        out.add((w, number.lower()))
    return frozenset(out)


class Both(NamedTuple):
    """A kind of value asked of one labelled thing, or of an attribute of a possessive: a
    memory must hold a value of the kind and may not speak of a sibling of the thing (ADR
    0173), nor give another attribute of the owner ("When is the van's insurance due?", "The
    van's MOT is due in March"; ADR 0176)."""

    kind: Kind
    label: Numbered | Attributed

    @property
    def name(self) -> str:
        """The kind of value's name, as a :class:`Kind`'s."""
        return self.kind.name

    def held(self, text: str) -> bool:
        """Say whether ``text`` may answer: a value of the kind, of this thing."""
        return self.kind.held(text) and self.label.held(text)


#: The stems naming one attribute, a phone ("phone", "mobile number", "cell"): a landline
#: and a fax are other lines (ADR 0185).
_PHONES = frozenset(("phon", "mobil", "cell", "telephon", "number", "no"))


def _one_phone(asked: Sequence[str], given: Sequence[str]) -> bool:
    """Say whether two attributes (stems) both name a phone, by any of its names ("cell
    number", "mobile"; ADR 0185)."""
    return bool(given) and _PHONES.issuperset(asked) and _PHONES.issuperset(given)


#: The days of the week, as written alone, plural or shortened ("Saturdays", "Sat"), and the
#: two parts of the week ("weekdays", "weekends"), each the days it stands for.
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEK = re.compile(
    r"\b(?:((?i:mon|tues|wednes|thurs|fri|satur|sun))days?|(?-i:(Mon|Tue|Wed|Thu|Fri|Sat|Sun))"
    r"(?:s|es|rs|urs)?\.?|((?i:week(?:day|end)))s?)\b"
)
#: A span or every day: a memory giving one answers any day's question, as ranges do.
_EVERY_DAY = re.compile(
    r"\b(?:daily|every\s+day|each\s+day|7\s+days|seven\s+days)\b"
    r"|\b(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\s*(?:-|\u2013|to|till|until|through)\s*"
    r"(?:mon|tue|wed|thu|fri|sat|sun)",
    re.IGNORECASE,
)


def days_of(text: str) -> frozenset[str]:
    """Return the days of the week ``text`` names ("weekends": Saturday and Sunday), empty
    where it names none or a span or every day ("Mon-Fri", "daily"; ADR 0177)."""
    if _EVERY_DAY.search(text):
        return frozenset()
    found: set[str] = set()
    for day, short, part in _WEEK.findall(text):
        if part:
            found.update(_DAYS[5:] if part.lower() == "weekend" else _DAYS[:5])
        else:
            found.add(next(d for d in _DAYS if d.startswith((day or short).lower()[:3])))
    return frozenset(found)


class Week(NamedTuple):
    """The days of the week a question asks of ("When does the canteen close on
    weekdays?"): a memory naming only other days speaks of another part of the week
    ("Canteen closes 14:00 weekends."; ADR 0177). A memory naming no day, a span or every
    day is left as it is."""

    days: frozenset[str]

    def held(self, text: str) -> bool:
        """Say whether ``text`` may speak of these days."""
        theirs = days_of(text)
        return not theirs or bool(theirs & self.days)


class Joint(NamedTuple):
    """Two things a question asks, each of which a memory must hold (ADR 0177)."""

    first: Kind | Both | Numbered | Attributed
    second: Week

    @property
    def name(self) -> str:
        """The first's name."""
        return self.first.name

    def held(self, text: str) -> bool:
        """Say whether ``text`` may answer both."""
        return self.first.held(text) and self.second.held(text)


class Attributed(NamedTuple):
    """An attribute a question asks of a possessive ("When is Oscar Brennan's birthday?"):
    a memory giving another attribute after a possessive ("Oscar Brennan's car is a black
    Ford Ranger") and naming the asked one nowhere does not answer it (ADR 0164). A memory
    giving no attribute so is left as it is. A phone is one attribute by any of its names
    ("What is Maria's cell number?" of "Maria's mobile is ..."; ADR 0185)."""

    name: str
    words: tuple[str, ...]  # stems, the head last

    def held(self, text: str) -> bool:
        """Say whether ``text`` may answer the question of this attribute."""
        given = shapes.given_attribute(text)
        if not given or not shapes.words_apart(list(self.words), given):
            return True
        return self.words[-1] in stems_of(text).every or _one_phone(self.words, given)


class Owned(NamedTuple):
    """An attribute a question asks of a named owner ("What is Dr Hale's mobile number?"):
    a memory giving the same attribute of another named owner ("Mrs Okafor's mobile number
    is 07700 900312") and naming the asked one nowhere does not answer it (ADR 0169)."""

    owner: frozenset[str]  # the owner's name words ("hale")
    words: tuple[str, ...]  # the attribute's stems, the head last

    def apart(self, text: str) -> bool:
        """Say whether ``text`` gives this attribute of another owner, and not of this one."""
        given = shapes.given_attribute(text)
        if not given or (
            shapes.words_apart(list(self.words), given) and not _one_phone(self.words, given)
        ):
            return False  # no attribute, or another one: ADR 0164's to weigh
        theirs = owner(text)
        if not theirs or theirs & self.owner:
            return False
        return not self.owner & set(lexical.tokens(text))


#: A name before a possessive: its run of capitalised words ("Dr Hale's", "Mrs Okafor's").
_OWNER = re.compile(r"((?:[A-Z][\w'-]*\s+){0,3}[A-Z][\w-]*)['\u2019]s\s(?![A-Z])")


def owner(text: str) -> frozenset[str]:
    """Return the words naming whose attribute the first possessive of ``text`` gives, where
    a name does ("What is Dr Hale's mobile number?" -> {"hale"}; titles and function words
    aside), empty where a common word owns it ("the account's carrier"; ADR 0169)."""
    found = shapes.possessive(text)
    if found is None:
        return frozenset()
    run = _OWNER.search(text, max(found.start() - 80, 0), found.end())
    if run is None or run.end() != found.end():
        return frozenset()
    # A clitic is no name: "What's Siobhan Keane's ..." is owned by Siobhan Keane (ADR 0185).
    words = [w for w in lexical.tokens(run.group(1)) if w not in STOPWORDS and w not in TITLES]
    return frozenset(w for w in words if len(w) > 1)


def owned(query: str) -> Owned | None:
    """Return the attribute ``query`` asks of a named owner, if it asks one (ADR 0169)."""
    words = shapes.asked_attribute(query)
    named = owner(query) if words else frozenset()
    return Owned(named, tuple(words)) if named else None


def joined(text: str) -> frozenset[tuple[str, str]]:
    """Return the (number, noun) pairs ``text`` joins ("three-bedroom" -> ("3", "bedroom")),
    the number in digits, lower-cased."""
    return frozenset(
        (_DIGITS.get(n.lower(), n.lstrip("0") or "0"), w.lower()) for n, w in _JOINED.findall(text)
    )


_DIGITS = {
    w: str(i + 1)
    for i, w in enumerate(
        ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve")
    )
}  # fmt: skip


def lettered(text: str) -> frozenset[tuple[str, str]]:
    """Return the (word, letter) labels ``text`` gives ("Block A"), lower-cased."""
    return frozenset(
        (w.lower(), letter.lower())
        for w, letter in _LETTERED.findall(text)
        if w.lower() not in _NOT_LABELS and w.lower() not in _ASKING
    )


#: The words a question opens with ("What J.K. Rowling quote ..."): no label's.
_ASKING = frozenset(("what", "which", "who", "whom", "whose", "when", "where", "why", "how"))


def asked(query: str) -> Kind | Both | Numbered | Attributed | Week | Joint | None:
    """Return the kind of value ``query`` asks for, if it names one plainly (the first
    named, when it names several), else the one numbered, lettered, titled or named thing
    it asks of, if it labels exactly one (ADR 0159, 0161), else the attribute it asks of a
    possessive (ADR 0164), else None; a kind asked of such a thing or attribute is a
    :class:`Both` of the two (ADR 0173, 0176); the days of the week it asks of are a
    :class:`Week`, beside the rest a :class:`Joint` (ADR 0177)."""
    found = [(m.start(), k) for k in ASKED if (m := k.question.search(query))]
    labels = [(w, n, "after") for w, n in sorted(numbered(query) | lettered(query))]
    labels += [
        (name.lower(), n.lower(), "before")
        for n, name in _NAMED_AT.findall(query)
        if name.lower() not in _NOT_LABELS
    ]
    labels += [(name.lower(), t.lower(), "title") for t, name in _TITLE_OF.findall(query)]
    labels += [(w, n, "joined") for n, w in sorted(joined(query))]
    labels += [
        (kind, name.lower(), "named")
        for name, kind in _THE_NAMED.findall(query)
        if name.lower() not in _NOT_LABELS
    ]
    kind = min(found, key=lambda f: f[0])[1] if found else None
    attribute = shapes.asked_attribute(query)
    other: Numbered | Attributed | None = (
        Numbered("numbered thing", *labels[0])
        if len(labels) == 1
        else Attributed("attribute", tuple(attribute))
        if attribute
        else None
    )
    # A value asked of one labelled thing, or of an owner's attribute: of the value's kind,
    # and of that thing ("What is the rent for a three-bedroom flat?"; ADR 0173, 0176).
    first = other if kind is None else Both(kind, other) if other is not None else kind
    days = days_of(query)
    if not days:
        return first
    return Week(days) if first is None else Joint(first, Week(days))  # ADR 0177


def kind_texts(
    kind: Kind | Both | Numbered | Attributed | Week | Joint | Owned | None,
    positions: Sequence[int],
    m: Matching,
) -> dict[int, str]:
    """Return ``m.texts``, with the texts of ``positions`` read where ``kind`` is asked for
    (a value is looked for in them)."""
    return m.read(positions) if kind is not None else m.texts
