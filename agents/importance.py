"""The importance scorer façade: how poignant is a memory, on the 1..10 scale.

The score is computed once, when a memory is observed, and stored in the event's payload; a
rebuild replays it and never asks again (DESIGN.md, rule 2). The default scorer is a
deterministic heuristic; :class:`ModelScorer` asks the model the routing file's
``[complete.importance]`` route names (:func:`routed_scorer`), falling back to the heuristic.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Annotated, Protocol

import msgspec

from engram.agents.completion import (
    Completer,
    CompletionConfigWarning,
    CompletionError,
    OfflineCompleter,
    completer_for,
    load_completion_routing,
)

_WORD = re.compile(r"\w+", re.UNICODE)

# Words that, in agents' logs, mark events worth remembering; weights add up to the score.
_SIGNALS: dict[str, int] = {
    **dict.fromkeys(
        ["error", "failed", "failure", "outage", "incident", "crash", "bug", "broke", "lost"], 3
    ),
    **dict.fromkeys(["urgent", "deadline", "critical", "security", "never", "always"], 2),
    **dict.fromkeys(["decided", "decision", "learned", "lesson", "promise", "agreed"], 2),
    **dict.fromkeys(["married", "born", "died", "moved", "graduated", "hired", "fired"], 3),
    **dict.fromkeys(["plan", "goal", "important", "remember", "must", "love", "hate"], 1),
}
# A scar is a failure or a victory someone chose to record: it starts above a mundane memory.
_TYPE_BONUS = {"observation": 0, "plan": 1, "thought": 1, "failure": 3, "victory": 2}


class ImportanceScorer(Protocol):
    """Rates a memory's importance from 1 (mundane) to 10 (poignant)."""

    def score(self, text: str, type: str) -> int:
        """Return the importance of ``text`` (a memory's type or a scar's kind), an int in 1..10."""
        ...


class HeuristicScorer:
    """A deterministic importance heuristic: signal words, memory type and length."""

    def score(self, text: str, type: str) -> int:
        """Return 2 + weighted signal words + a bonus by type (plans, thoughts, scars), up to 10."""
        words = {w.lower() for w in _WORD.findall(text)}
        value = 2 + sum(_SIGNALS.get(w, 0) for w in words) + _TYPE_BONUS.get(type, 0)
        if len(words) > 40:
            value += 1
        return max(1, min(10, value))


class ImportanceAnswer(msgspec.Struct, frozen=True):
    """What a model answers when asked to rate a memory: an int in 1..10."""

    importance: Annotated[int, msgspec.Meta(ge=1, le=10)]


IMPORTANCE_SYSTEM = (
    "Rate how important a memory of an AI agent is, from 1 (mundane, e.g. a routine "
    "observation) to 10 (poignant, e.g. an outage, a decision, a lesson learned). Answer "
    'with JSON: {"importance": <int>}.'
)


class ModelScorer:
    """Rate importance with a model through the completion port; fall back to a scorer
    (the heuristic by default) when the model is down or answers out of shape, so an
    observe never fails on a model."""

    def __init__(self, completer: Completer, fallback: ImportanceScorer | None = None) -> None:
        self.completer = completer
        self.fallback = fallback or HeuristicScorer()

    def score(self, text: str, type: str) -> int:
        """Return the model's rating of ``text`` (the fallback's when the model fails)."""
        prompt = msgspec.json.encode({"type": type, "memory": text[:4000]}).decode()
        try:
            return self.completer.complete(IMPORTANCE_SYSTEM, prompt, ImportanceAnswer).importance
        except CompletionError:
            return self.fallback.score(text, type)


def routed_scorer(routing: str | os.PathLike[str] | None) -> ImportanceScorer:
    """Return the scorer the routing file's ``[complete.importance]`` route names.

    The offline route (the default) is the heuristic; a model route is a
    :class:`ModelScorer` falling back to it. A missing or invalid file means the heuristic
    (the learning step warns about an invalid file; scoring stays quiet).
    """
    path = os.path.expanduser(routing) if routing else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompletionConfigWarning)
        completer = completer_for("importance", load_completion_routing(path))
    if isinstance(completer, OfflineCompleter):
        return HeuristicScorer()
    return ModelScorer(completer)
