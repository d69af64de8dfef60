"""The learning loop's tiers as jobs, on a real SQLite ledger: post-project lessons, skill
proposals, tier-1 hygiene; and the doctrine served in context frames."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from clocks import Clock

from engram.agents.context import build_context
from engram.agents.errors import SuggestionInputError
from engram.agents.postproject import close_project
from engram.jobs import JobRunner
from engram.jobs.hygiene import HygieneJob, HygieneSettings
from engram.jobs.postproject import PostProjectJob
from engram.jobs.skills import SkillJob
from engram.ledger import NewEvent
from engram.ledger.catalog import ContextSaved, MemoryRecalled, RecalledItem, ScarArchived
from engram.runtime import Memory

T0 = datetime(2026, 5, 1, tzinfo=UTC)


def _scar(memory: Memory, agent: str, kind: str, what: str, lesson: str, **kw: object) -> str:
    position = memory.scars(agent).record(kind, what, lesson, importance=6, **kw)  # type: ignore[arg-type]
    return memory.ledger.get([position])[0].id


# -- post-project lessons ----------------------------------------------------------------------


def _post_project(memory: Memory, job: PostProjectJob | None = None) -> JobRunner:
    """Return a runner of the post-project job (``job``, else a default one), two hours on."""
    return JobRunner(
        memory.ledger,
        memory.engine,
        [job or PostProjectJob()],
        clock=Clock(T0 + timedelta(hours=2)),
    )


def test_a_closed_project_gets_a_five_part_lesson_and_a_small_one_is_skipped(
    memory: Memory,
) -> None:
    at = T0 + timedelta(minutes=5)
    for i, agent in enumerate(("ana", "bo")):
        _scar(
            memory,
            agent,
            "failure",
            f"the migration locked the users table (run {i})",
            "run migrations with a lock timeout",
            sources={"task": "billing-v2"},
            at=at,
        )
    _scar(
        memory,
        "ana",
        "failure",
        "a secret leaked into the build log",
        "mask secrets",
        tags=["billing-v2"],
        at=at,
    )
    _scar(
        memory,
        "bo",
        "victory",
        "the canary caught the bad release",
        "ship behind a canary",
        sources={"task": "billing-v2"},
        at=at,
    )
    _scar(memory, "ana", "failure", "tiny slip", "be careful", sources={"task": "tiny"}, at=at)
    _scar(memory, "ana", "failure", "another project", "not mine", sources={"task": "other"}, at=at)
    close_project(
        memory.ledger,
        "billing-v2",
        "ana",
        outcome="shipped",
        estimate_hours=40,
        actual_hours=62,
        at=at + timedelta(minutes=1),
    )
    close_project(memory.ledger, "tiny", "ana", at=at + timedelta(minutes=1))
    with pytest.raises(SuggestionInputError, match="actual_hours"):
        close_project(memory.ledger, "x", "ana", actual_hours=float("nan"))
    closed = memory.ledger.head()
    with pytest.raises(SuggestionInputError, match="closed already"):
        close_project(memory.ledger, "tiny", "bob")  # a project closes once
    with pytest.raises(SuggestionInputError, match=r"got 5,000 characters$"):
        close_project(memory.ledger, "p" * 5000, "ana")  # said by its length, not echoed
    assert memory.ledger.head() == closed
    runner = _post_project(memory)
    head = memory.ledger.head()
    dry = runner.run("postproject", dry_run=True)
    assert memory.ledger.head() == head
    assert dry.plan.counts == {"closed": 2, "drafted": 1, "skipped": 1}
    result = runner.run("postproject")
    assert result.outcome == "ok"
    (lesson,) = memory.lessons().suggestions(["pending"])
    assert lesson.destination == "notes_inbox"
    assert lesson.drafter == "postproject"
    assert len(lesson.scars) == 4  # the project's own: by task or by tag, not the others'
    text = lesson.text
    assert text.startswith("Post-project lesson: billing-v2\n")
    assert "estimated 40 h, took 62 h (1.55x the estimate); outcome: shipped" in text
    errors = text.split("Top recurring errors:\n")[1].split("\n\n")[0].splitlines()
    assert errors[0] == "- the migration locked the users table (run 0) (x2)"
    # A failure seen once says so under the heading of recurring errors (ADR 0142).
    assert errors[1:] == ["- a secret leaked into the build log (once)"]
    assert "- ship behind a canary" in text.split("Patterns to standardise:")[1]
    assert "Doctrine candidate: run migrations with a lock timeout" in text
    assert "Tool to create: a check that runs before the work it guards" in text
    skipped = [line for line in result.plan.lines if line["kind"] == "skipped"]
    assert skipped == [
        {"kind": "skipped", "item": "tiny (1 scars)", "detail": "too small: fewer than 3 scars"}
    ]
    # The next window has no closure: nothing more is drafted.
    runner.clock.now += timedelta(hours=1)  # type: ignore[attr-defined]
    assert runner.run("postproject").plan.counts["drafted"] == 0
    # Applied, the lesson is a note of the doctrine, served for a task it speaks to.
    memory.lessons().apply(lesson.id, "carol")
    frame = build_context(memory.agent("zed"), "how should we run the migrations?", save=False)
    notes = [e for e in frame.frames["episodic"] if e["type"] == "note"]  # type: ignore[union-attr]
    assert notes
    assert notes[0]["text"].startswith("Post-project lesson: billing-v2")


def _closed_launch(memory: Memory) -> tuple[str, str, str]:
    """Three failures of the project "launch", their lessons drafted and reviewed: the
    coupon one refused, the others applied; then the project closed. Return the scars' ids."""
    at = T0 + timedelta(minutes=5)
    coupons = _scar(
        memory,
        "billing-bot",
        "failure",
        "three coupons were combined on one basket and the kettle sold below cost",
        "reject a second coupon on any basket",
        tags=["launch"],
        at=at,
    )
    parcel = _scar(
        memory,
        "triage-bot",
        "failure",
        "promised the parcel for Friday and it came on Wednesday",
        "quote the carrier's window, never a day",
        tags=["launch"],
        at=at,
    )
    reopened = _scar(
        memory,
        "returns-bot",
        "failure",
        "closed the ticket before the customer confirmed and it was reopened",
        "wait for the customer's confirmation before closing",
        tags=["launch"],
        at=at,
    )
    lessons = memory.lessons()
    lessons.learn()
    for drafted in lessons.suggestions(["pending"]):
        if coupons in drafted.scars:
            lessons.refuse(drafted.id, "ana")
        else:
            lessons.apply(drafted.id, "ana")
    close_project(memory.ledger, "launch", "ana", at=at + timedelta(minutes=1))
    return coupons, parcel, reopened


