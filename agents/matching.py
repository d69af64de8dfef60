"""A recall candidate, and its ``match``: how well it matches the query on an absolute scale.

``match`` (ADR 0019) is the fusion-weighted mean of each path's absolute match: for BM25 the
IDF-weighted share of the query's words the item holds, for vectors the cosine clipped to
0..1. It needs the item's text and vector, so recall works it out only for the candidates it
may keep (ADR 0044), with what the paths gathered while they ran (:class:`Matching`).
"""

from __future__ import annotations

import functools
import math
import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

# Re-exported: the calibration's home is engram.agents.calibration.
from engram.agents.calibration import CALIBRATIONS as CALIBRATIONS
from engram.agents.calibration import Calibration as Calibration
from engram.agents.calibration import calibration_for as calibration_for
from engram.projections import copies, lexical, semantic


@dataclass
class Candidate:
    """One item a recall path found (or bloom brought), as it is fused and scored."""

    fused: float = 0.0
    via: tuple[str, ...] = ()
    bm25: float | None = None
    cosine: float | None = None
    match: float | None = None  # None until worked out (only for the items that may be kept)
    share: float = 0.0  # the content share of the query's words it holds (ADR 0051)
    saturated: float = 0.0  # the same, fair to the item's length (ADR 0072)
    #: Each path's own reciprocal rank over its best, ``(k + 1) / (k + rank)`` with the
    #: fusion's constant (1: the path's top hit; 0: the path did not find it; ADR 0091).
    lexical_rank: float = 0.0
    semantic_rank: float = 0.0
    #: The best cosine of its own vector and its stored passages' (ADR 0054), clipped to
    #: 0..1: its cosine where it has no passages (ADR 0097). None until worked out.
    passage: float | None = None
    #: ln(1 + its words): how much room its text gives the query's words to turn up by
    #: chance (ADR 0097); 0 until worked out.
    length: float = 0.0


@dataclass
class Matching:
    """What working out a candidate's ``match`` needs, gathered while the paths ran.

    ``weights`` are the query words' IDF (None: the lexical path did not run); ``texts`` the
    texts the lexical path read already; ``vector`` the query vector (None: the semantic path
    did not run).
    """

    conn: sqlite3.Connection
    fusion: Mapping[str, float]
    weights: dict[str, float] | None = None
    texts: dict[int, str] = field(default_factory=dict)
    vector: npt.NDArray[np.float32] | None = None
    codes: tuple[str, ...] = ()  # the ids the query quotes (:func:`codes`)
    #: The query words' IDF for the content share (ADR 0051), read even when the lexical
    #: path did not run; None: the lexical index is unavailable.
    share_weights: dict[str, float] | None = None
    #: The index's mean length of a row in words (BM25's average document length), for the
    #: length-fair share (:func:`saturated_share`); 0: unknown.
    average: float = 0.0
    #: Work out the length-fair share too (the calibration weighs it; it costs a pass over
    #: each text's words).
    saturate: bool = False
    #: The IDF-weighted share of the query's content words no memory holds (:func:`absent_share`,
    #: ADR 0090): one value for the whole query, known before any candidate is worked out.
    absent: float = 0.0
    #: The same share counting only the words the query writes as names (:func:`names`).
    absent_names: float = 0.0
    #: The best cosine (clipped to 0..1) of the query's detail, the query without its names
    #: (:func:`without_names`), over the candidates (:func:`note_detail`, ADR 0095): one value
    #: for the whole query, set only where the calibration weighs it.
    detail: float = 0.0
    #: The vector of the query without its names (None: it writes none, or the calibration
    #: does not weigh the detail; then the query's own vector is its detail's).
    masked: npt.NDArray[np.float32] | None = None
    #: Read the candidates' passages for their best passage cosine (the calibration weighs
    #: it, ADR 0097; one batched read with the cosines).
    passages: bool = False
    #: Work out each text's length in words too (the calibration weighs the share by it).
    lengths: bool = False
    #: The ids the query quotes that name one thing (:func:`quoted_ids`, ADR 0117).
    ids: tuple[str, ...] = ()

    def read(self, positions: Sequence[int]) -> dict[int, str]:
        """Return :attr:`texts`, with the texts of ``positions`` not read yet read, in one
        statement."""
        unread = [p for p in positions if p not in self.texts]
        if unread:
            self.texts.update(lexical.texts(self.conn, unread))
        return self.texts


