"""The lessons loop's API on a real SQLite ledger: propose, review, learn, apply, rules.

Every refusal is checked to append nothing (the ledger's head does not move).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from completion_stub import Reply, stub_server

from engram.agents.completion import HttpCompleter, OfflineCompleter
from engram.agents.errors import (
    DestinationError,
    SuggestionInputError,
    SuggestionStateError,
    UnknownSuggestionError,
)
from engram.agents.learning import Draft, ScarPrompt, draft_offline, suggestion_id
from engram.agents.lessons import Lessons
from engram.ledger import NewEvent
from engram.ledger.catalog import FileDiff, ScarArchived, ScarRecorded
from engram.runtime import Memory, open_memory


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the default destinations' home inside the test's folder."""
    monkeypatch.setattr("engram.agents.lessons.DEFAULT_HOME", str(tmp_path / "home"))


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with open_memory(str(tmp_path / "ledger.db"), config="/dev/null") as opened:
        yield opened


def record(
    memory: Memory,
    lesson: str,
    *,
    importance: int = 5,
    kind: str = "failure",
    what: str = "the deploy failed",
    learnable: bool = True,
) -> str:
    """Append a scar; return its event id."""
    payload = ScarRecorded(
        agent="inner",
        kind=kind,
        what=what,
        lesson=lesson,  # type: ignore[arg-type]
        importance=importance,
        learnable=learnable,
    )
    (position,) = memory.ledger.append(
        NewEvent(stream="scar:inner", kind="scar.recorded", payload=payload)
    )
    return next(memory.ledger.read(position - 1, limit=1)).id


def places(tmp_path: Path) -> dict[str, str]:
    return {
        "instructions_file": str(tmp_path / "AGENTS.md"),
        "settings": str(tmp_path / "settings.md"),
        "notes_inbox": str(tmp_path / "inbox"),
        "skill": str(tmp_path / "skills"),
        "task": str(tmp_path / "tasks"),
    }


@pytest.fixture
def lessons(memory: Memory, tmp_path: Path) -> Lessons:
    return Lessons(memory.ledger, memory.engine, places=places(tmp_path))


def unchanged(memory: Memory) -> Any:
    """A context that checks the ledger's head did not move."""

    class Check:
        def __enter__(self) -> None:
            self.head = memory.ledger.head()

        def __exit__(self, *exc: object) -> None:
            assert memory.ledger.head() == self.head, "something was appended"

    return Check()


# -- propose ----------------------------------------------------------------------------------


def test_propose_then_list_and_show(memory: Memory, lessons: Lessons) -> None:
    scar = record(memory, "Pin the parser version.")
    sid = lessons.propose([scar], "rules", "Pin the parser version.")
    (found,) = lessons.suggestions()
    assert found.id == sid
    assert (found.status, found.destination, found.scars, found.drafter) == (
        "pending",
        "rules",
        [scar],
        "person",
    )
    assert lessons.suggestion(sid[:8]) == found
    assert lessons.waiting() == []  # the scar is covered


@pytest.mark.parametrize(
    ("scars", "destination", "text", "needle"),
    [
        ([], "rules", "x", "non-empty list"),
        ("abc", "rules", "x", "non-empty list"),
        (["00000000-0000-4000-8000-000000000000"], "rules", "x", "no recorded scar"),
        (None, "nowhere", "x", "destination must be one of"),
        (None, "rules", "  ", "non-empty str"),
        (None, "rules", "two\nlines", "one line"),
        (None, "rules", "x" * 301, "at most 300"),
    ],
)
def test_propose_refuses_bad_input(
    memory: Memory, lessons: Lessons, scars: Any, destination: str, text: str, needle: str
) -> None:
    scar = record(memory, "lesson")
    with unchanged(memory), pytest.raises(SuggestionInputError, match=needle):
        lessons.propose([scar] if scars is None else scars, destination, text)  # type: ignore[arg-type]