def test_a_refused_lesson_stays_refused_through_the_post_project_lesson(memory: Memory) -> None:
    coupons, _, _ = _closed_launch(memory)
    runner = _post_project(memory)
    runner.run("postproject")
    (note,) = memory.lessons().suggestions(["pending"])
    # What happened is one of the project's errors; its refused lesson is proposed nowhere.
    assert "three coupons were combined" in note.text
    assert "second coupon" not in note.text
    assert "Doctrine candidate: quote the carrier's window, never a day" in note.text
    # Applying the project's lesson is no verdict on the scars' own lessons (ADR 0145).
    memory.lessons().apply(note.id, "carol")
    task = "a shopper wants two coupons on one basket"
    (scar,) = [
        r for r in memory.agent("zed").recall(task, 10, scope="scars", record=False).items
        if r.event.id == coupons
    ]  # fmt: skip
    assert scar.refused
    frame = build_context(memory.agent("zed"), task, save=False)
    texts = [e["text"] for f in frame.frames.values() if isinstance(f, list) for e in f]
    assert texts
    assert not [t for t in texts if "second coupon" in t and "Post-project" not in t]


def test_a_post_project_lesson_leaves_its_scars_to_the_learning_step(memory: Memory) -> None:
    at = T0 + timedelta(minutes=5)
    for i in range(3):
        _scar(
            memory,
            "ana",
            "failure",
            f"the nightly export timed out ({i})",
            "page the export owner when it times out",
            tags=["exports"],
            at=at,
        )
    close_project(memory.ledger, "exports", "ana", at=at + timedelta(minutes=1))
    runner = _post_project(memory)
    runner.run("postproject")
    (note,) = memory.lessons().suggestions(["pending"])
    # The scars are evidence of the project, not the note's lesson: still waiting to be
    # drafted, and a repeat drafts a lesson of its own rather than joining the note.
    assert len(memory.lessons().waiting()) == 3
    _scar(memory, "bo", "failure", "the nightly export timed out again",
          "page the export owner when it times out", at=at + timedelta(minutes=2))  # fmt: skip
    memory.lessons().learn()
    drafted = [s for s in memory.lessons().suggestions(["pending"]) if s.id != note.id]
    assert len(drafted) == 1
    assert len(drafted[0].scars) == 4
    assert next(s for s in memory.lessons().suggestions() if s.id == note.id).scars == note.scars


