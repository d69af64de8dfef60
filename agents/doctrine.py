"""Tier 2 served: the notes and skills a task calls for, and those its memories lead to.

An entry of the doctrine (:mod:`engram.projections.doctrine`: an applied note or skill) is
served two ways (ADR 0079):

- **by meaning**, as a situational rule is (:func:`engram.agents.guidance.serve`): its
  text and, each on its own, what happened and the lesson of the first
  :data:`MAX_EVIDENCE` scars it was drawn from, against the task, on the embedder's
  calibrated scale or by content words; judged among a shortlist (:data:`SHORTLIST` best by
  the best cosine of those texts, and as many by BM25 on the entry's text). Where the
  embedder sets meanings apart, an entry is served by the rules' background test
  (ADR 0092) with the situational rules in force beside the entries as its background
  (ADR 0142): served where it stands clear of every entry and rule left out. Judged by the
  margin among a few entries alone, the one skill of a store was served for half the tasks
  of its team; without such an embedder the margin serves (ADR 0077);
- **by its links**, walked like bloom: an entry linked to a scar (or an event) the frame
  already holds is pulled by it (``pull × HOP_DECAY``), and an entry served pulls in the
  entries it names and those drawn from the same scars (``score × HOP_DECAY²``: two hops,
  through the shared scar). A pull below :data:`FLOOR` is not served.

At most ``limit`` entries a call, the best first.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from engram.agents import guidance
from engram.agents.meaning import APPLIES
from engram.projections import doctrine, rules, suggestions
from engram.projections.doctrine import Entry
from engram.projections.embedding import Embedder
from engram.projections.errors import ProjectionError
from engram.projections.rules import Rule

__all__ = ["FLOOR", "HOP_DECAY", "Served", "served"]

#: What a linked entry keeps of its source's pull, per hop (as context frames' bloom).
HOP_DECAY = 0.8
#: The least pull (or match) an entry needs to be served.
FLOOR = APPLIES
#: The most entries one call serves.
LIMIT = 3
#: The scars of an entry whose texts are its evidence (the first cited: those it was drafted
#: from; a post-project lesson may cite dozens, and each text costs a comparison).
MAX_EVIDENCE = 4
#: Entries judged by meaning at most: the best this many by cosine and by BM25 each, so the
#: cost of a frame does not grow with the doctrine (a pool this large keeps the stand-out test).
SHORTLIST = 12


class Served(NamedTuple):
    """An entry served for a task: how strongly, and how it was reached."""

    entry: Entry
    score: float
    via: str  # meaning | link


def served(
    conn: sqlite3.Connection,
    task: str,
    held: Mapping[str, float] | None = None,
    embedder: Embedder | None = None,
    *,
    kind: str | None = None,
    limit: int = LIMIT,
    clear: float | None = guidance.CLEAR,
    in_force: tuple[Sequence[Rule], Mapping[str, Sequence[str]]] | None = None,
) -> list[Served]:
    """Return the entries (of ``kind``) ``task`` calls for, and those ``held`` leads to.

    ``held`` maps the targets a frame already holds (``scar:<id>``, ``event:<id>``) to how
    strongly (0..1). ``clear`` is the background test's gap (:func:`_by_meaning`); None
    serves by the margin. ``in_force`` is the rules in force and their evidence where the
    caller read them already (a context frame does); else they are read here when needed.
    A store without the doctrine serves nothing.
    """
    try:
        every = doctrine.entries(conn, kind)
    except ProjectionError:
        return []
    if not every:
        return []
    by_position = {e.position: e for e in every}
    scar_ids = list(dict.fromkeys(s for e in every for s in e.scars[:MAX_EVIDENCE]))
    texts = suggestions.scar_texts(conn, scar_ids) if scar_ids else {}
    evidence = {
        e.suggestion: [t for s in e.scars[:MAX_EVIDENCE] if s in texts for t in texts[s]]
        for e in every
    }
    pool = _shortlist(conn, every, task, evidence, embedder)
    best: dict[int, tuple[float, str]] = {}
    for s in _by_meaning(conn, pool, task, evidence, embedder, limit, clear, in_force):
        best[s.rule.position] = (s.score, "meaning")
    for target, positions in doctrine.linking(conn, list(held or {})).items():
        pull = (held or {})[target] * HOP_DECAY
        for position in positions:
            if position in by_position and pull > best.get(position, (0.0, ""))[0]:
                best[position] = (pull, "link")
    linked = doctrine.links(conn, list(best))
    shared_by = doctrine.linking(
        conn, [t for p in best for t, rel in linked[p] if rel == "drawn_from"]
    )
    for position, (score, _) in list(best.items()):
        reached: set[int] = set()
        for target, rel in linked[position]:
            if rel == "drawn_from":
                reached.update(shared_by.get(target, ()))
        reached.update(int(t[6:]) for t, _ in linked[position] if t.startswith("entry:"))
        for other in reached - {position}:
            pull = score * HOP_DECAY * HOP_DECAY
            if other in by_position and pull > best.get(other, (0.0, ""))[0]:
                best[other] = (pull, "link")
    chosen = [(p, s, via) for p, (s, via) in best.items() if s >= FLOOR]
    chosen.sort(key=lambda c: (-c[1], c[0]))
    return [Served(by_position[p], s, via) for p, s, via in chosen[:limit]]


def _by_meaning(
    conn: sqlite3.Connection,
    pool: Sequence[Entry],
    task: str,
    evidence: Mapping[str, Sequence[str]],
    embedder: Embedder | None,
    limit: int,
    clear: float | None,
    in_force: tuple[Sequence[Rule], Mapping[str, Sequence[str]]] | None = None,
) -> list[guidance.Served]:
    """Return the entries of ``pool`` served for ``task`` by meaning, each as a rule.

    Where the embedder sets meanings apart and ``clear`` is given, the entries and the
    situational rules in force are ranked together and the background test serves the
    fewest whose last stands ``clear`` above every one left out (ADR 0092); the entries among
    them are served. The rules are background only (the frame serves them on its own): a
    task its rule meets best is not given the note nearest it too unless the note stands
    clear of the rest as well. Else the margin (ADR 0077)."""
    as_rules = [Rule(e.position, e.text, e.suggestion, e.scars, e.reviewer) for e in pool]
    if clear is None or not guidance.stands_apart(embedder) or not as_rules or not task.strip():
        return guidance.serve(as_rules, task, evidence, embedder, limit=limit, clear=None)
    if in_force is None:
        try:
            every = rules.active(conn)
            in_force = every, guidance.evidence_of(conn, every)
        except ProjectionError:
            in_force = [], {}
    background = [r for r in in_force[0] if not r.always]
    texts = {**{r.suggestion: in_force[1].get(r.suggestion, ()) for r in background}, **evidence}
    ranked = [*as_rules, *background]
    found = guidance.scores(ranked, task, texts, embedder)
    entries = {r.position for r in as_rules}
    served = guidance.clear_of_the_rest(ranked, found, APPLIES, limit, clear)
    return [s for s in served if s.rule.position in entries]


def _shortlist(
    conn: sqlite3.Connection,
    every: list[Entry],
    task: str,
    evidence: Mapping[str, Sequence[str]],
    embedder: Embedder | None,
) -> list[Entry]:
    """Return the entries worth judging by meaning: all when few, else the best by cosine
    (of the entry's text or any of its evidence) and by BM25."""
    if len(every) <= SHORTLIST:
        return every
    keep = {e.position for e in doctrine.search(conn, task, SHORTLIST)}
    if embedder is not None:
        try:
            cache = guidance.cache_for(embedder)
            (query,) = cache.vectors([task], transient=True)
            best = []
            for e in every:
                texts = [e.text, *evidence.get(e.suggestion, ())]
                best.append(max(float(np.dot(query, v)) for v in cache.vectors(texts)))
            order = np.argsort(-np.asarray(best), kind="stable")[:SHORTLIST]
            keep |= {every[int(i)].position for i in order}
        except Exception:  # a model failure degrades to words, never fails the frame
            pass
    return [e for e in every if e.position in keep]
