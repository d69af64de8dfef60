"""What a memory states, as supersession detection reads it (ADRs 0075, 0106): the subject it
speaks of (a name, or for an unnamed thing the words two memories both name it by), the
occurrences it numbers and the ids it quotes, its content words, and whether it is a
statement at all (short, not a question). Whether two memories quote the same occurrences
is read in :mod:`engram.agents.occurrences`.
"""

from __future__ import annotations

import math
import re
import sqlite3

from engram.agents import matching
from engram.agents.matching import (
    CLITICS,
    STOPWORDS,
    UNIT_AFTER,
    codes,
    phrase_words,
    stem,
    stems_of,
)
from engram.projections import copies, lexical

__all__ = [
    "CALENDAR", "CHANGE_FORMS", "CHANGE_WORDS", "COPULA_WORDS", "DETERMINERS", "NAME",
    "NAME_RUN", "RARE", "STATEMENT_WORDS", "TITLES", "VALUE_HEADS", "before", "content",
    "content_stems", "dropped", "kind", "kinds_apart", "labels", "modified_apart",
    "name_run", "names", "opens", "others_named", "shared_phrase", "state_values", "statement",
    "subject", "topic_only", "uncoded", "without", "written_as_name",
]  # fmt: skip

#: The most words a memory may hold to replace or be replaced by detection: a fact or two.
#: A long memory (a message, a tool's output) says many things, and one changing does not
#: make the rest untrue; its cosine with a short fact says nothing of one thing. Over BEAM's
#: long chats, detection replaced a third of the messages without this bound (ADR 0106).
STATEMENT_WORDS = 50
_NAME = re.compile(r"\b[A-Z][\w'-]*")
NAME = _NAME  # a capitalised word: a name's (:mod:`engram.agents.shapes` reads it too)
#: Words that announce a change of state, as written: "moved", "now", "no longer",
#: "switched", "instead", "new"... (:data:`CHANGE_WORDS` holds their stems).
CHANGE_FORMS = frozenset(
    (
        "now", "new", "moved", "relocated", "switched", "changed", "instead", "longer",
        "anymore", "became", "become", "becomes", "replaced", "transferred", "joined",
        "left", "started", "quit", "nowadays", "currently",
        # A state's value set anew (ADR 0106): what an agent's notes about things say.
        "upgraded", "downgraded", "rescheduled", "postponed", "renamed", "updated", "rotated",
        "migrated", "reassigned", "raised", "lowered", "increased", "decreased", "reduced",
        # A release changed: "rolled the gateway forward to 2.5.0", "bumped it to 3.2" (ADR 0115).
        "rolled", "bumped", "scaled",
        # A state undone or taken up again says its change by itself (ADR 0151).
        "unblocked", "reopened", "resumed", "restored", "reinstated",
        # An amount set anew or scaled (ADR 0123, 0126): "was cut to 24 hours".
        "cut", "halved", "doubled", "extended", "shortened", "revised", "amended", "adjusted",
        # A date set anew and a post left or taken up (ADR 0160).
        "rebooked", "delayed", "retired", "resigned", "promoted",
        # A date or a plan set anew (ADR 0167): "The Ashby fixture has been rearranged for 21
        # June".
        "rearranged",
        # An event called off (ADR 0170): "The Saturday 23 May matinee is cancelled", "Group
        # away day cancelled, the funding was pulled".
        "cancelled", "canceled",
    )
)  # fmt: skip
#: The stems of :data:`CHANGE_FORMS` (:func:`stem`): "moves", "moving" meet "moved".
CHANGE_WORDS = frozenset(stem(w) for w in CHANGE_FORMS)

