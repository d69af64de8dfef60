"""Fold copies of one memory into one recalled item, and find what replaced what (ADR 0052).

Recall scores its candidates (:mod:`engram.agents.memory`), then keeps the first of each
group of copies: memories with one normalised-text digest (the copies projection), or whose
content words are equal, or the smaller set (three words or more) inside the larger with
three quarters of its words, one word misspelt at most (ADR 0117). The kept item reports
every visible copy of its digest and what it folded.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence

from engram.agents.announcing import announces
from engram.agents.matching import STOPWORDS, Matching, stem, stems_of
from engram.agents.quoted import quoted_codes, runs
from engram.agents.written import NUMBER_AFTER, rewritten, written
from engram.projections import copies, lexical, supersession
from engram.projections.errors import UnknownProjectionError

__all__ = [
    "Folder",
    "copied_replacements",
    "copy_rows",
    "fold",
    "folds",
    "grouped",
    "not_yet_true",
    "replaced_among",
    "same_polarity",
    "stated_true_from",
]


def replaced_among(
    conn: sqlite3.Connection,
    positions: Sequence[int],
    cut: int | None,
    valid_us: int,
    viewer: str | None = None,
) -> dict[int, int]:
    """Return ``old -> new`` for the candidates replaced by ``valid_us`` (valid time), as
    the store knew it at ``cut`` (record time; None: now). With ``viewer``, only by memories
    that agent may see: a public memory replaced by its author's private one stays current
    to the others (it is served unlabelled, as before the replacement), so a recall neither
    names the private memory's position nor tells that one exists."""
    try:
        found = supersession.replacements(conn, positions, as_of_us=cut)
        replaced = {p: r.new for p, r in found.items() if r.valid_from_us <= valid_us}
        if viewer is not None and replaced:
            seen = lexical.visible_to(conn, list(replaced.values()), viewer)
            replaced = {old: new for old, new in replaced.items() if new in seen}
    except (sqlite3.Error, UnknownProjectionError):
        return {}
    return replaced


def stated_true_from(
    conn: sqlite3.Connection, positions: Sequence[int], cut: int | None
) -> dict[int, int]:
    """Return, for each of ``positions`` that replaced a memory from a valid time before it
    was told, that time, as the store knew it at ``cut`` (record time; None: now): from then
    it is what was true, though not yet known (``observe(..., valid_from=...)``)."""
    try:
        return supersession.true_from(conn, positions, as_of_us=cut)
    except (sqlite3.Error, UnknownProjectionError):
        return {}


def not_yet_true(
    conn: sqlite3.Connection, told: Mapping[int, int], cut: int | None, valid_us: int, at_us: int
) -> set[int]:
    """Return the memories (of ``told``: position -> observed time) not true at ``valid_us``,
    as the store knew it at ``cut``: asked of an earlier time than the store's (``at_us``),
    those told after it and true from no earlier time (:func:`stated_true_from`: a
    replacement told late was true before it was told); asked of any time, a replacement
    told early, true only from a later time ("closes at 8pm from 1 January"; ADR 0160)."""
    since = stated_true_from(conn, list(told), cut)
    untrue = set()
    for p, observed in told.items():
        true_from = since.get(p, observed)
        if min(observed, true_from) > valid_us < at_us or valid_us < true_from > observed:
            untrue.add(p)
    return untrue


def copied_replacements(
    folded: Mapping[int, Sequence[int]], replaced: Mapping[int, int]
) -> dict[int, int]:
    """Return, for each kept item not replaced itself, what replaced a copy folded into it:
    a copy told before that replacement is as stale as the memory it copies, and served
    current it would give the old value unlabelled ("The site manager is Dave Morgan" and
    "... Dave Morgan (logged 09:12)", one of them replaced by "... is now Priti Patel"). A
    copy told after the replacement tells the old value anew and stays current (ADR 0155)."""
    out = {}
    for kept, members in folded.items():
        if kept in replaced:
            continue
        for member in members:
            new = replaced.get(member)
            if new is not None and kept < new and new not in members:
                out[kept] = new
                break
    return out


