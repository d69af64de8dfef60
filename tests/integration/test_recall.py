"""The recall path end to end: lexical and semantic projections, the memory stream."""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.agents.arguments import MAX_QUERY
from engram.agents.context import build_context
from engram.agents.memory import DEFAULT_FUSION, FUSION_BY_PROVIDER, AgentMemory
from engram.ledger import Ledger, PayloadError
from engram.projections.embedding import Embedder, Fingerprint, HashEmbedder
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.lexical import LexicalIndex, search
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import IndexFileWarning, SemanticIndex, VectorSearcher

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
WORDS = ["database", "outage", "lunch", "carol", "plan", "deploy", "rollback", "coffee"]


class BagOfWords(Embedder):
    """A tiny deterministic embedder: one dimension per known word, normalised."""

    provider = "test-bag-of-words"
    model = "8"

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint(
            provider=self.provider, model=self.model, dimension=8, normalization="l2"
        )

    @property
    def dimension(self) -> int:
        return 8

    def _embed_batch(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), 8), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                if word.strip(".,") in WORDS:
                    out[i, WORDS.index(word.strip(".,"))] += 1.0
            digest = hashlib.sha256(text.encode()).digest()
            out[i] += np.frombuffer(digest[:8], dtype=np.uint8).astype(np.float32) / 2550.0
            out[i] /= np.linalg.norm(out[i])
        return out


class Memory:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ledger = Ledger.open(str(root / "ledger.db"), durability="fast")
        self.embedder = BagOfWords()
        self.engine = ProjectionEngine(
            self.ledger,
            root / "store",
            [SalienceIndex(), LexicalIndex(), SemanticIndex(self.embedder)],
        )

    def agent(self, name: str, *, vectors: bool = True) -> AgentMemory:
        searcher = VectorSearcher(self.root / "store", 8, str(self.embedder.fingerprint))
        return AgentMemory(
            name,
            self.ledger,
            self.engine,
            embedder=self.embedder if vectors else None,
            searcher=searcher if vectors else None,
        )

    def close(self) -> None:
        self.engine.close()
        self.ledger.close()


def break_lexical_index(memory: Memory) -> None:
    """Take the live FTS5 table away behind the engine's back: recall must degrade, not fail."""
    memory.engine.catch_up()
    with memory.engine.store.transaction() as conn:
        (generation,) = conn.execute(
            "SELECT generation FROM engram_generations WHERE name = 'lexical'"
        ).fetchone()
        conn.execute(f'DROP TABLE "_g{generation}__lexical"')


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(tmp_path)
    yield m
    m.close()


def test_recall_ranks_relevant_items_and_records_the_recall(memory: Memory) -> None:
    alice, bob = memory.agent("alice"), memory.agent("bob")
    p1 = alice.observe("The database outage lasted two hours", at=T0)
    alice.observe("Coffee with the team", at=T0)
    p3 = bob.observe("Plan the database rollback", at=T0 + timedelta(hours=1))
    # The order of what matches, the floor aside (min_score=0; the floor has tests of its own).
    result = bob.recall("database outage", 2, as_of=T0 + timedelta(hours=2), min_score=0)
    assert [r.event.position for r in result.items] == [p1, p3]
    assert result.fallback is None
    assert set(result.items[0].via) == {"lexical", "semantic"}
    assert result.recorded_at is not None
    recalled = next(memory.ledger.read(result.recorded_at - 1, limit=1))
    assert recalled.kind == "memory.recalled"
    assert [i.position for i in recalled.payload.items] == [p1, p3]
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        counts = dict(conn.execute("SELECT position, recall_count FROM salience").fetchall())
    assert counts == {p1: 1, 2: 0, p3: 1}


def test_recall_without_record_appends_nothing(memory: Memory) -> None:
    alice = memory.agent("alice")
    alice.observe("database outage", at=T0)
    head = memory.ledger.head()
    result = alice.recall("database", 5, record=False)
    assert result.recorded_at is None
    assert memory.ledger.head() == head