def test_propose_refuses_an_archived_scar(memory: Memory, lessons: Lessons) -> None:
    scar = record(memory, "lesson")
    memory.ledger.append(
        NewEvent(stream="scars", kind="scar.archived", payload=ScarArchived(positions=[1]))
    )
    position = next(e.position for e in memory.ledger.read() if e.id == scar)
    memory.ledger.append(
        NewEvent(stream="scars", kind="scar.archived", payload=ScarArchived(positions=[position]))
    )
    with unchanged(memory), pytest.raises(SuggestionInputError, match="archived"):
        lessons.propose([scar], "notes_inbox", "x")


# -- review -----------------------------------------------------------------------------------


@pytest.fixture
def pending(memory: Memory, lessons: Lessons) -> str:
    return lessons.propose([record(memory, "Pin it.")], "rules", "Pin the parser version.")


def test_apply_makes_a_rule(lessons: Lessons, pending: str) -> None:
    position = lessons.apply(pending, "ana", note="good")
    found = lessons.suggestion(pending)
    assert (found.status, found.reviewer, found.note, found.final_text) == (
        "applied",
        "ana",
        "good",
        "Pin the parser version.",
    )
    assert found.reviewed_position == position
    (rule,) = lessons.rules()
    assert (rule.text, rule.suggestion, rule.reviewer, rule.position) == (
        "Pin the parser version.",
        pending,
        "ana",
        position,
    )
    assert [r.text for r in lessons.rules_for_query("which parser version?", 3)] == [rule.text]
    assert lessons.rules_for_query("unrelated words", 3) == []


def test_modify_serves_the_reviewers_text(lessons: Lessons, pending: str) -> None:
    lessons.modify(pending, "ana", "Pin the tokenizer too.")
    assert lessons.suggestion(pending).final_text == "Pin the tokenizer too."
    assert [r.text for r in lessons.rules()] == ["Pin the tokenizer too."]


def test_refuse_serves_nothing_and_is_not_drafted_again(
    memory: Memory, lessons: Lessons, pending: str
) -> None:
    lessons.refuse(pending, "ana", note="too specific")
    assert lessons.suggestion(pending).status == "refused"
    assert lessons.rules() == []
    assert lessons.learn().drafted == []


@pytest.mark.parametrize(
    ("first", "second", "error", "needle"),
    [
        ("applied", "applied", SuggestionStateError, r"reviewed already \(applied\)"),
        ("refused", "applied", SuggestionStateError, r"reviewed already \(refused\)"),
        ("modified", "refused", SuggestionStateError, r"reviewed already \(modified\)"),
    ],
)
def test_illegal_transitions_append_nothing(
    memory: Memory,
    lessons: Lessons,
    pending: str,
    first: str,
    second: str,
    error: type,
    needle: str,
) -> None:
    lessons.review(pending, first, "ana", text="Edited." if first == "modified" else None)
    rules = lessons.rules()
    with unchanged(memory), pytest.raises(error, match=needle):
        lessons.review(pending, second, "bo")
    assert lessons.rules() == rules


@pytest.mark.parametrize(
    ("call", "error", "needle"),
    [
        (
            lambda lo, s: lo.review("ffffffff", "applied", "ana"),
            UnknownSuggestionError,
            "no suggestion",
        ),
        (lambda lo, s: lo.review(s, "approved", "ana"), SuggestionInputError, "decision must be"),
        (lambda lo, s: lo.review(s, "applied", ""), SuggestionInputError, "reviewer"),
        (
            lambda lo, s: lo.review(s, "modified", "ana"),
            SuggestionInputError,
            "needs the final text",
        ),
        (
            lambda lo, s: lo.review(s, "modified", "ana", text=" \n"),
            SuggestionInputError,
            "final text",
        ),
        (
            lambda lo, s: lo.review(s, "applied", "ana", text="x"),
            SuggestionInputError,
            "'modified' only",
        ),
        (
            lambda lo, s: lo.review(s, "modified", "ana", text="a\nb"),
            SuggestionInputError,
            "one line",
        ),
        (lambda lo, s: lo.review(s, "refused", "ana", note=3), SuggestionInputError, "note"),
    ],
)
def test_bad_reviews_append_nothing(
    memory: Memory, lessons: Lessons, pending: str, call: Any, error: type, needle: str
) -> None:
    with unchanged(memory), pytest.raises(error, match=needle):
        call(lessons, pending)
    assert lessons.suggestion(pending).status == "pending"


