"""The BEAM chats: messages, probing questions and their evidence, read for the recall bench.

BEAM (Tavakoli et al., "Beyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory
in LLMs", 2025) holds long multi-session chats between a user and an assistant, and probing
questions that cite the messages holding their evidence (``source_chat_ids``). The
development split of its 100K chats lives in ``../shared/data/beam/beam-100k-dev.json``
beside the repository, trimmed to what retrieval needs (its README gives the format);
``ENGRAM_BEAM`` or ``--beam`` points elsewhere.

A message becomes one observation, ``"<role>: <content>"``, dated by its batch's time anchor,
its id kept as the source reference. The chats are read into the LoCoMo bench's shapes
(:class:`engram.bench.locomo.Conversation`), so one recall bench measures both. Evidence is
the union of a question's ids (a list, or a dict of lists for contradictions, updates and
orderings); ids that name no message are dropped, and a question left without evidence
(abstention, an empty list) is skipped and counted in ``Conversation.skipped``.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.bench.locomo import Conversation, LocomoError, Question, Turn

#: Where the development split sits relative to the repository root.
DEFAULT_FILE = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "beam" / "beam-100k-dev.json"
)
#: BEAM's ten question categories, numbered for the report (abstention has no evidence).
CATEGORIES = {
    number: label
    for number, label in enumerate(
        (
            "abstention",
            "contradiction_resolution",
            "event_ordering",
            "information_extraction",
            "instruction_following",
            "knowledge_update",
            "multi_session_reasoning",
            "preference_following",
            "summarization",
            "temporal_reasoning",
        ),
        start=1,
    )
}
_NUMBERS = {label: number for number, label in CATEGORIES.items()}


class BeamError(LocomoError):
    """The BEAM file is missing or not in the expected shape."""


def locate(path: str | os.PathLike[str] | None = None) -> Path:
    """Return the BEAM file to read: ``path``, ``$ENGRAM_BEAM`` or the default."""
    chosen = Path(path or os.environ.get("ENGRAM_BEAM") or DEFAULT_FILE).resolve()
    if not chosen.is_file():
        raise BeamError(f"BEAM data not found at {chosen}: pass --beam PATH or set ENGRAM_BEAM")
    return chosen


def parse_anchor(text: str) -> datetime:
    """Parse a batch's time anchor such as ``"March-15-2024"`` (taken as midnight UTC)."""
    try:
        return datetime.strptime(text.strip(), "%B-%d-%Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise BeamError(f"unreadable time anchor {text!r}") from exc


def evidence_ids(raw: Any) -> list[int]:
    """Return the message ids a question cites: a list, or the union of a dict's lists."""
    if raw is None:
        return []
    if isinstance(raw, dict):
        return [i for value in raw.values() for i in evidence_ids(value)]
    if isinstance(raw, list):
        return [i for i in raw if isinstance(i, int) and not isinstance(i, bool)]
    raise BeamError(f"source_chat_ids must be a list or a dict of lists, got {raw!r}")


def load(path: str | os.PathLike[str] | None = None) -> list[Conversation]:
    """Read the chats: their messages as turns, their questions with evidence."""
    source = locate(path)
    try:
        document = json.loads(source.read_text(encoding="utf-8"))
        if not str(document.get("format", "")).startswith("engram-beam-trimmed/"):
            raise BeamError(f"{source}: not an engram-beam-trimmed file")
        return [_chat(item) for item in document["chats"]]
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
        raise BeamError(f"{source}: not in the BEAM format ({type(exc).__name__}: {exc})") from exc


def _chat(item: dict[str, Any]) -> Conversation:
    chat = Conversation(str(item["chat_id"]))
    for batch in item["batches"]:
        at = parse_anchor(batch["time_anchor"])
        for message in batch["messages"]:
            role = str(message["role"])
            text = f"{role}: {message['content']}"
            chat.turns.append(Turn(str(message["id"]), role, text, at))
    known = {t.dia_id for t in chat.turns}
    for question in item["questions"]:
        category = _NUMBERS.get(question["category"])
        if category is None:
            raise BeamError(f"unknown question category {question['category']!r}")
        cited = evidence_ids(question.get("source_chat_ids"))
        evidence = frozenset(str(i) for i in cited if str(i) in known)
        if not evidence:
            chat.skipped += 1
            continue
        chat.questions.append(Question(question["question"], category, evidence))
    return chat