def test_the_post_project_lesson_counts_repeats_by_meaning(memory: Memory) -> None:
    from word_vectors import WordVectors

    at = T0 + timedelta(minutes=5)
    for what, lesson in (
        ("a migration froze checkout", "time-box every migration"),
        ("the migration stalled signups", "cap how long a migration may hold"),
        ("the migration blocked the orders page", "give a migration a deadline"),
        ("a token leaked into the build log", "mask secrets before printing"),
    ):
        _scar(memory, "ana", "failure", what, lesson, tags=["schema"], at=at)
    close_project(memory.ledger, "schema", "ana", at=at + timedelta(minutes=1))

    def errors(job: PostProjectJob) -> list[str]:
        runner = _post_project(memory, job)
        (event,) = runner.run("postproject", dry_run=True).plan.events
        text: str = event.payload.text
        return text.split("Top recurring errors:\n")[1].split("\n\n")[0].splitlines()

    # The words alone share one ("migration"): three errors seen once each.
    assert errors(PostProjectJob()) == [
        "- a migration froze checkout (once)",
        "- the migration stalled signups (once)",
        "- the migration blocked the orders page (once)",
    ]
    # By meaning (the store's embedder), one error seen three times.
    assert errors(PostProjectJob(embedder=WordVectors(("migration", "secrets")))) == [
        "- a migration froze checkout (x3)",
        "- a token leaked into the build log (once)",
    ]


def test_a_routed_model_drafts_the_lesson_and_a_failing_one_falls_back(
    memory: Memory, tmp_path: Path
) -> None:
    import json

    from completion_stub import Reply, chat, stub_server

    from engram.agents.postproject import routed_lesson_drafter

    at = T0 + timedelta(minutes=5)
    for i in range(3):
        _scar(
            memory,
            "ana",
            "failure",
            f"flaky test {i}",
            "quarantine flaky tests",
            sources={"task": "p"},
            at=at,
        )
    close_project(memory.ledger, "p", "ana", at=at)
    answer = {
        "estimate_vs_actual": "no estimate",
        "recurring_errors": ["flaky tests, alice@example.com"],
        "standardise": [],
        "doctrine": "Quarantine a flaky test the day it flakes.",
        "tool": "a flake tracker",
    }
    with stub_server() as server:
        routing = tmp_path / "routing.toml"
        routing.write_text(
            f'[complete.learn]\nprovider = "http"\nbase_url = "{server.base_url}"\n'
            'model = "stub"\ntimeout = 5\nbackoff = 0\n'
        )
        server.script.append(Reply(200, chat(json.dumps(answer))))
        job = PostProjectJob(completer=routed_lesson_drafter(str(routing)))
        runner = _post_project(memory, job)
        planned = runner.run("postproject", dry_run=True).plan
        (event,) = planned.events
        assert event.payload.drafter == "postproject:model"
        assert (
            "Doctrine candidate: Quarantine a flaky test the day it flakes." in event.payload.text
        )
        assert "alice@example.com" not in event.payload.text  # scrubbed from the answer
        assert "flaky test" in server.requests[0].body["messages"][1]["content"]
        server.script += [Reply(503, {"error": "down"})] * 3
        fallback = runner.run("postproject", dry_run=True).plan
    (event,) = fallback.events
    assert event.payload.drafter == "postproject"
    assert "Doctrine candidate: quarantine flaky tests" in event.payload.text


# -- skill proposals ------------------------------------------------------------------------------


