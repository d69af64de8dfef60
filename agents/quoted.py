"""The ids a question quotes, and the memories that hold them (ADR 0117).

An id names one thing: the memory holding a quoted id verbatim is what the question asks
about, whatever else their words and meanings share. Recall's calibration, fitted on
conversations that quote almost none, reads a low cosine and a middling share as little
evidence; :func:`id_floors` puts a floor under the relevance of the few memories that hold
them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from engram.agents.matching import STOPWORDS, Matching, cased, codes, holds
from engram.projections import copies

__all__ = [
    "ID_HELD",
    "ID_HOLDERS",
    "ID_LENGTH",
    "ID_RIVAL",
    "head_keys",
    "held",
    "id_floors",
    "identifier",
    "identifiers",
    "keys_apart",
    "names_apart",
    "quoted_codes",
    "quoted_ids",
    "quoted_names",
    "references",
    "runs",
    "same_keys",
    "short_hashes",
    "written_ids",
]

#: The least relevance of the memory holding every id a query quotes, where it is the only
#: candidate that does: as likely as not to be what is asked for (ADR 0117). Where several
#: hold them (at most :data:`ID_HOLDERS`), each has its share of it.
ID_HELD = 0.5
#: The most things (copies of one memory count once) that may hold a query's ids for the ids
#: to single them out.
ID_HOLDERS = 3
#: The fewest characters of a code that names one thing: "inc0012345", "9f2c4e1",
#: "err-4471-b"; shorter codes are ordinals and measures as often ("18th", "5k", "ga4").
ID_LENGTH = 5
_REFERENCE = re.compile(r"(?<![\w#])#\d{3,}\b")  # an issue's or a request's number: "#4821"
#: A number of eight digits or more names one thing (an order, an account, a microchip, a
#: phone), where amounts, years and counts are shorter or written with separators.
_LONG_NUMBER = re.compile(r"(?<![\w.,#])\d{8,}(?![\w]|[.,]\d)")
#: The share of its relevance a candidate keeps that quotes, in place of an id the query
#: quotes, another id written alike ("#88421" for "#88412"), where another candidate holds
#: the id: the question is of the holder, and this one is second at most (ADR 0122).
ID_RIVAL = ID_HELD / 2
#: What may open or close a quoted identifier in prose: quotes, brackets, a sentence's stop.
_AROUND = "\"'`‘’“”()[]{}<>,;!?"
_PLAIN = re.compile(r"[^\W\d_]+")
_CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z]")
_PATH_START = re.compile(r"^(?:~?/|\./|[A-Za-z]:\\)")


def identifier(token: str) -> bool:
    """Say whether ``token`` (a run without spaces) is written as a programmer names one
    thing, digits or none: words joined by "_" (``E_CONN_RESET``,
    ``flow_log_retention_days``), a lower camel case name (``hydrateCartSummary``), a file
    or key name of dotted parts (``api.conf``, ``checkout.enable_split_tender``) or a path
    (``/etc/nginx/api.conf``, ``C:\\ProgramData\\Acme``). Prose joins words with "-" and
    "/" ("follow-up", "and/or", "e.g."), not so (ADR 0119)."""
    if len(token) < ID_LENGTH or (_PLAIN.fullmatch(token) and not _CAMEL.match(token)):
        return False
    if _PATH_START.match(token):
        return sum(token.count(c) for c in "/\\") >= 2
    if "/" in token:
        # A relative path ("src/dispatch/planner.py", "tests/fixtures/orders"): parts of a
        # name each, one with a letter, two slashes or a file name last; not "and/or", a
        # date or a unit ("km/h") (ADR 0126).
        parts = token.split("/")
        return (
            all(re.fullmatch(r"[\w.-]+", p) for p in parts)
            and any(_PLAIN.search(p) for p in parts)
            and (len(parts) >= 3 or bool(re.fullmatch(r"[\w-]+\.[A-Za-z]\w{0,7}", parts[-1])))
        )
    if "_" in token.strip("_"):
        return True
    if _CAMEL.match(token) and _PLAIN.fullmatch(token):
        return len(token) >= 8
    parts = token.split(".")
    return len(parts) >= 2 and all(len(p) >= 2 and re.fullmatch(r"[\w-]+", p) for p in parts)


def runs(text: str) -> list[str]:
    """Return ``text``'s runs without spaces, stripped of the quotes, brackets and stops
    that prose puts around them (a path keeps its inner dots and colons); a setting written
    ``KEY=value`` is two runs, the key and its value."""
    return [
        t
        for raw in text.split()
        for part in raw.split("=")
        if (t := part.strip(_AROUND).rstrip(".:"))
    ]


def written_ids(text: str) -> tuple[str, ...]:
    """Return the identifiers and opaque keys ``text`` writes (:func:`identifier`,
    :func:`cased`), lower-cased but the keys, which keep their case."""
    found = (t if cased(t) else t.casefold() for t in runs(text) if identifier(t) or cased(t))
    return tuple(dict.fromkeys(found))


def references(text: str) -> list[str]:
    """Return the numbers ``text`` writes after a "#" ("PR #4821"): each names one request,
    issue or ticket (ADR 0117, ADR 0126)."""
    return _REFERENCE.findall(text)


#: A hash quoted by its first characters, as git abbreviates one: 7 to 39 hex digits, a
#: letter and a digit among them (ADR 0129).
_SHORT_HASH = re.compile(
    r"(?<![\w-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,39}(?![\w-])", re.I
)


def short_hashes(query: str) -> tuple[str, ...]:
    """Return the hashes ``query`` quotes by their first characters ("b9854c189d"),
    lower-cased: each may stand for a longer one a memory holds whole."""
    return tuple(dict.fromkeys(m.group().lower() for m in _SHORT_HASH.finditer(query)))


def quoted_codes(text: str) -> tuple[str, ...]:
    """Return what ``text`` quotes that names one thing whole: its identifiers and opaque
    keys (:func:`written_ids`), then its codes (:func:`codes`) but those a key written in
    both cases stands for, its case aside (ADR 0119)."""
    written = written_ids(text)
    keys = {w.casefold() for w in written if cased(w)}
    return tuple(dict.fromkeys((*written, *(c for c in codes(text) if c not in keys))))


def quoted_ids(query: str) -> tuple[str, ...]:
    """Return the ids ``query`` quotes that name one thing: its codes (:func:`codes`) of at
    least :data:`ID_LENGTH` characters, numbers written after a "#" ("PR #4821"; ADR 0117),
    and identifiers written as a programmer writes them, digits or none (:func:`identifier`,
    ADR 0119). Each is lower-cased but an opaque key written in both cases (:func:`cased`),
    which keeps its case."""
    written = set(written_ids(query))
    named = [c for c in quoted_codes(query) if c in written or len(c) >= ID_LENGTH]
    numbers = (m.group() for r in (_REFERENCE, _LONG_NUMBER) for m in r.finditer(query))
    return tuple(dict.fromkeys([*named, *numbers]))


def _shape(code: str) -> str:
    """Return how ``code`` is written: each digit a 9, each letter an a, the rest kept."""
    return re.sub(r"[^\W\d_]", "a", re.sub(r"\d", "9", code.casefold()))


def id_floors(positions: Sequence[int], m: Matching) -> dict[int, tuple[float, float]]:
    """Return, for the candidates an id the query quotes singles out, the least relevance
    and the share of it kept: at least :data:`ID_HELD` (shared among them) for each holding
    every id, where at most :data:`ID_HOLDERS` things do (copies of one memory count once);
    :data:`ID_RIVAL` of it, at most that, for each quoting, in place of one, another id
    written alike, where one does; {} otherwise.

    An id names one thing: the memory holding it verbatim is what the query asks about,
    whatever else their words and meanings share (a vector-near id, "9f2c4e7" for
    "9f2c4e1", is another thing, even where the question's other words are its: "Is
    985112004317256 Pepper's microchip?"). Reads the texts of the candidates not read
    yet."""
    if not m.ids:
        return {}
    m.read(positions)
    holders = [
        p for p in positions
        if (text := m.texts.get(p))
        and all(holds(i, text, text.casefold()) for i in m.ids)
    ]  # fmt: skip
    # Copies of one memory are one thing holding the ids, however many (ADR 0178): five
    # copies of "ALERT: CRAH-A4 high return temp" single out what "CRAH-A4" names. Counted
    # only as far as it matters: an id many things hold singles out none.
    digests: set[str] = set()
    for p in holders:
        digests.add(copies.digest(m.texts[p]))
        if len(digests) > ID_HOLDERS:
            return {}
    things = len(digests)
    if not holders:
        return {}
    shapes = {_shape(i) for i in m.ids}
    rivals = [
        p for p in positions
        if p not in holders and any(_shape(r) in shapes for r in runs(m.texts.get(p, "")))
    ]  # fmt: skip
    return dict.fromkeys(rivals, (0.0, ID_RIVAL)) | dict.fromkeys(holders, (ID_HELD / things, 1.0))


def held(floors: Mapping[int, tuple[float, float]], position: int) -> bool:
    """Say whether ``position`` holds every id the query quotes, by :func:`id_floors`'s
    answer: a holder keeps its whole relevance, a rival a share of it (ADR 0136)."""
    return floors.get(position, (0.0, 0.0))[1] == 1.0


#: A name in quotes: a capitalised word or up to four ("'Bloodgood'", "\u201cBlue Harbour\u201d").
_QUOTED_NAME = re.compile(
    r"(?<=\s)['\"\u2018\u201c]([A-Z][\w-]*(?:\s+[\w-]+){0,3})['\"\u2019\u201d](?!\w)"
)


def quoted_names(text: str) -> frozenset[str]:
    """Return the names ``text`` quotes right after a noun ("the Japanese maple 'Bloodgood'",
    "the project \u201cBlue Harbour\u201d"): each names which thing of its kind it speaks of,
    as an id does. A quoted name after a copula, a verb's preposition or a function word is
    a value given ("the password is 'Harbour2023'", "renamed it to 'Lantern'"; ADR 0139)."""
    found = set()
    for m in _QUOTED_NAME.finditer(text):
        before = text[: m.start()].split()
        word = before[-1].strip(",;:").lower() if before else ""
        if word.isalpha() and word not in STOPWORDS:
            found.add(m[1].casefold())
    return frozenset(found)


def names_apart(text: str, old: str) -> bool:
    """Say whether ``text`` and ``old`` each quote a name of a thing and share none: two
    things of a kind ("'Bloodgood' costs \u00a345", "'Osakazuki' costs \u00a360"), whatever
    else they say (ADR 0139)."""
    mine, theirs = quoted_names(text), quoted_names(old)
    return bool(mine) and bool(theirs) and not mine & theirs


#: A key written in capitals joined by "-" or "_" ("BKG-PPJQY", "INV-3301"), and an email.
_KEY = re.compile(r"[A-Z0-9]{2,}(?:[-_/][A-Z0-9]+)+")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
#: The words before which a record's head ends: a copula.
_HEAD_ENDS = frozenset(("is", "are", "was", "were"))
#: The most runs a record's head holds: "Hotel booking BKG-PPJQY", "Contact t.nash@x.io".
_HEAD = 3


def head_keys(text: str) -> frozenset[str]:
    """Return the keys ``text`` writes at its head, what it is a record of: the ids, codes and
    emails among its first :data:`_HEAD` runs, before a copula or a colon ("Hotel booking
    BKG-PPJQY: two nights", "Contact t.nash@seaview.co.uk handles group bookings", "Commit
    1f10d3d reverted ..."). One written after them is a value ("Tom's email is ...")."""
    head = text.split(":", 1)[0] if ":" in text[:80] else text
    found: set[str] = set()
    for run in runs(head)[:_HEAD]:
        if run.lower() in _HEAD_ENDS:
            break
        if codes(run) or _EMAIL.fullmatch(run) or _KEY.fullmatch(run):
            found.add(run.casefold())
    return frozenset(found)


def keys_apart(text: str, old: str) -> bool:
    """Say whether ``text`` and ``old`` are records of two things: each writes keys at its
    head (:func:`head_keys`) and they share none (ADR 0139)."""
    mine, theirs = head_keys(text), head_keys(old)
    return bool(mine) and bool(theirs) and not mine & theirs


def same_keys(text: str, old: str) -> bool:
    """Say whether the opaque keys written in both cases (:func:`~engram.agents.matching.cased`)
    that the two texts share, case aside, are written alike: ``cus_Nf8XkQ2pLm3z`` and
    ``cus_nf8XkQ2pLm3z`` are two customers (ADR 0119)."""
    mine = {k for k in runs(text) if cased(k)}
    theirs = {k for k in runs(old) if cased(k)}
    if not mine and not theirs:
        return True
    folded = {k.casefold() for k in mine} & {k.casefold() for k in theirs}
    return all(k in theirs for k in mine if k.casefold() in folded) and all(
        k in mine for k in theirs if k.casefold() in folded
    )


#: Lowercase words joined by hyphens, without digits: a service's or a tool's name as teams
#: write it ("image-resizer", "cart-api"); "eu-west-1" is a value's notation, and a part of
#: an address ("ap@umbrella-health.io") is the address's (ADR 0122).
_KEBAB = re.compile(r"(?<![\w@./-])[a-z]{2,}(?:-[a-z]{2,})+(?![\w-]|\.\w)")


def identifiers(text: str) -> frozenset[str]:
    """Return the identifiers and opaque keys ``text`` writes
    (:func:`~engram.agents.quoted.written_ids`: ``E_CONN_RESET``, ``/etc/nginx/api.conf``)
    and its hyphenated lowercase names (``image-resizer``): like an id, one names one thing,
    so a memory quoting another is of another thing unless the new one announces a change
    (ADR 0119, ADR 0122)."""
    return (
        frozenset(written_ids(text))
        # A compound with a function word is a word of prose ("check-up", "out-of-hours",
        # "on-call"), no name of a service (ADR 0160).
        | frozenset(k for k in _KEBAB.findall(text) if not STOPWORDS.intersection(k.split("-")))
        | frozenset(references(text))  # "PR #5209" is another request than "PR #5220"
    )
