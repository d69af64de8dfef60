"""Recall serves what is true now, once, with a score that means something (ADRs 0050-0052)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import engram
from engram.agents.context import build_context
from engram.agents.errors import MemoryOwnerError, UnknownMemoryError
from engram.agents.memory import DEFAULT_MIN_SCORE, AgentMemory, wants_current
from engram.config import ConfigError
from engram.mcp.tools import MemoryTools, ToolInputError
from engram.projections import supersession
from engram.projections.errors import QueryError
from engram.runtime import Memory

NOW = datetime.now(UTC).replace(microsecond=0)
DAY = timedelta(days=1)
FILLER = [
    f"{name} {verb} {thing}."
    for name in ("Bilal Haddad", "Chen Wei", "Dmitri Volkov", "Eva Lindqvist", "Farah Qureshi")
    for verb, thing in (
        ("keeps", "a vegetable garden"),
        ("collects", "old maps"),
        ("reads", "science fiction"),
        ("cycles", "to the office"),
        ("bakes", "sourdough bread"),
        ("repairs", "vintage radios"),
        ("teaches", "evening classes"),
        ("writes", "a travel blog"),
    )
]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def _filled(memory: Memory, agent: str = "ana") -> AgentMemory:
    """Return ``agent``'s memory with 40 unrelated memories, so names are rare words."""
    me = memory.agent(agent)
    for i, text in enumerate(FILLER):
        me.observe(text, at=NOW - 300 * DAY + i * DAY)
    return me


# -- supersession -------------------------------------------------------------------------


def test_an_explicit_supersession_serves_the_current_fact_first_and_labels_the_old(
    memory: Memory,
) -> None:
    ana = _filled(memory)
    old = ana.observe("Alice Moreau lives in Paris.", at=NOW - 60 * DAY)
    new = ana.observe("Alice Moreau moved to Berlin.", at=NOW - 30 * DAY, supersedes=[old])
    result = ana.recall("Where does Alice Moreau live?", 5, record=False, min_score=0)
    order = [r.event.position for r in result.items]
    assert order.index(new) < order.index(old)
    served = {r.event.position: r for r in result.items}
    assert served[old].replaced_by == new
    assert served[new].replaced_by is None
    # Valid time is not record time: before the move, Paris was true.
    then = ana.recall(
        "Where does Alice Moreau live?", 5, record=False, min_score=0, valid_at=NOW - 45 * DAY
    )
    assert then.items[0].event.position == old
    assert then.items[0].replaced_by is None
    assert new not in [r.event.position for r in then.items]
    # Nothing was deleted: the chain is in the projection (and the ledger).
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        (row,) = conn.execute("SELECT old, new, method FROM supersessions").fetchall()
    assert tuple(row) == (old, new, "explicit")


def test_a_replacement_told_late_is_true_from_its_valid_from(memory: Memory) -> None:
    # Told 10 days ago that Alice moved 40 days ago: between the two, the move was true
    # (though not yet known), Paris was not. Asked of a time in that window, the move is
    # served current and Paris below it, labelled; before the move, Paris alone.
    ana = _filled(memory)
    old = ana.observe("Alice Moreau lives in Paris.", at=NOW - 60 * DAY)
    new = ana.observe(
        "Alice Moreau moved to Berlin.",
        at=NOW - 10 * DAY,
        supersedes=[old],
        valid_from=NOW - 40 * DAY,
    )
    query = "Where does Alice Moreau live?"
    window = ana.recall(query, 5, record=False, min_score=0, valid_at=NOW - 20 * DAY)
    served = {r.event.position: r for r in window.items}
    assert [r.event.position for r in window.items][:2] == [new, old]
    assert served[new].score > 0
    assert served[new].replaced_by is None
    assert served[old].replaced_by == new
    before = ana.recall(query, 5, record=False, min_score=0, valid_at=NOW - 50 * DAY)
    assert before.items[0].event.position == old
    assert before.items[0].replaced_by is None
    assert new not in [r.event.position for r in before.items]
    # As the store knew it 20 days ago (record time), nothing of the move was told yet.
    known = ana.recall(query, 5, record=False, min_score=0, as_of=NOW - 20 * DAY)
    assert known.items[0].event.position == old
    assert known.items[0].replaced_by is None
    assert new not in [r.event.position for r in known.items]
    # The MCP tool asks the same question; a bad time is refused, naming the argument.
    tools = MemoryTools(memory, ["ana"])
    window_at = (NOW - 20 * DAY).isoformat()
    found = tools.search_memory(query, 5, min_score=0, valid_at=window_at)
    assert [(i["position"], i["replaced_by"]) for i in found["items"][:2]] == [
        (new, None),
        (old, new),
    ]
    head = memory.ledger.head()
    for bad in ("last week", "2026-01-01T00:00:00", 5):
        with pytest.raises(ToolInputError, match="valid_at"):
            tools.search_memory(query, 5, valid_at=bad)  # type: ignore[arg-type]
    with pytest.raises(QueryError, match="valid_at"):
        tools.search_memory(query, 5, scope="scars", valid_at=window_at)
    assert memory.ledger.head() == head