def test_recall_falls_back_to_keywords_when_no_index_answers(memory: Memory) -> None:
    alice = memory.agent("alice", vectors=False)
    p1 = alice.observe("The database outage lasted two hours", at=T0)
    break_lexical_index(memory)
    result = alice.recall("outage", 3, record=False)
    assert result.fallback is not None
    assert "keyword overlap" in result.fallback
    assert [r.event.position for r in result.items] == [p1]
    assert result.items[0].via == ("fallback",)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"text": ""}, "text"),
        ({"text": "x", "importance": 11}, "importance"),
        ({"text": "x", "importance": 0}, "importance"),
        ({"text": "x", "visibility": "secret"}, "visibility"),
        ({"text": "x", "type": "dream"}, "type"),
    ],
)
def test_bad_observations_are_refused_and_write_nothing(
    memory: Memory, kwargs: dict[str, object], field: str
) -> None:
    alice = memory.agent("alice")
    with pytest.raises(PayloadError, match=field):
        alice.observe(**kwargs)  # type: ignore[arg-type]
    assert memory.ledger.head() == 0


@pytest.mark.parametrize(
    ("query", "k", "weights"),
    [("", 5, None), ("x", 0, None), ("x", 5, {"novelty": 1.0}), ("x", 5, {"recency": -1})],
)
def test_bad_recall_arguments_are_refused(
    memory: Memory, query: str, k: int, weights: dict[str, float] | None
) -> None:
    with pytest.raises(QueryError):
        memory.agent("alice").recall(query, k, weights=weights)


def test_an_overlong_query_is_refused_before_anything_is_read_or_recorded(
    memory: Memory,
) -> None:
    alice = memory.agent("alice")
    alice.observe("database outage", at=T0)
    head = memory.ledger.head()
    with pytest.raises(QueryError, match=r"query is 100,001 characters long; at most 100,000") as e:
        alice.recall("a" * (MAX_QUERY + 1), 5)
    assert len(str(e.value)) < 200  # the query is not echoed
    assert memory.ledger.head() == head
    with pytest.raises(QueryError, match="at most 100,000"):
        build_context(alice, "b " * MAX_QUERY, budget=500)
    assert memory.ledger.head() == head
    assert alice.recall("database " + "x " * 20_000, 5, record=True).items  # a long one serves


def test_paths_narrow_recall_to_one_index(memory: Memory) -> None:
    alice = memory.agent("alice")
    alice.observe("database outage", at=T0)
    alice.observe("coffee lunch", at=T0 + timedelta(hours=2))  # another episode: no bloom
    lexical_only = alice.recall("database", 5, paths=("lexical",), record=False)
    assert [r.event.position for r in lexical_only.items] == [1]
    assert all(r.via == ("lexical",) for r in lexical_only.items)
    semantic_only = alice.recall("database", 5, paths=("semantic",), record=False)
    assert {r.via for r in semantic_only.items} == {("semantic",)}
    assert semantic_only.items[0].event.position == 1
    blind = memory.agent("alice", vectors=False)
    result = blind.recall("database", 5, paths=("semantic",), record=False)
    assert result.fallback is not None
    assert "no embedder configured" in result.fallback
    assert [r.via for r in result.items] == [("fallback",)]


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"paths": ()}, "paths must be a non-empty sequence"),
        ({"paths": "lexical"}, "paths must be a non-empty sequence"),
        ({"paths": ("lexical", "graph")}, r"unknown path\(s\) \['graph'\]"),
        ({"weights": {"salience": 1.0}}, r"weights: unknown name\(s\) \['salience'\]"),
        ({"weights": {"recency": float("nan")}}, "must be a number >= 0"),
        ({"weights": {"recency": float("inf")}}, "must be a number >= 0"),
    ],
)
def test_bad_paths_and_weights_are_refused_and_write_nothing(
    memory: Memory, options: dict[str, object], needle: str
) -> None:
    alice = memory.agent("alice")
    alice.observe("database outage", at=T0)
    head = memory.ledger.head()
    with pytest.raises(QueryError, match=needle):
        alice.recall("database", 5, **options)  # type: ignore[arg-type]
    assert memory.ledger.head() == head


