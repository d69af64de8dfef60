"""A hash quoted by its first characters finds the memory holding it whole (ADR 0129), and a
relative path quoted is held by its own file's memory, not its backup's (ADR 0126)."""

from __future__ import annotations

from pathlib import Path

import engram

COMMITS = {
    "b9854c189dfd359b8529de47751bb4c342a014e8": "bumped requests to 2.32",
    "b9854c7730aa01f2c9d4e5b6a7c8d9e0f1a2b3c4": "dropped the legacy CSV importer",
    "3f0a9c1e22b4d6f8a0c2e4a6b8d0f2a4c6e8b0d2": "pinned the tokenizer to 0.19",
}


def _memory(tmp_path: Path):  # type: ignore[no-untyped-def]
    return engram.open_memory(str(tmp_path / "l.db"))


def test_a_short_hash_finds_its_commit_first_and_above_the_floor(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        ana = memory.agent("ana")
        for full, what in COMMITS.items():
            ana.observe(f"Commit {full} {what}.")
        for n in range(40):
            ana.observe(f"Deploy {n} of the billing service went out on time.")
        for short, full in (("b9854c189d", "b9854c189dfd"), ("3F0A9C1E", "3f0a9c1e22b4")):
            items = ana.recall(f"what does commit {short} do?", k=3).items
            assert items, short
            assert full in items[0].event.payload.text
            assert items[0].score >= 0.5


def test_a_prefix_two_commits_share_serves_both_and_a_private_one_stays_out(
    tmp_path: Path,
) -> None:
    with _memory(tmp_path) as memory:
        ana, bo = memory.agent("ana"), memory.agent("bo")
        for full, what in COMMITS.items():
            ana.observe(f"Commit {full} {what}.")
        bo.observe("Commit b9854c55aa00bb11cc22dd33ee44ff5566778899 is my secret.",
                   visibility="private")  # fmt: skip
        texts = [i.event.payload.text for i in ana.recall("commit b9854c1 or b9854c7?", k=5).items]
        assert any("b9854c189dfd" in t for t in texts)
        assert any("b9854c7730aa" in t for t in texts)
        assert not any("secret" in t for t in texts)
        # A memory that holds the short hash itself is what a question quoting it asks of.
        ana.observe("Release notes: build b9854c1 is the candidate.")
        first = ana.recall("what is build b9854c1?", k=3).items[0]
        assert "Release notes" in first.event.payload.text


def test_a_relative_path_quoted_is_its_own_file_s_not_its_backup_s(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        ana = memory.agent("ana")
        ana.observe("The file src/dispatch/labels/planner.py.bak has flaky tests.")
        ana.observe("The file src/dispatch/labels/planner.py is owned by the routing squad.")
        ana.observe("The file src/dispatch/labels/planner_v2.py was last touched in March.")
        first = ana.recall("Notes on src/dispatch/labels/planner.py", k=3).items[0]
        assert "routing squad" in first.event.payload.text


def test_a_long_memory_holding_a_quoted_id_is_a_candidate_whatever_the_other_words(
    tmp_path: Path,
) -> None:
    # Among long crash reports and a hundred short tickets sharing the question's other
    # words ("the", "report"), the report holding the quoted id ranked 34th in the lexical
    # pool, out of it, and was never scored.
    frame = '  File "/srv/app/routing/planner.py", line 212, in plan_route\n    s = solve(x)\n'
    with _memory(tmp_path) as memory:
        ana = memory.agent("ana")
        for n in range(100):
            kind = ("a torn parcel", "the tail-lift failing", "a locked gate")[n % 3]
            ana.observe(f"Ticket #{88400 + n}: driver reported {kind}.")
        for n in range(130):
            ana.observe(f"Stop {n} on north loop opens at {6 + n % 4}am.")
        for n in range(8):
            head = f"Crash report QX-{558201 + 97 * n} from the routing worker:\n"
            ana.observe(
                head + "Traceback (most recent call last):\n" + frame * (18 + n) + "KeyError"
            )
        items = ana.recall("Show me the crash report QX-558201", k=5).items
        assert items
        assert "QX-558201" in items[0].event.payload.text