def work_out(fused: dict[int, Candidate], positions: Sequence[int], m: Matching) -> None:
    """Set the ``match`` of ``positions``: the fusion-weighted mean of the paths' absolute
    matches (IDF-weighted word share; cosine clipped to 0..1), every path that ran counted
    for every candidate, found by it or not.

    Worked out only for the candidates recall may keep, down its final order: the texts the
    lexical path did not read and the vectors the semantic path did not score are read for
    them alone.
    """
    parts: dict[str, dict[int, float]] = {}
    if m.weights is not None or m.share_weights is not None:
        m.read(positions)
    texts = m.texts
    if m.weights is not None:
        weights = m.weights
        total = sum(weights.values())
        # lexical.share, from the words of the pass the content share makes (ADR 0101)
        parts["lexical"] = {
            p: lexical.share_of(weights, stems_of(texts[p]).lowered, total)
            if total and p in texts
            else 0.0
            for p in positions
        }
    if m.share_weights is not None:
        shares = m.share_weights
        query = _stemmed_terms(shares, m.codes)  # the query's part, once for the batch
        for p in positions:
            text = texts.get(p)
            if not text:
                fused[p].share = 0.0
                continue
            fused[p].share = _held_share(query, text)
            if m.saturate:
                fused[p].saturated = saturated_share(shares, text, m.codes, m.average)
            if m.lengths:  # counted in the share's own pass (ADR 0097, ADR 0096)
                fused[p].length = math.log1p(stems_of(text).words)
    if m.vector is not None:
        cosines(fused, positions, m)
        parts["semantic"] = {p: min(max(fused[p].cosine or 0.0, 0.0), 1.0) for p in positions}
    total = sum(m.fusion[path] for path in parts)
    for p in positions:
        mean = sum(m.fusion[path] * part[p] for path, part in parts.items())
        fused[p].match = mean / total if total else 0.0


def cosines(fused: dict[int, Candidate], positions: Sequence[int], m: Matching) -> None:
    """Set the cosine of the ``positions`` the vector path did not score, from their stored
    vectors (none where the vector path did not run); with ``m.passages``, each one's best
    passage cosine too (:attr:`Candidate.passage`)."""
    if m.vector is None:
        return
    missing = [p for p in positions if fused[p].cosine is None]
    found = semantic.stored_cosines(m.conn, missing, m.vector) if missing else {}
    for p, cosine in found.items():
        fused[p].cosine = cosine
    if not m.passages:
        return
    unread = [p for p in positions if fused[p].passage is None]
    best = semantic.best_passages(m.conn, unread, m.vector) if unread else {}
    for p in unread:
        head = min(max(fused[p].cosine or 0.0, 0.0), 1.0)
        fused[p].passage = max(head, min(max(best.get(p, 0.0), 0.0), 1.0))


# -- absolute relevance (ADR 0051) -----------------------------------------------------------

#: Function words: they say how a question is asked, not what it is about, so they carry no
#: evidence of relevance; in a small store one no memory holds would weigh most of all. The
#: last ones ask for what memory holds on a subject ("What are the facts on the garden?",
#: "Tell me everything about Marta"; ADR 0117): no memory says "facts", and counted, they
#: made every answer a poor one.
_STOPWORD_TEXT = """
    a about after all also am an and any are as at be been before being but by can could did
    do does doing done for from had has have having he her here hers him his how i if in
    into is it its just me more most my no not now of on or our out over she so some still
    such than that the their them then there these they this those to too up us was we were
    what when where which while who whom whose why will with would you your currently
    current latest these days tell know we anything everything fact facts detail details
    information info summary summarise summarize overview
    """
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_SUFFIXES = ("ings", "ing", "ies", "ied", "es", "ed", "ly", "s")
#: What the tokenizer leaves of a clitic ("Sato's" -> "sato", "s"): no word of its own, so a
#: store whose texts hold no "'s" does not make it an absent word (:func:`absent_share`).
CLITICS = frozenset(["s", "t", "d", "ll", "m", "re", "ve"])


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Return ``word`` without a common English inflection (lives, lived, living -> liv)."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word.rstrip("e") if len(word) > 3 else word


class Stems(NamedTuple):
    """What one pass over a text's words gives (:func:`stems_of`)."""

    every: frozenset[str]  # the stem of each of its words
    content: frozenset[str]  # the same, function and filler words set aside
    words: int  # how many words it holds (repeats counted)
    lowered: frozenset[str]  # its distinct words as lexical.share reads them (share_words)


