"""A long memory's last paragraph is found by its words (ADR 0137)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from detection_store import EMBEDDERS, embedding_with

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ROUTINE = " ".join(
    f"Point {i}: the committee went over routine matter {i}, the pitch bookings, the kit "
    "rota and the summer fixtures, and agreed to come back to it next month."
    for i in range(1, 20)
)
DETAIL = "The treasurer said the clubhouse roof repair will cost 14,200 pounds from 6 May."
HOBBIES = ("restores fountain pens", "keeps bees", "races pigeons", "brews cider")
PEOPLE = ("Abel Dunne", "Bruna Eke", "Cyrus Acker", "Delia Fair", "Emeka Bran")


@pytest.mark.parametrize("provider", EMBEDDERS)
def test_a_detail_at_the_end_of_long_minutes_is_found_by_its_words(
    provider: str, tmp_path: Path
) -> None:
    # Under MiniLM the minutes ranked last of 21 candidates (score 0.0000) with the detail
    # at their end, first with the same detail at their start.
    for name, text in (("end", f"Minutes, 12 March. {ROUTINE} {DETAIL}"),
                       ("start", f"Minutes, 12 March. {DETAIL} {ROUTINE}")):  # fmt: skip
        with embedding_with(provider, tmp_path, f"{name}.db") as memory:
            ops = memory.agent("ops")
            at = T0
            for person in PEOPLE:
                for hobby in HOBBIES:
                    ops.observe(f"{person} {hobby}.", at=at)
                    at += timedelta(hours=3)
            minutes = ops.observe(text, at=at)
            served = ops.recall("clubhouse roof repair", 5, record=False).items
            assert [r.event.position for r in served][:1] == [minutes], (provider, name)