def test_fusion_weighs_each_path_and_defaults_by_provider(memory: Memory) -> None:
    assert memory.agent("alice").fusion == DEFAULT_FUSION
    hashed = AgentMemory("alice", memory.ledger, memory.engine, embedder=HashEmbedder())
    assert hashed.fusion == FUSION_BY_PROVIDER["hash"]
    for fusion, needle in [
        ({"graph": 1.0}, r"fusion: unknown name\(s\) \['graph'\]"),
        ({"semantic": -1}, r"fusion\['semantic'\] must be a number >= 0"),
        ([("semantic", 1.0)], "fusion must be a mapping"),
    ]:
        with pytest.raises(QueryError, match=needle):
            AgentMemory("alice", memory.ledger, memory.engine, fusion=fusion)  # type: ignore[arg-type]
    alice = memory.agent("alice")
    alice.observe("database outage", at=T0)
    alice.observe("coffee lunch", at=T0)
    # With the lexical path weighed at zero only the vectors order the candidates.
    vectors_only = AgentMemory(
        "alice",
        memory.ledger,
        memory.engine,
        embedder=memory.embedder,
        searcher=alice.searcher,
        fusion={"lexical": 0.0},
    )
    result = vectors_only.recall("coffee", 2, record=False, min_score=0)
    assert result.items[0].event.position == 2
    assert result.items[1].relevance < result.items[0].relevance


def test_importance_is_scored_once_and_stored_in_the_event(memory: Memory) -> None:
    alice = memory.agent("alice")
    position = alice.observe("Critical outage: the deploy failed and we lost data")
    event = next(memory.ledger.read(position - 1, limit=1))
    assert event.payload.importance is not None
    assert event.payload.importance >= 7
    calm = alice.observe("Coffee")
    assert next(memory.ledger.read(calm - 1, limit=1)).payload.importance == 2


def test_semantic_index_file_damage_is_repaired_with_a_warning(memory: Memory) -> None:
    alice = memory.agent("alice")
    for i in range(20):
        alice.observe(f"note {i} about the database", at=T0)
    memory.engine.catch_up()
    searcher = VectorSearcher(memory.root / "store", 8, str(memory.embedder.fingerprint))
    with memory.engine.read() as conn:
        searcher.sync(conn)
    searcher.save()
    files = list((memory.root / "store").glob("semantic.g*.faiss"))
    assert len(files) == 1
    files[0].write_bytes(files[0].read_bytes()[:100])  # truncated
    fresh = VectorSearcher(memory.root / "store", 8, str(memory.embedder.fingerprint))
    with pytest.warns(IndexFileWarning, match="unreadable|holds"), memory.engine.read() as conn:
        fresh.sync(conn)
    assert fresh.size == 20
    query = memory.embedder.embed(["note 3 about the database"])[0]
    assert fresh.search(query, 1, agent="alice")[0].position == 4


def test_a_changed_embedder_fingerprint_rebuilds_the_semantic_index(memory: Memory) -> None:
    alice = memory.agent("alice")
    alice.observe("database outage", at=T0)
    memory.engine.catch_up()
    calls_before = sum(memory.embedder.calls)

    class Other(BagOfWords):
        model = "8:v2"

    other = Other()
    engine = ProjectionEngine(
        memory.ledger,
        memory.root / "store",
        [SalienceIndex(), LexicalIndex(), SemanticIndex(other)],
    )
    try:
        engine.catch_up()
        status = {s.name: s for s in engine.status()}
        assert status["semantic"].stored_identity == (
            f"v{SemanticIndex.version};embedder={other.fingerprint}"
        )
        assert sum(other.calls) == 1
    finally:
        engine.close()
    assert sum(memory.embedder.calls) == calls_before