def test_a_pattern_across_three_tasks_is_proposed_once_and_a_later_one_joins(
    memory: Memory,
) -> None:
    at = T0 + timedelta(minutes=5)
    pattern = "ship behind a canary and watch the error rate for ten minutes"
    ids = [
        _scar(
            memory,
            agent,
            "victory",
            f"the canary caught the bad release of {task}",
            pattern,
            sources={"task": task},
            at=at,
        )
        for agent, task in (("ana", "billing"), ("bo", "search"), ("cy", "search"))
    ]
    _scar(
        memory,
        "ana",
        "victory",
        "the cache warmed before the deploy",
        "warm the cache first",
        sources={"task": "a"},
        at=at,
    )
    runner = JobRunner(
        memory.ledger, memory.engine, [SkillJob()], clock=Clock(T0 + timedelta(days=1, hours=1))
    )
    # Two tasks only (billing, search): no pattern yet.
    assert runner.run("skills", dry_run=True).plan.counts["patterns"] == 0
    ids.append(
        _scar(
            memory,
            "dee",
            "victory",
            "the canary caught the bad release of auth",
            pattern,
            sources={"task": "auth"},
            at=at,
        )
    )
    result = runner.run("skills")
    assert result.plan.counts["proposed"] == 1
    (proposal,) = memory.lessons().suggestions(["pending"])
    assert proposal.destination == "skill"
    assert proposal.drafter == "skills"
    assert set(proposal.scars) == set(ids)
    assert proposal.text.startswith(pattern)
    assert "Worked in 3 tasks (billing, search, auth)." in proposal.text
    # The next day: nothing new is proposed; a fifth victory of the pattern joins it.
    runner.clock.now += timedelta(days=1)  # type: ignore[attr-defined]
    assert runner.run("skills").plan.counts["proposed"] == 0
    late = _scar(
        memory,
        "eve",
        "victory",
        "the canary caught the bad release of pay",
        pattern,
        sources={"task": "pay"},
        at=runner.clock.now - timedelta(hours=2),
    )  # type: ignore[attr-defined]
    runner.clock.now += timedelta(days=1)  # type: ignore[attr-defined]
    joined = runner.run("skills").plan
    assert (joined.counts["proposed"], joined.counts["joined"]) == (0, 1)
    assert late in memory.lessons().suggestion(proposal.id).scars
    assert len(memory.lessons().suggestions()) == 1
    # Approved, it is a skill the context builder offers for a task it fits.
    memory.lessons().apply(proposal.id, "carol")
    frame = build_context(
        memory.agent("zed"), "roll out the new release safely with a canary", save=False
    )
    offered = [e["text"] for e in frame.frames["episodic"] if e["type"] == "skill"]  # type: ignore[union-attr]
    assert offered == [memory.lessons().suggestion(proposal.id).text]


def test_victories_the_learning_step_drafted_are_not_proposed_again_as_a_skill(
    memory: Memory,
) -> None:
    # ADR 0133: learn drafted three victories of one pattern as one suggestion; the skills
    # job then proposed a second suggestion citing the same three.
    at = T0 + timedelta(minutes=5)
    pattern = "Declare every output in the workflow manager so reruns are incremental."
    for agent, task in (("ana", "rnaseq"), ("bo", "chipseq"), ("cy", "crispr")):
        _scar(memory, agent, "victory", f"the {task} rerun only redid the changed steps",
              pattern, sources={"task": task}, at=at)  # fmt: skip
    assert len(memory.lessons().learn().drafted) == 1
    runner = JobRunner(
        memory.ledger, memory.engine, [SkillJob()], clock=Clock(T0 + timedelta(days=1, hours=1))
    )
    plan = runner.run("skills").plan
    assert (plan.counts["patterns"], plan.counts["proposed"], plan.counts["drafted"]) == (1, 0, 1)
    assert len(memory.lessons().suggestions()) == 1


# -- tier-1 hygiene -----------------------------------------------------------------------------