def test_an_ambiguous_prefix_is_refused(memory: Memory, lessons: Lessons) -> None:
    scar = record(memory, "x")
    ids = [lessons.propose([scar], "notes_inbox", f"note {i}") for i in range(12)]
    common = ids[0][:8]  # UUIDv7s made together share their time prefix
    assert all(i.startswith(common) for i in ids)
    with (
        unchanged(memory),
        pytest.raises(UnknownSuggestionError, match="suggestions start with it"),
    ):
        lessons.apply(common, "ana")


class RacedLessons(Lessons):
    """Lets another reviewer append between this review's check and its append."""

    other: Lessons

    def _version(self, stream: str, upto: int | None = None) -> Any:
        if upto is not None:  # the review's own call: the other reviewer gets in first
            self.other.refuse(stream.removeprefix("suggestion:"), "bo")
        return super()._version(stream, upto)


def test_of_two_racing_reviewers_the_second_append_fails(
    memory: Memory, lessons: Lessons, pending: str
) -> None:
    raced = RacedLessons(memory.ledger, memory.engine)
    raced.other = lessons
    with pytest.raises(SuggestionStateError, match="another review was appended first"):
        raced.apply(pending, "ana")
    reviews = [e for e in memory.ledger.read(kinds=["suggestion.reviewed"])]
    assert [(e.payload.decision, e.payload.reviewer) for e in reviews] == [("refused", "bo")]
    assert lessons.rules() == []


