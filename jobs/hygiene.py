"""Monthly hygiene: report the memories stored twice, and the rules gone stale; change nothing.

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

The same pass reports on tier 1 (:mod:`engram.jobs.rule_hygiene`, ADR 0081): rules with
dead links, superseded, unused for ``unused`` (90 days), or duplicates by hash, and the
doctrine's dead links; counted as ``rules_dead_links``, ``rules_superseded``,
``rules_unused`` and ``rules_duplicates``, one line each. No rule is changed: a dry run
appends nothing, a recorded run its ``job.completed`` only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from engram.jobs import rule_hygiene
from engram.jobs.base import JobContext, Plan
from engram.jobs.errors import JobConfigError
from engram.ledger import Ledger
from engram.ledger.shred import PRIVATE
from engram.projections import doctrine, rules
from engram.projections.errors import ProjectionError
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
    """How often hygiene looks (default: every 30 days), and when an unserved rule is unused."""

    every: timedelta = timedelta(days=30)
    unused: timedelta = rule_hygiene.UNUSED

    def __post_init__(self) -> None:
        if not isinstance(self.every, timedelta) or self.every < timedelta(seconds=1):
            raise JobConfigError(f"hygiene every must be at least one second, got {self.every!r}")
        if not isinstance(self.unused, timedelta) or self.unused < timedelta(days=1):
            raise JobConfigError(f"hygiene unused must be at least one day, got {self.unused!r}")


def duplicate_groups(ledger: Ledger, groups: list[DuplicateGroup]) -> list[DuplicateGroup]:
    """Return ``groups`` with those at the index's length cap split by their full texts."""
    out: list[DuplicateGroup] = []
    for group in groups:
        if len(group.text) < MAX_TEXT:
            out.append(group)
            continue
        whole: dict[str, list[int]] = {}
        texts: dict[str, str] = {}
        private: set[str] = set()
        for event in ledger.get(group.positions):
            digest = content_hash(event.payload.text)
            whole.setdefault(digest, []).append(event.position)
            texts.setdefault(digest, event.payload.text)
            if event.payload.visibility == "private":
                private.add(digest)
        out += (
            DuplicateGroup(group.agent, digest, sorted(positions), texts[digest], digest in private)
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
    # A report is read by whoever runs the job: a private memory's text reads [private],
    # as `engram hygiene` shows it to any agent but its own (ADR 0126).
    plan.lines += (
        {
            "kind": "duplicates",
            "item": f"{g.agent}@" + ",".join(str(p) for p in g.positions),
            "detail": f"{g.sha256[:16]} {PRIVATE if g.private else g.text[:80]}",
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
        report_rules(ctx, plan, self.settings.unused)
        return plan


def rule_findings(ctx: JobContext, unused: timedelta) -> list[rule_hygiene.Finding]:
    """Return what the rules and the doctrine show as of the window's end."""
    try:
        positions = [r.position for r in rules.active(ctx.store)]
        positions += [e.position for e in doctrine.entries(ctx.store)]
    except ProjectionError:
        return []
    ids = {e.position: (e.id, e.at) for e in ctx.ledger.get(positions)} if positions else {}
    served = ctx.ledger.read(kinds=["context.saved", "memory.recalled"])
    return rule_hygiene.findings(ctx.store, ctx.window.as_of, served, ids, unused)


def report_rules(ctx: JobContext, plan: Plan, unused: timedelta) -> None:
    """Add the tier-1 findings to ``plan``: a count per kind, a line per finding."""
    found = rule_findings(ctx, unused)
    for kind, name in zip(
        rule_hygiene.FINDINGS,
        ("rules_dead_links", "rules_superseded", "rules_unused", "rules_duplicates"),
        strict=True,
    ):
        plan.counts[name] = sum(1 for f in found if f.kind == kind)
    plan.lines += (
        {
            "kind": f"rule.{f.kind}",
            "item": f"#{f.position}",
            "detail": f"{f.detail}: {f.text}" if f.text else f.detail,
        }
        for f in found
    )
