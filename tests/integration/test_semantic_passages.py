"""A long memory is embedded as passages too and recalled as the memory, by its best vector."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

import engram
from engram.agents.matching import Calibration, work_out
from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemoryArchived, MemoryObserved
from engram.projections import semantic
from engram.projections.embedding import HashEmbedder
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import ProjectionConfigError
from engram.projections.semantic import (
    PASSAGE_STRIDE,
    PASSAGE_WORDS,
    SemanticIndex,
    VectorSearcher,
    passages,
    similarities,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _filler(n: int, salt: str) -> str:
    return " ".join(f"{salt}{i % 37}" for i in range(n))


#: A long memory whose last words (beyond any embedder's window) hold the telling phrase.
LONG = _filler(400, "lorem") + " the volcano erupted over the harbour at dawn"
SHORT = "a short note about the garden"


def test_a_short_text_has_no_passages_and_a_long_one_is_covered_with_overlap() -> None:
    assert passages(SHORT) == []
    assert passages(_filler(PASSAGE_WORDS, "w")) == []
    parts = passages(LONG)
    words = LONG.split()
    assert len(parts) == -(-(len(words) - PASSAGE_WORDS) // PASSAGE_STRIDE)
    assert parts[0].split() == words[PASSAGE_STRIDE : PASSAGE_STRIDE + PASSAGE_WORDS]
    assert parts[-1].endswith("harbour at dawn")  # the tail is embedded
    overlap = PASSAGE_WORDS - PASSAGE_STRIDE
    for before, after in itertools.pairwise(parts):
        assert before.split()[-overlap:] == after.split()[:overlap]
    # Slices of the text itself: its line breaks and spacing are kept.
    assert passages("x\n" * 200)[0].startswith("x\nx")


def _ledger(path: Path) -> Ledger:
    ledger = Ledger.open(str(path), default_registry())
    texts = [SHORT, LONG, _filler(300, "ipsum"), "the volcano at the harbour"]
    ledger.append(
        [
            NewEvent(
                stream="agent:ana",
                kind="memory.observed",
                payload=MemoryObserved(agent="ana", text=text, visibility="public"),
                at=T0,
            )
            for text in texts
        ]
    )
    return ledger


def _passage_rows(engine: ProjectionEngine) -> list[tuple[int, int]]:
    with engine.read() as conn:
        return conn.execute(
            "SELECT position, passage FROM semantic_passages ORDER BY 1, 2"
        ).fetchall()


@contextmanager
def _indexed(tmp_path: Path, embedder: HashEmbedder) -> Iterator[tuple[Ledger, ProjectionEngine]]:
    """Yield the four memories' ledger and an engine caught up into a semantic index that
    stores passages."""
    with (
        _ledger(tmp_path / "ledger.db") as ledger,
        ProjectionEngine(
            ledger, str(tmp_path / "store"), [SemanticIndex(embedder, passages=True)]
        ) as engine,
    ):
        engine.catch_up()
        yield ledger, engine


def test_passages_are_stored_searched_and_served_once_as_their_memory(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    with _indexed(tmp_path, embedder) as (_, engine):
        rows = _passage_rows(engine)
        assert {p for p, _ in rows} == {2, 3}
        assert [n for p, n in rows if p == 2] == list(range(1, len(passages(LONG)) + 1))
        searcher = VectorSearcher(tmp_path / "store", embedder.dimension, str(embedder.fingerprint))
        with engine.read() as conn:
            searcher.sync(conn)
        query = embedder.embed(["the volcano erupted over the harbour at dawn"])[0]
        hits = searcher.search(query, 4, agent="bob")
        positions = [h.position for h in hits]
        assert sorted(positions) == [1, 2, 3, 4]  # each memory once, passages or not
        best = {h.position: h.score for h in hits}
        head = float(embedder.embed([LONG])[0] @ query)
        tail = float(embedder.embed([passages(LONG)[-1]])[0] @ query)
        assert best[2] == pytest.approx(max(head, tail), abs=1e-5)
        assert best[2] > head  # found by its tail, beyond the head's reach
        assert similarities(embedder, query, [LONG])[0] == pytest.approx(best[2], abs=1e-5)
        assert searcher.size == 4
        assert searcher.save()
        # A fresh searcher trusts the saved file: passages are not mistaken for damage.
        again = VectorSearcher(tmp_path / "store", embedder.dimension, str(embedder.fingerprint))
        with warnings.catch_warnings(), engine.read() as conn:
            warnings.simplefilter("error")
            again.sync(conn)
        assert again.index.ntotal == searcher.index.ntotal
        assert [h.position for h in again.search(query, 4, agent="bob")] == positions


def test_archiving_a_long_memory_removes_its_passages_from_table_and_index(
    tmp_path: Path,
) -> None:
    embedder = HashEmbedder()
    with _indexed(tmp_path, embedder) as (ledger, engine):
        searcher = VectorSearcher(tmp_path / "store", embedder.dimension, str(embedder.fingerprint))
        with engine.read() as conn:
            searcher.sync(conn)
        ledger.append(
            [
                NewEvent(
                    stream="agent:ana",
                    kind="memory.archived",
                    payload=MemoryArchived(agent="ana", positions=[2]),
                    at=T0,
                )
            ]
        )
        engine.catch_up()
        assert {p for p, _ in _passage_rows(engine)} == {3}
        with engine.read() as conn:
            searcher.sync(conn)
        query = embedder.embed(["the volcano erupted over the harbour at dawn"])[0]
        assert 2 not in [h.position for h in searcher.search(query, 4, agent="bob")]
        assert searcher.index.ntotal == 3 + len(passages(_filler(300, "ipsum")))


def test_passages_off_keeps_the_head_vectors_only(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    with pytest.raises(ProjectionConfigError, match="passages"):
        SemanticIndex(embedder, passages=1)  # type: ignore[arg-type]
    off = SemanticIndex(embedder)
    assert not off.passages  # off by default (ADR 0054)
    assert off.config() != SemanticIndex(embedder, passages=True).config()  # a switch rebuilds
    with (
        _ledger(tmp_path / "ledger.db") as ledger,
        ProjectionEngine(ledger, str(tmp_path / "store"), [off]) as engine,
    ):
        engine.catch_up()
        assert _passage_rows(engine) == []
    assert semantic.PASSAGE_STRIDE < semantic.PASSAGE_WORDS


def test_passages_rebuild_equals_catch_up_in_any_batch_size(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    digests = []
    with _ledger(tmp_path / "ledger.db") as ledger:
        for batch in (1, 2, 1000):
            index = SemanticIndex(embedder, passages=True)
            store = str(tmp_path / f"store{batch}")
            with ProjectionEngine(ledger, store, [index], batch_size=batch) as engine:
                engine.catch_up()
                engine.catch_up()  # nothing new: idempotent
                digests.append(engine.digest("semantic"))
        with ProjectionEngine(
            ledger, str(tmp_path / "store1"), [SemanticIndex(embedder, passages=True)]
        ) as engine:
            engine.rebuild(["semantic"])
            digests.append(engine.digest("semantic"))
            assert len(_passage_rows(engine)) == len(passages(LONG)) + len(
                passages(_filler(300, "ipsum"))
            )
    assert len(set(digests)) == 1


def test_a_heads_only_searcher_leaves_the_passages_to_be_read_as_a_feature(
    tmp_path: Path,
) -> None:
    embedder = HashEmbedder()
    with _indexed(tmp_path, embedder) as (_, engine):
        heads = VectorSearcher(
            tmp_path / "store", embedder.dimension, str(embedder.fingerprint), passages=False
        )
        query = embedder.embed(["the volcano erupted over the harbour at dawn"])[0]
        with engine.read() as conn:
            heads.sync(conn)
            best = semantic.best_passages(conn, [1, 2, 3, 4, 99], query)
        assert heads.index.ntotal == 4  # the items' own vectors, no passage
        hits = {h.position: h.score for h in heads.search(query, 4, agent="bob")}
        head = float(embedder.embed([LONG])[0] @ query)
        assert hits[2] == pytest.approx(head, abs=1e-5)  # its head's cosine, not its tail's
        tails = embedder.embed(passages(LONG)) @ query
        assert set(best) == {2, 3}  # only the long memories have passages
        assert best[2] == pytest.approx(float(tails.max()), abs=1e-5)
        assert best[2] > head
        assert heads.save()
        # A file of heads only is trusted by a heads-only searcher and refused by one that
        # searches the passages (which rebuilds it from the tables, with a warning).
        again = VectorSearcher(
            tmp_path / "store", embedder.dimension, str(embedder.fingerprint), passages=False
        )
        with warnings.catch_warnings(), engine.read() as conn:
            warnings.simplefilter("error")
            again.sync(conn)
        assert again.index.ntotal == 4
        both = VectorSearcher(tmp_path / "store", embedder.dimension, str(embedder.fingerprint))
        with pytest.warns(semantic.IndexFileWarning, match="lacks"), engine.read() as conn:
            both.sync(conn)
        assert both.index.ntotal == 4 + len(passages(LONG)) + len(passages(_filler(300, "ipsum")))


def test_recall_weighs_a_long_memory_s_best_passage_and_searches_its_head(
    tmp_path: Path,
) -> None:
    with engram.open_memory(str(tmp_path / "recall.db")) as opened:
        agent = opened.agent("ana")
        for text in (SHORT, LONG, _filler(300, "ipsum"), "the volcano at the harbour"):
            agent.observe(text)
        agent.engine.wait_for(agent.ledger.head())
        with agent.engine.read() as conn:  # engram stores passages by default (ADR 0097)
            held = conn.execute("SELECT DISTINCT position FROM semantic_passages").fetchall()
        assert len(held) == 2  # the two long memories
        query = "the volcano erupted over the harbour at dawn"
        served = {}
        for weight in (0.0, 4.0):
            agent.calibration = Calibration(-7.0, 3.0, 4.0, 2.0, passage=weight)
            lazy = agent.recall(query, k=4, record=False, min_score=0.0)
            agent.lazy = False
            eager = agent.recall(query, k=4, record=False, min_score=0.0)
            agent.lazy = True
            assert [(i.event.position, i.relevance) for i in lazy.items] == [
                (i.event.position, i.relevance) for i in eager.items
            ]
            served[weight] = {i.event.position: i for i in lazy.items}
        long = next(p for p, i in served[0.0].items() if i.event.payload.text == LONG)
        # The search scored the head alone; the weighed passage lifts the memory's relevance.
        assert served[4.0][long].cosine == served[0.0][long].cosine
        assert served[4.0][long].relevance > served[0.0][long].relevance
        with agent.engine.read() as conn:
            ranked, _, matching = agent._candidates(
                conn, conn, query, 30, None, frozenset(("lexical", "semantic")), None
            )
            assert matching is not None
            matching.passages = True
            work_out(ranked, sorted(ranked), matching)
        c = ranked[long]
        assert c.passage is not None
        assert c.cosine is not None
        assert c.passage > c.cosine
        short = next(p for p, i in served[0.0].items() if i.event.payload.text == SHORT)
        assert ranked[short].passage == pytest.approx(min(max(ranked[short].cosine or 0, 0), 1))
