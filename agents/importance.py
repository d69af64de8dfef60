"""The importance scorer façade: how poignant is a memory, on the 1..10 scale.

The score is computed once, when a memory is observed, and stored in the event's payload; a
rebuild replays it and never asks again (DESIGN.md, rule 2). The default scorer is a
deterministic heuristic; an LLM-backed scorer implements the same one-method protocol.
"""

from __future__ import annotations

import re
from typing import Protocol

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