#: A run of capitalised words: a name. A possessive followed by a capitalised word is the
#: name's own ("Bishop's Walk", "Grey's Chambers"), as a title's point is ("Dr. Moreau";
#: ADR 0123).
_WORD_OF_NAME = (
    r"(?:(?:Mr|Mrs|Ms|Mx|Dr|Prof|Rev|Capt|Sgt|Cllr)\.(?=\s+[A-Z])"  # "Dr. Moreau" is one name
    r"|[A-Z][\w-]*(?:['\u2019]s(?=\s+[A-Z]))?)"
)
_RUN = re.compile(rf"\b{_WORD_OF_NAME}(?:\s+{_WORD_OF_NAME})*")
NAME_RUN = _RUN
#: A number right after a word labels an occurrence of it: "round 26", "shard 4". The word
#: is at most 64 characters: a word may start at every hyphen of a long hyphenated run, and
#: an unbounded one scanned the rest of the run from each (time quadratic in its length).
_LABEL = re.compile(r"\b([A-Za-z][\w'-]{0,63}) (?:#|(?<=[A-Z] )-)?(\d+)\b")  # "AAE -9173"
#: The IDF from which a capitalised word names something: ln(4), held by at most about a
#: fifth of the memories ("Deploy" opening every other report is a topic, not a name); a
#: tenth (ln 9) left out a young store's people: four facts among forty (ADR 0075).
RARE = 1.4
#: The fewest memories in which a word held by two of them (a fact and its change) can be
#: rare (BM25's IDF, ln((N - n + 0.5) / (n + 0.5)), reaching :data:`RARE` with n = 2):
#: a younger store cannot tell a name from a topic by its rarity (ADR 0160).
YOUNG = math.ceil(2.5 * math.exp(RARE) + 1.5)
#: Titles and roles written before a name ("Mrs Bello", "Judge Ainsley", "Candidate Aisha
#: Khan"; ADR 0139): the name is the words after it. Two people share a title, never a name
#: by it, so it is neither the word a subject is searched by nor a name two share (ADR 0123).
TITLES = frozenset((
    "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor", "sir", "dame", "lord",
    "lady", "rev", "judge", "justice", "capt", "captain", "sgt", "sergeant", "officer",
    "nurse", "sister", "matron", "coach", "president", "senator", "councillor", "cllr",
    "candidate", "applicant", "patient", "client", "customer", "tenant", "guest", "student",
))  # fmt: skip


def subject(conn: sqlite3.Connection, text: str) -> str | None:
    """Return the word naming what ``text`` speaks of: the first word of its first run of
    capitalised words (function words aside); "" when no capitalised word could name
    anything ("the session store was migrated") or when the first name is a passive's agent
    inside its sentence ("The payments gateway is owned by Omar Said": the name is what is
    said of an unnamed thing; ADR 0108); None when the first is a common word
    capitalised by its sentence. A possessive name inside its sentence comes first ("Margaret
    Okoye became Nikos Pappas's new manager": whose attribute changes; ADR 0108).

    A run of two or more capitalised words ("Keiko Tanaka"), or one inside a sentence, is a
    name; one word opening a sentence is only capitalised there, so it names something only
    when few memories hold it (an IDF of at least :data:`RARE`): "Deploy" opening every
    other report is a topic, not a name; followed by "of", it heads a noun phrase and is
    passed over ("Ownership of the Atlas search service": ADR 0109). A capitalised word
    after a number is its unit ("05:15 UTC", "40 GB"), not a name (ADR 0106).
    """
    if (sold := matching.sold_thing(text)) and (thing := _name_words(sold)):
        return thing[0]  # what was sold, not who sold it (ADR 0185)
    for run in _RUN.finditer(text):
        # "Margaret Okoye became Nikos Pappas's new manager": the attribute is the owner's.
        if text.startswith(("'s", "\u2019s"), run.end()) and not opens(text, run.start()):
            owner = _name_words(run.group())
            if owner:
                return owner[0]
    for run in _RUN.finditer(text):
        words = run.group().split()
        named = _name_words(run.group())
        if not named or before(text, run.start()).isdigit():
            continue
        if all(stem(w) in _CALENDAR for w in named):
            continue  # "... meets on Wednesdays": a day is a value, never a subject (ADR 0123)
        if not opens(text, run.start()) and _word_before(text, run.start()) in _VALUE_AFTER:
            return ""  # "The payments gateway is owned by Omar Said": the name is a value
        if len(words) > 1 or not opens(text, run.start()):
            return named[0]
        if stem(named[0]) in CHANGE_WORDS:
            continue  # "Moved the log shipper over to eu-west-1": a verb, not a name (ADR 0119)
        if _HEAD_OF.match(text, run.end()):
            continue  # "Ownership of the Atlas search service passed to ...": a head noun
        if _CODED.match(text, run.end()):
            return named[0]  # "Ward 7B has 24 beds", "Gate B12 is closed": a name by its code
        weights = lexical.terms(conn, named[0], prune=False).weights
        # A store too young for the test to tell a name from a topic (a word two memories
        # hold cannot reach RARE under YOUNG memories) takes the word for what it is
        # written as: "Kasia gets 3 pounds a week", "Kasia's pocket money went up to 4"
        # were no one's in a store of two (ADR 0160).
        rare = weights.get(named[0], 0.0) >= RARE
        if rare or lexical.row_count(conn) < YOUNG:
            return named[0]
        # A word the store writes capitalised inside a sentence is a name, however many
        # memories hold it: "Greenfields' free-delivery minimum has gone up" of a supplier
        # named in a dozen notes ("an invoice from Greenfields"; ADR 0167).
        written = _WRITTEN.match(words[0])
        if written and lexical.written_inside(conn, named[0], written.group()):
            return named[0]
        # Nor is a word it never writes in lower case inside one: a person every memory of
        # whom opens with their name ("Kofi's studio rent ...", "Kofi shoots on ..."; 0187).
        lower = written and written.group().lower()
        return named[0] if lower and not lexical.written_inside(conn, named[0], lower) else None
    return ""