def test_lexical_rebuild_equals_incremental(memory: Memory) -> None:
    alice = memory.agent("alice")
    for i in range(30):
        alice.observe(f"entry {i} " + WORDS[i % len(WORDS)], at=T0 + timedelta(minutes=i))
        if i % 7 == 0:
            memory.engine.catch_up()
    memory.engine.catch_up()
    before = {n: memory.engine.digest(n) for n in ("lexical", "semantic")}
    memory.engine.rebuild(["lexical", "semantic"])
    assert {n: memory.engine.digest(n) for n in ("lexical", "semantic")} == before
    with memory.engine.read() as conn:
        assert len(search(conn, "rollback", 10, agent="alice")) == 3  # i = 6, 14, 22


agents_st = st.sampled_from(["ann", "ben", "cat"])


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    notes=st.lists(
        st.tuples(agents_st, st.sampled_from(["public", "private"]), st.sampled_from(WORDS)),
        min_size=1,
        max_size=25,
    ),
    reader=agents_st,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    vectors=st.booleans(),
    break_lexical=st.booleans(),
)
def test_no_path_ever_serves_another_agents_private_items(
    tmp_path_factory: pytest.TempPathFactory,
    notes: list[tuple[str, str, str]],
    reader: str,
    query: list[str],
    vectors: bool,
    break_lexical: bool,
) -> None:
    memory = Memory(tmp_path_factory.mktemp("vis"))
    try:
        private_of_others = set()
        for agent, visibility, word in notes:
            position = memory.agent(agent).observe(
                f"{word} note",
                visibility=visibility,
                at=T0,  # type: ignore[arg-type]
            )
            if visibility == "private" and agent != reader:
                private_of_others.add(position)
        if break_lexical:
            break_lexical_index(memory)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IndexFileWarning)
            result = memory.agent(reader, vectors=vectors).recall(" ".join(query), 50, record=False)
        served = {r.event.position for r in result.items}
        assert not served & private_of_others
    finally:
        memory.close()


def test_a_recalled_memory_cues_its_episode_neighbours(memory: Memory) -> None:
    alice = memory.agent("alice")
    question = alice.observe("Did anyone check the replica lag?", at=T0)
    answer = alice.observe("Yes: forty seconds behind, then it caught up.", at=T0)
    alice.observe("Unrelated: lunch at noon", at=T0 + timedelta(hours=3))
    # No floor: a neighbour cued by bloom holds no query word, so its relevance is low.
    served = alice.recall("replica lag", 5, paths=("lexical",), record=False, min_score=0)
    via = {r.event.position: r.via for r in served.items}
    assert via[question] == ("lexical",)
    assert via[answer] == ("bloom",)  # no query word, but told right after the match
    assert len(via) == 2  # the lunch is another episode
    plain = AgentMemory("alice", memory.ledger, memory.engine, bloom=False).recall(
        "replica lag", 5, paths=("lexical",), record=False
    )
    assert [r.event.position for r in plain.items] == [question]


def test_a_rebuild_leaves_one_generation_of_index_files(memory: Memory) -> None:
    # ADR 0141: each rebuild left the previous generation's semantic.g<N>.json behind.
    alice = memory.agent("alice")
    for i in range(5):
        alice.observe(f"note {i} about the database", at=T0)
    store = memory.root / "store"
    for _ in range(3):
        memory.engine.rebuild()
        memory.engine.catch_up()
        searcher = VectorSearcher(store, 8, str(memory.embedder.fingerprint))
        with memory.engine.read() as conn:
            searcher.sync(conn)
        searcher.save()
    assert len(list(store.glob("semantic.g*.faiss"))) == 1
    assert len(list(store.glob("semantic.g*.json"))) == 1
