"""The quality suite runs end to end with the hash embedder and reports its four figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.bench import quality_probes
from engram.bench.quality_bench import GOALS, best_threshold, run_probes
from engram.projections.embedding import HashEmbedder


def test_the_probes_are_generated_from_the_seed_alone() -> None:
    import random
    from datetime import UTC, datetime

    start = datetime(2026, 1, 1, tzinfo=UTC)
    one = quality_probes.ids(random.Random(7), start)[0]
    two = quality_probes.ids(random.Random(7), start)[0]
    assert one.memories == two.memories
    assert len(one.memories) == 500
    assert [c.query for c in one.cases] == [c.query for c in two.cases]
    # Every id case's target holds its id verbatim; no other memory holds it.
    for case in one.cases:
        code = case.query.split()[-1].rstrip("?.") if " " in case.query else case.query
        holders = [i for i, (text, _) in enumerate(one.memories) if code in text.split()]
        assert holders == [case.target]


def test_the_notes_family_asks_half_answerable_questions_of_a_store_of_300() -> None:
    import random
    from datetime import UTC, datetime

    from engram.bench import quality_notes

    start = datetime(2026, 1, 1, tzinfo=UTC)
    (store,) = quality_notes.notes(random.Random(5), start)
    (again,) = quality_notes.notes(random.Random(5), start)
    assert store.memories == again.memories
    assert len(store.memories) == 300
    kinds = [c.family for c in store.cases]
    assert kinds.count("answerable") == len(kinds) // 2
    assert set(kinds) == set(quality_notes.KINDS)
    held = " ".join(text for text, _ in store.memories)
    for case in store.cases:
        assert case.answerable == (case.family == "answerable")
        if case.family == "absent thing":  # its name is in no note
            assert not any(n in case.query and n in held for _, ns in quality_notes.THINGS
                           for n in ns)  # fmt: skip


def test_best_threshold_separates_what_can_be_separated() -> None:
    rows = [{"answerable": 1.0, "top": 0.8}, {"answerable": 0.0, "top": 0.1}]
    threshold, accuracy = best_threshold(rows)
    assert accuracy == 1.0
    assert 0.1 < threshold <= 0.8


@pytest.mark.slow
def test_the_suite_runs_with_hash_vectors(tmp_path: Path) -> None:
    outcomes = {o.family: o for o in run_probes(HashEmbedder(), 1, str(tmp_path))}
    assert set(outcomes) == set(GOALS)
    assert 0.0 <= outcomes["updates"].value <= 1.0
    assert 1.0 <= outcomes["copies"].value <= 10.0
    assert outcomes["ids"].value == 1.0


def test_the_detection_probes_hold_one_change_per_person() -> None:
    import random
    from datetime import UTC, datetime

    from engram.bench import detection_probes

    start = datetime(2026, 1, 1, tzinfo=UTC)
    for heldout in (False, True):
        (store,) = detection_probes.detection(random.Random(3), start, heldout=heldout)
        assert store.changes == len(store.truth) == 24
        for new, old in store.truth:
            (new_text, new_at), (old_text, old_at) = store.memories[new], store.memories[old]
            assert old_at < new_at
            person = next(n for n in quality_probes.NAMES if n in old_text)
            assert person in new_text


def test_the_things_probes_hold_one_change_per_thing_and_swap_their_dates() -> None:
    import random
    from datetime import UTC, datetime

    from engram.bench import quality_things

    start = datetime(2026, 1, 1, tzinfo=UTC)
    (store,) = quality_things.thing_detection(random.Random(3), start)
    assert store.changes == len(store.truth) == len(quality_things.THINGS)
    for new, old in store.truth:
        (new_text, new_at), (old_text, old_at) = store.memories[new], store.memories[old]
        assert old_at < new_at
        thing = next(t for t in quality_things.THINGS if t in old_text)
        assert thing in new_text
    plain, swapped = quality_things.thing_updates(random.Random(3), start)
    for a, b in zip(plain.cases, swapped.cases, strict=True):
        assert a.query == b.query
        assert plain.memories[a.current][0] == swapped.memories[b.stale][0]
        assert plain.memories[a.current][1] == swapped.memories[b.current][1]


@pytest.mark.slow
def test_detection_is_measured_on_every_family(tmp_path: Path) -> None:
    from engram.bench.quality_detection import detection_figures, measure

    tuned = measure(HashEmbedder(), 1, str(tmp_path), heldout=False)
    assert tuned["changes"] == 24
    assert tuned["right"] <= tuned["detected"]
    # Two facts of one person, or two numbered events, are not replacements: with hash
    # vectors detection finds few changes, and what it finds is right.
    assert tuned["precision"] >= 0.9
    figures = detection_figures("hash", HashEmbedder(), 1, str(tmp_path))
    assert [f.name for f in figures] == [
        "quality detection precision (hash)",
        "quality detection recall (hash)",
        "quality detection-heldout precision (hash)",
        "quality detection-heldout recall (hash)",
        "quality detection-things precision (hash)",
        "quality detection-things recall (hash)",
    ]
    things = measure(HashEmbedder(), 1, str(tmp_path), family="detection-things")
    assert things["changes"] == 12
    assert things["right"] <= things["detected"]