def test_a_replaced_fact_that_says_the_query_s_words_is_still_served_below_its_change(
    memory: Memory,
) -> None:
    # ADR 0106: the stale fact holds every word of the question, the change none of its
    # verbs; the replaced weight alone left the stale one first. Both served: the change
    # ranks above it, and each score says so.
    ana = _filled(memory)
    old = ana.observe("The nightly backup runs at 02:00 UTC.", at=NOW - 60 * DAY)
    new = ana.observe("Backups were rescheduled to 04:30 UTC.", at=NOW - 40 * DAY, supersedes=[old])
    query = "What time does the nightly backup run?"
    result = ana.recall(query, 5, record=False, min_score=0)
    items = {r.event.position: r for r in result.items}
    order = [r.event.position for r in result.items]
    assert order.index(new) < order.index(old)
    assert items[old].score < items[new].score
    assert items[old].replaced_by == new
    scores = [r.score for r in result.items]
    assert scores == sorted(scores, reverse=True)
    # Under the default floor the change, sharing one word with the question, would not be
    # served on its own; the stale fact served brings it, with at least its relevance.
    alone = ana.recall("Backups", 5, record=False)
    floored = ana.recall(query, 5, record=False)
    first, second = floored.items[:2]
    assert (first.event.position, second.event.position) == (new, old)
    assert first.relevance >= second.relevance
    assert second.replaced_by == new
    assert new in [r.event.position for r in alone.items]  # a plain candidate otherwise


def test_a_replaced_fact_under_the_floor_by_its_weight_still_brings_in_its_change(
    memory: Memory,
) -> None:
    # The stale fact answers the question; weighed down as replaced, its score falls under
    # the floor, and its change, which shares a name with the question and nothing else,
    # scores under it on its own. The change takes the stale fact's relevance: a floor
    # between the two must serve the change, not nothing.
    ana = _filled(memory)
    old = ana.observe("Emeka Obi drives a blue Honda Civic.", at=NOW - 90 * DAY)
    new = ana.observe(
        "Emeka Obi sold it and bought a red Tesla Model 3.", at=NOW - 20 * DAY, supersedes=[old]
    )
    query = "What car does Emeka Obi drive now?"
    every = {r.event.position: r for r in ana.recall(query, 10, record=False, min_score=0).items}
    assert every[old].replaced_by == new
    floor = (every[old].score + every[new].score) / 2
    alone = ana.recall("Emeka Obi sold it", 10, record=False, min_score=0)
    assert every[old].score < floor < every[new].score
    floored = ana.recall(query, 10, record=False, min_score=floor)
    assert [r.event.position for r in floored.items] == [new]
    assert floored.items[0].score == pytest.approx(every[new].score)
    assert new in [r.event.position for r in alone.items]