#: A word as written, its possessive and punctuation left out: "Greenfields'" -> "Greenfields".
_WRITTEN = re.compile(r"[A-Z][\w-]*?(?=(?:'s|\u2019s|'|\u2019)?\W*$)")


#: The words after which a sentence's first name is what is said of an unnamed thing, not
#: its subject: a passive's agent ("The payments gateway is owned by Omar Said"; ADR 0108),
#: or what a copula gives ("The charge nurse on night shift is Sister Brennan"; ADR 0123).
#: Other prepositions ("the schedule moved to Friday") leave the first name the subject as
#: before: taking the sentence for an unnamed thing's there made "Lunch with Carol about the
#: deploy schedule" replaced by it.
_VALUE_AFTER = frozenset(("by", "is", "are", "was", "were"))
#: One capitalised word opening a sentence and followed by "of", "for" or "with" heads a noun
#: phrase ("Ownership of the Atlas search service", "Tickets for Pygmalion", "Demo with
#: Fourth Coffee", "Deal with Litware"): a common noun the sentence capitalises, not a name;
#: the subject is looked for after it (ADR 0109, ADR 0123).
_HEAD_OF = re.compile(r"\s+(?:of|for|with)\b")
#: A code after a capitalised word, naming one of its kind: "Ward 7B", "Gate B12", "Bay E4".
_CODED = re.compile(r"\s+#?(?:\d+[A-Z]|[A-Z]+\d+[A-Z]?)\b")
_LAST_WORD = re.compile(r"([A-Za-z]+)\W*$")


def _name_words(run: str) -> list[str]:
    """Return the words of a run of capitalised words that may name something: function
    words and titles aside ("Mrs Bello" is named by "bello")."""
    return [
        w for w in lexical.tokens(run) if w not in STOPWORDS and w not in TITLES
        and w not in _NO_NAME
    ]  # fmt: skip


#: Words a sentence may open with that name nothing: a clause's conjunction ("Since Ravi
#: left ...") and a count ("Two new starters ..."; ADR 0160).
_NO_NAME = frozenset((
    "since", "until", "till", "once", "although", "though", "because", "unless", "whenever",
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "twenty", "hundred", "thousand", "several", "many", "few", "both", "each",
    "every", "let",  # "Yep John, Let's keep up the good work" (ADR 0187)
))  # fmt: skip


def _word_before(text: str, start: int) -> str:
    """Return the word before ``text[start:]``, lower-cased ("" when none)."""
    found = _LAST_WORD.search(text, 0, start)
    return found.group(1).lower() if found else ""


def name_run(text: str, subject: str) -> str:
    """Return the run of capitalised words in ``text`` that holds ``subject`` ("Alice
    Moreau"), or ``subject`` alone."""
    for run in _RUN.findall(text):
        if subject in lexical.tokens(run):
            return str(run)
    return subject


_NEXT_WORD = re.compile(r"\s+([A-Za-z]+)\b")
_VERSUS = re.compile(rf"\s+(?:v|vs|versus)\.?\s+{_WORD_OF_NAME}(?:\s+{_WORD_OF_NAME})*")


