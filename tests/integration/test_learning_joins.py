"""What may join a suggestion drafted already (ADR 0127): a repeat of its outcome only, and,
once it is a rule in force or refused, only a repeat teaching its lesson (ADR 0185)."""

from __future__ import annotations

from pathlib import Path

import pytest

import engram
from engram.projections.embedding.onnx_provider import ready as onnx_ready

MINILM = pytest.mark.skipif(not onnx_ready(), reason="needs the onnx extra and MiniLM weights")

WHAT = "The deploy failed at night: the migration locked the users table for ten minutes."
LESSON = "Run every migration on the users table with a lock timeout."


def _learned(  # type: ignore[no-untyped-def]
    tmp_path: Path,
    apply: bool,
    what: str,
    lesson: str,
    kind: str = "failure",
    provider: str = "hash",
    first: tuple[str, str] = (WHAT, LESSON),
    refuse: bool = False,
):
    """Draft ``first`` (applied when ``apply``), record one more scar, learn again; return
    the report and the first suggestion's scars."""
    routing = tmp_path / "routing.toml"
    routing.write_text(f'[embedding.default]\nprovider = "{provider}"\n')
    with engram.open_memory(str(tmp_path / "l.db"), routing=str(routing)) as memory:
        memory.scars("ana").record("failure", *first, importance=7)
        lessons = memory.lessons()
        (first,) = lessons.learn().drafted
        if apply:
            lessons.apply(first.suggestion, "reviewer")
        if refuse:
            lessons.refuse(first.suggestion, "reviewer")
        memory.scars("bo").record(kind, what, lesson, importance=6)  # type: ignore[arg-type]
        report = lessons.learn()
        return report, lessons.suggestion(first.suggestion).scars


def test_a_repeat_of_the_lesson_joins_the_rule_in_force(tmp_path: Path) -> None:
    report, scars = _learned(
        tmp_path,
        True,
        "Night deploy blocked again: the users table migration held its lock too long.",
        "Migrations on the users table need a lock timeout, every one of them.",
    )
    assert report.drafted == []
    assert len(scars) == 2


#: A lab's two mistakes of one protocol: alike enough in MiniLM's eyes (whole scars at a
#: cosine of about 0.4) to read as one mistake, teaching two lessons.
PIPETTE = (
    "The liquid handler protocol reused one tip across a whole column, carrying DNA between"
    " wells; the negative controls came back positive.",
    "Use a fresh tip for every sample transfer in the pipetting protocol.",
)
STERILE = (
    "An autoclave run was logged as sterile although its indicator tape had not changed colour.",
    "Check the indicator tape's colour change before signing the sterility log.",
)


@MINILM
@pytest.mark.parametrize(("apply", "joins"), [(True, False), (False, True)])
def test_another_lesson_joins_a_draft_but_never_a_rule_in_force(
    tmp_path: Path, apply: bool, joins: bool
) -> None:
    # The sterility scar joined the pipetting rule in force: its lesson was never drafted,
    # and the rule was served for its situation. A draft not yet reviewed may still take
    # it: its evidence is the reviewer's to read.
    report, scars = _learned(tmp_path, apply, *STERILE, provider="onnx", first=PIPETTE)
    assert (len(scars) == 2) is joins
    assert [d.text for d in report.drafted] == ([] if joins else [STERILE[1]])


@MINILM
def test_another_lesson_is_not_refused_unread_by_joining_a_refused_one(tmp_path: Path) -> None:
    # ADR 0185: an allergen scar joined a refused suggestion about hot food (both a kitchen's)
    # and was never drafted: a refusal was a decision on a lesson, as an approval is.
    report, scars = _learned(tmp_path, False, *STERILE, provider="onnx", first=PIPETTE, refuse=True)
    assert len(scars) == 1
    assert [d.text for d in report.drafted] == [STERILE[1]]


def test_a_victory_never_joins_a_failure_s_suggestion(tmp_path: Path) -> None:
    report, scars = _learned(
        tmp_path,
        False,
        "The night deploy went through: the users table migration ran with a lock timeout.",
        "Run every migration on the users table with a lock timeout.",
        kind="victory",
    )
    assert len(scars) == 1
    assert len(report.drafted) == 1
