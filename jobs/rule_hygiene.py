"""Hygiene of tier 1 (and the doctrine's links): what the monthly hygiene reports about rules.

As of a window's end (ADR 0081), a rule is reported when:

- **dead link**: a scar it cites is archived, or no recorded scar (forgotten, or never
  there); a note or skill of the doctrine likewise, and for a ``[[name]]`` no entry bears;
- **superseded**: every scar it cites is cited by a rule applied later (a newer lesson of
  the same mistakes);
- **unused**: applied more than ``unused`` ago (default 90 days) and neither served in a
  context frame (``context.saved``) nor recalled (``memory.recalled``) since then; an
  always-on rule is served by design and never reported unused;
- **duplicate**: its text, whitespace folded and case folded, has the sha256 of an earlier
  rule's.

It is a report: nothing here changes a rule (retiring one stays a person's decision, a
review of its own). The findings are lines of the hygiene window's plan, and their counts
its ``job.completed`` counts, so every pass leaves a timestamped record.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import NamedTuple

from engram.ledger import Event
from engram.projections import doctrine, rules, suggestions
from engram.projections.errors import ProjectionError

#: A rule applied longer ago than this and served nowhere since is reported unused.
UNUSED = timedelta(days=90)
FINDINGS = ("dead_link", "superseded", "unused", "duplicate")


class Finding(NamedTuple):
    """One thing hygiene found: what kind, about which rule or entry, and why."""

    kind: str  # one of FINDINGS
    position: int  # the rule's (or the entry's) applying review
    detail: str
    text: str = ""  # the rule's text (an entry's title), one line, cut at SHOWN characters


#: How much of a rule's text a finding quotes.
SHOWN = 80


def _shown(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SHOWN else line[: SHOWN - 1] + "…"


def _key(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).casefold().encode()).hexdigest()


def served_since(events: Iterable[Event], since: datetime, until: datetime) -> set[str]:
    """Return the ids (``context.saved``) and ``pos:`` positions (``memory.recalled``) of the
    items served in ``[since, until]``."""
    seen: set[str] = set()
    for e in events:
        if not since <= e.at <= until:
            continue
        if e.kind == "context.saved":
            seen.update(e.payload.items)
        elif e.kind == "memory.recalled":
            seen.update(f"pos:{i.position}" for i in e.payload.items)
    return seen


def findings(
    conn: sqlite3.Connection,
    as_of: datetime,
    served: Iterable[Event] | None,
    ids: dict[int, tuple[str, datetime]] | None = None,
    unused: timedelta = UNUSED,
) -> list[Finding]:
    """Return what hygiene reports about the rules and the doctrine as of ``as_of``.

    ``served`` are the ``context.saved`` and ``memory.recalled`` events to look for uses in
    (None: the unused check is skipped); ``ids`` maps each rule's position to its review's
    event id and time (from the ledger).
    """
    try:
        every = rules.active(conn)
    except ProjectionError:
        return []
    every = [r for r in every if ids is None or (r.position in ids and ids[r.position][1] <= as_of)]
    out: list[Finding] = []
    cited = [s for r in every for s in r.scars]
    try:
        entries = [e for e in doctrine.entries(conn) if ids is None or e.position in ids]
        entry_links = doctrine.links(conn, [e.position for e in entries])
    except ProjectionError:
        entries, entry_links = [], {}
    cited += [s for e in entries for s in e.scars]
    known = suggestions.known_scars(conn, cited) if cited else {}
    titles = {doctrine.title(e.text) for e in entries}

    for r in every:
        gone = [s for s in r.scars if s not in known or known[s]]
        if gone:
            out.append(
                Finding(
                    "dead_link", r.position, f"rule cites {len(gone)} gone scar(s)", _shown(r.text)
                )
            )
    for e in entries:
        gone = [s for s in e.scars if s not in known or known[s]]
        names = [t for t, _ in entry_links.get(e.position, []) if t.startswith("name:")]
        unresolved = sum(1 for n in names if n[5:] not in titles)
        if gone or unresolved:
            out.append(
                Finding(
                    "dead_link",
                    e.position,
                    f"{e.kind} cites {len(gone)} gone scar(s), {unresolved} unknown name(s)",
                    _shown(doctrine.title(e.text)),
                )
            )
    for i, r in enumerate(every):
        later = [x for x in every[i + 1 :] if set(r.scars) <= set(x.scars)]
        if r.scars and later:
            by = f"by the rule at #{later[0].position}"
            out.append(Finding("superseded", r.position, by, _shown(r.text)))
    if served is not None and ids is not None:
        since = as_of - unused
        used = served_since(served, since, as_of)
        for r in every:
            event_id, applied = ids[r.position]
            if r.always or applied > since:
                continue
            if event_id not in used and f"pos:{r.position}" not in used:
                why = f"served nowhere for {unused.days} days"
                out.append(Finding("unused", r.position, why, _shown(r.text)))
    first: dict[str, int] = {}
    for r in every:
        key = _key(r.text)
        if key in first:
            same = f"same text as #{first[key]}"
            out.append(Finding("duplicate", r.position, same, _shown(r.text)))
        else:
            first[key] = r.position
    out.sort(key=lambda f: (FINDINGS.index(f.kind), f.position))
    return out