def kind(text: str, subject: str) -> str:
    """Return the stem of the common noun the subject's name is given to, where the name
    follows "the" ("the Jennings matter", "The Moss Citadel level's music", "the Year 1 art
    homework"): the kind of thing the subject is, not an attribute two memories of it share;
    "" when there is none (ADR 0123, 0126)."""
    for run in _RUN.finditer(text):
        words = lexical.tokens(run.group())
        if subject not in words:
            continue
        end = run.end()
        # A case's two parties are one name: "the Jennings v Corrigan Homes trial" (ADR 0149).
        while (versus := _VERSUS.match(text, end)) is not None:
            end = versus.end()
        number = re.match(r"\s+\d+\b", text[end:])  # "the Year 1 art homework"
        after = _NEXT_WORD.match(text, end + (number.end() if number else 0))
        the = words[0] == "the" or _word_before(text, run.start()) == "the"
        if the and after and after.group(1).islower() and after.group(1) not in STOPWORDS:
            return stem(after.group(1))
        return ""
    return ""


def name_runs(text: str) -> list[str]:
    """Return the runs of capitalised words ``text`` writes, spaces made single."""
    return [" ".join(run.split()) for run in _RUN.findall(text)]


def written_as_name(text: str, subject: str) -> bool:
    """Say whether ``text`` writes ``subject`` capitalised, as a name is written: a word
    opening another memory ("Gas is shut off at the main valve") that this one writes in
    lower case ("the spare gas canisters") is a common word here, no name both give."""
    return any(subject in lexical.tokens(run) for run in _RUN.findall(text))


def one_named(text: str, other: str, subject: str) -> bool:
    """Say whether the two texts name their ``subject`` alike: the words of one's name for
    it hold the other's ("Alice" and "Alice Moreau"), where "Mr Kapoor" and "Mr Okonkwo",
    "Project Harbor" and "Project Quarry" are two (ADR 0122)."""
    mine = {w.casefold() for w in name_run(text, subject).split()}
    theirs = {w.casefold() for w in name_run(other, subject).split()}
    return mine <= theirs or theirs <= mine


def without(text: str, name: str, subject: str) -> str:
    """Return ``text`` without the subject's name (and its possessive)."""
    for said in (name, subject):
        text = re.sub(rf"(?i)\b{re.escape(said)}(?:'s)?\b", " ", text)
    return " ".join(text.split()) or text


def content_stems(text: str) -> list[str]:
    """Return ``text``'s words (:func:`phrase_words`) stemmed, "" for each word not content
    (a function word, a filler, a letter alone, or not letters): the breaks between runs."""
    words = phrase_words(text)
    return [stem(w) if w.isalpha() and len(w) > 1 and w not in _NOT_CONTENT else "" for w in words]


#: Nouns naming the kind of value a thing is given, not another thing: "the stage door code
#: is 1357" gives the stage door's code, as "Stage door: 8642" does (stems).
VALUE_HEADS = frozenset(stem(w) for w in (
    "code", "number", "line", "address", "password", "pin", "id", "email", "phone", "extension"
))  # fmt: skip


_NOT_CONTENT = STOPWORDS | copies.FILLERS


def shared_phrase(text: str, other: str) -> tuple[str, ...]:
    """Return the longest run of two or more consecutive content words both texts hold
    ("session store", "payments gateway"): what two unnamed memories both speak of; () when
    they share none (ADR 0106). Longest common run by dynamic programming."""
    mine, theirs = content_stems(text), content_stems(other)
    best, end = 1, 0
    previous = [0] * (len(theirs) + 1)
    for i, word in enumerate(mine, 1):
        current = [0] * (len(theirs) + 1)
        for j, their in enumerate(theirs, 1):
            if word and word == their:
                current[j] = previous[j - 1] + 1
                if current[j] > best:
                    best, end = current[j], i
        previous = current
    return tuple(mine[end - best : end]) if end else ()


#: The words after which a content word is a modifier of what follows ("the nightly backup
#: job", "our staging API"), as at a sentence's start ("Nightly backup job runs at 02:00").
DETERMINERS = _DETERMINERS = frozenset(
    ("the", "a", "an", "our", "their", "its", "this", "that", "these", "those", "my", "your",
     "his", "her")
)  # fmt: skip