@functools.lru_cache(maxsize=512)
def stems_of(text: str) -> Stems:
    """Return the :func:`stem` of each of ``text``'s words, of its content words (function
    and filler words set aside), its length in words, and its words as
    :func:`engram.projections.lexical.share` reads them.

    The content share reads the first, folding the second, the share's length term
    (ADR 0097) the third and the lexical part of ``match`` the fourth, for the same
    candidates of one recall: one pass over the text's words serves them all (ADR 0096).
    An ASCII text lowercased whole splits into the words :func:`lexical.tokens` gives, so
    one split serves both readings; another text is split both ways (ADR 0101)."""
    if text.isascii():
        words = lexical.lowered_words(text)
        distinct = lowered = frozenset(words)
    else:  # lowercasing may change a word's letters: "İ" is "i" and a combining dot
        words = lexical.tokens(text)
        distinct, lowered = frozenset(words), lexical.share_words(text)
    stems = _STEMS.__getitem__
    return Stems(
        frozenset(map(stems, distinct)),
        frozenset(map(stems, distinct - _ASIDE)),
        len(words),
        lowered,
    )


class _StemMemo(dict[str, str]):
    """Each word seen and its :func:`stem`: a plain dict's lookup, the cheapest per word
    (:func:`stems_of` looks up every word of every candidate), filled on a miss."""

    def __missing__(self, word: str) -> str:
        if len(self) >= _STEMMED_WORDS:
            self.clear()
        found = self[word] = stem(word)
        return found


#: Words :data:`_STEMS` holds at most: a store's vocabulary, past which it starts again.
_STEMMED_WORDS = 1 << 16
_STEMS = _StemMemo()


#: The words folding sets aside: function words and fillers (:func:`stems_of`).
_ASIDE = STOPWORDS | copies.FILLERS


#: An id or code: letters and digits joined by - _ . / or :, or one word holding both. A
#: match starts only where a run of letters and digits does (the lookbehind) and takes each
#: run whole (possessive ``++``): the same matches as trying every position, in time linear
#: in the text, where that took time quadratic in a long word's length (a 50,000-character
#: token, as a tool's output may hold, took 80 s); a property test holds the two equal.
_CODE = re.compile(
    r"(?<![^\W_])[^\W_]++(?:[-_./:][^\W_]++)+|\b(?=[^\W_]*\d)(?=[^\W_]*[^\W\d_])[^\W_]++\b",
    re.UNICODE,
)


#: A unit of time or measure right after a number: the number counts it ("take 45
#: minutes", "holds 12 litres"), it labels no occurrence (ADR 0182).
UNIT_AFTER = re.compile(
    r"\s*(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|wks?|months?|years?|yrs?|"
    r"percent|%|kg|km|kilos?|miles?|metres?|meters?|litres?|liters?|people|persons?)(?!\w)",
    re.IGNORECASE,
)


MONTH_WORDS = frozenset((  # the months' names, whole and shortened: a date's before a number
    "jan", "january", "feb", "february", "mar", "march", "apr", "april", "may", "jun",
    "june", "jul", "july", "aug", "august", "sep", "sept", "september", "oct", "october",
    "nov", "november", "dec", "december",
))  # fmt: skip
#: Words before a number that make it no label (ADR 0185): a verb counting it ("we've got 8
#: fermenters", "bought 3", "need 5"), or a month dating it ("Starting June 1").
NOT_LABELLING = MONTH_WORDS | frozenset((
    "got", "get", "gets", "have", "had", "need", "needed", "bought", "buy", "added", "add",
    "hired", "lost", "sold", "kept", "keep", "made", "make", "took", "take", "gave", "give",
    "want", "received", "ordered",
))  # fmt: skip
#: "new" right before a label's word: its number is the value given anew ("new code 8034").
_GIVEN_ANEW = re.compile(r"\bnew\s+$", re.IGNORECASE)


def labelling(text: str, word: str, start: int) -> bool:
    """Say whether ``word``, at ``start`` in ``text`` before a number, may label it: not a verb
    counting it, a month dating it, nor a word the value is given anew for (ADR 0185)."""
    return word.lower() not in NOT_LABELLING and not _GIVEN_ANEW.search(text, 0, start)