def test_a_replaced_fact_brings_a_change_no_path_of_the_question_found(
    memory: Memory,
) -> None:
    # ADR 0152: "Who looks after the volunteers at the food bank?" found the stale holder
    # ("The food bank's volunteer lead is Carla Moss") and served it labelled as replaced by
    # a memory it did not serve: the hand-over shares no word the question's paths ranked.
    ana = _filled(memory)
    for i in range(30):
        ana.observe(f"The food bank handed out {40 + i} parcels on a Saturday.",
                    at=NOW - (80 - i) * DAY)  # fmt: skip
    old = ana.observe("The food bank's volunteer lead is Carla Moss.", at=NOW - 90 * DAY)
    new = ana.observe("Carla handed over to Jonah Reyes last week.", at=NOW - 10 * DAY,
                      supersedes=[old])  # fmt: skip
    query = "Who looks after the volunteers at the food bank?"
    order = [r.event.position for r in ana.recall(query, 3, record=False, min_score=0).items]
    assert old in order
    assert new in order
    assert order.index(new) < order.index(old)
    # A replacement the recall may not serve (a type it does not ask for) is not brought in.
    van = ana.observe("The food bank's van is parked at the depot.", at=NOW - 90 * DAY)
    plan = ana.observe("Park it behind the church from March.", at=NOW - 5 * DAY,
                       type="plan", supersedes=[van])  # fmt: skip
    asked = ana.recall("Where is the food bank's van parked?", 3, record=False, min_score=0,
                       types=["observation"])  # fmt: skip
    served = [r.event.position for r in asked.items]
    assert van in served
    assert plan not in served


def test_a_context_frame_labels_a_replaced_fact_and_ranks_it_below_its_change(
    memory: Memory,
) -> None:
    # ADR 0106: a replaced memory is labelled wherever it is served, frames included; the
    # label is the supersessions' to say, so a saved frame keeps the position alone.
    ana = _filled(memory)
    old = ana.observe("The nightly backup runs at 02:00 UTC.", at=NOW - 60 * DAY)
    new = ana.observe("Backups were rescheduled to 04:30 UTC.", at=NOW - 40 * DAY, supersedes=[old])
    context = build_context(ana, "What time does the nightly backup run?", budget=600)
    entries = {e["pos"]: e for e in context.frames["episodic"]}
    assert entries[old]["replaced_by"] == new
    assert "replaced_by" not in entries[new]
    ranked = [i.position for i in context.items]
    assert ranked.index(new) < ranked.index(old)
    (saved,) = memory.ledger.read(0, kinds=["context.saved"])
    quoted = saved.payload.frames["episodic"]
    assert {"pos": old, "type": "observation"}.items() <= next(
        q for q in quoted if q["pos"] == old
    ).items()
    assert all("replaced_by" not in q for q in quoted)
    # Before the supersession was recorded, nothing was replaced.
    then = build_context(
        ana, "What time does the nightly backup run?", budget=600, as_of=NOW - 50 * DAY,
        save=False,
    )  # fmt: skip
    assert all("replaced_by" not in e for e in then.frames["episodic"])


def test_a_supersession_is_reverted_by_an_event(tmp_path: Path) -> None:
    # Detection off: the move is one it takes (ADR 0154); here the agent says it.
    with engram.open_memory(str(tmp_path / "off.db"), supersede="off") as memory:
        _reverted_by_an_event(memory)


def _reverted_by_an_event(memory: Memory) -> None:
    ana = _filled(memory)
    old = ana.observe("Alice Moreau lives in Paris.", at=NOW - 60 * DAY)
    new = ana.observe("Alice Moreau moved to Berlin.", at=NOW - 30 * DAY)
    event = ana.supersede(new, [old])

    def labels() -> dict[int, int | None]:
        found = ana.recall("Alice Moreau Paris", 3, record=False, min_score=0).items
        return {r.event.position: r.replaced_by for r in found}

    assert labels()[old] == new
    head = memory.ledger.head()
    with pytest.raises(QueryError, match=rf"memory {new} already replaces \[{old}\]"):
        ana.supersede(new, [old])  # a second one would outlive the revert below
    assert memory.ledger.head() == head
    with pytest.raises(UnknownMemoryError, match="in force of bob's memories"):
        memory.agent("bob").revert_supersession(event, reviewer="bob")
    assert memory.ledger.head() == head
    assert labels()[old] == new
    ana.revert_supersession(event, reviewer="lead", note="she moved back")
    assert labels()[old] is None
    with pytest.raises(UnknownMemoryError, match="no supersession in force"):
        ana.revert_supersession(event, reviewer="lead")
    again = ana.supersede(new, [old])  # reverted, it may be said again
    assert labels()[old] == new
    assert again > event