def test_hygiene_reports_stale_rules_and_changes_none(memory: Memory) -> None:
    lessons = memory.lessons()
    at = T0 + timedelta(minutes=5)
    a = _scar(memory, "ana", "failure", "the deploy broke", "deploy with a lock timeout", at=at)
    b = _scar(memory, "ana", "failure", "the backup filled the disk", "rotate backups", at=at)
    c = _scar(memory, "ana", "failure", "the cache was cold", "warm the cache", at=at)

    def rule(scars: list[str], text: str) -> int:
        sid = lessons.propose(scars, "rules", text)
        return lessons.apply(sid, "carol")

    old = rule([a], "Deploy with a lock timeout.")
    newer = rule([a, b], "Deploy with a lock timeout and rotate backups.")
    dup = rule([c], "deploy with a LOCK timeout.")
    gone = rule([b], "Rotate the backups nightly.")
    note = lessons.propose([c], "notes_inbox", "Cache\nSee [[Warmup runbook]].")
    note_at = lessons.apply(note, "carol")
    (scar_b,) = [e for e in memory.ledger.read(kinds=["scar.recorded"]) if e.id == b]
    memory.ledger.append(
        NewEvent.of(ScarArchived(positions=[scar_b.position]), stream="scars", actor="ops")
    )
    memory.engine.catch_up()
    # Two rules are served within the last day (a context frame, a recall); the others not.
    now = datetime.now(UTC)
    (dup_review,) = memory.ledger.get([dup])
    recent = now + timedelta(days=2, hours=12)
    memory.ledger.append(
        [
            NewEvent.of(
                ContextSaved(agent="zed", budget=500, tokens=9, frames={}, items=[dup_review.id]),
                stream="context:zed",
                actor="zed",
                at=recent,
            ),
            NewEvent.of(
                MemoryRecalled(
                    agent="zed", query="q", items=[RecalledItem(old, 1.0)], as_of=recent
                ),
                stream="agent:zed",
                actor="zed",
                at=recent,
            ),
        ]
    )
    memory.engine.catch_up()
    rules_before = [(r.position, r.text) for r in lessons.rules()]
    job = HygieneJob(HygieneSettings(every=timedelta(hours=1), unused=timedelta(days=1)))
    clock = Clock(now + timedelta(days=3))
    runner = JobRunner(memory.ledger, memory.engine, [job], clock=clock)
    head = memory.ledger.head()
    dry = runner.run("hygiene", dry_run=True)
    assert memory.ledger.head() == head  # a dry run appends nothing
    found = {
        (line["kind"], line["item"]) for line in dry.plan.lines if line["kind"].startswith("rule.")
    }
    assert ("rule.superseded", f"#{old}") in found
    assert ("rule.dead_link", f"#{newer}") in found
    assert ("rule.dead_link", f"#{gone}") in found
    assert ("rule.dead_link", f"#{note_at}") in found  # [[Warmup runbook]] names nothing
    assert ("rule.duplicate", f"#{dup}") in found
    texts = dict(rules_before)
    for line in dry.plan.lines:  # a finding names the rule by its text, not its position only
        position = int(line["item"][1:])
        if line["kind"].startswith("rule.") and position in texts:
            assert line["detail"].endswith(": " + " ".join(texts[position].split())[:80])
    unused = {int(item[1:]) for kind, item in found if kind == "rule.unused"}
    assert unused == {newer, gone}  # old was recalled, dup served in a frame
    result = runner.run("hygiene")
    (done,) = memory.ledger.get(result.positions)
    assert done.kind == "job.completed"
    counts = done.payload.counts
    assert counts["rules_superseded"] == 1
    assert counts["rules_duplicates"] == 1
    assert counts["rules_dead_links"] == 3
    assert counts["rules_unused"] == 2
    assert [(r.position, r.text) for r in lessons.rules()] == rules_before
    assert memory.ledger.head() == head + 1  # only the report


def test_bad_settings_of_the_new_jobs_name_the_key() -> None:
    from engram.jobs.errors import JobConfigError
    from engram.jobs.settings import jobs_from_config

    cases = {
        "skills min_tasks must be an int >= 2": {"skills": {"min_tasks": 1}},
        "skills threshold must be a number in (0, 1]": {"skills": {"threshold": 2}},
        "hygiene unused must be at least one day": {"hygiene": {"unused": "1h"}},
        "[jobs.postproject]: unknown key(s) ['min_scars']": {"postproject": {"min_scars": 2}},
    }
    for message, config in cases.items():
        with pytest.raises(JobConfigError) as caught:
            jobs_from_config(config)
        assert message in str(caught.value)
    named = [j.name for j in jobs_from_config({"hygiene": {"unused": "30d"}})]
    assert {"skills", "postproject", "hygiene"} <= set(named)
