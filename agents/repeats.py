"""Repeats found before drafting: scars that tell one mistake, grouped (ADR 0056).

A team of agents records the same mistake several times, each in its own words. Before a
lesson is drafted, :func:`group` puts each waiting scar with the mistake it repeats:

- the groups start as the suggestions drafted already (their scars, whatever their status:
  a repeat of a refused lesson joins it and is not drafted again);
- each waiting scar, oldest first, joins the group it is most like on average, if that
  average :func:`~engram.agents.meaning.repeat_score` reaches
  :data:`~engram.agents.meaning.REPEAT`; else it starts a group of its own.

Average linkage (every member counts) rather than a single nearest member keeps a chain of
small drifts from gluing two mistakes together; joining the best group rather than the first
keeps the result from depending on the order groups were made. The texts compared are what
happened and the lesson together, as the semantic index embeds a scar.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from engram.agents.meaning import REPEAT, Calibration, content_words, repeat_score

__all__ = ["Group", "Told", "group", "scar_text"]


class Told(NamedTuple):
    """One scar as grouping sees it: its id, position and texts."""

    id: str
    position: int
    what: str
    lesson: str


def scar_text(what: str, lesson: str) -> str:
    """Return the text a scar is compared on: what happened, then the lesson (the text the
    semantic index embeds for a scar)."""
    return f"{what}\n{lesson}"


@dataclass
class Group:
    """Scars that tell one mistake; ``suggestion`` is the one drafted from them, if any."""

    suggestion: str | None
    members: list[Told] = field(default_factory=list)
    joined: list[Told] = field(default_factory=list)  # waiting scars that joined it


def group(
    drafted: Sequence[tuple[str, Told]],
    waiting: Sequence[Told],
    vectors: dict[str, npt.NDArray[np.float32]] | None = None,
    calibration: Calibration | None = None,
    threshold: float = REPEAT,
    lessons: dict[str, npt.NDArray[np.float32]] | None = None,
) -> list[Group]:
    """Return the groups: the drafted suggestions' (``(suggestion id, scar)`` pairs) with the
    waiting scars that joined them, then the new groups of waiting scars, oldest first.

    ``vectors`` maps scar ids to the embeddings of the whole scars (:func:`scar_text`),
    ``lessons`` to their lessons' (with ``calibration``: see
    :func:`~engram.agents.meaning.repeat_score`); without vectors the content words alone
    decide.
    """
    groups: dict[str, Group] = {}
    for suggestion, scar in drafted:
        groups.setdefault(suggestion, Group(suggestion)).members.append(scar)
    ordered: list[Group] = list(groups.values())
    words: dict[str, frozenset[str]] = {}

    def words_of(scar: Told) -> frozenset[str]:
        if scar.id not in words:
            # The lesson's words: scars of one situation may teach different lessons.
            words[scar.id] = content_words(scar.lesson)
        return words[scar.id]

    def vector(scar: Told) -> npt.NDArray[np.float32] | None:
        return None if vectors is None else vectors.get(scar.id)

    def lesson(scar: Told) -> npt.NDArray[np.float32] | None:
        return None if lessons is None else lessons.get(scar.id)

    for scar in sorted(waiting, key=lambda s: s.position):
        best, best_score = None, threshold
        for g in ordered:
            everyone = g.members + g.joined
            score = sum(
                repeat_score(
                    words_of(scar),
                    words_of(m),
                    vector(scar),
                    vector(m),
                    calibration,
                    lesson(scar),
                    lesson(m),
                )
                for m in everyone
            ) / len(everyone)
            if score >= best_score:
                best, best_score = g, score
        if best is None:
            ordered.append(Group(None, joined=[scar]))
        else:
            best.joined.append(scar)
    return ordered
