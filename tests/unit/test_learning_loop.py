"""The learning loop by what it changes: repeats merged, rules served by meaning, refusals kept.

Real SQLite ledgers and the real projections, the hash embedder (the calibrated scores are
checked for it and for words alone).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from word_vectors import WordVectors

from engram.agents import guidance, repeats, scopes
from engram.agents.context import build_context
from engram.agents.errors import SuggestionInputError
from engram.agents.importance import HeuristicScorer
from engram.agents.lessons import Lessons
from engram.agents.meaning import (
    CALIBRATIONS,
    DEFAULT_CALIBRATION,
    REPEAT,
    Calibration,
    applies_score,
    calibration_of,
    content_words,
    mapped,
    repeat_score,
)
from engram.jobs.dream import DreamSettings
from engram.jobs.errors import JobConfigError
from engram.mcp.tools import MemoryTools
from engram.projections.embedding import HashEmbedder
from engram.projections.rules import Rule
from engram.runtime import Memory, open_memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with open_memory(str(tmp_path / "ledger.db"), config="/dev/null") as opened:
        yield opened


@pytest.fixture
def lessons(memory: Memory, tmp_path: Path) -> Lessons:
    return Lessons(memory.ledger, memory.engine, home=str(tmp_path / "home"))


def scar(memory: Memory, agent: str, what: str, lesson: str) -> str:
    position = memory.scars(agent).record("failure", what, lesson)
    (event,) = memory.ledger.get([position])
    return event.id


# -- meaning --------------------------------------------------------------------------------


def test_content_words_drop_function_words_and_meet_across_suffixes() -> None:
    assert content_words("Always back up the databases before the migrations") == {
        "back",
        "databas",
        "migration",
    }
    assert content_words("the a to of and") == frozenset()
    assert content_words("backups backed") == {"backup", "back"}


def test_a_match_on_function_words_alone_is_no_match() -> None:
    lesson = content_words("Pin dependency versions in the lock file.")
    # Shares only "the", "to", "a" with the lesson: the former match served it.
    assert applies_score(content_words("Send the invoice to a customer."), lesson) == 0.0
    assert applies_score(content_words("Update the dependency versions."), lesson) >= 0.5
    # One shared word is not enough.
    assert applies_score(content_words("Open the file."), lesson) == 0.0


def test_a_cosine_is_read_against_its_embedders_calibration() -> None:
    minilm = calibration_of("sentence-transformers", "sentence-transformers/all-MiniLM-L6-v2")
    hashed = calibration_of("hash", "feature-hash-v3")
    assert mapped(minilm.floor, minilm) == 0.0
    assert mapped(minilm.paraphrase, minilm) == 1.0
    assert mapped(0.45, minilm) > 0.5  # a MiniLM paraphrase (0.4-0.6) is a repeat
    assert mapped(0.2, minilm) < 0.5  # unrelated scars of one workplace sit near 0.16
    assert hashed == CALIBRATIONS[("hash", "*")]  # any hash embedder's parameters
    assert calibration_of("http", "some-model") == DEFAULT_CALIBRATION
    with pytest.raises(ValueError, match="floor < paraphrase"):
        Calibration(floor=0.6, paraphrase=0.5)


def test_repeat_score_takes_the_stronger_of_vector_and_words() -> None:
    a = content_words("Take a database snapshot before applying a schema migration.")
    b = content_words("Always snapshot the database prior to running migrations.")
    assert repeat_score(a, b) >= 0.5  # three of four content words shared
    unrelated = content_words("Rotate logs and cap their size.")
    assert repeat_score(a, unrelated) == 0.0
    # Two everyday words shared by lessons of two mistakes are less than half their words.
    refund = content_words("Compare the refund's order number with the customer's account first.")
    reminder = content_words("Send one reminder per customer order.")
    assert len(refund & reminder) == 2
    assert repeat_score(refund, reminder) < REPEAT
    calibration = Calibration(floor=0.2, paraphrase=0.6)
    near = np.array([1.0, 0.0], dtype=np.float32)
    close = np.array([0.6, 0.8], dtype=np.float32)  # cosine 0.6: a paraphrase
    # Alike as whole scars, but the lessons share no word: two lessons of one situation.
    assert repeat_score(a, unrelated, near, close, calibration) == 0.0
    # Alike as whole scars and as lessons: a paraphrase with no word in common.
    assert repeat_score(a, unrelated, near, close, calibration, near, close) == 1.0
    assert repeat_score(a, unrelated, near, close, calibration, near, near * 0 + [0, 1]) == 0.0


def test_one_lesson_of_two_unrelated_situations_is_not_a_repeat() -> None:
    # ADR 0185: "put new stock behind the old" and "ship patches in the quiet window" both
    # read as "do it in the right order"; what happened (stale cream, a hotfix in a raid)
    # is unrelated, so the lessons alone do not make the scars one mistake.
    calibration = Calibration(floor=0.2, paraphrase=0.6)
    words = content_words("Do it in the right order.")
    other = content_words("Mind the sequence.")
    same = np.array([1.0, 0.0], dtype=np.float32)
    far = np.array([0.3, 0.9539392], dtype=np.float32)  # cosine 0.3: mapped 0.25
    apart = np.array([0.0, 1.0], dtype=np.float32)  # cosine 0: unrelated
    related = np.array([0.6, 0.8], dtype=np.float32)  # cosine 0.6
    score = repeat_score(words, other, same, far, calibration, same, same, same, apart)
    assert score == pytest.approx(0.25, abs=1e-6)  # the whole scars decide
    assert repeat_score(words, other, same, far, calibration, same, same, same, related) == 1.0
    assert repeat_score(words, other, same, far, calibration, same, same) == 1.0  # none given


# -- repeats found before drafting ------------------------------------------------------------


def test_a_group_joins_the_best_group_on_average_and_leaves_other_lessons_apart() -> None:
    told = [
        repeats.Told("a", 1, "prod lost rows", "Take a database snapshot before a migration."),
        repeats.Told("b", 2, "the deploy failed", "Rotate the logs and cap their size."),
        repeats.Told("c", 3, "invoices wiped", "Snapshot the database before every migration."),
        # The same situation as "a", another lesson: not a repeat.
        repeats.Told("d", 4, "prod lost rows", "Ask a reviewer to read the SQL."),
    ]
    groups = repeats.group([], told)
    assert [[t.id for t in g.joined] for g in groups] == [["a", "c"], ["b"], ["d"]]
    drafted = repeats.group([("s1", told[0])], told[1:])
    assert drafted[0].suggestion == "s1"
    assert [t.id for t in drafted[0].joined] == ["c"]


def test_paraphrased_scars_are_drafted_as_one_suggestion_citing_each(
    memory: Memory, lessons: Lessons
) -> None:
    first = scar(
        memory, "ops", "Orders lost a column.", "Snapshot the database before a migration."
    )
    other = scar(memory, "qa", "The disk filled up.", "Rotate logs and cap their size.")
    second = scar(memory, "dev", "Invoices wiped.", "Take a database snapshot before migrations.")
    report = lessons.learn()
    assert sorted(sorted(d.scars) for d in report.drafted) == sorted(
        [sorted([first, second]), [other]]
    )
    merged = next(d for d in report.drafted if len(d.scars) == 2)
    assert lessons.suggestion(merged.suggestion).scars == [first, second]


def test_a_later_repeat_joins_the_suggestion_and_a_refused_one_stays_refused(
    memory: Memory, lessons: Lessons
) -> None:
    first = scar(
        memory, "ops", "Orders lost a column.", "Snapshot the database before a migration."
    )
    (drafted,) = lessons.learn().drafted
    lessons.refuse(drafted.suggestion, "ana")
    later = scar(memory, "dev", "Invoices wiped.", "Take a database snapshot before migrations.")
    report = lessons.learn()
    assert report.drafted == []  # not drafted again: refusal means refusal
    assert report.joined == [(drafted.suggestion, later)]
    found = lessons.suggestion(drafted.suggestion)
    assert found.status == "refused"
    assert found.scars == [first, later]
    assert lessons.waiting() == []
    assert [e.kind for e in memory.ledger.read(kinds=["suggestion.joined"])] == [
        "suggestion.joined"
    ]


def test_a_group_is_drafted_from_a_telling_that_fits_a_rule(
    memory: Memory, lessons: Lessons
) -> None:
    long_lesson = (
        "Snapshot the database before every migration, and keep the snapshot until the "
        "migration has been checked on real traffic; " + "write down where it is kept. " * 9
    ).strip()
    assert len(long_lesson) > 300
    first = memory.scars("ops").record(
        "failure", "Orders lost a column.", long_lesson, importance=9
    )
    memory.scars("dev").record(
        "failure", "Invoices wiped.", "Snapshot the database before a migration.", importance=3
    )
    (drafted,) = lessons.learn().drafted
    assert len(drafted.scars) == 2  # one mistake, one suggestion
    # The short telling is the suggestion: a rule, served where a task calls for it; the
    # most important telling, too long for a rule, would have gone to a file no frame reads.
    assert drafted.destination == "rules"
    assert drafted.text == "Snapshot the database before a migration."
    (event,) = memory.ledger.get([first])
    assert event.id in drafted.scars


def test_a_dry_run_joins_nothing(memory: Memory, lessons: Lessons) -> None:
    scar(memory, "ops", "Orders lost a column.", "Snapshot the database before a migration.")
    lessons.learn()
    scar(memory, "dev", "Invoices wiped.", "Take a database snapshot before migrations.")
    head = memory.ledger.head()
    report = lessons.learn(dry_run=True)
    assert len(report.joined) == 1
    assert memory.ledger.head() == head


def test_the_dream_refuses_its_former_raw_thresholds() -> None:
    with pytest.raises(JobConfigError, match="replaced by threshold"):
        DreamSettings(cosine=0.85)
    with pytest.raises(JobConfigError, match="threshold"):
        DreamSettings(threshold=0.0)


# -- rules served by meaning, first, within a reserved share ---------------------------------


def _rule(memory: Memory, lessons: Lessons, what: str, lesson: str, **review: bool) -> str:
    sid = lessons.propose([scar(memory, "ops", what, lesson)], "rules", lesson)
    lessons.apply(sid, "ana", **review)
    return lesson


def _constraints(memory: Memory, task: str, budget: int = 2000) -> list[str]:
    frame = build_context(memory.agent("newcomer"), task, budget=budget, save=False)
    return [str(e["text"]) for e in frame.frames["constraints"]]  # type: ignore[index, union-attr]


def test_a_rule_is_served_where_it_applies_and_not_on_function_words(
    memory: Memory, lessons: Lessons
) -> None:
    rule = _rule(
        memory,
        lessons,
        "A new release broke the build.",
        "Pin dependency versions in the lock file.",
    )
    assert _constraints(memory, "Bump the dependency versions of the web app.") == [rule]
    # Shares "the", "in", "a" and no word that carries meaning.
    assert _constraints(memory, "Write a poem about the sea in the morning.") == []


def test_an_always_on_rule_is_served_for_every_task(memory: Memory, lessons: Lessons) -> None:
    rule = _rule(memory, lessons, "A key leaked.", "Never commit credentials.", always=True)
    assert _constraints(memory, "Write a poem about the sea.") == [rule]
    assert lessons.rules()[0].always


def test_always_on_rules_come_first_and_stay_while_memories_are_trimmed(
    memory: Memory, lessons: Lessons
) -> None:
    # Told after a situational rule, the always-on ones were listed after it; and an
    # always-on rule past the rules' reserved share was dropped while a memory was kept.
    situational = _rule(
        memory,
        lessons,
        "A new release broke the build.",
        "Pin dependency versions in the lock file.",
    )
    always = [
        _rule(memory, lessons, "A prod table was dropped.", text, always=True)
        for text in (
            "Never run a destructive command against production without a second person"
            " watching the session and a fresh backup verified.",
            "Quote every customer-facing commitment only from the approved policy pages,"
            " never from memory.",
        )
    ]
    agent = memory.agent("newcomer")
    for i in range(10):
        agent.observe(f"Status {i}: the deploy pipeline of service {i} finished with notes.")
    task = "Bump the dependency versions in the lock file."
    assert _constraints(memory, task) == [*always, situational]
    # The frame says which rules are always on: a reader tells them from the situational.
    frame = build_context(agent, task, save=False)
    marks = [bool(e.get("always")) for e in frame.frames["constraints"]]  # type: ignore[union-attr]
    assert marks == [True, True, False]
    for budget in (250, 300, 500):
        frame = build_context(agent, "Write a haiku about the sea.", budget=budget, save=False)
        served = [str(e["text"]) for e in frame.frames["constraints"]]  # type: ignore[index]
        assert served == always, budget


def test_always_marks_an_applied_rule_only(memory: Memory, lessons: Lessons) -> None:
    sid = lessons.propose([scar(memory, "ops", "x", "Bisect it.")], "skill", "Bisect it.")
    with pytest.raises(SuggestionInputError, match="marks a rule"):
        lessons.apply(sid, "ana", always=True)
    rule = lessons.propose([scar(memory, "ops", "y", "Pin it.")], "rules", "Pin it.")
    with pytest.raises(SuggestionInputError, match="refusal"):
        lessons.review(rule, "refused", "ana", always=True)


def test_rules_keep_their_share_of_a_small_budget(memory: Memory, lessons: Lessons) -> None:
    rule = _rule(
        memory,
        lessons,
        "A new release broke the build.",
        "Pin dependency versions in the lock file.",
    )
    agent = memory.agent("newcomer")
    for i in range(40):
        agent.observe(f"Dependency versions note {i}: the lock file of service {i} was updated.")
    assert _constraints(memory, "Update the dependency versions in the lock file.", 500) == [rule]


def test_always_on_rules_leave_the_situational_ones_their_share(
    memory: Memory, lessons: Lessons
) -> None:
    # Three always-on rules of two lines each took the whole reserved share at 500 tokens:
    # the rule the task called for was left out while memories had room (ADR 0142).
    rule = _rule(
        memory,
        lessons,
        "A new release broke the build.",
        "Pin dependency versions in the lock file.",
    )
    always = [
        _rule(memory, lessons, f"Incident {i} hurt a customer.", text, always=True)
        for i, text in enumerate(
            (
                "Never run a destructive command against production without a second person"
                " watching the session and a fresh backup verified beforehand.",
                "Quote every customer-facing commitment only from the approved policy pages,"
                " never from memory, and link the page you quoted in the ticket.",
                "Escalate any suspected personal data exposure to the privacy officer within"
                " the hour, before anyone starts to investigate or clean it up.",
            )
        )
    ]
    agent = memory.agent("newcomer")
    for i in range(40):
        agent.observe(f"Dependency versions note {i}: the lock file of service {i} was updated.")
    task = "Update the dependency versions in the lock file."
    frame = build_context(agent, task, budget=500, save=False)
    served = [str(e["text"]) for e in frame.frames["constraints"]]  # type: ignore[index]
    assert served == [*always, rule]
    assert frame.tokens <= 500
    assert frame.frames["episodic"], "memories keep the rest"


def test_the_serving_ranks_situational_rules_and_caps_them() -> None:
    rules = [Rule(i, f"Check the widget gadget number {i}.", f"s{i}", [], "ana") for i in range(6)]
    served = guidance.serve(rules, "Repair the widget gadget.", {}, clear=None)
    assert len(served) == guidance.MAX_SITUATIONAL
    assert all(s.score >= 0.5 for s in served)


# -- refusal means refusal -----------------------------------------------------------------


def test_a_refused_lesson_never_reaches_an_agent_but_what_happened_does(
    memory: Memory, lessons: Lessons
) -> None:
    lesson = "Disable the certificate checks when the handshake fails."
    what = "The TLS handshake with the payment gateway failed during checkout."
    sid = lessons.propose([scar(memory, "ops", what, lesson)], "rules", lesson)
    lessons.refuse(sid, "ana")
    frame = build_context(
        memory.agent("newcomer"), "The payment gateway handshake fails at checkout.", save=False
    )
    text = str(frame.frames)
    assert lesson not in text
    assert f"what happened: {what}" in text
    # ADR 0133: the frame's entry said what happened, but nothing marked it refused.
    entries = [e for part in frame.frames.values() if isinstance(part, list) for e in part]
    (entry,) = [e for e in entries if isinstance(e, dict) and what in str(e.get("text"))]
    assert entry.get("refused") is True
    # Searching the scars serves what happened, marked refused, never the lesson.
    query = "the payment gateway handshake failed"
    for scope in ("scars", "all"):
        result = memory.agent("newcomer").recall(query, 5, scope=scope, record=False)
        (served,) = [r for r in result.items if r.event.kind == "scar.recorded"]
        assert served.refused
        assert scopes.item_text(served.event, refused=served.refused) == f"what happened: {what}"
        # ADR 0133: the item's own event carried the refused lesson to a Python caller.
        assert (served.event.payload.what, served.event.payload.lesson) == (what, "")
        found = MemoryTools(memory, ["newcomer"]).search_memory(query, 5, scope=scope)
        (item,) = [i for i in found["items"] if i["kind"] == "scar.recorded"]
        assert (item["text"], item["refused"]) == (f"what happened: {what}", True)
    # A scar whose lesson was not refused is served whole.
    other = scar(memory, "ops", "The nightly ETL loaded duplicate rows.", "Merge on the key.")
    found = MemoryTools(memory, ["newcomer"]).search_memory("ETL duplicate rows", 5, scope="scars")
    (item,) = [i for i in found["items"] if i["id"] == other]
    assert (item["text"], item["refused"]) == (
        "The nightly ETL loaded duplicate rows. — lesson: Merge on the key.",
        False,
    )


# -- importance routed to a model ----------------------------------------------------------


def test_importance_is_rated_by_the_routed_model_and_by_the_heuristic_when_it_fails(
    tmp_path: Path,
) -> None:
    from completion_stub import Reply, stub_server

    with stub_server() as server:
        routing = tmp_path / "routing.toml"
        routing.write_text(
            '[embedding.default]\nprovider = "hash"\n[complete.importance]\nprovider = "http"\n'
            f'base_url = "{server.base_url}"\nmodel = "stub"\ntimeout = 5\nbackoff = 0\n'
        )
        server.script.append(
            Reply(200, {"choices": [{"message": {"content": '{"importance": 9}'}}]})
        )
        server.script += [Reply(503, {"error": "overloaded"})] * 3
        with open_memory(
            str(tmp_path / "l.db"), config="/dev/null", routing=str(routing)
        ) as memory:
            agent = memory.agent("a")
            rated = agent.observe("we had lunch")
            fallback = agent.observe("we had lunch again")
            events = {e.position: e for e in memory.ledger.get([rated, fallback])}
        assert events[rated].payload.importance == 9  # the model's, not the heuristic's 2
        assert events[fallback].payload.importance == HeuristicScorer().score(
            "we had lunch again", "observation"
        )
        assert "we had lunch" in server.requests[0].body["messages"][1]["content"]


def test_without_a_route_importance_stays_the_heuristic(memory: Memory) -> None:
    assert isinstance(memory.scorer, HeuristicScorer)


# -- a reviewer changes a suggestion's destination -------------------------------------------


def test_a_reviewer_sends_a_suggestion_elsewhere_than_drafted(
    memory: Memory, lessons: Lessons, tmp_path: Path
) -> None:
    note = lessons.propose([scar(memory, "ops", "x", "Bisect the lockfile.")], "skill", "Bisect.")
    lessons.apply(note, "ana", destination="rules", always=True)
    assert [(r.text, r.always) for r in lessons.rules()] == [("Bisect.", True)]
    assert lessons.suggestion(note).destination == "rules"
    rule = lessons.propose([scar(memory, "ops", "y", "Pin it.")], "rules", "Pin it.")
    lessons.apply(rule, "ana", destination="notes_inbox")
    assert [r.text for r in lessons.rules()] == ["Bisect."]  # sent elsewhere: no rule
    assert (tmp_path / "home" / "notes" / f"{rule}.md").read_text().startswith("Pin it.")
    assert lessons.suggestion(rule).destination == "notes_inbox"


def test_a_redirect_is_checked_before_anything_is_appended(
    memory: Memory, lessons: Lessons
) -> None:
    long = lessons.propose([scar(memory, "ops", "x", "a")], "notes_inbox", "two\nlines")
    head = memory.ledger.head()
    with pytest.raises(SuggestionInputError, match="one line"):
        lessons.apply(long, "ana", destination="rules")
    with pytest.raises(SuggestionInputError, match="destination must be one of"):
        lessons.apply(long, "ana", destination="nowhere")  # type: ignore[arg-type]
    with pytest.raises(SuggestionInputError, match="refusal sends nothing"):
        lessons.review(long, "refused", "ana", destination="rules")
    assert memory.ledger.head() == head


def test_a_clearly_weaker_situational_rule_is_a_side_match_and_not_served() -> None:
    strong = Rule(1, "Rotate the widget logs and cap the widget log size.", "s1", [], "ana")
    weak = Rule(2, "Check the widget size, gadget, sprocket, cog, gear, spring.", "s2", [], "ana")
    task = "Cap the size of the widget logs."
    assert [s.rule.position for s in guidance.serve([weak], task, {}, clear=None)] == [
        2
    ]  # alone: served
    served = guidance.serve([strong, weak], task, {}, clear=None)
    assert [s.rule.position for s in served] == [1]


# -- ADR 0067: grouping by agglomeration, serving against a pool ------------------------------


def _unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_either_the_whole_scar_or_the_lesson_may_carry_a_paraphrase() -> None:
    calibration = Calibration(floor=0.2, paraphrase=0.6)
    a, b = frozenset({"snapshot"}), frozenset({"dump"})
    far, near, close = _unit(0.0, 1.0), _unit(1.0, 0.0), _unit(0.6, 0.8)
    # Whole scars told differently (cosine 0), the lessons paraphrases (0.6): a repeat.
    assert repeat_score(a, b, near, far, calibration, near, close) == 1.0
    # Whole scars alike, lessons somewhat related (cosine 0.45 above the floor): a repeat.
    somewhat = _unit(0.45, 0.893)
    assert repeat_score(a, b, near, close, calibration, near, somewhat) == 1.0
    # Whole scars alike but the lessons unrelated: two lessons of one situation, apart.
    assert repeat_score(a, b, near, near, calibration, near, far) == 0.0


def test_grouping_merges_the_closest_groups_first_whatever_the_order_told() -> None:
    # b sits between a and c; a and c are far apart: one chain, no single group.
    vectors = {
        "a": _unit(1.0, 0.0, 0.0),
        "b": _unit(0.8, 0.6, 0.0),
        "c": _unit(0.28, 0.96, 0.0),
        "d": _unit(0.0, 0.0, 1.0),
    }
    calibration = Calibration(floor=0.0, paraphrase=0.8)
    told = [repeats.Told(k, i, k, f"lesson {k}") for i, k in enumerate("abcd", 1)]

    def run(order: list[repeats.Told]) -> list[list[str]]:
        groups = repeats.group([], order, vectors, calibration, 0.9, lessons=vectors)
        return sorted(sorted(t.id for t in g.joined) for g in groups)

    once = run(told)
    assert once == run(told[::-1]) == run([told[2], told[0], told[3], told[1]])
    # a-b and b-c are paraphrases (cosine 0.8); a-c is not (0.28): average linkage and the
    # cohesion floor keep the chain from gluing all three.
    assert ["a", "b", "c"] not in once
    assert ["d"] in once


def test_two_drafted_suggestions_are_never_merged_but_a_repeat_joins_one() -> None:
    vectors = {"a": _unit(1.0, 0.0), "b": _unit(1.0, 0.0), "c": _unit(0.99, 0.14)}
    calibration = Calibration(floor=0.0, paraphrase=0.8)
    told = {k: repeats.Told(k, i, k, "x") for i, k in enumerate("abc", 1)}
    groups = repeats.group(
        [("s1", told["a"]), ("s2", told["b"])], [told["c"]], vectors, calibration, lessons=vectors
    )
    assert [g.suggestion for g in groups] == ["s1", "s2"]
    assert sum(len(g.joined) for g in groups) == 1  # c joined one of them, no new group


def test_a_weak_match_that_does_not_stand_out_from_the_pool_is_not_served() -> None:
    topics = ["invoice", "ticket", "parcel", "tenant", "voucher"]
    rules = [
        Rule(i, f"Check {topic} ledger totals with the bank statement.", f"s{i}", [], "ana")
        for i, topic in enumerate(topics)
    ]
    # Every rule shares "ledger" and "total" with the task: none stands out, none is sure.
    task = "Review the ledger totals of the quarter, and the export report."
    scores = [applies_score(content_words(task), content_words(r.text)) for r in rules]
    assert all(guidance.APPLIES <= s < guidance.SURE for s in scores)
    assert guidance.serve(rules, task, {}, clear=None) == []
    # One naming the task's own subject stands out, and is served alone.
    task = "Review the invoice ledger totals of the quarter."
    assert [s.rule.position for s in guidance.serve(rules, task, {}, clear=None)] == [0]


def test_what_happened_in_a_cited_scar_is_evidence_of_its_own() -> None:
    rule = Rule(1, "Take a snapshot first.", "s1", [], "ana")
    others = [Rule(i, f"Unrelated rule number {i}.", f"o{i}", [], "ana") for i in range(2, 6)]
    evidence = {"s1": ["The schema migration on production lost the orders column.", "Snap."]}
    task = "Run the schema migration on production tonight."
    assert [
        s.rule.position for s in guidance.serve([rule, *others], task, evidence, clear=None)
    ] == [1]
    assert guidance.serve([rule, *others], task, {}, clear=None) == []


def test_the_hash_embedder_serves_no_rule_for_a_task_that_only_shares_its_topic() -> None:

    lesson = "Always dump the database prior to running migrations."
    what = "Upgrading the postgres schema wiped invoices because no dump existed to restore from."
    rule = Rule(1, lesson, "s1", [], "ana")
    evidence = {"s1": [what, lesson]}
    topical = "Book a meeting room for the database team's offsite."
    assert guidance.serve([rule], topical, evidence, HashEmbedder(), clear=None) == []
    # A task that names the situation in the same words is still served.
    task = "Dump the postgres database, then run the schema migrations."
    assert [
        s.rule.position for s in guidance.serve([rule], task, evidence, HashEmbedder(), clear=None)
    ] == [1]


# -- ADR 0077: the scores behind the serving ------------------------------------------------


def test_scores_are_given_per_rule_in_order_and_a_model_failure_falls_back_to_words() -> None:

    class Broken(HashEmbedder):
        def embed(self, texts: object) -> list[list[float]]:  # type: ignore[override]
            raise RuntimeError("the model is down")

    rules = [
        Rule(1, "Rotate the widget logs and cap their size.", "s1", [], "ana"),
        Rule(2, "Pin the gadget versions in the lock file.", "s2", [], "ana"),
    ]
    task = "Cap the size of the widget logs."
    words = guidance.scores(rules, task, {})
    assert len(words) == 2
    assert words[0].best >= guidance.APPLIES > words[1].best == 0.0
    # A dimension of its own: guidance keeps one vector cache per fingerprint for the
    # process, and a working hash embedder of another test may have filled the default's.
    assert guidance.scores(rules, task, {}, Broken(dimension=200)) == words
    assert guidance.scores([], task, {}) == []


def test_a_rule_whose_every_telling_meets_the_task_outranks_one_lucky_telling() -> None:
    task = "Cap the size of the widget logs."
    lucky = Rule(1, "Cap widget log size now.", "s1", [], "ana")
    steady = Rule(2, "Cap widget gadget sprocket cog.", "s2", [], "ana")
    evidence = {
        "s1": ["Paint the fence blue.", "Water the plants.", "Sort the mail.", "Feed the cat."],
        "s2": ["Size widget gadget sprocket cog."],
    }
    first, second = guidance.scores([lucky, steady], task, evidence)
    assert first.best > second.best >= guidance.APPLIES  # one telling of the first fits best
    assert second.typical > first.typical + guidance.MARGIN  # every telling of the second fits
    served = guidance.serve([lucky, steady], task, evidence, clear=None)
    assert [s.rule.position for s in served] == [2]
    assert served[0].score == second.best


# -- ADR 0092: the background test ----------------------------------------------------------


_WORDS = ("widget", "gadget", "logs", "disk", "volume", "build", "versions", "check")


def test_the_background_test_serves_the_rule_that_stands_clear_and_none_in_a_tie() -> None:
    words = WordVectors(_WORDS)
    logs = Rule(11, "Rotate the widget logs.", "logs", [], "ana")
    pins = Rule(12, "Pin the gadget versions.", "pins", [], "ana")
    evidence = {
        "logs": ["The widget logs filled the disk volume.", "Cap them."],
        "pins": ["The gadget build broke overnight.", "Freeze them."],
    }
    task = "Turn on the widget logs on the small disk volume."
    found = guidance.scores([logs, pins], task, evidence, words)
    assert found[0].situation - found[1].situation >= guidance.CLEAR
    served = guidance.serve([logs, pins], task, evidence, words, clear=guidance.CLEAR)
    assert [s.rule.position for s in served] == [11]
    # Six rules the task meets alike: the margin serves two, the background test none.
    alike = [Rule(i, f"Check the widget gadget number {i}.", f"s{i}", [], "ana") for i in range(6)]
    task = "Repair the widget gadget."
    assert len(guidance.serve(alike, task, {}, words, clear=None)) == guidance.MAX_SITUATIONAL
    assert guidance.serve(alike, task, {}, words, clear=guidance.CLEAR) == []
    # Two alike and clear of the rest: both.
    pair = [*alike[:2], logs, pins]
    both = guidance.serve(pair, task, evidence, words, clear=guidance.CLEAR)
    assert sorted(s.rule.position for s in both) == [0, 1]
    with pytest.raises(ValueError, match="clear"):
        guidance.serve(pair, task, evidence, words, clear=1.5)


def test_without_a_neural_embedder_the_margin_serves_whatever_the_gap() -> None:
    # Hash vectors and words alone set no rule apart from the rest (ADR 0092): the
    # background test would serve nothing, so the margin serves.
    alike = [Rule(i, f"Check the widget gadget number {i}.", f"s{i}", [], "ana") for i in range(6)]
    task = "Repair the widget gadget."
    assert not guidance.stands_apart(None)
    assert not guidance.stands_apart(HashEmbedder())
    assert guidance.stands_apart(WordVectors(_WORDS))
    for embedder in (None, HashEmbedder()):
        clear = guidance.serve(alike, task, {}, embedder, clear=guidance.CLEAR)
        assert clear == guidance.serve(alike, task, {}, embedder, clear=None)
    assert len(guidance.serve(alike, task, {}, None)) == guidance.MAX_SITUATIONAL


def test_the_situation_leaves_the_lessons_out() -> None:
    rule = Rule(1, "Freeze widget gadget.", "s1", [], "ana")
    task = "Repair the widget gadget."
    told = {"s1": ["Paint the fence blue.", "Repair the widget gadget sprocket."]}
    (match,) = guidance.scores([rule], task, told)
    assert match.best >= guidance.APPLIES  # the lesson fits, and counts for the floor
    assert match.situation < match.typical  # but not for where the mistake was made


def test_a_frame_takes_the_background_test_from_its_weights(
    memory: Memory, lessons: Lessons
) -> None:
    from engram.agents.context import ContextWeights
    from engram.projections.errors import QueryError

    pins = _rule(
        memory,
        lessons,
        "A new release of a dependency broke the build overnight.",
        "Pin dependency versions in the lock file.",
    )
    _rule(
        memory,
        lessons,
        "The server went down because log files filled the volume.",
        "Rotate logs and cap their size.",
    )
    agent = memory.agent("newcomer")

    def given(task: str, clear: float | None) -> list[str]:
        weights = ContextWeights(rules_clear=clear)
        frame = build_context(agent, task, weights=weights, save=False)
        return [str(e["text"]) for e in frame.frames["constraints"]]  # type: ignore[index, union-attr]

    task = "Bump the dependency versions of the web app."
    assert given(task, guidance.CLEAR) == given(task, None) == [pins]
    assert given("Write a poem about the sea in the morning.", guidance.CLEAR) == []
    for bad in (1.5, -0.1, "x"):
        with pytest.raises(QueryError, match="rules_clear"):
            ContextWeights(rules_clear=bad)  # type: ignore[arg-type]


def test_the_rules_vector_cache_embeds_with_its_caller_s_embedder(tmp_path: Path) -> None:
    # The vectors are kept per fingerprint for the process; they were embedded with the
    # embedder that made the cache, whose embedding cache may have closed with its engram
    # ("embedding cache ... failed (Cannot operate on a closed database.)").
    import warnings

    from engram.projections.embedding import CachedEmbedder, EmbeddingCache

    first_cache = EmbeddingCache(str(tmp_path / "one.db"))
    first = CachedEmbedder(HashEmbedder(), first_cache)
    guidance.cache_for(first).vectors(["Pin the versions."])
    first_cache.close()
    second = CachedEmbedder(HashEmbedder(), EmbeddingCache(str(tmp_path / "two.db")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (vector,) = guidance.cache_for(second).vectors(["Back up the database first."])
    assert vector.shape == (second.dimension,)
