"""A task's final mark does not change the rules it is served (ADR 0133)."""

from __future__ import annotations

from pathlib import Path

import pytest
from detection_store import EMBEDDERS, embedding_with

from engram.agents.context import build_context
from engram.agents.guidance import as_sentence

LESSONS = (
    ("The churn model scored 0.97 because scaling saw the whole table before the split.",
     "Fit scalers and feature selection on the training fold only."),
    ("Ranking features on every customer before cross-validation inflated the accuracy.",
     "Select features inside each fold so nothing leaks from the held-out rows."),
    ("Three hundred hits were reported at p < 0.05 out of ten thousand tests.",
     "Correct p-values for multiple comparisons before calling hits."),
    ("The nightly export filled the home directory and the jobs died.",
     "Write intermediate files to scratch, not home."),
    ("Survey rows were joined to the answers by position and shifted by one.",
     "Join tables on their id column, never on row order."),
)  # fmt: skip


def test_a_task_reads_as_one_sentence_whatever_its_final_mark() -> None:
    assert {as_sentence(t) for t in ("Plan it", "Plan it.", "Plan it?", "Plan it ?! ")} == {
        "Plan it."
    }
    assert as_sentence("Do X. Then Y?") == "Do X. Then Y."


@pytest.mark.parametrize("provider", EMBEDDERS)
def test_the_same_task_with_or_without_a_final_mark_gets_the_same_rules(
    provider: str, tmp_path: Path
) -> None:
    # Under MiniLM, "... with cross-validation" got no rule, "... ." two and "... ?" none.
    with embedding_with(provider, tmp_path) as memory:
        for what, lesson in LESSONS:
            memory.scars("analyst").record("failure", what, lesson, importance=6)
        lessons = memory.lessons()
        lessons.learn()
        for suggestion in lessons.suggestions(["pending"]):
            lessons.apply(suggestion.id, "reviewer")
        for task in (
            "Estimate the accuracy of the retention model with cross-validation",
            "Compare the two cohorts on every lab value",
            "Score the new leads with the propensity model",
        ):
            served = {
                tuple(
                    c["text"]
                    for c in build_context(memory.agent("ml"), task + mark, save=False).frames[
                        "constraints"
                    ]
                )
                for mark in ("", ".", "?", " !")
            }
            assert len(served) == 1, (task, served)