#: "A sold Y to Z", named each: the sentence speaks of Y, whose owner changes (ADR 0185).
_SALE = re.compile(
    r"\b(?:sold|sells|has\s+sold|have\s+sold)\s+(?:the\s+)?"
    r"(?P<thing>[A-Z][\w&'.-]*(?:\s+(?:[A-Z][\w&'.-]*|of|and|&))*)\s+to\s+(?=[A-Z])"
)


def sold_thing(text: str) -> str | None:
    """Return the words naming the thing ``text`` says was sold to a named buyer, if any."""
    return found["thing"] if (found := _SALE.search(text)) else None


def codes(query: str) -> tuple[str, ...]:
    """Return the ids and codes ``query`` quotes (words with digits, or joined by - . / :)."""
    return tuple(
        dict.fromkeys(c.casefold() for c in _CODE.findall(query) if any(ch.isdigit() for ch in c))
    )


def _query_terms(
    weights: Mapping[str, float], quoted: Sequence[str]
) -> tuple[dict[str, float], list[tuple[str, float]], float]:
    """Split the query's weights into content words and quoted ids (each one term weighing
    what its parts weigh); function words are set aside unless nothing else is left."""
    content = dict(weights)
    terms: list[tuple[str, float]] = []
    for code in quoted:
        parts = lexical.tokens(code)
        terms.append((code, sum(content.pop(w, 0.0) for w in parts) or 1.0))
    content = {w: v for w, v in content.items() if w not in STOPWORDS} or (
        {} if terms else dict(weights)
    )
    return content, terms, sum(content.values()) + sum(v for _, v in terms)


def content_share(weights: Mapping[str, float], text: str, quoted: Sequence[str] = ()) -> float:
    """Return the IDF-weighted share of the query's content words ``text`` holds (0..1).

    ``weights`` are the query words' IDF (:func:`engram.projections.lexical.terms`); function
    words are set aside and words compare by :func:`stem`, so "live" finds "lives". An id the
    query quotes (``quoted``, :func:`codes`) is one term weighing what its parts weigh, held
    only by a text holding it verbatim: "HE-855" is not held by "GE-855" and "HE 12"; a text
    holding none of the quoted ids shares nothing with the query (ADR 0051).
    """
    return _held_share(_stemmed_terms(weights, quoted), text)


class _Stemmed(NamedTuple):
    """The query's side of :func:`content_share`: its content words' stems with their
    weights (in the weights' order), its quoted ids with theirs, and their total."""

    content: list[tuple[str, float]]
    terms: list[tuple[str, float]]
    total: float


def _stemmed_terms(weights: Mapping[str, float], quoted: Sequence[str]) -> _Stemmed:
    content, terms, total = _query_terms(weights, quoted)
    return _Stemmed([(stem(w), v) for w, v in content.items()], terms, total)


def _held_share(query: _Stemmed, text: str) -> float:
    """Return :func:`content_share` of ``text`` for the query's side worked out already."""
    if not query.total:
        return 0.0
    ids: float = 0  # as the empty sum was: an int 0
    if query.terms:
        lowered = text.casefold()
        ids = sum(v for code, v in query.terms if holds(code, text, lowered))
        if not ids:
            return 0.0  # an id names one thing: a text holding none of the quoted ids is not it
    held = stems_of(text).every
    found = ids + sum(v for s, v in query.content if s in held)
    return min(found / query.total, 1.0)


def share_ceilings(positions: Sequence[int], m: Matching) -> dict[int, float] | None:
    """Return the most the content share of each of ``positions`` can be, from its text read
    (the texts not read yet are, in one statement) but not split; None where no share is
    worked out (the lexical index is unreadable).

    Each stem of an ASCII text is the start of one of its lowercased words, so a query word
    whose stem the lowercased text does not hold is not held; the weights of the others (and
    of every quoted id) are the share's at most: the same sum, in the same order, of as many
    terms or more, each at least 0, which rounds no lower. A text of other characters may
    hold anything (1); a missing or empty one holds nothing, as :func:`work_out` says.
    Recall bounds each candidate's score with it before working any out (ADR 0103).
    """
    if m.share_weights is None:
        return None
    m.read(positions)
    query = _stemmed_terms(m.share_weights, m.codes)
    if not query.total:
        return dict.fromkeys(positions, 0.0)
    ids: float = sum(v for _, v in query.terms) if query.terms else 0
    most: dict[int, float] = {}
    for p in positions:
        text = m.texts.get(p)
        if not text:
            most[p] = 0.0
        elif not text.isascii():
            most[p] = 1.0
        else:
            lowered = text.lower()
            found = ids + sum(v for s, v in query.content if s in lowered)
            most[p] = min(found / query.total, 1.0)
    return most