def modified_apart(text: str, other: str, words: tuple[str, ...], *, heads: bool = True) -> bool:
    """Say whether ``text`` and ``other`` name two things by the same ``words`` (stems, as
    :func:`shared_phrase` gives them, or a name's): each puts its own modifier before them
    ("the nightly backup job" and "the weekly backup job", "the staging API" and "the
    production API", "the public API" and "the partner webhook API"), or, with ``heads``,
    the words modify another noun in one of them, which the other never names
    ("the payments gateway canary is" beside "the payments gateway is"). A modifier is a
    content word right before the words, opening a run of content words (a compound) that
    follows a determiner or opens the text (a verb, "moved the backup job", is neither;
    ADR 0119); a head is a content word right after them
    and right before a copula (ADR 0109)."""

    def around(said: str) -> tuple[frozenset[str], str, frozenset[str]]:
        tokens = phrase_words(said)
        stems = [stem(t) for t in tokens]
        n = len(words)
        i = _spelled(stems, words)
        if i < 0:
            return frozenset(), "", frozenset()
        # The modifiers: the content words right before the words, a run of them (a
        # compound: "the partner webhook API", "the staff Wi-Fi network") that follows a
        # determiner or opens the text.
        j = i - 1
        while j >= 0 and tokens[j].isalpha() and tokens[j] not in STOPWORDS:
            j -= 1
        opened = j < i - 1 and (j < 0 or tokens[j] in _DETERMINERS)
        modifier = frozenset(stems[j + 1 : i]) if opened else frozenset()
        after = tokens[i + n] if i + n < len(tokens) else ""
        head = (
            stems[i + n]
            if after.isalpha() and after not in STOPWORDS
            and i + n + 1 < len(tokens) and tokens[i + n + 1] in _COPULA_WORDS
            else ""
        )  # fmt: skip
        # What a preposition right after the words names: "code for the barrel hall".
        k = i + n + 1 + (i + n + 1 < len(tokens) and tokens[i + n + 1] in _DETERMINERS)
        behind = frozenset(stems[k : k + 3]) if after in _OF else frozenset()
        return modifier, head, behind

    (mine, my_head, my_own), (theirs, their_head, their_own) = around(text), around(other)
    # A modifier the other names after a preposition ("Barrel hall keypad code is 4417",
    # "New keypad code for the barrel hall: 9052") is no other thing's (ADR 0182); two
    # compounds are two things where each holds a word the other does not (ADR 0187).
    mine, theirs = mine - their_own, theirs - my_own
    mine, theirs = mine - theirs, theirs - mine
    # A head the other text holds too names no other thing (ADR 0139), nor does one naming
    # the kind of value given ("the stage door code is 1357", "Stage door: 8642"; ADR 0158).
    held = my_head in stems_of(other).every if my_head else their_head in stems_of(text).every
    held = held or (my_head or their_head) in VALUE_HEADS
    return (bool(mine) and bool(theirs)) or (heads and my_head != their_head
                                                                and not held)  # fmt: skip


_OF = frozenset(("for", "of", "at", "in", "on"))


def uncoded(text: str) -> str:
    """Return ``text`` with the ids and codes it quotes (:func:`codes`) blanked."""
    for code in codes(text):
        text = re.sub(re.escape(code), " ", text, flags=re.IGNORECASE)
    return text


def dropped(text: str, phrase: tuple[str, ...]) -> str:
    """Return ``text``'s words (:func:`phrase_words`) without the first run spelling ``phrase``."""
    words = phrase_words(text)
    i = _spelled([stem(w) for w in words], phrase)
    if i >= 0:
        return " ".join(words[:i] + words[i + len(phrase) :]) or text
    return " ".join(words) or text


def _spelled(stems: list[str], phrase: tuple[str, ...]) -> int:
    """Return where the first run of ``stems`` that spells ``phrase`` starts (-1: none)."""
    n = len(phrase)
    return next((i for i in range(len(stems) - n + 1) if tuple(stems[i : i + n]) == phrase), -1)


def names(text: str) -> frozenset[str]:
    """Return the stems of ``text``'s capitalised words: the names, never an attribute."""
    return frozenset(stem(w) for m in _NAME.findall(text) for w in lexical.tokens(m))


#: Capitalised by the calendar, not names: a day or a month is a value ("arriving Friday").
CALENDAR = _CALENDAR = frozenset(
    stem(w)
    for w in (
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
        "january", "february", "march", "april", "may", "june", "july", "august",
        "september", "october", "november", "december",
    )
)  # fmt: skip


def _inner_names(text: str) -> frozenset[str]:
    """Return the stems of the names ``text`` writes inside its sentences (a word opening one
    is capitalised by it alone), days and months aside."""
    return (
        frozenset(
            stem(w)
            for m in _NAME.finditer(text)
            if not opens(text, m.start())
            for w in lexical.tokens(m.group())
            if w not in TITLES
        )
        - _CALENDAR
    )