def copy_rows(conn: sqlite3.Connection, positions: Sequence[int]) -> dict[int, copies.Copy]:
    """Return the copies table's rows of ``positions``; none where the store lacks it."""
    try:
        return copies.facts(conn, positions)
    except sqlite3.Error:
        return {}


def fold(
    ranking: Sequence[int], rows: Mapping[int, copies.Copy], matching: Matching | None
) -> tuple[list[int], dict[int, list[int]]]:
    """Keep the first of each group of copies; return the kept and what each one folded.

    Two candidates are copies when their normalised texts are equal (the copies table's
    digest) or when one's content words are all among the other's (a copy with a word added
    says nothing more); ADR 0052.
    """
    folder = Folder(rows, matching)
    for p in ranking:
        folder.add(p)
    return folder.kept, folder.folded


class Folder:
    """:func:`fold` one candidate at a time, down the final order (ADR 0068)."""

    def __init__(self, rows: Mapping[int, copies.Copy], matching: Matching | None) -> None:
        self.rows = rows
        self.texts = matching.texts if matching is not None else {}
        self.kept: list[int] = []
        self.folded: dict[int, list[int]] = {}
        self.seen: dict[str, int] = {}
        self.words: list[tuple[int, frozenset[str], int]] = []  # (position, words, count)
        self.spelt: dict[int, str] = {}  # each kept one's text, for its words as spelt
        self._probe: list[tuple[list[str], int]] = []  # _probes(), for the first _probed words
        self._probed = 0

    def add(self, p: int) -> bool:
        """Fold ``p``, the next in the order, into a copy before it; say whether it is kept."""
        row = self.rows.get(p)
        text = self.texts.get(p, "")
        mine = _content(text)
        into = self._into(row, mine, text)
        if into is not None:
            self.folded[into].append(p)
            if row:  # a copy of this copy folds where it did (ADR 0123)
                self.seen.setdefault(row.digest, into)
            return False
        self.kept.append(p)
        self.folded[p] = []
        if row:
            self.seen[row.digest] = p
        if mine:
            self.words.append((p, mine, len(mine)))
            self.spelt[p] = text
        return True

    def finish(self, rest: Sequence[int]) -> bool:
        """Fold ``rest``, the candidates after every one added, into those kept so far, as
        :meth:`add` in any order would; say False where that order matters.

        A later candidate folds into a kept one by digest, else by content; it can fold into
        a later one instead only by that one's digest, so where one of ``rest`` folds here by
        content and shares its digest with another that does not fold here, only the whole
        order can tell.
        """
        into = {p: self._later(p) for p in rest}
        stay = Counter(row.digest for p in rest if into[p] is None and (row := self.rows.get(p)))
        for p in rest:
            row = self.rows.get(p)
            if into[p] is not None and row and row.digest not in self.seen and stay[row.digest]:
                return False  # a copy by digest that stays may come first and take it
        for p in rest:
            if (q := into[p]) is not None:
                self.folded[q].append(p)
        return True

    def _later(self, p: int) -> int | None:
        """Return :meth:`_into` of ``p``, not yet added, splitting its text only where a fold
        by content is possible at all.

        A fold by content needs the two sets to share at least the larger of two and three
        quarters of the kept set's stems (the sizes :meth:`_into` allows); each stem of an
        ASCII text is the start of one of its lowercased words, so a stem the lowercased text
        does not hold is one the sets cannot share. Most candidates fail that test on the
        first stems tried, at a fraction of the split's cost (one split for each of the
        candidates recall did not work out).
        """
        row = self.rows.get(p)
        if row and (into := self.seen.get(row.digest)) is not None:
            return into
        text = self.texts.get(p, "")
        if (
            text.isascii()
            and not self._may_share(text.lower())
            and (not rewritten(text) or not self._may_share(written(text).lower()))
        ):
            return None  # the text as written, and as written() writes it, cannot fold
        return self._into(row, _content(text), text)

    def _may_share(self, lowered: str) -> bool:
        """Say whether ``lowered`` holds enough of some kept set's stems to fold into it."""
        for stems, spare in self._probes():
            missed = 0
            for s in stems:
                if s not in lowered:
                    missed += 1
                    if missed > spare:
                        break
            else:
                return True
        return False

    def _probes(self) -> list[tuple[list[str], int]]:
        """Return each kept set that can take a fold (two stems or more), its stems longest
        first (the ones a text holds least often by chance), and how many of them a text
        may miss and still fold into it: ``m - max(2, ceil(3m / 4))`` of its ``m``, and
        :data:`TYPOS` more, misspelt."""
        if self._probed != len(self.words):
            self._probe = [
                (sorted(theirs, key=len, reverse=True), m - max(2, -(-3 * m // 4)) + TYPOS)
                for _, theirs, m in self.words
                if m >= 2
            ]
            self._probed = len(self.words)
        return self._probe

    def _into(self, row: copies.Copy | None, mine: frozenset[str], text: str = "") -> int | None:
        into = self.seen.get(row.digest) if row else None
        if into is None and (n := len(mine)) >= 2:
            # Equal sets, or the smaller (of three words or more) inside the larger with three
            # quarters of its words, one word of the smaller misspelt at most: the set
            # comparisons reached only by the sizes that allow them, as this runs for every
            # candidate against every kept one (ADR 0096).
            for q, theirs, m in self.words:
                kept = self.spelt.get(q, "")
                if n == m:
                    alike = mine == theirs or _inside(mine, theirs, text, kept)
                elif n < m:
                    alike = n >= 3 and n >= 0.75 * m and _inside(mine, theirs, text, kept)
                else:
                    alike = m >= 3 and m >= 0.75 * n and _inside(theirs, mine, kept, text)
                if (
                    alike and same_ids(text, kept) and same_polarity(text, kept)
                    and same_tidings(text, kept)
                ):  # fmt: skip
                    return q
        return into


def same_ids(a_text: str, b_text: str) -> bool:
    """Say whether two texts quote the same ids, codes and identifiers (case aside, but an
    opaque key's): one names one thing, so texts quoting others are of other things, whatever
    their words ("Order #448812 was refunded", "Order #484812 ..."; ADR 0119). Texts not
    given (words compared alone) agree."""
    if not a_text or not b_text:
        return True
    # A number is one however written ("1,800 kg", "1800kg"): compared as written alike.
    a_codes = quoted_codes(written(a_text))
    return set(a_codes) == set(quoted_codes(written(b_text)))


#: The words that turn a statement into its opposite: "no longer interested", "isn't".
_NEGATION = re.compile(  # "no" before a number is its word ("acct no: 558"; ADR 0187)
    rf"\b(?:not|no(?!{NUMBER_AFTER})|never|nor|cannot|without|anymore)\b|n['\u2019]t\b", re.I
)


def same_polarity(a_text: str, b_text: str) -> bool:
    """Say whether two texts deny alike: "Omar is interested in the role" and "Omar is no
    longer interested in the role" hold the same content words, one of them added, and say
    opposite things, so they are never copies (ADR 0123). Texts not given agree."""
    if not a_text or not b_text:
        return True
    found = [
        {_NOT.get(m.group().lower(), m.group().lower()) for m in _NEGATION.finditer(t)}
        for t in (a_text, b_text)
    ]
    return found[0] == found[1]


#: A negation written two ways: "don't" is "do not" (ADR 0178).
_NOT = {"n't": "not", "n\u2019t": "not"}


def same_tidings(a_text: str, b_text: str) -> bool:
    """Say whether two texts both announce a change or neither does: "Lift 2 is out of
    service" and "Lift 2 is back in service" hold the same content words and the second
    says the first stopped being true, so they are never copies (ADR 0155). Texts not given
    agree."""
    if not a_text or not b_text:
        return True
    return announces(a_text) == announces(b_text)


def same_numbers(a_text: str, b_text: str) -> bool:
    """Say whether two texts hold the same numbers, as often each, once written alike: a
    number one gives and the other lacks is another value, never a detail a copy adds
    ("Locker 7 is on floor 7", "Locker 57 is on floor 7": one set of content words, two
    lockers; ADR 0160). Texts not given agree."""
    if not a_text or not b_text:
        return True
    mine, theirs = (
        Counter(n.lstrip("0") or "0" for n in _NUMBER.findall(written(t))) for t in (a_text, b_text)
    )
    return mine == theirs


#: A number as :func:`~engram.agents.written.written` writes it, with what is written on it
#: ("15000", "4:45pm").
_NUMBER = re.compile(r"\d+(?:[.:]\d+)*[^\W\d_]*")


def _same(a: frozenset[str], b: frozenset[str], a_text: str = "", b_text: str = "") -> bool:
    """Say whether two content-word sets say the same (the rule :meth:`Folder._into` keeps
    by sizes): equal, or the smaller (of three words or more) inside the larger with three
    quarters of its words, but for :data:`TYPOS` misspelt words of the smaller (read in the
    texts, ``a_text`` and ``b_text``, where stemming has not cut them)."""
    if not same_ids(a_text, b_text) or not same_polarity(a_text, b_text):
        return False
    if not same_tidings(a_text, b_text) or not same_numbers(a_text, b_text):
        return False
    if len(a) > len(b):
        a, b, a_text, b_text = b, a, b_text, a_text
    if a == b:
        return True
    if len(a) == len(b):
        return _inside(a, b, a_text, b_text)
    return len(a) >= 3 and len(a) >= 0.75 * len(b) and _inside(a, b, a_text, b_text)


#: The most words of a copy that may be misspelt and still fold ("The physio told me to do
#: calf rasies twice a day"; ADR 0117).
TYPOS = 1


def _inside(small: frozenset[str], large: frozenset[str], small_text: str, large_text: str) -> bool:
    """Say whether the stems ``small`` are inside ``large`` but for :data:`TYPOS` of them,
    each the stem of a word of ``small_text`` misspelt (:func:`misspelt`) from a word of
    ``large_text`` that the first lacks. Words are compared as spelt: a stem cuts a
    misspelt word apart from its right one ("rasies" stems to "ras", "raises" to "rais")."""
    if small <= large:
        return True
    if len(small - large) > TYPOS + 1 or not small_text or not large_text:
        return False  # one misspelt word, and one more where a compound is written apart
    mine, theirs = _spelt(small_text), _spelt(large_text)
    # The words whose stems the larger lacks: "shipper" beside "shippers" is no misspelling
    # standing in for "Momart" beside "Constantine" (ADR 0155).
    only_mine = frozenset(w for w in mine - theirs if stem(w) not in large)
    only_theirs = theirs - mine
    # "flowerpot" is "flower pot" written as one word, "overnight" "over night", either way
    # round (a function word may be a part; ADR 0184); of the rest one word may be misspelt.
    parts = only_theirs | frozenset(lexical.tokens(large_text.lower()))
    joined = {w for w in only_theirs if _joined(w, frozenset(lexical.tokens(small_text.lower())))}
    rest = {w for w in only_mine if not _joined(w, parts) and not any(w in j for j in joined)}
    if not rest and (only_mine or joined):
        return True
    return len(rest) <= TYPOS and any(misspelt(w, o) for w in rest for o in only_theirs - joined)


def _joined(word: str, others: frozenset[str]) -> bool:
    """Say whether ``word`` is two of ``others`` written as one ("flowerpot": "flower",
    "pot"), each of three letters or more."""
    return any(word == a + b for a in others for b in others if a != b and min(len(a), len(b)) >= 3)


def _spelt(text: str) -> frozenset[str]:
    """Return ``text``'s content words, lower-cased, as spelt (not stemmed); a code, an id or
    a path (a run with digits, "_", "/", "\\", ":" or an inner capital: ``E_CONN_RESKT``,
    ``C:\\ProgramData``) as one word, as written, which no misspelling matches: one
    character apart, it is another thing (ADR 0119)."""
    out: set[str] = set()
    for token in runs(written(text)):
        if _WORDS.fullmatch(token) and not _INNER_CAPITAL.search(token):
            out.update(
                w for w in lexical.tokens(token) if w not in STOPWORDS and w not in copies.FILLERS
            )
        elif any(c.isalnum() for c in token):
            out.add(_CODE_MARK + token)
    return frozenset(out)


#: Plain words: letters, joined by an apostrophe or a hyphen ("Jansen's", "follow-up").
_WORDS = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
_CODE_MARK = "\x00"  # a code kept whole: never a misspelling of a word (:func:`misspelt`)


def folds(a: str, b: str) -> bool:
    """Say whether recall would fold two texts as copies of one memory (:func:`_same` over
    their content words, numbers, dates and abbreviations written alike): a copy replaces
    nothing, with recall's own notion of a copy (ADR 0143)."""
    return _same(_content(a), _content(b), a, b)


def retold(a: str, b: str) -> bool:
    """Say whether two different texts say the same but for misspelt words: each content
    word one holds and the other lacks is a misspelling of one the other holds ("phnoe" and
    "phone", "accross" and "across"; ADR 0119)."""
    mine, theirs = _spelt(a), _spelt(b)
    only_mine, only_theirs = mine - theirs, theirs - mine
    if not only_mine or not only_theirs:
        return False
    return all(any(misspelt(w, o) for o in only_theirs) for w in only_mine) and all(
        any(misspelt(o, w) for w in only_mine) for o in only_theirs
    )


def misspelt(a: str, b: str) -> bool:
    """Say whether two different words, as spelt, are one word and its misspelling: two
    neighbouring letters swapped ("hnederson", "henderson"), in words of four letters or
    more; one letter changed, added or dropped, in words of six or more; or two letters
    dropped after the first two from a word of nine or more ("derailer", "derailleur"; ADR
    0173). Numbers never are: "2.4" and "2.5" are two values (ADR 0117); nor are codes kept
    whole (ADR 0119)."""
    if a.startswith(_CODE_MARK) or b.startswith(_CODE_MARK):
        return False
    la, lb = len(a), len(b)
    if any(c.isdigit() for c in a) or any(c.isdigit() for c in b):
        return False
    if abs(la - lb) == 2 and max(la, lb) >= 9 and a[:2] == b[:2]:
        return _dropped(a, b) if la < lb else _dropped(b, a)
    if a == b or abs(la - lb) > 1 or min(la, lb) < 4:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        if len(diff) == 2:
            i, j = diff
            return j == i + 1 and a[i] == b[j] and a[j] == b[i]
        return len(diff) == 1 and la >= 6
    short, long = (a, b) if la < lb else (b, a)
    if len(short) < 5:
        return False
    i = next((k for k in range(len(short)) if short[k] != long[k]), len(short))
    return short[i:] == long[i + 1 :]


def _dropped(short: str, long: str) -> bool:
    """Say whether ``short`` is ``long`` with letters dropped (its letters in their order)."""
    rest = iter(long)
    return all(letter in rest for letter in short)


def _content(text: str) -> frozenset[str]:
    """Return the stems of ``text``'s content words (function and filler words set aside),
    its numbers written alike (:func:`~engram.projections.copies.numbers_apart`)."""
    return stems_of(written(text)).content


def grouped(
    conn: sqlite3.Connection,
    order: Sequence[int],
    rows: Mapping[int, copies.Copy],
    folded: Mapping[int, list[int]],
    agent: str,
    cut: int | None,
) -> dict[int, tuple[int, ...]]:
    """Return each served item's copies (itself included), oldest first. A memory stands in
    one item only: not in another's copies where it is served itself, nor in two items'
    (the first served keeps it; ADR 0119)."""
    digests = {rows[p].digest for p in order if p in rows}
    try:
        same = copies.copies_of(conn, sorted(digests), agent=agent, as_of_us=cut)
    except sqlite3.Error:
        same = {}
    served = set(order)
    taken: set[int] = set()
    groups = {}
    for p in order:
        found = set(same.get(rows[p].digest, ())) if p in rows else set()
        for q in folded.get(p, ()):
            found.add(q)
            if q in rows:
                found.update(same.get(rows[q].digest, ()))
        group = (found - served - taken) | {p}
        taken |= group
        groups[p] = tuple(sorted(group))
    return groups
