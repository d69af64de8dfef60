"""What recall's numbers mean: raw path scores, an absolute match, min_score, and as_of."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from test_recall import T0, Memory

import engram
from engram.agents.memory import DEFAULT_MIN_SCORE, AgentMemory
from engram.agents.network import NeuronNetwork
from engram.ledger import Ledger
from engram.projections import lexical, salience, timetravel
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.graph import NeuronGraph, export_graph
from engram.projections.salience import INITIAL, SalienceIndex

HOUR = timedelta(hours=1)
TEXTS = [
    "The database outage lasted two hours and broke checkout",
    "Alice moved to Berlin last spring",
    "We decided to ship the release on Friday",
    "Bob loves hiking in the mountains",
    "Lunch was pasta with tomato sauce",
    "Renew the TLS certificate before it expires",
]
NONSENSE = ["zzzz qqqq", "what is the zzzz", "xkcd vvvv wwww"]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(tmp_path)
    yield m
    m.close()


@pytest.fixture
def hashed(tmp_path: Path) -> Iterator[AgentMemory]:
    """The default install: hash vectors and BM25, through engram.open_memory."""
    with engram.open_memory(str(tmp_path / "default.db")) as opened:
        agent = opened.agent("ana")
        for text in TEXTS:
            agent.observe(text, at=T0)
        yield agent


# -- raw scores and match ---------------------------------------------------------------------


def test_items_carry_each_path_s_raw_score(memory: Memory) -> None:
    alice = memory.agent("alice")
    for text in ["database outage at noon", "coffee and lunch", "plan the database rollback"]:
        alice.observe(text, at=T0)
    result = alice.recall("database outage", 3, record=False, min_score=0)
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        bm25 = {h.position: h.score for h in lexical.search(conn, "database outage", 9, agent="x")}
    query = memory.embedder.embed(["database outage"])[0]
    for item in result.items:
        assert item.bm25 == (
            pytest.approx(bm25[item.event.position]) if "lexical" in item.via else None
        )
        vector = memory.embedder.embed([item.event.payload.text])[0]
        # The cosine is filled in from the stored vector for every candidate.
        assert item.cosine == pytest.approx(float(np.dot(query, vector)), abs=1e-5)
        assert 0.0 <= item.match <= 1.0
        assert item.fused > 0
    # relevance is absolute (ADR 0051): in 0..1, the best item's short of certainty.
    assert all(0.0 <= item.relevance <= 1.0 for item in result.items)
    assert result.items[0].relevance > result.items[-1].relevance
    assert result.items[0].match > result.items[-1].match


def test_match_of_an_item_does_not_depend_on_the_rest_of_the_result(hashed: AgentMemory) -> None:
    first = hashed.recall("database outage", 1, record=False).items[0]
    wide = hashed.recall("database outage", 6, record=False, min_score=0).items
    assert wide[0].event.position == first.event.position
    assert wide[0].match == pytest.approx(first.match)
    assert wide[-1].match < 0.05 < first.match


@pytest.mark.parametrize("query", NONSENSE)
def test_a_nonsense_query_recalls_nothing_with_min_score(hashed: AgentMemory, query: str) -> None:
    # Without a floor the nonsense is still served, but its score says it is noise.
    loose = hashed.recall(query, 3, record=False, min_score=0)
    assert loose.items
    assert all(item.score < DEFAULT_MIN_SCORE for item in loose.items)
    assert all(item.match < 0.05 for item in loose.items)
    head = hashed.ledger.head()
    result = hashed.recall(query, 3)
    assert result.items == []
    assert result.recorded_at is None  # nothing served, nothing recorded
    assert hashed.ledger.head() == head


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("database outage", TEXTS[0]),
        ("where did Alice move", TEXTS[1]),
        ("hiking", TEXTS[3]),
        ("when do we ship the release", TEXTS[2]),
    ],
)
def test_a_good_query_keeps_its_hit_with_min_score(
    hashed: AgentMemory, query: str, expected: str
) -> None:
    result = hashed.recall(query, 3, record=False)
    assert result.items
    assert result.items[0].event.payload.text == expected
    assert result.items[0].score >= DEFAULT_MIN_SCORE


@pytest.mark.parametrize("floor", [0.0, 0.05, 0.2, 0.5])
@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("query", ["database outage", "ship the release", "zzzz hiking"])
@pytest.mark.parametrize("by", ["relevance", "importance"])
def test_the_floor_only_removes_items_from_the_unfloored_order(
    hashed: AgentMemory, floor: float, k: int, query: str, by: str
) -> None:
    # The floored result must be the unfloored order with the items under the floor taken
    # out. Ordered by importance, items that match poorly come first and the floor must look
    # past them.
    weights = {"relevance": 1.0, "recency": 0.0, "importance": 0.0}
    if by == "importance":
        weights = {"relevance": 0.0, "recency": 0.0, "importance": 1.0}
    everything = hashed.recall(query, len(TEXTS), record=False, weights=weights, min_score=0).items
    kept = [item for item in everything if item.score >= floor][:k]
    floored = hashed.recall(query, k, record=False, min_score=floor, weights=weights).items
    assert [i.event.position for i in floored] == [i.event.position for i in kept]
    for got, want in zip(floored, kept, strict=True):
        assert got.match == pytest.approx(want.match)
        assert got.cosine == pytest.approx(want.cosine)
        assert got.score == pytest.approx(want.score)


def test_the_default_min_score_sends_noise_away_and_zero_keeps_every_candidate(
    hashed: AgentMemory,
) -> None:
    assert 0.0 < DEFAULT_MIN_SCORE < 0.5
    assert hashed.recall("zzzz qqqq", 3, record=False).items == []
    assert len(hashed.recall("zzzz qqqq", 3, record=False, min_score=0).items) == 3


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.2", True, float("nan")])
def test_a_bad_min_score_is_refused_and_nothing_is_written(
    hashed: AgentMemory, bad: object
) -> None:
    head = hashed.ledger.head()
    with pytest.raises(QueryError, match="min_score"):
        hashed.recall("database", 3, min_score=bad)  # type: ignore[arg-type]
    assert hashed.ledger.head() == head


def test_the_keyword_fallback_has_a_match_too(memory: Memory) -> None:
    from test_recall import break_lexical_index

    alice = memory.agent("alice", vectors=False)
    alice.observe("The database outage lasted two hours", at=T0)
    alice.observe("database lunch", at=T0)
    break_lexical_index(memory)
    result = alice.recall("database outage", 3, record=False)
    assert result.fallback is not None
    assert [item.match for item in result.items] == [1.0, 0.5]
    assert alice.recall("database outage", 3, record=False, min_score=0.6).items[0].match == 1.0


# -- as_of: what the store knew then ----------------------------------------------------------


PATHS = [("lexical",), ("semantic",), ("lexical", "semantic")]


@pytest.mark.parametrize("paths", PATHS)
def test_memories_observed_after_as_of_never_appear(memory: Memory, paths: tuple[str, ...]) -> None:
    alice = memory.agent("alice")
    early = alice.observe("database outage in the morning", at=T0)
    late = [alice.observe(f"database outage report {i}", at=T0 + 2 * HOUR) for i in range(40)]
    result = alice.recall("database outage", 5, as_of=T0 + HOUR, paths=paths, record=False)
    assert [r.event.position for r in result.items] == [early]
    now = alice.recall("database outage", 50, paths=paths, record=False)
    assert {r.event.position for r in now.items} == {early, *late}


def test_the_fallback_also_reads_as_of(memory: Memory) -> None:
    from test_recall import break_lexical_index

    alice = memory.agent("alice", vectors=False)
    early = alice.observe("database outage", at=T0)
    alice.observe("database outage again", at=T0 + 2 * HOUR)
    break_lexical_index(memory)
    result = alice.recall("database outage", 5, as_of=T0 + HOUR, record=False)
    assert result.fallback is not None
    assert [r.event.position for r in result.items] == [early]


def test_recalls_recorded_after_as_of_do_not_bump(memory: Memory) -> None:
    alice = memory.agent("alice")
    old = alice.observe("database outage", at=T0)
    new = alice.observe("database migration", at=T0 + 5 * HOUR)
    as_of = T0 + 10 * HOUR
    before = {r.event.position: r for r in alice.recall("database", 2, as_of=as_of).items}
    # A recall served later (its event time is now) touches the old memory again.
    alice.recall("outage", 1)
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        assert salience.memory_facts(conn, [old])[old].updated_us > timetravel.check_as_of(as_of)
    after = {
        r.event.position: r for r in alice.recall("database", 2, as_of=as_of, record=False).items
    }
    # Recency is the age since observation (ADR 0050), counted from the newest candidate
    # (ADR 0108): a later recall changes nothing.
    assert after[old].recency == pytest.approx(before[old].recency)
    assert after[old].recency == pytest.approx(1 / (1 + (5 / 24) / 30))
    assert after[new].recency == pytest.approx(1.0)
    assert after[old].score == pytest.approx(before[old].score)


@pytest.mark.parametrize("paths", PATHS)
def test_archivals_after_as_of_do_not_hide(memory: Memory, paths: tuple[str, ...]) -> None:
    alice = memory.agent("alice")
    kept = alice.observe("database outage at noon", at=T0)
    gone = alice.observe("database outage at night", at=T0)
    alice.recall("database", 2, paths=paths, record=False)  # the searcher holds both first
    alice.archive([gone])  # its event time is now, long after T0
    as_of = T0 + HOUR
    then = alice.recall("database outage", 5, as_of=as_of, paths=paths, record=False)
    assert {r.event.position for r in then.items} == {kept, gone}
    later = alice.recall("database outage", 5, paths=paths, record=False)
    assert [r.event.position for r in later.items] == [kept]


def test_an_archival_before_as_of_hides(memory: Memory) -> None:
    alice = memory.agent("alice")
    alice.observe("database outage at noon", at=T0)
    gone = alice.observe("database outage at night", at=T0)
    alice.archive([gone])
    future = alice.recall("database outage", 5, as_of=T0 + 1000 * 24 * HOUR, record=False)
    assert gone not in {r.event.position for r in future.items}


# -- the network as of a time -----------------------------------------------------------------


@pytest.fixture
def network(tmp_path: Path) -> Iterator[NeuronNetwork]:
    with (
        Ledger.open(str(tmp_path / "ledger.db")) as ledger,
        ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()]) as engine,
    ):
        yield NeuronNetwork(ledger, engine)


def test_the_network_reads_as_of_see_what_was_known_then(network: NeuronNetwork) -> None:
    network.create_neuron("a", "apples", at=T0)
    network.create_neuron("b", "bananas", at=T0)
    network.connect("a", "b", "triggers", 40000, at=T0)
    network.create_neuron("c", "cherries", at=T0 + 2 * HOUR)  # created after
    network.connect("b", "a", "recalls", 100, at=T0 + 2 * HOUR)
    network.stimulate({"a": 1.0}, at=T0 + 2 * HOUR)  # activated after
    network.archive("b", at=T0 + 3 * HOUR)  # archived after
    as_of = T0 + HOUR

    top = network.top(10, as_of=as_of)
    assert {(i.id, i.stored) for i in top} == {("a", INITIAL), ("b", INITIAL)}
    graph = network.export(as_of=as_of)
    assert [n["id"] for n in graph["neurons"]] == ["a", "b"]
    assert [c["target"] for n in graph["neurons"] for c in n["connections"]] == ["b"]
    assert set(network.propagate({"a": 1.0}, as_of=as_of).levels) == {"a", "b"}
    with pytest.raises(QueryError, match="'c' does not exist"):
        network.propagate({"c": 1.0}, as_of=as_of)

    now = network.top(10)
    assert {i.id for i in now} == {"a", "c"}
    assert max(i.stored for i in now) > INITIAL
    assert network.top(10, as_of=T0 - HOUR) == []


def test_reads_as_of_a_time_after_every_event_use_the_live_tables(
    network: NeuronNetwork,
) -> None:
    network.create_neuron("a", "apples", at=T0)
    network.engine.catch_up()
    with network.engine.read() as conn:
        assert not timetravel.changed_after(conn, T0 + HOUR)
        assert timetravel.changed_after(conn, T0 - HOUR)
        with timetravel.known_at(conn, network.ledger, T0 + HOUR) as known:
            assert known is conn
        with timetravel.known_at(conn, network.ledger, T0 - HOUR) as known:
            assert known is not conn
            assert known.execute("SELECT count(*) FROM neurons").fetchone() == (0,)


def test_reads_as_of_refuse_naive_times(network: NeuronNetwork) -> None:
    with pytest.raises(QueryError, match="as_of"):
        network.top(3, as_of=T0.replace(tzinfo=None))


def test_known_at_replays_only_what_it_is_asked_for(network: NeuronNetwork) -> None:
    network.create_neuron("a", "apples", at=T0 + HOUR)
    network.engine.catch_up()
    with network.engine.read() as conn:
        assert timetravel.changed_after(conn, T0)
        assert not timetravel.changed_after(conn, T0, projections=())
        with timetravel.known_at(conn, network.ledger, T0, projections=("salience",)) as known:
            tables = {r[0] for r in known.execute("SELECT name FROM sqlite_master")}
            assert "salience" in tables
            assert "neurons" not in tables
        for bad in [("lexical",), "salience"]:
            with (
                pytest.raises(QueryError, match="projections"),
                timetravel.known_at(conn, network.ledger, T0, projections=bad),
            ):
                pass


def test_every_salience_query_reads_as_of_with_the_ledger(network: NeuronNetwork) -> None:
    network.create_neuron("a", "apples", at=T0)
    network.create_neuron("b", "bananas", at=T0 + 2 * HOUR)  # created after
    network.stimulate({"a": 1.0}, at=T0 + 2 * HOUR)  # activated after
    network.engine.catch_up()
    as_of, ledger = T0 + HOUR, network.ledger
    with network.engine.read() as conn:
        assert [(i.id, i.stored) for i in salience.top(conn, as_of, ledger=ledger)] == [
            ("a", INITIAL)
        ]
        assert salience.salience_of(conn, "neuron", "b", as_of, ledger=ledger) is None
        item = salience.salience_of(conn, "neuron", "a", as_of, ledger=ledger)
        assert item is not None
        assert item.stored == INITIAL
        assert [i.id for i in salience.above(conn, 0, as_of, ledger=ledger)] == ["a"]
        graph = export_graph(conn, as_of, ledger=ledger)
        assert [n["id"] for n in graph["neurons"]] == ["a"]
        # Without the ledger the live tables answer: both neurons, a reinforced.
        assert {i.id for i in salience.top(conn, as_of)} == {"a", "b"}


def test_recency_counts_from_the_newest_candidate_not_the_clock(memory: Memory) -> None:
    """A store whose memories are a year old still tells a change from what it changed: ages
    count from the newest candidate (ADR 0108), so a month between two versions weighs the
    same a year later as on the day; the query's time still bounds it (as_of)."""
    alice = memory.agent("alice", vectors=False)
    year_ago = datetime.now(UTC) - timedelta(days=365)
    old = alice.observe("the build server runs on the old rack", at=year_ago)
    new = alice.observe("the build server runs on the new rack", at=year_ago + timedelta(days=30))
    items = {r.event.position: r for r in alice.recall("build server rack", 2, record=False).items}
    assert items[new].recency == pytest.approx(1.0)
    assert items[old].recency == pytest.approx(1 / (1 + 30 / 30))
    # As of a day after the older one, the newer is not known yet: the older is the newest.
    early = alice.recall(
        "build server rack", 2, record=False, as_of=year_ago + timedelta(days=1)
    ).items
    assert [r.event.position for r in early] == [old]
    assert early[0].recency == pytest.approx(1.0)
    # What was true ten days after the older one: the newer, not true yet, is not the
    # present the older one's age counts from.
    then = alice.recall(
        "build server rack", 2, record=False, min_score=0, valid_at=year_ago + timedelta(days=10)
    ).items
    assert {r.event.position: r.recency for r in then}[old] == pytest.approx(1.0)