#: The words after which what a text names is its topic, not the bearer of a state it gives:
#: "Lunch with Carol about the deploy schedule" tells of a lunch.
_TOPIC = frozenset(("about", "regarding", "concerning", "re"))


def topic_only(text: str, words: tuple[str, ...]) -> bool:
    """Say whether ``text`` names ``words`` (stems: a name's, or a phrase two memories share)
    only as a topic, after "about" or "regarding" with at most a determiner between: it
    gives no state of them, so a change of them replaces nothing it says (ADR 0123)."""
    tokens = phrase_words(text)
    i = _spelled([stem(t) for t in tokens], words)
    if i < 0:
        return False
    j = i - 1
    if j >= 0 and tokens[j] in _DETERMINERS:
        j -= 1
    return j >= 0 and tokens[j] in _TOPIC


def named_apart(text: str, other: str) -> bool:
    """Say whether the two texts speak of two named things: each names someone or something
    inside its sentences, they share no such name, and they differ beyond those names too
    ("Parcel from John Lewis arriving Saturday" and "Parcel from Decathlon arriving Friday":
    two parcels). A name given in place of a name, and nothing else, may be a value changed
    ("Alice lives in Paris" and "Alice lives in Berlin"; ADR 0122)."""
    mine, theirs = _inner_names(text), _inner_names(other)
    if mine & theirs or not mine or not theirs:  # a name both give is what both speak of
        return False
    if _opens_clause(text, mine) or _opens_clause(other, theirs):
        return True  # "Note to self: Farid prefers texts": whom the clause speaks of
    if others_named(text, other):
        return True
    ours, others = content(text), content(other)
    return bool((ours - others - mine) or (others - ours - theirs))


def others_named(text: str, other: str) -> bool:
    """Say whether each text names two or more things inside its sentences and the two share
    no name ("Voice lines for the Amber Dunes level are recorded at Bluefin Audio" and "...
    for the Rook Bastion level ... at Koto Sound"): a change gives one value anew, so names
    given in place of every name, two or more, speak of another thing (ADR 0123)."""
    if _inner_runs(text) < 2 or _inner_runs(other) < 2:
        return False
    return not _inner_names(text) & _inner_names(other)


def _inner_runs(text: str) -> int:
    """Return how many runs of capitalised words ``text`` writes inside its sentences, days,
    months and lone titles aside: each names someone or something."""
    return sum(
        1
        for run in _RUN.finditer(text)
        if not opens(text, run.start())
        and any(stem(w) not in _CALENDAR for w in _name_words(run.group()))
    )


def kinds_apart(text: str, other: str, subject: str) -> bool:
    """Say whether the two texts give their subject's name to two kinds of thing ("the
    Kettering matter" and "the Kettering client"): two things of one name (ADR 0123)."""
    mine, theirs = kind(text, subject), kind(other, subject)
    return bool(mine) and bool(theirs) and mine != theirs


def _opens_clause(text: str, names: frozenset[str]) -> bool:
    """Say whether one of ``names`` opens a clause of ``text`` (after a colon, a semicolon
    or a dash): what that clause speaks of, not a value it gives."""
    return any(
        before(text, m.start()) in ":;\u2014\u2013"
        and any(stem(w) in names for w in lexical.tokens(m.group()))
        for m in _NAME.finditer(text)
    )


def content(text: str) -> frozenset[str]:
    """Return the stems of ``text``'s content words, each number written whole and apart from
    its unit (:func:`~engram.projections.copies.numbers_apart`): function words, fillers and
    what the tokenizer leaves of a clitic ("level's" -> "level", "s") aside."""
    return frozenset(
        stem(w)
        for w in lexical.tokens(copies.numbers_apart(text))
        if w not in STOPWORDS and w not in copies.FILLERS and w not in CLITICS
    )