def test_a_revision_is_one_event_and_is_reverted_like_any_supersession(memory: Memory) -> None:
    # observe(supersedes=...) wrote the memory, then memory.superseded: a process killed
    # between the two appends left the new memory without its replacement (ADR 0121).
    ana = _filled(memory)
    old = ana.observe("Alice Moreau lives in Paris.", at=NOW - 60 * DAY)
    new = ana.observe("Alice Moreau moved to Berlin.", at=NOW - 30 * DAY, supersedes=[old])
    assert memory.ledger.head() == new
    assert list(memory.ledger.read(kinds=["memory.superseded"])) == []
    found = ana.recall("Alice Moreau Paris", 3, record=False, min_score=0).items
    assert {r.event.position: r.replaced_by for r in found}[old] == new
    ana.revert_supersession(new, reviewer="lead", note="she moved back")
    found = ana.recall("Alice Moreau Paris", 3, record=False, min_score=0).items
    assert {r.event.position: r.replaced_by for r in found}[old] is None


@pytest.mark.parametrize(
    ("supersedes", "error", "needle"),
    [
        ([9999], UnknownMemoryError, "holds no event"),
        ([1, 1], QueryError, "repeat"),
        ("1", QueryError, "positions"),
    ],
)
def test_a_bad_supersedes_writes_nothing(
    memory: Memory, supersedes: object, error: type[Exception], needle: str
) -> None:
    ana = memory.agent("ana")
    ana.observe("Alice lives in Paris.")
    head = memory.ledger.head()
    with pytest.raises(error, match=needle):
        ana.observe("Alice moved to Berlin.", supersedes=supersedes)  # type: ignore[arg-type]
    assert memory.ledger.head() == head


def test_an_agent_supersedes_only_its_own_earlier_memories_by_hand(memory: Memory) -> None:
    # ADR 0171: by hand, an agent replaces its own memories only, public or private: a
    # call naming other agents' memories had buried 300 of them under one word.
    bob, ana = memory.agent("bob"), memory.agent("ana")
    private = bob.observe("Bob lives in Rome.", visibility="private")
    public = bob.observe("Bob's desk is on floor 2.")
    mine = ana.observe("Ana lives in Oslo.")
    head = memory.ledger.head()
    with pytest.raises(MemoryOwnerError, match="supersedes only its own"):
        ana.observe("Bob moved to Lima.", supersedes=[private])
    with pytest.raises(MemoryOwnerError, match="holds a memory of agent 'bob'"):
        ana.observe("Bob's desk moved to floor 3.", supersedes=[public])
    later = ana.observe("Ana likes tea.")
    with pytest.raises(MemoryOwnerError, match="supersedes only its own"):
        ana.supersede(later, [public])
    with pytest.raises(QueryError, match="only earlier ones"):
        ana.supersede(mine, [later])
    assert memory.ledger.head() == head + 1  # the one observation, nothing else


def test_detection_replaces_another_agents_public_memory_by_a_public_one(
    memory: Memory,
) -> None:
    secretary, treasurer = memory.agent("secretary"), memory.agent("treasurer")
    _filled(memory)
    old = secretary.observe("Ruth Bailey is the club treasurer.", at=NOW - 60 * DAY)
    hidden = secretary.observe("Ines Duarte lives in Leeds.", at=NOW - 60 * DAY,
                               visibility="private")  # fmt: skip
    new = treasurer.observe(
        "Ruth Bailey stepped down at the AGM; Dev Mistry is the new treasurer.",
        at=NOW - 30 * DAY,
    )
    treasurer.observe("Ines Duarte moved to York.", at=NOW - 30 * DAY)
    events = [e for e in memory.ledger.read(0) if e.kind == "memory.superseded"]
    # The private memory is no candidate: its agent alone reads it.
    assert [(e.payload.agent, e.payload.position, e.payload.replaces) for e in events] == [
        ("treasurer", new, [old])
    ]
    assert hidden not in {p for e in events for p in e.payload.replaces}
    item = secretary.recall("Who is the club treasurer?", 1, record=False).items[0]
    assert item.event.position == new
    # Its reason quotes neither agent's words: the event is sealed under the treasurer's
    # key, and forgetting the secretary would leave them there (ADR 0171).
    assert "not quoted" in events[0].payload.reason
    assert "ruth" not in events[0].payload.reason.lower()
    # The secretary, whose memory was replaced, may undo it.
    secretary.revert_supersession(events[0].position, reviewer="secretary")
    item = secretary.recall("Who is the club treasurer?", 2, record=False).items
    assert {i.event.position: i.replaced_by for i in item} == {new: None, old: None}


