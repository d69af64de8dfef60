"""The dream, hygiene, reflection and scar archival jobs on a real ledger and store.

Each job runs through the real runner (flock lease, injected scheduler clock) over the
runtime's projections and the default (hash) embedder: dry runs append nothing, a window's
effects come with its ``job.completed``, a re-run of a window appends nothing new, and the
daemon's timer fires each new job on its own period when the clock is moved by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from clocks import Clock

from engram.agents.arguments import LongTextWarning
from engram.jobs import (
    ArchiveJob,
    ArchiveSettings,
    DreamJob,
    DreamSettings,
    HygieneJob,
    JobConfigError,
    JobRunner,
    ReflectJob,
    ReflectSettings,
    last_completed,
)
from engram.jobs.base import EPOCH, boundary
from engram.jobs.daemon import Daemon
from engram.jobs.hygiene import digest, duplicate_groups
from engram.jobs.settings import jobs_from_config
from engram.projections import scars as scar_table
from engram.projections import suggestions
from engram.projections.lexical.memories import duplicate_memories
from engram.projections.salience import micros
from engram.runtime import Memory

T0 = datetime(2026, 5, 1, tzinfo=UTC)
LESSON = "run database migrations with a lock timeout before every deploy"


def _repeat(
    memory: Memory, agent: str, n: int, lesson: str, at: datetime, **kw: object
) -> list[str]:
    ids = []
    for i in range(n):
        position = memory.scars(agent).record(
            "failure",
            f"the deploy failed: the migration locked the users table (run {i})",
            lesson,
            importance=5,
            at=at + timedelta(minutes=i),
            **kw,  # type: ignore[arg-type]
        )
        (event,) = memory.ledger.get([position])
        ids.append(event.id)
    return ids


def test_dream_proposes_one_rule_per_repeated_lesson_once(memory: Memory) -> None:
    repeated = _repeat(memory, "alice", 2, LESSON, T0) + _repeat(
        memory, "bob", 1, LESSON, T0 + timedelta(hours=1)
    )
    _repeat(memory, "alice", 2, "pin the base image digest in the dockerfile", T0)  # only two
    _repeat(memory, "carol", 3, LESSON, T0, visibility="private")  # never into a shared rule
    clock = Clock(T0 + timedelta(days=1, hours=2))
    runner = JobRunner(memory.ledger, memory.engine, [DreamJob()], clock=clock)
    head = memory.ledger.head()
    dry = runner.run("dream", dry_run=True)
    assert dry.outcome == "dry-run"
    assert memory.ledger.head() == head  # a dry run appends nothing
    assert dry.plan.counts == {"candidates": 5, "clusters": 1, "scars": 3}
    first = runner.run("dream")
    assert first.outcome == "ok"
    kinds = [e.kind for e in memory.ledger.get(first.positions)]
    assert kinds == ["suggestion.proposed", "job.completed"]
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        (proposed,) = suggestions.listing(conn)
    assert (proposed.destination, proposed.drafter, proposed.status) == (
        "rules",
        "dream",
        "pending",
    )
    assert proposed.scars == repeated
    assert proposed.text == LESSON
    # The same window's batch appended again (a second runner, a retry) changes nothing,
    # and a re-plan of the window finds the cluster proposed already.
    assert first.window is not None
    assert memory.ledger.append(first.plan.events) == first.positions[:-1]
    assert runner.plan(runner.job("dream"), first.window).events == []
    # The next night: the cluster's scars are named by a suggestion, so nothing is proposed.
    clock.now += timedelta(days=1)
    second = runner.run("dream")
    assert second.outcome == "ok"
    assert second.plan.counts["clusters"] == 0
    assert [e.kind for e in memory.ledger.get(second.positions)] == ["job.completed"]


def test_dream_drafts_rules_from_failures_only(memory: Memory) -> None:
    # Three victories teaching one pattern are the skills job's; the dream clustered them,
    # with a failure beside them, into a rule drawn from a success.
    for i, agent in enumerate(("alice", "bob", "carol")):
        memory.scars(agent).record(
            "victory",
            f"the release went out cleanly after a canary (run {i})",
            LESSON,
            importance=5,
            at=T0 + timedelta(minutes=i),
        )
    _repeat(memory, "dave", 1, LESSON, T0 + timedelta(hours=1))
    clock = Clock(T0 + timedelta(days=1))
    runner = JobRunner(memory.ledger, memory.engine, [DreamJob()], clock=clock)
    dry = runner.run("dream", dry_run=True)
    assert dry.plan.counts == {"candidates": 1, "clusters": 0, "scars": 0}


def test_scar_archival_retires_old_unrecalled_scars_only(memory: Memory) -> None:
    old = memory.scars("alice").record("failure", "cache stampede", "add jitter", at=T0)
    recalled = memory.scars("alice").record(
        "failure", "cache stampede again", "add jitter to ttl", at=T0
    )
    young = memory.scars("alice").record(
        "victory", "fast rollback", "keep rollbacks scripted", at=T0 + timedelta(days=80)
    )
    memory.engine.catch_up()
    memory.agent("alice").recall(
        "stampede jitter ttl", 5, scope="scars", as_of=T0 + timedelta(days=1)
    )
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        counts = {p: scar_table.get(conn, p).recall_count for p in (old, recalled)}  # type: ignore[union-attr]
    survivors = {p for p, n in counts.items() if n > 0}
    assert survivors, "the recall served no scar"
    job = ArchiveJob(ArchiveSettings(scar_age=timedelta(days=30)))
    runner = JobRunner(memory.ledger, memory.engine, [job], clock=Clock(T0 + timedelta(days=91)))
    head = memory.ledger.head()
    dry = runner.run("archive", dry_run=True)
    assert memory.ledger.head() == head
    expected = sorted({old, recalled} - survivors)
    assert [line["item"] for line in dry.plan.lines if line["kind"] == "scar.archived"] == [
        f"alice@{p}" for p in expected
    ]
    result = runner.run("archive")
    assert result.plan.counts["scars"] == len(expected)
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        live = {s.position for s in scar_table.list_scars(conn)}
    assert live == ({old, recalled, young} - set(expected))


def test_hygiene_reports_duplicate_groups_that_can_be_listed_again(memory: Memory) -> None:
    alice, bob = memory.agent("alice"), memory.agent("bob")
    a = [alice.observe("the build is green", at=T0) for _ in range(3)]
    alice.observe("the build is red", at=T0)
    b = [bob.observe("the build is green", at=T0 + timedelta(hours=2)) for _ in range(2)]
    long = "x" * 16_000
    for tail in "ab":  # equal in the index's first 16,000 chars only
        with pytest.warns(LongTextWarning):  # recall reads the first 16,000 (ADR 0131)
            alice.observe(long + tail, at=T0)
    runner = JobRunner(
        memory.ledger, memory.engine, [HygieneJob()], clock=Clock(T0 + timedelta(days=40))
    )
    result = runner.run("hygiene")
    assert result.outcome == "ok"
    (done,) = memory.ledger.get(result.positions)
    counts = done.payload.counts
    assert (counts["groups"], counts["duplicates"], counts["memories"]) == (2, 3, 5)
    assert [line["item"] for line in result.plan.lines] == [
        "alice@" + ",".join(map(str, a)),
        "bob@" + ",".join(map(str, b)),
    ]
    # The groups as of the window's end, asked again later, match the recorded digest.
    bob.observe("the build is green", at=T0 + timedelta(days=45))
    memory.engine.catch_up()
    assert result.window is not None
    with memory.engine.read() as conn:
        then = duplicate_groups(
            memory.ledger, duplicate_memories(conn, micros(result.window.as_of))
        )
        before_bob = duplicate_groups(memory.ledger, duplicate_memories(conn, micros(T0)))
    assert digest(then) == counts["digest"]
    assert [g.agent for g in before_bob] == ["alice"]  # bob's copies came later
    assert len(list(memory.ledger.read(kinds=["memory.archived"]))) == 0


def test_reflection_job_reflects_due_agents_once(memory: Memory) -> None:
    alice = memory.agent("alice")
    for text in (
        "the deploy failed because the migration locked the users table",
        "the migration locked the users table again during the deploy",
        "a lock timeout on the migration kept the deploy safe",
    ):
        alice.observe(text, importance=6, visibility="private", at=T0)
    settings = ReflectSettings(after=3, importance=0, agents=("alice", "zed"))
    job = ReflectJob(memory.agent, settings)
    runner = JobRunner(memory.ledger, memory.engine, [job], clock=Clock(T0 + timedelta(hours=2)))
    head = memory.ledger.head()
    dry = runner.run("reflect", dry_run=True)
    assert memory.ledger.head() == head
    assert dry.plan.counts["due"] == 1
    assert dry.plan.counts["agents"] == 2
    first = runner.run("reflect")
    events = memory.ledger.get(first.positions)
    assert [e.kind for e in events][-1] == "job.completed"
    reflected = [e for e in events if e.kind == "memory.reflected"]
    assert reflected
    assert all(e.payload.agent == "alice" for e in reflected)
    assert len(reflected) == first.plan.counts["reflections"]
    runner.clock = Clock(T0 + timedelta(hours=3))
    second = runner.run("reflect")
    assert second.plan.counts["due"] == 0  # alice reflected: nothing new since


def test_new_jobs_fire_on_their_own_periods_under_an_injected_clock(
    memory: Memory, tmp_path: Path
) -> None:
    jobs = jobs_from_config(
        {"dream": {"every": "1d"}, "hygiene": {"every": "30d"}, "reflect": {"every": "1h"}},
        memory_for=memory.agent,
    )
    assert [j.name for j in jobs] == [
        "sleep",
        "archive",
        "dream",
        "hygiene",
        "skills",
        "postproject",
        "reflect",
    ]
    chosen = [j for j in jobs if j.name in ("dream", "hygiene", "reflect")]
    clock = Clock(T0 + timedelta(minutes=5))
    runner = JobRunner(memory.ledger, memory.engine, chosen, clock=clock)
    daemon = Daemon(runner, tmp_path / "store")
    assert daemon.next_run("reflect") == T0 + timedelta(hours=1)
    assert daemon.next_run("dream") == T0 + timedelta(days=1)
    for hour in range(1, 24 * 62 + 1, 7):  # two months, seven hours at a time
        clock.now = T0 + timedelta(hours=hour, minutes=1)
        for name in ("dream", "hygiene", "reflect"):
            daemon.fire(name)
            assert daemon.last[name]["outcome"] in ("ok", "idle"), daemon.last[name]
    ends = {
        name: [
            e.payload.window_end
            for e in memory.ledger.read(kinds=["job.completed"])
            if e.payload.job == name
        ]
        for name in ("dream", "hygiene", "reflect")
    }
    for name, every in (("dream", 1), ("hygiene", 30)):
        step = timedelta(days=every)
        assert all((end - EPOCH) % step == timedelta(0) for end in ends[name])
        assert ends[name] == sorted(set(ends[name]))
        assert ends[name][-1] == boundary(clock.now, step)
    # Every 30 days since the epoch: the first fire closes the last boundary before T0.
    first = boundary(T0, timedelta(days=30))
    assert ends["hygiene"] == [first + timedelta(days=30 * k) for k in range(3)]
    last = last_completed(memory.ledger, "reflect")
    assert last is not None
    assert last.window_end <= clock.now


def test_bad_new_job_settings_are_refused_naming_them() -> None:
    with pytest.raises(JobConfigError, match="cosine"):
        DreamSettings(cosine=1.5)
    with pytest.raises(JobConfigError, match="min_size"):
        DreamSettings(min_size=1)
    with pytest.raises(JobConfigError, match="scar_age"):
        ArchiveSettings(scar_age=timedelta(0))
    with pytest.raises(JobConfigError, match="agents"):
        ReflectSettings(agents="alice")  # type: ignore[arg-type]
    with pytest.raises(JobConfigError, match="every"):
        ReflectSettings(after=-1)
    with pytest.raises(JobConfigError, match=r"\[jobs.dream\]: unknown key"):
        jobs_from_config({"dream": {"similarity": 0.9}})


def test_the_jobs_read_the_embedder_of_a_semantic_index_that_stores_passages(
    memory: Memory,
) -> None:
    # The index's identity names its passages after the embedder's fingerprint; read whole,
    # it was no JSON, so dream and skills (jobs.dream.calibration) compared scars by their
    # words only.
    from engram.projections.semantic import embedder_of

    memory.agent("ana").observe("a first memory")
    memory.engine.catch_up()
    assert memory.embedder is not None
    with memory.engine.read() as conn:
        found = embedder_of(conn)
    assert found == (memory.embedder.fingerprint.provider, memory.embedder.fingerprint.model)
