"""The LoCoMo conversations: turns, questions and evidence, read for the recall benchmarks.

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents",
ACL 2024; CC BY-NC 4.0) holds long conversations between two speakers over many dated
sessions, and questions whose evidence is a list of turn ids (``dia_id`` such as ``D1:3``).
The development split lives in ``../shared/data/locomo/locomo-dev.json`` beside the
repository; ``ENGRAM_LOCOMO`` or ``--locomo`` points elsewhere.

A turn becomes one observation: ``"<speaker>: <text>"``, plus the caption of the photo it
shares when it shares one (the conversation refers to the photo's content). Evidence ids are
cleaned as the dataset's notes ask: ids joined by ``;`` are split, malformed ones
(``D:11:26``, ``D30:05``) are normalised, ids that name no turn are dropped, and a question
left without evidence is skipped (counted in :attr:`Conversation.skipped`).
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from engram.errors import InterfaceError

#: Where the development split sits relative to the repository root.
DEFAULT_PATH = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "locomo"
DEFAULT_FILE = DEFAULT_PATH / "locomo-dev.json"
#: The question categories systems report (5, adversarial, has no answer to retrieve).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

_ID = re.compile(r"D:?(\d+):0*(\d+)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class LocomoError(InterfaceError, ValueError):
    """The LoCoMo file is missing or not in the expected shape."""


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation, as an observation."""

    dia_id: str
    speaker: str
    text: str  # "<speaker>: <text>" (+ the shared photo's caption)
    at: datetime  # the session's date and time


@dataclass(frozen=True)
class Question:
    """A question of categories 1-4 and the turns that answer it."""

    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conversation:
    """One conversation: its turns in order and its answerable questions."""

    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    skipped: int = 0  # questions of categories 1-4 left without evidence after cleaning


def locate(path: str | os.PathLike[str] | None = None) -> Path:
    """Return the LoCoMo file to read: ``path``, ``$ENGRAM_LOCOMO`` or the default."""
    chosen = Path(path or os.environ.get("ENGRAM_LOCOMO") or DEFAULT_FILE).resolve()
    if not chosen.is_file():
        raise LocomoError(
            f"LoCoMo data not found at {chosen}: pass --locomo PATH or set ENGRAM_LOCOMO"
        )
    return chosen


def parse_time(text: str) -> datetime:
    """Parse a session time such as ``"1:56 pm on 8 May, 2023"`` (taken as UTC)."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise LocomoError(f"unreadable session time {text!r}") from exc


def clean_ids(raw: list[str]) -> list[str]:
    """Split and normalise evidence ids (``"D8:6; D9:17"``, ``"D:11:26"``, ``"D30:05"``)."""
    out = []
    for item in raw:
        for part in str(item).split(";"):
            match = _ID.fullmatch(part.strip())
            if match:
                out.append(f"D{int(match[1])}:{int(match[2])}")
    return out


def load(path: str | os.PathLike[str] | None = None) -> list[Conversation]:
    """Read the conversations, their turns and their questions of categories 1-4."""
    source = locate(path)
    try:
        document = json.loads(source.read_text(encoding="utf-8"))
        return [_conversation(item) for item in document]
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
        raise LocomoError(
            f"{source}: not in the LoCoMo format ({type(exc).__name__}: {exc})"
        ) from exc


def _conversation(item: dict) -> Conversation:  # type: ignore[type-arg]
    talk = item["conversation"]
    conversation = Conversation(str(item["sample_id"]))
    sessions = sorted(
        int(key.split("_")[1])
        for key, value in talk.items()
        if re.fullmatch(r"session_\d+", key) and isinstance(value, list)
    )
    for number in sessions:
        at = parse_time(talk[f"session_{number}_date_time"])
        for turn in talk[f"session_{number}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            conversation.turns.append(Turn(turn["dia_id"], turn["speaker"], text, at))
    known = {t.dia_id for t in conversation.turns}
    for qa in item["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = frozenset(i for i in clean_ids(qa.get("evidence") or []) if i in known)
        if not evidence:
            conversation.skipped += 1
            continue
        conversation.questions.append(Question(qa["question"], qa["category"], evidence))
    return conversation


def synthetic_memories(conversations: list[Conversation], count: int, seed: int) -> list[str]:
    """Return ``count`` distinct memory texts built from the conversations' sentences.

    Each is ``"<speaker>: <sentence> <sentence>"`` with two sentences drawn (seeded) from two
    turns of one conversation: text with the vocabulary, length and topics of the real
    turns, in the numbers a latency measurement needs.
    """
    pools: list[tuple[str, list[str]]] = []
    for conversation in conversations:
        sentences = [
            sentence
            for turn in conversation.turns
            for sentence in _SENTENCE.split(turn.text.split(": ", 1)[1])
            if len(sentence) > 10
        ]
        speakers = sorted({t.speaker for t in conversation.turns})
        pools += [(speaker, sentences) for speaker in speakers]
    if not any(sentences for _, sentences in pools):
        raise LocomoError("the conversations hold no sentences to build memories from")
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    attempts = 0
    while len(out) < count:
        attempts += 1
        if attempts > 50 * count:
            raise LocomoError(
                f"the conversations are too small for {count:,} distinct memories "
                f"(built {len(out):,})"
            )
        speaker, sentences = rng.choice(pools)
        if not sentences:
            continue
        text = f"{speaker}: {rng.choice(sentences)} {rng.choice(sentences)}"
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out
