"""The calibration bench's swapped questions: another conversation's question asked of this
one's speakers (ADR 0095)."""

from __future__ import annotations

from datetime import UTC, datetime

from engram.bench.calibrate import _swap, speakers
from engram.bench.locomo import Conversation, Turn

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _conversation(name: str, *who: str) -> Conversation:
    c = Conversation(name)
    for i, speaker in enumerate(who):
        c.turns.append(Turn(f"D1:{i}", speaker, f"{speaker}: hello", T0))
    return c


def test_speakers_come_in_the_order_they_first_speak() -> None:
    assert speakers(_conversation("a", "Mel", "Caro", "Mel")) == ["Mel", "Caro"]


def test_a_question_is_asked_of_the_other_conversation_s_speakers_in_their_order() -> None:
    source = _conversation("a", "Caroline", "Melanie")
    target = _conversation("b", "Gina", "Jon")
    assert _swap("What did Caroline research?", source, target) == "What did Gina research?"
    assert (
        _swap("Did Melanie visit Caroline's mother?", source, target)
        == "Did Jon visit Gina's mother?"
    )


def test_names_swap_at_once_so_a_shared_name_is_not_swapped_twice() -> None:
    source = _conversation("a", "John", "Tim")
    target = _conversation("b", "Maria", "John")
    assert _swap("Did John call Tim?", source, target) == "Did Maria call John?"


def test_a_question_naming_neither_speaker_is_not_swapped() -> None:
    source = _conversation("a", "Caroline", "Melanie")
    target = _conversation("b", "Gina", "Jon")
    assert _swap("Where did the trip go?", source, target) is None
    assert _swap("What did Carolines do?", source, target) is None  # a whole word only
    same = _conversation("c", "user", "assistant")
    assert _swap("What did the user ask?", same, same) is None  # nothing changed