def saturated_share(
    weights: Mapping[str, float], text: str, quoted: Sequence[str] = (), average: float = 0.0
) -> float:
    """Return the share of the query's content words ``text`` holds, fair to its length (0..1).

    :func:`content_share` with each word's weight scaled by BM25's saturation of its count
    in ``text``: ``tf (k1 + 1) / (tf + k1 (1 - b + b len / average)) / (k1 + 1)``, over the
    index's average length in words (``average``; 0: the text's own, so length plays no
    part). A word a short text holds once counts more than one a long text holds once; a
    word held many times counts up to its whole weight. A long memory holds more of any
    query's words by chance alone; this is what keeps it from winning for its length
    (ADR 0072).
    """
    content, terms, total = _query_terms(weights, quoted)
    if not total:
        return 0.0
    lowered = text.casefold()
    words = lexical.tokens(text)
    counts: dict[str, int] = {}
    for w in words:
        s = stem(w)
        counts[s] = counts.get(s, 0) + 1
    k1, b = lexical.BM25_K1, lexical.BM25_B
    norm = k1 * (1 - b + b * len(words) / average) if average > 0 else k1

    def saturated(tf: int) -> float:
        return tf * (k1 + 1) / (tf + norm) / (k1 + 1) if tf else 0.0

    ids = 0.0
    for code, v in terms:
        if holds(code, text, lowered):
            ids += v * saturated(max(lowered.count(code.casefold()), 1))
    if terms and not ids:
        return 0.0
    found = ids + sum(v * saturated(counts.get(stem(w), 0)) for w, v in content.items())
    return min(found / total, 1.0)


def absent_share(
    weights: Mapping[str, float],
    present: Sequence[str],
    quoted: Sequence[str] = (),
    only: frozenset[str] | None = None,
) -> float:
    """Return the IDF-weighted share of the query's content words no memory holds (0..1).

    ``weights`` are the query words' IDF and ``present`` the words some row of the index
    holds (:func:`engram.projections.lexical.terms`); content words and quoted ids are split
    as :func:`content_share` splits them, and a quoted id is absent when one of its parts
    is; the fragments a clitic leaves ("s" of "Sato's", "t" of "can't": :data:`CLITICS`)
    are not words of the question. ``only`` counts as absent only those words (and quoted
    ids): the query's names (:func:`names`). A name or a topic the store never heard of is
    absent whatever the store's size, where a word held once is merely rare: the share says
    how much of the question speaks of something no memory can answer (ADR 0090). It is a
    property of the query, the same for every candidate, so it moves every candidate's
    relevance alike and never their order by relevance.
    """
    content, terms, _ = _query_terms(weights, quoted)
    content = {w: v for w, v in content.items() if w not in CLITICS} or content
    total = sum(content.values()) + sum(v for _, v in terms)
    if not total:
        return 0.0
    held = set(present)
    counted = content if only is None else {w: v for w, v in content.items() if w in only}
    missing = sum(v for w, v in counted.items() if w not in held)
    missing += sum(v for code, v in terms if any(w not in held for w in lexical.tokens(code)))
    return min(missing / total, 1.0)


def note_detail(fused: dict[int, Candidate], positions: Sequence[int], m: Matching) -> None:
    """Set ``m.detail``: the best cosine, clipped to 0..1, of the query's detail over the
    candidates ``positions`` (ADR 0095): of ``m.masked``, the query without its names, or
    where the query writes none, of the query itself.

    A question about a subject the store holds matches that subject's memories by the name
    alone; what is left of it after the name is what it asks, and no memory may give that.
    """
    if m.vector is None or not positions:
        m.detail = 0.0
        return
    if m.masked is None:
        cosines(fused, positions, m)
        best = max((fused[p].cosine or 0.0) for p in positions)
    else:
        found = semantic.stored_cosines(m.conn, list(positions), m.masked)
        best = max(found.values(), default=0.0)
    m.detail = min(max(best, 0.0), 1.0)


_RAW_WORD = re.compile(r"\w+", re.UNICODE)


def note_absent(m: Matching, terms: lexical.Terms, query: str) -> None:
    """Set ``m``'s query-level shares (ADR 0090) from the query's ``terms``: of its content
    words, and of its names, the IDF share no memory holds (:func:`absent_share`)."""
    m.absent = absent_share(terms.weights, terms.present, m.codes)
    m.absent_names = absent_share(terms.weights, terms.present, m.codes, names(query))