def labels(text: str) -> frozenset[str]:
    """Return the occurrences ``text`` names by number ("round 26", "ticket 7"): like an id,
    each names one thing, an event more often than a state ("fixed the parser in round 2"
    and "in round 26" both stay true)."""
    text = uncoded(text)  # "release 2.5.0" quotes a code, not a round numbered 2
    said_of = copula.start() if (copula := _COPULA.search(text)) else -1
    # "Model 3" after the verb is a value; "Incident 20" opening a sentence, or "The Year 6
    # trip" before its copula, names what the sentence speaks of (ADR 0106, ADR 0126).
    return frozenset(
        f"{stem(m[1].lower())} {m[2]}"
        for m in _LABEL.finditer(text)
        if (m[1][0].islower() or opens(text, m.start()) or m.start() < said_of)
        and m[1].lower() not in STOPWORDS
        and m[1].lower() not in _AMOUNT_BEFORE
        and matching.labelling(text, m[1], m.start())  # "got 8", "June 1", "new code 8034" (0185)
        and not _counts(m[1])
        and not UNIT_AFTER.match(text, m.end())  # "take 45 minutes" counts (ADR 0182)
    )


#: Words before a number that make it an amount, not a label ("only 5 chefs", "around 48",
#: "another 3"; ADR 0160).
_AMOUNT_BEFORE = frozenset((
    "only", "around", "approximately", "approx", "nearly", "roughly", "almost", "about",
    "least", "exactly", "another", "extra", "total", "under", "over", "circa", "some",
    "per", "till", "until", "til",  # a rate or a time: "£35 per 250", "9 till 1" (ADR 0182)
))  # fmt: skip


def _counts(word: str) -> bool:
    """Say whether ``word`` before a number makes the number a count or a value, not a label:
    a verb in the third person or a plural ("allows 250 requests", "holds 3", "runs 2
    replicas"). A label is a singular noun and its number ("round 26", "status 500",
    "address 12", "analysis 4"): a singular noun's -s ends in -ss, -us or -is (ADR 0109)."""
    w = word.lower()
    return len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is"))


#: A copula, or "now": what follows it is said of what precedes it ("is on release 3.1.0",
#: "was upgraded to version 2.4.1", "now runs at 01:00"); the present tense's, and "now",
#: say what holds now.
COPULA_WORDS = _COPULA_WORDS = frozenset(("is", "are", "was", "were"))
_COPULA = re.compile(rf"\b(?:{'|'.join(sorted(_COPULA_WORDS))}|now)\b", re.IGNORECASE)
_PRESENT = frozenset(("is", "are", "now"))


def state_values(text: str, *, now: bool = False) -> frozenset[str]:
    """Return the codes ``text`` quotes after its first copula ("The gateway is on release
    3.1.0", "was upgraded to version 2.4.1"): values said of a state, not ids naming what the
    sentence speaks of ("Build 3.1.0 is green", "Ticket HE-85 is blocked"). With ``now``,
    only after a copula in the present tense: a state that holds now (ADR 0109)."""
    found = _COPULA.search(text)
    if found is None or (now and found.group().lower() not in _PRESENT):
        return frozenset()
    return frozenset(codes(text[found.end() :]))


def before(text: str, start: int) -> str:
    """Return the character before ``text[start:]``, blanks skipped ("" at the start)."""
    return text[:start].rstrip()[-1:]


def opens(text: str, start: int) -> bool:
    """Say whether ``text[start:]`` opens a sentence of ``text``: the point of a title or an
    initial ("Dr. Moreau", "J. Smith") ends none (ADR 0123)."""
    last = before(text, start)
    if last == ".":
        word = _LAST_WORD.search(text, 0, text.rindex(".", 0, start) + 1)
        if word and (word.group(1).lower() in TITLES or len(word.group(1)) == 1):
            return False
    return not last or last in ".!?"


def statement(text: str) -> bool:
    """Say whether ``text`` states a thing detection can weigh: short enough to state one
    fact or two (:data:`STATEMENT_WORDS`), and not a question (a question states nothing
    that could stop being true: "do I need to update my Dockerfile?"; ADR 0106), marked or not."""
    if len(text) > STATEMENT_WORDS * 40 or text.rstrip().endswith("?") or _ASKS.match(text):
        return False  # forty characters a word at the most: longer is not one statement
    return len(lexical.tokens(text)) <= STATEMENT_WORDS


#: A question without its mark: "user: How can I balance ...", "Should we ..." (ADR 0182).
_ASKS = re.compile(
    r"(?i)\s*(?:\w+:\s+)?(?:(?:how|what|why|where|which|who)\s+)?"
    r"(?:can|could|should|would|do|does|did|will|shall)\s+(?:i|we|you)\b"
)
