"""Which rules a task gets: every always-on rule, and the situational ones it calls for.

A rule is *always-on* when its reviewer marked it so (tier 1): it is served in every
context frame. Every other rule is *situational* (ADR 0057): served when the task calls for
it, judged by meaning, not by shared function words. A rule's *evidence* is its own text and,
for each scar it was drawn from, what happened and the lesson, each on its own (what
happened usually names the kind of task where the mistake occurs). Its score for a task is
the best :func:`~engram.agents.meaning.applies_score` of the task against any of them: the
embedder's calibrated cosine where there is one, and content words (stemmed, stop words
dropped).

A rule's evidence holds several tellings of one mistake, each a noisy view of it, so the
rule meets a task twice (ADR 0077, :class:`Match`): by its *best* piece of evidence, and by
its *typical* one — the calibrated mean cosine over all of them (the mean of the shared
words' scores without an embedder), the rule's prototype, where the tellings vote.

A situational rule is served by a real match against a background (ADR 0092, the
default): the rules are ranked by their *situation* score — the calibrated mean cosine of
the task over the rule's text and what happened in each scar it cites (where the mistake was
made), the lessons left out — and the served ones are the fewest, best first (at most
:data:`MAX_SITUATIONAL`), whose last stands :data:`CLEAR` above every rule left out; each
still reaches the absolute floor :data:`~engram.agents.meaning.APPLIES` by its best piece of
evidence. A task that sits as close to several rules as to the one it matched, or to none
of them, gets none: fewer rules are served, and more of them apply. It needs an embedder
that sets meanings apart (:func:`stands_apart`): under hash vectors or words alone the
margin serves.

``serve(..., clear=None)`` serves by the margin instead (ADR 0067, 0077; the doctrine's
notes are served so): a rule whose best score reaches the floor, whose typical score is
within :data:`MARGIN` of the task's best typical score and, unless its best is a sure match
(:data:`SURE`), stands out from the rules in force (:data:`STANDOUT` standard deviations
above their mean, when there are :data:`POOL` rules or more to compare).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from engram.agents.meaning import (
    APPLIES,
    VectorCache,
    applies_score,
    calibration_for,
    content_words,
    mapped,
)
from engram.projections import rules as rulebook
from engram.projections import suggestions
from engram.projections.embedding import Embedder
from engram.projections.rules import Rule

__all__ = [
    "CLEAR",
    "MAX_SITUATIONAL",
    "Match",
    "Served",
    "as_sentence",
    "cache_for",
    "clear_of_the_rest",
    "evidence_of",
    "lookup",
    "scores",
    "serve",
    "stands_apart",
]

#: The most situational rules one frame is given (the best first).
MAX_SITUATIONAL = 2
#: A situational rule this far (calibrated scale) below the task's best match is a side
#: match, not served: the rules compete for the task (ADR 0057, 0067).
MARGIN = 0.15
#: A score this high is a sure match (a paraphrase's level or most of the words): served
#: without standing out from the pool.
SURE = 0.75
#: Standard deviations above the pool's mean a weaker match must stand out by.
STANDOUT = 1.0
#: The fewest situational rules in force for the standing-out test to mean anything.
POOL = 4
#: Under the background test (ADR 0092), how far (calibrated scale) the served rules'
#: situation score must stand above the best rule left out.
CLEAR = 0.15
_CACHES: dict[str, VectorCache] = {}


class Served(NamedTuple):
    """A rule served for a task, and how surely it applies (1.0 for an always-on rule)."""

    rule: Rule
    score: float


def cache_for(embedder: Embedder) -> VectorCache:
    """Return the vector cache of ``embedder``'s fingerprint (one per fingerprint, kept for
    the process: one model gives one text one vector), embedding what it lacks with
    ``embedder``, the caller's: the embedder that made it may belong to an engram closed
    since, whose embedding cache is gone."""
    key = str(embedder.fingerprint)
    cache = _CACHES.get(key)
    if cache is None:
        cache = _CACHES[key] = VectorCache(embedder)
    cache.embedder = embedder
    return cache


class Match(NamedTuple):
    """How a rule's evidence meets a task: its ``best`` piece of evidence, the ``typical``
    one (the mean over the rule's text and every scar text it cites), and the ``situation``
    (the mean over the rule's text and what happened in each scar, on the calibrated scale
    but not clipped to 0..1: ADR 0092)."""

    best: float
    typical: float
    situation: float = 0.0


def scores(
    rules: Sequence[Rule],
    task: str,
    evidence: Mapping[str, Sequence[str]],
    embedder: Embedder | None = None,
) -> list[Match]:
    """Return how each of ``rules`` meets ``task`` (0..1, in the rules' order), by
    :func:`~engram.agents.meaning.applies_score` of the task against each piece of the rule's
    evidence (its text and the texts of the scars ``evidence`` maps its suggestion id to:
    what happened and the lesson of each, in turn, as ``scar_texts`` gives them).

    A model failure falls back to words alone; it never raises.
    """
    if not rules:
        return []
    task_words = content_words(task)
    texts = {r.position: [r.text, *evidence.get(r.suggestion, ())] for r in rules}
    calibration = calibration_for(embedder)
    cosines: dict[str, float] = {}
    if embedder is not None and task.strip():
        try:
            cache = cache_for(embedder)
            (query,) = cache.vectors([as_sentence(task)], transient=True)
            every = list(dict.fromkeys(t for ts in texts.values() for t in ts))
            for text, vector in zip(every, cache.vectors(every), strict=True):
                cosines[text] = float(np.dot(query, vector))
        except Exception:  # a model failure degrades to words, never fails the build
            cosines, calibration = {}, None
    out = []
    for rule in rules:
        pieces = texts[rule.position]
        words = [applies_score(task_words, content_words(t)) for t in pieces]
        # The rule's text, then what happened in each scar (every other piece after it).
        where = [0, *range(1, len(pieces), 2)]
        if calibration is None or not cosines:
            situation = float(np.mean([words[i] for i in where]))
            out.append(Match(max(words), float(np.mean(words)), situation))
            continue
        found = [cosines[t] for t in pieces]
        best = max(max(words), mapped(max(found), calibration))
        # The mean cosine, then calibrated: a telling far below the floor still counts
        # against the rule (clipping each first would hide it).
        typical = max(float(np.mean(words)), mapped(float(np.mean(found)), calibration))
        # The cosine alone, one quantity for every rule (a two-word overlap would lift one
        # rule on another scale); not clipped: the background test reads how far apart the
        # rules stand, below the floor too (clipped, every weak rule would tie at 0).
        spread = calibration.paraphrase - calibration.floor
        situation = (float(np.mean([found[i] for i in where])) - calibration.floor) / spread
        out.append(Match(best, typical, situation))
    return out


def serve(
    rules: Sequence[Rule],
    task: str,
    evidence: Mapping[str, Sequence[str]],
    embedder: Embedder | None = None,
    *,
    threshold: float = APPLIES,
    limit: int = MAX_SITUATIONAL,
    clear: float | None = CLEAR,
) -> list[Served]:
    """Return the always-on rules, then the situational ones that apply to ``task``.

    ``evidence`` maps a rule's suggestion id to the texts of the scars it came from
    (:func:`scores`). ``clear`` is the background test's gap (ADR 0092; :data:`CLEAR` by
    default), taken where the embedder sets rules apart (:func:`stands_apart`); None, or
    hash vectors or no embedder, serve by the margin and the standing-out test instead
    (ADR 0077). A model failure falls back to words alone; it never fails the frame.
    """
    if clear is not None and not 0.0 <= clear <= 1.0:
        raise ValueError(f"clear must be within 0..1 (a calibrated score), got {clear!r}")
    if clear is not None and not stands_apart(embedder):
        clear = None  # no background to stand clear of: the margin serves (ADR 0092)
    always = [Served(r, 1.0) for r in rules if r.always]
    situational = [r for r in rules if not r.always]
    if not situational or not task.strip():
        return always
    found = scores(situational, task, evidence, embedder)
    if clear is not None:
        return always + clear_of_the_rest(situational, found, threshold, limit, clear)
    typical = [m.typical for m in found]
    pooled = len(found) >= POOL
    mean = float(np.mean(typical))
    spread = float(np.std(typical))
    top = max(typical)
    chosen = []
    for rule, match in zip(situational, found, strict=True):
        if match.best < threshold or match.typical < top - MARGIN:
            continue
        standing = spread > 0 and (match.typical - mean) / spread >= STANDOUT
        if pooled and match.best < SURE and not standing:
            continue
        chosen.append((rule, match))
    chosen.sort(key=lambda c: (-c[1].typical, -c[1].best, c[0].position))
    return always + [Served(rule, match.best) for rule, match in chosen[:limit]]


#: What may end a task's text: read as a sentence, it ends with one full stop instead.
_ENDING = re.compile(r"[\s.?!;:,\u2026]+$")


def as_sentence(task: str) -> str:
    """Return ``task`` as the embedder reads it against a rule's evidence: as a sentence
    ending with one full stop, like the lessons and scars it is compared with. A neural
    embedder reads the final mark: "... with cross-validation", "... ." and "... ?" gave
    three vectors and served three sets of rules (ADR 0133)."""
    return _ENDING.sub("", task) + "."


def evidence_of(conn: sqlite3.Connection, every: Sequence[Rule]) -> dict[str, list[str]]:
    """Return each rule's evidence, by its suggestion id: what happened and the lesson of
    each scar it cites, in turn (:func:`scores`)."""
    scar_ids = list(dict.fromkeys(s for r in every for s in r.scars))
    texts = suggestions.scar_texts(conn, scar_ids) if scar_ids else {}
    return {r.suggestion: [t for s in r.scars if s in texts for t in texts[s]] for r in every}


def lookup(
    conn: sqlite3.Connection, query: str, k: int, embedder: Embedder | None = None
) -> list[Rule]:
    """Return the ``k`` rules in force that best meet ``query``, by meaning, as the frames
    rank them (:func:`scores`: the situation score where the embedder sets meanings apart,
    else the typical one), each with ``match`` its best score (0..1); a rule none of whose
    evidence reaches the floor a frame serves from (:data:`~engram.agents.meaning.APPLIES`)
    is met by nothing of the query and left out (ADR 0142). Always-on rules are ranked like
    the others: this is a search, not a frame. Each rule's ``score`` is what orders them (the
    situation or typical score, clipped to 0..1), its ``match`` its best piece's."""
    every = rulebook.active(conn)
    if not every or not query.strip():
        return []
    found = scores(every, query, evidence_of(conn, every), embedder)
    apart = stands_apart(embedder)
    key = [(m.situation if apart else m.typical) for m in found]
    # Met by nothing: no piece of its evidence reaches the floor a frame serves from (a
    # stray shared word gave "match 0.02, score 0.0000"; ADR 0142).
    order = sorted(
        (i for i in range(len(every)) if found[i].best >= APPLIES),
        key=lambda i: (-key[i], -found[i].best, i),
    )
    return [
        every[i]._replace(score=min(max(key[i], 0.0), 1.0), match=found[i].best) for i in order[:k]
    ]


def stands_apart(embedder: Embedder | None) -> bool:
    """Say whether the background test can serve with ``embedder``: a neural embedder's
    cosines set the right rule apart from the rest; hash vectors' and the words' scores do
    not (the right rule, a wrong one and an unrelated task stand out alike: ADR 0092), so
    without one the margin serves."""
    return embedder is not None and embedder.fingerprint.provider != "hash"


def clear_of_the_rest(
    rules: Sequence[Rule], found: Sequence[Match], threshold: float, limit: int, clear: float
) -> list[Served]:
    """The background test (ADR 0092): the fewest rules, best situation first (at most
    ``limit``), whose last stands ``clear`` above every rule left out (above the floor, 0,
    when none is left out); those reaching ``threshold`` by their best piece are served."""
    order = sorted(range(len(rules)), key=lambda i: (-found[i].situation, -found[i].best, i))
    ranked = [found[i].situation for i in order] + [0.0]
    for k in range(1, min(limit, len(order)) + 1):
        if ranked[k - 1] - ranked[k] >= clear:
            return [
                Served(rules[i], found[i].best) for i in order[:k] if found[i].best >= threshold
            ]
    return []
