"""Letters alike only in case never break a memory (ADR 0147).

Python's case-blind patterns match "ſ" (long s) as "s", "K" (the Kelvin sign) as "k" and
"ı" (dotless i) as "i"; the words they find then did not lower-case to a key of the tables
that rewrite dates, numbers and titles, and one memory holding "5 ſeptember 2026" made every
recall that met it, and every observe that compared it, raise. Such a word is now left as it
is written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engram
from engram.agents.written import written as _written
from engram.projections.copies import dates_one_way
from engram.runtime import Memory


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    folder: Path = tmp_path_factory.mktemp("lookalikes")
    with engram.open_memory(str(folder / "ledger.db"), config=os.devnull) as opened:
        yield opened


def test_a_month_or_number_spelt_with_lookalike_letters_is_left_as_written() -> None:
    assert dates_one_way("5 ſeptember 2026") == "5 ſeptember 2026"
    assert dates_one_way("ſep 5, 2026") == "ſep 5, 2026"
    assert dates_one_way("5 September 2026") == "5 September 2026"  # the real one still reads
    assert dates_one_way("Sep 5, 2026") == "5 September 2026"
    assert _written.__wrapped__("the ſecond of May") == "the ſecond of May"
    assert _written.__wrapped__("fıve and thırty one") == "fıve and thırty one"
    assert _written.__wrapped__("miſter Grey") == "miſter Grey"
    assert _written.__wrapped__("twenty one mins") == "21 minutes"


def test_a_memory_with_lookalike_letters_is_observed_and_recalled(memory: Memory) -> None:
    ann = memory.agent("ann")
    held = ann.observe("The audit is on 5 ſeptember 2026 in room four.")
    ann.observe("The audit moved to 5 October 2026.")
    served = ann.recall("when is the audit?", min_score=0.0, record=False).items
    assert held in [r.event.position for r in served]


_WORDS = st.sampled_from(
    [
        "September",
        "Sep",
        "Sept",
        "August",
        "Aug",
        "March",
        "first",
        "second",
        "fifth",
        "sixth",
        "twenty",
        "thirty",
        "one",
        "five",
        "doctor",
        "mister",
        "professor",
        "every",
        "mins",
        "secs",
        "max",
        "5",
        "29th",
        "2026",
        "of",
        "the",
        "at",
        "9am",
        "pm",
        "moved",
        "to",
    ]
)
_LOOKALIKE = {"s": "ſ", "S": "ſ", "k": "\u212a", "K": "\u212a", "i": "ı", "I": "İ"}


@st.composite
def _texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(_WORDS, min_size=2, max_size=10))
    swap = draw(st.lists(st.booleans(), min_size=len(words), max_size=len(words)))
    return " ".join(
        "".join(_LOOKALIKE.get(c, c) for c in w) if s else w.upper() if len(w) % 3 == 0 else w
        for w, s in zip(words, swap, strict=True)
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=_texts())
def test_observe_and_recall_never_raise_on_lookalike_letters(memory: Memory, text: str) -> None:
    ann = memory.agent("bo")
    ann.observe(text)
    ann.recall(text, min_score=0.0, record=False)
