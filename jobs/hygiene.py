"""Monthly hygiene: report the memories stored twice, by content hash; never archive them.

As of a window's end, two or more live memories of one agent whose texts have the same
sha256 form a *duplicate group* (:func:`~engram.projections.lexical.memories.duplicate_memories`
over the lexical index; texts at the index's length cap are hashed again whole from the
ledger, so long texts that only differ late are told apart). The window's only event is its
``job.completed``, whose counts are the report: ``groups``, ``duplicates`` (the copies beyond
the first of each group), ``memories`` (in groups) and ``digest``, the first 60 bits of the
sha256 of the groups' listing. The groups themselves are a pure function of the lexical
index at the window's end: ``engram hygiene --as-of <window_end>`` lists them again, and
its digest must equal the recorded one (ADR 0038). Archiving a duplicate stays a person's
decision (``engram archive``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from engram.jobs.base import JobContext, Plan
from engram.jobs.errors import JobConfigError
from engram.ledger import Ledger
from engram.projections.lexical import MAX_TEXT
from engram.projections.lexical.memories import (
    DuplicateGroup,
    content_hash,
    duplicate_memories,
)
from engram.projections.salience import micros

NAME = "hygiene"


@dataclass(frozen=True)
class HygieneSettings:
    """How often hygiene looks (default: every 30 days)."""

    every: timedelta = timedelta(days=30)

    def __post_init__(self) -> None:
        if not isinstance(self.every, timedelta) or self.every < timedelta(seconds=1):
            raise JobConfigError(f"hygiene every must be at least one second, got {self.every!r}")


def duplicate_groups(ledger: Ledger, groups: list[DuplicateGroup]) -> list[DuplicateGroup]:
    """Return ``groups`` with those at the index's length cap split by their full texts."""
    out: list[DuplicateGroup] = []
    for group in groups:
        if len(group.text) < MAX_TEXT:
            out.append(group)
            continue
        whole: dict[str, list[int]] = {}
        texts: dict[str, str] = {}
        for event in ledger.get(group.positions):
            digest = content_hash(event.payload.text)
            whole.setdefault(digest, []).append(event.position)
            texts.setdefault(digest, event.payload.text)
        out += (
            DuplicateGroup(group.agent, digest, sorted(positions), texts[digest])
            for digest, positions in whole.items()
            if len(positions) > 1
        )
    out.sort(key=lambda g: (g.agent, g.positions[0]))
    return out


def digest(groups: list[DuplicateGroup]) -> int:
    """Return the first 60 bits of the sha256 of the groups' listing, as an int."""
    h = hashlib.sha256()
    for group in groups:
        h.update(f"{group.agent}\x00{group.sha256}\x00{group.positions}\n".encode())
    return int.from_bytes(h.digest()[:8], "big") >> 4


def report(ledger: Ledger, groups: list[DuplicateGroup], plan: Plan) -> None:
    """Fill ``plan``'s counts and lines from the duplicate groups."""
    plan.counts.update(
        groups=len(groups),
        duplicates=sum(len(g.positions) - 1 for g in groups),
        memories=sum(len(g.positions) for g in groups),
        digest=digest(groups),
    )
    plan.lines += (
        {
            "kind": "duplicates",
            "item": f"{g.agent}@" + ",".join(str(p) for p in g.positions),
            "detail": f"{g.sha256[:16]} {g.text[:80]}",
        }
        for g in groups
    )


def groups_at(ctx: JobContext) -> list[DuplicateGroup]:
    """Return the duplicate groups as of the window's end."""
    found = duplicate_memories(ctx.store, micros(ctx.window.as_of))
    return duplicate_groups(ctx.ledger, found)


class HygieneJob:
    """The hygiene job: a report of duplicate memories in the window's ``job.completed``."""

    name = NAME
    #: Reads no salience or graph table: the live snapshot, no replay as of the end.
    reads_as_of = False

    def __init__(self, settings: HygieneSettings | None = None) -> None:
        self.settings = settings or HygieneSettings()
        self.every = self.settings.every

    def plan(self, ctx: JobContext) -> Plan:
        """Return no events, and the duplicate groups as counts and lines."""
        plan = Plan()
        report(ctx.ledger, groups_at(ctx), plan)
        return plan