def test_detection_applies_a_replacement_by_default_and_measures_it(memory: Memory) -> None:
    ana = _filled(memory)
    old = ana.observe("Alice Moreau is on the payments team.", at=NOW - 60 * DAY)
    other = ana.observe("Alice Moreau collects old stamps.", at=NOW - 50 * DAY)
    new = ana.observe("Alice Moreau is on the billing team.", at=NOW - 30 * DAY)
    events = [e for e in memory.ledger.read(0) if e.kind == "memory.superseded"]
    assert [(e.payload.position, e.payload.replaces, e.payload.method) for e in events] == [
        (new, [old], "detected")
    ]
    assert events[0].payload.similarity >= 0.5
    assert other not in events[0].payload.replaces
    item = ana.recall("Which team is Alice Moreau on now?", 1, record=False).items[0]
    assert item.event.position == new


def test_with_the_review_policy_detection_proposes_and_a_review_applies(
    tmp_path: Path,
) -> None:
    with engram.open_memory(str(tmp_path / "l.db"), supersede="review") as memory:
        ana = _filled(memory)
        old = ana.observe("Alice Moreau is on the payments team.", at=NOW - 60 * DAY)
        new = ana.observe("Alice Moreau is on the billing team.", at=NOW - 30 * DAY)
        (proposal,) = ana.proposals()
        assert (proposal.new, proposal.replaces, proposal.status) == (new, [old], "pending")
        served = ana.recall("Alice Moreau payments team", 1, record=False).items[0]
        assert served.replaced_by is None  # a proposal changes nothing yet
        with pytest.raises(QueryError, match="decision"):
            ana.review_supersession(proposal.event, "maybe", reviewer="lead")
        # Another agent's handle decides nothing about ana's memories; nothing is appended.
        head = memory.ledger.head()
        with pytest.raises(UnknownMemoryError, match="about bob's memories"):
            memory.agent("bob").review_supersession(proposal.event, "refused", reviewer="bob")
        assert memory.ledger.head() == head
        reviewed = ana.review_supersession(
            proposal.event, "applied", reviewer="lead", note="she moved teams"
        )
        assert memory.ledger.get([reviewed])[0].payload.note == "she moved teams"
        assert ana.proposals() == []
        served = ana.recall("Alice Moreau payments team", 3, record=False, min_score=0)
        assert {r.event.position: r.replaced_by for r in served.items}[old] == new
        with pytest.raises(QueryError, match="applied already"):
            ana.review_supersession(proposal.event, "refused", reviewer="lead")


def test_a_bad_policy_is_refused(tmp_path: Path, memory: Memory) -> None:
    with pytest.raises(QueryError, match="supersede must be one of"):
        AgentMemory("ana", memory.ledger, memory.engine, supersede="sometimes")
    with pytest.raises(ConfigError, match="supersede"):
        engram.open(str(tmp_path / "x.db"), supersede="sometimes")


def test_two_incidents_with_two_ids_are_not_a_supersession(memory: Memory) -> None:
    ana = _filled(memory)
    for code in ("E4021-XK7", "E4021-XK9", "E5310-AB1"):
        ana.observe(f"Deploy failed with error {code} in the billing worker.")
    assert not [e for e in memory.ledger.read(0) if e.kind == "memory.superseded"]


# -- copies, recency, the score -------------------------------------------------------------


def test_copies_fold_into_one_item_that_says_how_often_it_was_seen(memory: Memory) -> None:
    ana = _filled(memory)
    text = "The Falcon project ships a release every second Tuesday."
    first = ana.observe(text, at=NOW - 20 * DAY)
    copies = [
        ana.observe(variant, at=NOW - (19 - i) * DAY)
        for i, variant in enumerate(
            [text.upper(), "Note: " + text, text.rstrip(".") + ", as mentioned before."]
        )
    ]
    other = ana.observe("The Falcon project keeps its secrets in Vault.", at=NOW - 5 * DAY)
    result = ana.recall("When does the Falcon project ship?", 5, record=False, min_score=0)
    positions = [r.event.position for r in result.items]
    assert len(set(positions) & {first, *copies}) == 1
    (item,) = [r for r in result.items if r.event.position in {first, *copies}]
    assert item.copies == 4
    assert item.copy_positions == (first, *copies)
    assert other in positions