def test_threads_reviewing_one_suggestion_leave_one_review(
    memory: Memory, lessons: Lessons
) -> None:
    scar = record(memory, "x")
    ids = [lessons.propose([scar], "rules", f"Rule {i}.") for i in range(8)]
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def review(who: str) -> None:
        barrier.wait()
        for sid in ids:
            try:
                lessons.apply(sid, who)
                outcomes.append("ok")
            except SuggestionStateError:
                outcomes.append("refused")

    threads = [threading.Thread(target=review, args=(f"r{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("ok") == len(ids)
    reviewed = [e.payload.suggestion for e in memory.ledger.read(kinds=["suggestion.reviewed"])]
    assert sorted(reviewed) == sorted(ids)
    assert len(lessons.rules()) == len(ids)


# -- destinations -----------------------------------------------------------------------------


def test_a_file_destination_is_appended_and_the_write_recorded(
    memory: Memory, lessons: Lessons, tmp_path: Path
) -> None:
    target = tmp_path / "AGENTS.md"
    target.write_text("# Agents\nno newline at the end")
    sid = lessons.propose([record(memory, "x")], "instructions_file", "Run the tests first.")
    lessons.apply(sid, "ana")
    assert target.read_text() == "# Agents\nno newline at the end\nRun the tests first.\n"
    found = lessons.suggestion(sid)
    assert found.written_path == str(target)
    (written,) = memory.ledger.read(kinds=["suggestion.written"])
    assert written.payload.mode == "appended"
    assert written.payload.sha256 == hashlib.sha256(b"Run the tests first.\n").hexdigest()
    assert written.position == found.written_position
    with unchanged(memory), pytest.raises(SuggestionStateError, match="was written at"):
        lessons.write(sid)


def test_a_diff_replaces_the_file_only_if_it_is_unchanged(
    memory: Memory, lessons: Lessons, tmp_path: Path
) -> None:
    target = tmp_path / "settings.md"
    target.write_text("timeout = 5\n")
    diff = FileDiff(path="settings.md", before="timeout = 5\n", after="timeout = 30\n")
    scar = record(memory, "x")
    stale = lessons.propose([scar], "settings", "Raise the timeout.", diff=diff)
    fresh = lessons.propose([scar], "settings", "Raise the timeout.", diff=diff)
    lessons.apply(fresh, "ana")
    assert target.read_text() == "timeout = 30\n"
    with unchanged(memory), pytest.raises(DestinationError, match="changed since"):
        lessons.apply(stale, "ana")
    assert lessons.suggestion(stale).status == "pending"


def test_a_folder_destination_gets_one_file_per_suggestion(
    memory: Memory, lessons: Lessons, tmp_path: Path
) -> None:
    scar = record(memory, "x")
    sid = lessons.propose([scar], "task", "Investigate the flaky test.")
    lessons.modify(sid, "ana", "Investigate the flaky parser test.")
    text = (tmp_path / "tasks" / f"{sid}.md").read_text()
    assert text.startswith("Investigate the flaky parser test.\n")
    assert scar in text


@pytest.mark.parametrize(
    ("destination", "place"),
    [
        ("skill", "skills/{id}.md"),
        ("task", "tasks/{id}.md"),
        ("notes_inbox", "notes/{id}.md"),
        ("instructions_file", "AGENTS.md"),
        ("settings", "settings-suggestions.md"),
    ],
)
def test_an_unconfigured_destination_is_written_under_the_home(
    memory: Memory, tmp_path: Path, destination: str, place: str
) -> None:
    lessons = Lessons(memory.ledger, memory.engine, home=str(tmp_path / "data"))
    sid = lessons.propose([record(memory, "x")], destination, "Bisect the lockfile.")  # type: ignore[arg-type]
    lessons.apply(sid, "ana")
    written = tmp_path / "data" / place.format(id=sid)
    assert "Bisect the lockfile." in written.read_text()
    assert lessons.suggestion(sid).written_path == str(written)


@pytest.mark.parametrize("destination", ["notes_inbox", "skill", "task", "instructions_file"])
def test_a_destination_that_cannot_be_written_is_refused_before_the_review_is_appended(
    memory: Memory, tmp_path: Path, destination: str
) -> None:
    home = tmp_path / "data"
    home.write_text("a file where the lessons folder should be\n")
    lessons = Lessons(memory.ledger, memory.engine, home=str(home))
    sid = lessons.propose([record(memory, "x")], destination, "Bisect the lockfile.")  # type: ignore[arg-type]
    head = memory.ledger.head()
    with pytest.raises(DestinationError, match="is not a folder"):
        lessons.apply(sid, "ana")
    assert memory.ledger.head() == head
    assert lessons.suggestion(sid).status == "pending"


def test_a_write_failing_after_the_review_says_so_and_can_be_retried(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import types

    from engram.agents import destinations

    lessons = Lessons(memory.ledger, memory.engine, home=str(tmp_path / "data"))
    sid = lessons.propose([record(memory, "x")], "notes_inbox", "Bisect the lockfile.")

    def full(**_: object) -> tuple[int, str]:
        raise OSError(28, "No space left on device")

    # The disk fills between the check and the write.
    monkeypatch.setattr(destinations, "tempfile", types.SimpleNamespace(mkstemp=full))
    with pytest.raises(DestinationError, match=r"applied at position .* No space left"):
        lessons.apply(sid, "ana")
    monkeypatch.undo()
    assert lessons.suggestion(sid).status == "applied"
    lessons.write(sid)
    assert "Bisect the lockfile." in (tmp_path / "data" / "notes" / f"{sid}.md").read_text()


def test_places_must_be_file_destinations(memory: Memory) -> None:
    with pytest.raises(SuggestionInputError, match="not destinations written to files"):
        Lessons(memory.ledger, memory.engine, places={"rules": "x"})


# -- learn ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "lesson", "destination", "text"),
    [
        (
            "failure",
            "Always run the migrations before a deploy. It broke prod.",
            "rules",
            "Always run the migrations before a deploy. It broke prod.",
        ),
        # A lesson of several steps keeps every one (ADR 0127).
        (
            "failure",
            "Wait for the centrifuge to stop. Then check the lid light. Log cracked tubes.",
            "rules",
            "Wait for the centrifuge to stop. Then check the lid light. Log cracked tubes.",
        ),
        ("failure", "we must pin the tokenizer", "rules", "We must pin the tokenizer."),
        # A failure's lesson is a lesson whatever its first word (settings are a redirect).
        (
            "failure",
            "The retry timeout setting was too low",
            "rules",
            "The retry timeout setting was too low.",
        ),
        (
            "failure",
            "Schedule the export after the backup",
            "rules",
            "Schedule the export after the backup.",
        ),
        (
            "failure",
            "Monitor disk usage on the workers",
            "rules",
            "Monitor disk usage on the workers.",
        ),
        (
            "failure",
            "Still need to investigate the flaky parser test",
            "task",
            "Still need to investigate the flaky parser test. (from: what)",
        ),
        (
            "failure",
            "Follow up with the vendor about the broken webhook",
            "task",
            "Follow up with the vendor about the broken webhook. (from: what)",
        ),
        # An instruction speaking of a follow-up or of later is a rule, not work to do.
        (
            "failure",
            "Only commit to dates after engineering signs off; otherwise say we will follow up",
            "rules",
            "Only commit to dates after engineering signs off; otherwise say we will follow up.",
        ),
        (
            "failure",
            "Never promise a delivery date to a customer; confirm it later with the team",
            "rules",
            "Never promise a delivery date to a customer; confirm it later with the team.",
        ),
        (
            "victory",
            "Bisecting the lockfile found the bad pin",
            "skill",
            "Bisecting the lockfile found the bad pin. (worked when: what)",
        ),
        ("failure", "The cache was cold", "rules", "The cache was cold."),
        (
            "failure",
            "Always " + "check everything " * 30,
            "instructions_file",
            "Always " + ("check everything " * 30).strip(),
        ),
    ],
)
def test_the_offline_drafter_is_extractive_and_chooses_by_rule(
    kind: str, lesson: str, destination: str, text: str
) -> None:
    draft = draft_offline(ScarPrompt(kind=kind, what="what", lesson=lesson, importance=5))
    assert draft == Draft(destination, text)  # type: ignore[arg-type]


def test_learn_drafts_by_importance_in_batches(memory: Memory, lessons: Lessons) -> None:
    low = record(memory, "Check the logs.", importance=2)
    high = record(memory, "Never deploy on Fridays.", importance=9)
    record(memory, "Not for learning.", learnable=False)
    dry = lessons.learn(dry_run=True)
    assert [d.scar for d in dry.drafted] == [high, low]
    assert all(d.position is None for d in dry.drafted)
    assert dry.waiting == 2
    assert memory.ledger.read(kinds=["suggestion.proposed"]) is not None
    assert list(memory.ledger.read(kinds=["suggestion.proposed"])) == []
    report = lessons.learn(batch=1)
    assert [(d.scar, d.destination, d.text) for d in report.drafted] == [
        (high, "rules", "Never deploy on Fridays."),
        (low, "rules", "Check the logs."),
    ]
    assert report.waiting == 0
    assert [s.id for s in lessons.suggestions()] == [
        suggestion_id(high, "offline"),
        suggestion_id(low, "offline"),
    ]
    assert lessons.learn().drafted == []  # nothing left to draft


def test_a_rerun_after_a_crash_appends_nothing_new(memory: Memory, lessons: Lessons) -> None:
    record(memory, "Never deploy on Fridays.")
    dry = lessons.learn(dry_run=True)
    first = lessons.learn()
    assert [d.suggestion for d in dry.drafted] == [d.suggestion for d in first.drafted]
    head = memory.ledger.head()
    # The same drafts appended again (a step that crashed before it saw its positions).
    from engram.agents.learning import _append, _proposal

    (d,) = first.drafted
    again = _proposal([d.scar], Draft(d.destination, d.text), "offline", "job:learn")  # type: ignore[arg-type]
    assert _append(memory.ledger, [again]) == {d.suggestion: d.position}
    assert memory.ledger.head() == head


def test_a_model_that_is_down_leaves_scars_waiting_with_the_reason(
    memory: Memory, lessons: Lessons
) -> None:
    scars = [record(memory, f"Lesson {i}.", importance=9 - i) for i in range(3)]
    with stub_server() as server:
        server.script += [Reply(503, {"error": "overloaded"})] * 3
        down = Lessons(
            memory.ledger,
            memory.engine,
            completer=HttpCompleter(base_url=server.base_url, model="stub", timeout=5, backoff=0),
        )
        report = down.learn(batch=2)
        assert report.drafted == []
        assert [s for s, _ in report.deferred] == scars
        assert len(server.requests) == 3  # one scar's three attempts, then no more calls
    deferred = list(memory.ledger.read(kinds=["suggestion.deferred"]))
    assert [e.payload.scars for e in deferred] == [scars[:2], scars[2:]]  # one per batch
    reasons = {w.id: (w.deferrals, w.last_reason) for w in lessons.waiting()}
    assert set(reasons) == set(scars)
    assert all(r[0] >= 1 and "HTTP 503" in r[1] for r in reasons.values())
    # Back up: the offline drafter drafts them all.
    assert len(lessons.learn().drafted) == 3


def test_a_malformed_answer_defers_only_its_scar(memory: Memory) -> None:
    first = record(memory, "First.", importance=9)
    second = record(memory, "Second.", importance=1)
    with stub_server() as server:
        server.script.append(Reply(200, {"choices": [{"message": {"content": "not json"}}]}))
        lessons = Lessons(
            memory.ledger,
            memory.engine,
            completer=HttpCompleter(base_url=server.base_url, model="stub", timeout=5),
        )
        report = lessons.learn()
    assert [d.scar for d in report.drafted] == [second]
    ((scar, reason),) = report.deferred
    assert scar == first
    assert "CompletionFormatError" in reason


def test_learn_refuses_bad_batches(lessons: Lessons) -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(SuggestionInputError, match="batch"):
            lessons.learn(batch=bad)  # type: ignore[arg-type]
    with pytest.raises(SuggestionInputError, match="limit"):
        lessons.learn(limit=0)


def test_an_offline_completer_without_the_draft_answer_defers(memory: Memory) -> None:
    record(memory, "x")
    lessons = Lessons(memory.ledger, memory.engine, completer=OfflineCompleter())
    report = lessons.learn()
    assert "no answer for Draft" in report.deferred[0][1]
    assert msgspec.json.encode(report.deferred)  # plain data, for the CLI's JSON


def test_memory_lessons_drafts_through_the_routed_learn_use(tmp_path: Path) -> None:
    with stub_server() as server:
        routing = tmp_path / "routing.toml"
        routing.write_text(
            '[embedding.default]\nprovider = "hash"\n[complete.learn]\nprovider = "http"\n'
            f'base_url = "{server.base_url}"\nmodel = "stub"\ntimeout = 5\n'
        )
        with open_memory(
            str(tmp_path / "l.db"),
            config="/dev/null",
            routing=str(routing),
            destinations={"skill": str(tmp_path / "skills")},
        ) as memory:
            record(memory, "Always check the disk first.")
            lessons = memory.lessons()
            assert lessons.places["skill"] == str(tmp_path / "skills")
            # The destinations left out are written beside the data, needing no config.
            assert lessons.places["task"] == str(tmp_path / "lessons" / "tasks")
            (drafted,) = lessons.learn().drafted
            assert lessons.suggestion(drafted.suggestion).drafter == "http:stub"
            assert len(server.requests) == 1
