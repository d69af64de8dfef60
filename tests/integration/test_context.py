"""Context frames on a real store: probe, bloom, score, trim, save; concepts in recall."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import engram
from engram.agents.context import MIN_BUDGET, ContextWeights, build_context
from engram.agents.frames import FRAMES, encode, for_ledger
from engram.agents.tokens import default_counter
from engram.cli import main
from engram.projections import lexical
from engram.projections.concepts import SELF
from engram.projections.errors import QueryError
from engram.runtime import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def _world(memory: Memory) -> None:
    coder, other = memory.agent("coder"), memory.agent("other")
    coder.observe("The deploy failed: the SFINAE template trick broke on gcc 9", importance=8)
    coder.observe("We rolled back the release and pinned gcc to version 11")
    coder.observe("Lunch was good today")
    other.observe("other's private gcc template secret", visibility="private")
    book = memory.concepts("coder")
    link = {"to": "skill.cpp.concepts", "rel": "replaced_by", "weight": 0.9}
    book.upsert("skill.cpp.sfinae", "skill", "SFINAE tricks", payload={"note": "enable_if"},
                links=[link])  # fmt: skip
    book.upsert("skill.cpp.concepts", "skill", "C++20 concepts constrain templates")
    memory.concepts("other").upsert(
        "fact.secret", "fact", "gcc template secret of other", visibility="private"
    )


def test_frames_hold_the_memories_concepts_and_signals_a_query_calls_up(memory: Memory) -> None:
    _world(memory)
    memory.mailbox("other").send("coder", "task.new", "fix the gcc template build")
    context = build_context(memory.agent("coder"), "why did the gcc template build fail",
                            task="fix the build", budget=800)  # fmt: skip
    assert list(context.frames) == list(FRAMES)
    assert context.frames["identity"]["agent"] == "coder"  # type: ignore[index]
    assert context.frames["problem"] == {
        "query": "why did the gcc template build fail",
        "task": "fix the build",
    }
    knowledge = context.frames["knowledge"]
    assert knowledge["skill"]["cpp"]["sfinae"]["_"]["label"] == "SFINAE tricks"  # type: ignore[index]
    texts = [e["text"] for e in context.frames["episodic"]]  # type: ignore[attr-defined]
    assert any("SFINAE template trick" in t for t in texts)
    assert not any("secret" in t for t in texts)
    assert "fact" not in knowledge  # type: ignore[operator]
    assert [s["type"] for s in context.frames["scratchpad"]] == ["signal"]  # type: ignore[attr-defined]
    # Every item resolves to its ledger event; components are there and add up to the score.
    events = {e.position: e for e in memory.ledger.get([i.position for i in context.items])}
    weights = ContextWeights()
    for item in context.items:
        assert events[item.position].id == item.event_id
        assert set(item.components) == {
            "similarity", "edge", "recency", "usage", "task", "influence"}  # fmt: skip
        total = sum(getattr(weights, k) * v for k, v in item.components.items())
        assert item.score == pytest.approx(total)
    assert context.tokens <= context.budget == 800
    assert context.tokens == default_counter().count(encode(context.frames))


def test_bloom_reaches_a_linked_concept_and_an_episode_neighbour(memory: Memory) -> None:
    _world(memory)
    context = build_context(memory.agent("coder"), "sfinae enable_if", budget=2000, save=False)
    by_position = {i.position: i for i in context.items}
    concept = memory.concepts("coder").get("skill.cpp.concepts")
    assert concept is not None
    linked = by_position[concept.position]
    assert linked.components["edge"] == pytest.approx(0.9 * 0.8 * max(
        i.components["similarity"] for i in context.items if i.type == "concept"
        and i.position != concept.position), rel=0.3) or linked.components["edge"] > 0  # fmt: skip
    lunch = next(i for i in context.items if i.type == "observation" and i.position == 3)
    assert lunch.components["edge"] > 0  # the episode of the memories the query found
    off = build_context(memory.agent("coder"), "sfinae enable_if", save=False,
                        weights=ContextWeights(hops=0))  # fmt: skip
    assert all(i.components["edge"] == 0 for i in off.items)


def test_save_appends_context_saved_and_no_save_appends_nothing(memory: Memory) -> None:
    _world(memory)
    head = memory.ledger.head()
    unsaved = build_context(memory.agent("coder"), "gcc template", save=False)
    assert unsaved.event_id is None
    assert memory.ledger.head() == head
    saved = build_context(memory.agent("coder"), "gcc template", task="fix")
    (event,) = memory.ledger.get([memory.ledger.head()])
    assert event.id == saved.event_id
    assert event.kind == "context.saved"
    assert event.stream == "context:coder"
    assert event.actor == "coder"
    p = event.payload
    assert p.items == [i.event_id for i in saved.items]
    assert (p.tokens, p.budget, p.tokenizer, p.query, p.task) == (
        saved.tokens, saved.budget, saved.tokenizer, "gcc template", "fix")  # fmt: skip
    assert json.loads(encode(p.frames)) == json.loads(encode(for_ledger(saved.frames)))
    # The record quotes no ledger text: every entry resolves by position instead.
    shown = [e for e in saved.frames["episodic"] if isinstance(e, dict)]  # type: ignore[union-attr]
    assert shown
    assert all("text" in e for e in shown)
    kept = p.frames["episodic"]
    assert [e["pos"] for e in kept] == [e["pos"] for e in shown]
    assert not any("text" in e for e in kept)
    assert p.frames["problem"] == {}
    texts = {
        e.position: lexical.item_text(e)[0] for e in memory.ledger.get([e["pos"] for e in kept])
    }
    assert all(texts[e["pos"]].startswith(e["text"].rstrip("…")) for e in shown)


def test_as_of_leaves_out_what_came_later(memory: Memory) -> None:
    coder = memory.agent("coder")
    then = datetime.now(UTC) - timedelta(days=1)
    coder.observe("gcc broke the old build", at=then - timedelta(hours=1))
    coder.observe("gcc broke the new build")
    context = build_context(coder, "gcc build", as_of=then, save=False)
    assert [e["text"] for e in context.frames["episodic"]] == ["gcc broke the old build"]  # type: ignore[attr-defined]


def test_a_tiny_budget_keeps_the_frames_within_it(memory: Memory) -> None:
    _world(memory)
    for budget in (MIN_BUDGET, 150, 200, 300):
        context = build_context(memory.agent("coder"), "gcc template build " * 20,
                                budget=budget, save=False)  # fmt: skip
        assert context.tokens <= budget
        assert default_counter().count(encode(context.frames)) == context.tokens


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": ""}, "query"),
        ({"query": 3}, "query"),
        ({"budget": 10}, "budget"),
        ({"budget": True}, "budget"),
        ({"budget": 100_001}, "budget"),
        ({"task": None}, "task"),
        ({"weights": {"edge": 1}}, "weights"),
        ({"save": "yes"}, "save"),
        ({"as_of": datetime(2020, 1, 1)}, "as_of"),
    ],
)
def test_bad_input_is_refused_and_writes_nothing(
    memory: Memory, kwargs: dict[str, object], message: str
) -> None:
    _world(memory)
    head = memory.ledger.head()
    args: dict[str, object] = {"query": "gcc", **kwargs}
    query = args.pop("query")
    with pytest.raises(QueryError, match=message):
        build_context(memory.agent("coder"), query, **args)  # type: ignore[arg-type]
    assert memory.ledger.head() == head


@pytest.mark.parametrize(
    "weights",
    [
        {"hops": 4},
        {"fanout": 7},
        {"fanout": 0},
        {"edge": -1.0},
        {"recency": float("nan")},
        {"per_type": 0},
        {"half_life_days": 0.0},
        {"hops": 1.5},
    ],
)
def test_bad_weights_are_refused(weights: dict[str, object]) -> None:
    with pytest.raises(QueryError, match="weights"):
        ContextWeights(**weights)  # type: ignore[arg-type]


def test_concepts_are_recalled_and_only_their_newest_version(memory: Memory) -> None:
    book = memory.concepts("coder")
    book.upsert("tool.gcc", "tool", "gcc compiler quirks", payload={"tip": "use -fconcepts"})
    book.upsert("tool.gcc", "tool", "GNU toolchain", payload={"tip": "prefer lto builds"})
    memory.concepts("other").upsert("tool.private", "tool", "quirks of lto", visibility="private")
    coder = memory.agent("coder")
    with memory.engine.read() as conn:
        assert lexical.search(conn, "quirks fconcepts", 10, agent="coder") == []
        (hit,) = lexical.search(conn, "lto builds toolchain", 10, agent="coder")
        assert hit.type == "concept"
    found = coder.recall("lto builds", scope="concepts", record=False)
    labels = [r.event.payload.label for r in found.items]
    assert labels[0] == "GNU toolchain"
    assert "gcc compiler quirks" not in labels
    assert "quirks of lto" not in labels
    assert "quirks of lto" in [
        r.event.payload.label
        for r in memory.agent("other").recall("quirks lto", scope="concepts", record=False).items
    ]
    # The semantic index serves the newest version only, and memories never meet concepts.
    with memory.engine.read() as conn:
        memory.searcher.sync(conn)
    vector = memory.embedder.embed(["gcc compiler quirks use fconcepts"])[0]
    hits = memory.searcher.search(vector, 10, agent="coder", types=("concept",))
    newest = book.get("tool.gcc")
    assert newest is not None
    assert [h.position for h in hits] == [newest.position]
    assert coder.recall("gcc quirks", record=False).items == []


def test_the_context_command_prints_frames_and_saves_unless_told_not_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def cli(*argv: str) -> tuple[int, str, str]:
        out = io.StringIO()
        code = main(["--ledger", str(tmp_path / "c.db"), *argv], out=out)
        return code, out.getvalue(), capsys.readouterr().err

    assert cli("concepts", "upsert", "coder", "tool.gcc", "--type", "tool", "--label",
               "gcc flags", "--link", "tool.ld:uses:0.6")[0] == 0  # fmt: skip
    assert (
        cli("concepts", "upsert", "coder", "tool.ld", "--type", "tool", "--label", "linker")[0] == 0
    )
    code, out, err = cli("context", "gcc flags", "--agent", "coder", "--json", "--no-save")
    assert code == 0, err
    record = json.loads(out)
    assert record["event_id"] is None
    assert record["tokens"] <= record["budget"] == 2000
    assert record["frames"]["knowledge"]["tool"]["gcc"][SELF]["label"] == "gcc flags"
    assert sorted((i["position"], i["type"], i["frame"]) for i in record["items"]) == [
        (1, "concept", "knowledge"),
        (2, "concept", "knowledge"),  # the linker, called up by the link
    ]
    code, out, err = cli("context", "gcc flags", "--agent", "coder", "--budget", "300")
    assert code == 0, err
    assert json.loads(out)["problem"]["query"] == "gcc flags"
    assert "saved as context.saved" in err
    with engram.open_memory(str(tmp_path / "c.db")) as memory:
        (event,) = memory.ledger.get([memory.ledger.head()])
        assert event.kind == "context.saved"
        assert event.payload.budget == 300
    code, _, err = cli("context", "gcc", "--agent", "coder", "--budget", "5")
    assert code == 2
    assert "--budget" in err
    code, _, err = cli("context", "  ", "--agent", "coder")
    assert code == 1
    assert "query" in err


def test_recency_in_a_frame_counts_from_the_newest_candidate(memory: Memory) -> None:
    """A year-old store still tells a week-newer memory from an older one (ADR 0108): ages
    count from the newest candidate, not the clock, where both would be about zero."""
    coder = memory.agent("coder")
    year_ago = datetime.now(UTC) - timedelta(days=365)
    old = coder.observe("the nightly backup runs at two", at=year_ago)
    new = coder.observe("the nightly backup runs at four", at=year_ago + timedelta(days=7))
    context = build_context(coder, "when does the nightly backup run", save=False)
    recency = {i.position: i.components["recency"] for i in context.items}
    assert recency[new] == pytest.approx(1.0)
    assert recency[old] == pytest.approx(0.5)  # the default half-life: 7 days