def test_a_number_written_with_its_digit_groups_apart_is_a_copy(memory: Memory) -> None:
    # "15,000" and "15000" are one number: the copies' digest joins a number's groups of
    # three digits (copies projection version 2).
    ana = _filled(memory)
    first = ana.observe("The Falcon budget for Q3 is 15,000 euros.", at=NOW - 9 * DAY)
    again = ana.observe("the falcon budget for Q3 is 15000 euros", at=NOW - 8 * DAY)
    spaced = ana.observe("The Falcon budget for Q3 is 15\u202f000 euros!", at=NOW - 7 * DAY)
    other = ana.observe("The Falcon budget for Q3 is 15,500 euros.", at=NOW - 6 * DAY)
    result = ana.recall("What is the Falcon budget for Q3?", 5, record=False, min_score=0)
    (item,) = [r for r in result.items if r.event.position in {first, again, spaced}]
    assert item.copy_positions == (first, again, spaced)
    assert other in [r.event.position for r in result.items]


def test_recency_tells_a_month_from_two_and_a_current_query_weighs_it_more(
    memory: Memory,
) -> None:
    ana = memory.agent("ana")
    older = ana.observe("The build server password rotates on Mondays.", at=NOW - 60 * DAY)
    newer = ana.observe("The build server password rotates on Fridays.", at=NOW - 30 * DAY)
    plain = {
        r.event.position: r
        for r in ana.recall("build server password rotation", 2, record=False).items
    }
    # Ages count from the newest candidate (ADR 0108): the month between them halves it.
    assert plain[newer].recency == pytest.approx(1.0, rel=1e-3)
    assert plain[older].recency == pytest.approx(0.5, rel=1e-3)
    current = ana.recall("build server password rotation now", 2, record=False).items
    gap = current[0].score / current[1].score
    assert current[0].event.position == newer
    assert gap > plain[newer].score / plain[older].score
    assert wants_current("Where does she live now?")
    assert not wants_current("Where is Nowhere?")


def test_an_exact_id_held_by_one_memory_wins_over_near_misses(memory: Memory) -> None:
    ana = _filled(memory)
    target = ana.observe("Alert HE-855 fired when the disk on db-3 filled up.")
    for near in ("GE-855", "HC-855", "HE-856", "HE-8555"):
        ana.observe(f"Deploy failed with error {near} in the billing worker.")
    for query in ("HE-855", "error HE-855", "what happened with HE-855?"):
        assert ana.recall(query, 3, record=False).items[0].event.position == target


@pytest.mark.parametrize("provider", ["hash", "onnx"])
def test_an_id_quoted_in_a_question_serves_its_memory_above_the_floor(
    tmp_path: Path, provider: str
) -> None:
    # ADR 0117: the memory holding the quoted id is served first and over the default floor,
    # though its words and meaning share little else with the question and vector-near ids
    # ("9f2c4e7", "PR #48211") read alike to a neural embedder.
    if provider == "onnx":
        pytest.importorskip("onnxruntime")
        from engram.projections.embedding.onnx_provider import ready

        if not ready():
            pytest.skip("needs the onnx extra and the MiniLM weights")
    routing = tmp_path / "routing.toml"
    routing.write_text(f'[embedding.default]\nprovider = "{provider}"\n')
    with engram.open_memory(str(tmp_path / "ledger.db"), routing=str(routing)) as memory:
        ana = _filled(memory)
        held = {
            "INC0012345": ana.observe(
                "INC0012345: the VPN dropped for the Singapore office.", at=NOW - 40 * DAY
            ),
            "9f2c4e1": ana.observe("Commit 9f2c4e1 broke the invoice rounding.", at=NOW - 30 * DAY),
            "#4821": ana.observe("PR #4821 refactors the webhook retries.", at=NOW - 20 * DAY),
        }
        for near in ("INC0012354", "9f2c4e7", "9f2c4a1", "#482", "#48211"):
            ana.observe(f"Seen {near} in the overnight logs, no user impact.", at=NOW - 10 * DAY)
        for query, code in (
            ("Can you pull up the notes for INC0012345?", "INC0012345"),
            ("which change did commit 9f2c4e1 make?", "9f2c4e1"),
            ("What does PR #4821 change?", "#4821"),
        ):
            items = ana.recall(query, 5, record=False).items
            assert items, query
            assert items[0].event.position == held[code], query
            assert items[0].score >= DEFAULT_MIN_SCORE