def names(query: str) -> frozenset[str]:
    """Return the words ``query`` writes as names: capitalised, not where a sentence starts
    ("Where does Zoltan Varga live?" -> zoltan, varga), lowercased as the index holds them."""
    found = set()
    last = ""  # the last character before the word that is not a blank ("": none yet)
    end = 0
    for match in _RAW_WORD.finditer(query):
        word = match.group()
        gap = query[end : match.start()].rstrip()  # read once: linear in the query
        if gap:
            last = gap[-1]
        if word[0].isupper() and last and last not in ".?!":
            found.update(lexical.tokens(word))
        last, end = word[-1], match.end()
    return frozenset(found)


_NAMED = re.compile(r"(\w+)(?:['\u2019]s\b)?", re.UNICODE)


def without_names(query: str) -> str | None:
    """Return ``query`` with the words it writes as names taken out (with their "'s"), or
    None when it writes none or nothing else is left: "What is Hana Sato's blood type?" ->
    "What is blood type?", the detail the question asks of its subject (ADR 0095)."""
    held = names(query) - STOPWORDS
    if not held:
        return None
    kept = [
        match.group()
        for match in _NAMED.finditer(query)
        if not set(lexical.tokens(match.group(1))) <= held
    ]
    if all(w.casefold() in STOPWORDS for w in kept):  # also when nothing is left
        return None
    return " ".join(kept) + ("?" if query.rstrip().endswith("?") else "")


def verbatim(code: str, text: str) -> bool:
    """Say whether ``text`` holds ``code`` as a whole: not "HE-855" inside "HE-8555", nor
    "api.conf" inside "api.conf.bak" (a joining mark followed by a letter or digit goes on
    with the code; ADR 0119)."""
    start = text.find(code)
    while start >= 0:
        end = start + len(code)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        beyond = text[end + 1] if end + 1 < len(text) else " "
        joined = after in _JOINING and beyond.isalnum()
        if not before.isalnum() and not after.isalnum() and not joined:
            return True
        start = text.find(code, start + 1)
    return False


#: What joins a code's parts: "api.conf.bak", "E_CONN_RESET_2", "eu-west-1", "a/b".
_JOINING = frozenset("._-/\\:")


def cased(code: str) -> bool:
    """Say whether ``code`` is written in both cases with a digit (``cus_Nf8XkQ2pLm3z``):
    an opaque key, whose case tells it apart from another (ADR 0119)."""
    return (
        any(c.isdigit() for c in code)
        and any(c.islower() for c in code)
        and any(c.isupper() for c in code[1:])
    )


def holds(code: str, text: str, lowered: str) -> bool:
    """Say whether ``text`` (``lowered``: it case-folded) holds the quoted ``code`` whole: an
    opaque key written in both cases (:func:`cased`) as written, any other code case aside."""
    return verbatim(code, text) if cased(code) else verbatim(code, lowered)


def phrase_words(text: str) -> list[str]:
    """Return ``text``'s words as phrases are read in them (the runs of words two memories
    share): a word and a particle joined by a hyphen one word ("Check-in" is "checkin"), the
    adverbs of the present and a possessive's "s" left out, no break (:data:`_LEFT_OUT`: "The
    library now closes", "The keeper's coat": the library closing, the keeper coat; ADR 0157,
    0158)."""
    return [w for w in lexical.tokens(_HYPHENATED.sub(_particle, text)) if w not in _LEFT_OUT]


def _particle(m: re.Match[str]) -> str:
    """A compound of a word and a particle ("check-in", "on-call") is one word, as is one of
    a part of two letters or fewer ("Wi-Fi" is "wifi", "e-mail" is "email"; ADR 0162); two
    words ("payments-alerts") stay two, an identifier's (ADR 0122)."""
    joined = m[1].lower() in STOPWORDS or m[2].lower() in STOPWORDS
    return m[1] + m[2] if joined or min(len(m[1]), len(m[2])) <= 2 else m[0]


_HYPHENATED = re.compile(r"\b([^\W\d_]+)-([^\W\d_]+)\b")
#: Words no phrase is parted by: the adverbs saying a state holds now, a possessive's "s".
_LEFT_OUT = frozenset(("now", "currently", "presently", "nowadays", "s"))