def test_the_score_is_absolute_and_an_unanswerable_question_gets_nothing(
    memory: Memory,
) -> None:
    ana = _filled(memory)
    ana.observe("Alice Moreau works at Acme Robotics.")
    answered = ana.recall("Where does Alice Moreau work?", 3, record=False).items
    assert answered
    assert answered[0].score >= DEFAULT_MIN_SCORE
    assert ana.recall("What is the boiling point of the reactor coolant?", 3).items == []
    # The same item and query score the same whatever else a result holds.
    alone = ana.recall("Where does Alice Moreau work?", 1, record=False).items[0]
    assert alone.score == pytest.approx(answered[0].score)


# -- every surface takes a floor --------------------------------------------------------------


def test_mcp_search_memory_serves_rules_with_their_text_and_reviewer(memory: Memory) -> None:
    position = memory.scars("ops").record(
        "failure", "the migration locked the users table", "run migrations with a lock timeout"
    )
    (scar,) = memory.ledger.get([position])
    lessons = memory.lessons()
    applied = lessons.apply(
        lessons.propose([scar.id], "rules", "Run every migration with a lock timeout."), "ana"
    )
    tools = MemoryTools(memory, ["planner"])
    for scope in ("rules", "all"):
        found = tools.search_memory("migration lock timeout", 5, scope=scope, min_score=0)
        (rule,) = [i for i in found["items"] if i["position"] == applied]
        assert rule["text"] == "Run every migration with a lock timeout."
        assert rule["agent"] == "ana"
        assert rule["type"] == "rule"


def test_mcp_search_memory_and_recall_context_take_a_floor(memory: Memory) -> None:
    ana = _filled(memory)
    ana.observe("Alice Moreau works at Acme Robotics.")
    tools = MemoryTools(memory, ["ana"])
    found = tools.search_memory("Where does Alice Moreau work?", 5)
    assert found["items"]
    assert found["items"][0]["copies"] == 1
    assert tools.search_memory("reactor coolant boiling point", 5)["items"] == []
    assert len(tools.search_memory("reactor coolant boiling point", 5, min_score=0)["items"]) == 5
    head = memory.ledger.head()
    for bad in (-0.1, 2, "0.5", True):
        with pytest.raises(ToolInputError, match="min_score"):
            tools.search_memory("Alice", 5, min_score=bad)  # type: ignore[arg-type]
        with pytest.raises(ToolInputError, match="min_score"):
            tools.recall_context("Alice", min_score=bad)  # type: ignore[arg-type]
    assert memory.ledger.head() == head
    loose = tools.recall_context("Alice Moreau work", scope="agent", min_score=0.0)
    strict = tools.recall_context("Alice Moreau work", scope="agent", min_score=0.99)
    assert len(strict["items"]) < len(loose["items"])


def test_build_context_refuses_a_bad_floor(memory: Memory) -> None:
    ana = memory.agent("ana")
    head = memory.ledger.head()
    with pytest.raises(QueryError, match="min_score"):
        build_context(ana, "Alice", min_score=1.5)
    assert memory.ledger.head() == head


def test_the_supersessions_projection_reads_as_of(tmp_path: Path) -> None:
    # Detection off: the move is one it takes (ADR 0154); here the agent says it.
    with engram.open_memory(str(tmp_path / "off.db"), supersede="off") as memory:
        _reads_as_of(memory)


def _reads_as_of(memory: Memory) -> None:
    ana = _filled(memory)
    old = ana.observe("Alice Moreau lives in Paris.", at=NOW - 60 * DAY)
    new = ana.observe("Alice Moreau moved to Berlin.", at=NOW - 30 * DAY)
    before = datetime.now(UTC)
    ana.supersede(new, [old])
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        assert supersession.replacements(conn, [old])[old].new == new
        from engram.projections.salience import micros

        assert supersession.replacements(conn, [old], as_of_us=micros(before)) == {}
