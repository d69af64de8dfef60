"""The lexical search's speed path: vocabulary frequencies, informative terms, exact rescoring."""

from __future__ import annotations

import math
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from strategies import lexical_corpora, lexical_queries

from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemoryObserved
from engram.projections import lexical
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.lexical import LexicalIndex, vocabulary
from engram.projections.lexical import read as lexical_read

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Store:
    """A real ledger and projection store holding only the lexical index."""

    def __init__(self, directory: Path, rows: Sequence[tuple[str, str, str]]) -> None:
        self.ledger = Ledger.open(str(directory / "ledger.db"), default_registry())
        events = [
            NewEvent(
                stream=f"agent:{agent}",
                kind="memory.observed",
                payload=MemoryObserved(agent=agent, text=text, visibility=visibility),  # type: ignore[arg-type]
                at=T0 + timedelta(seconds=i),
            )
            for i, (agent, visibility, text) in enumerate(rows)
        ]
        for start in range(0, len(events), 500):
            self.ledger.append(events[start : start + 500])
        self.engine = ProjectionEngine(self.ledger, str(directory / "store"), [LexicalIndex()])
        self.engine.catch_up()

    def close(self) -> None:
        self.engine.close()
        self.ledger.close()


def _store(directory: Path, rows: Sequence[tuple[str, str, str]]) -> Store:
    return Store(directory, rows)


@pytest.fixture
def speakers(tmp_path: Path) -> Iterator[Store]:
    """Two speakers, each named in half the rows; a few rows hold rarer words."""
    rows = []
    for i in range(200):
        name = ("Caroline", "Melanie")[i % 2]
        text = f"{name}: we talked about the weather and the news"
        if i % 10 == 0:
            text += " and the pottery class"
        if i % 25 == 0:
            text += " then she failed to paint a sunrise"
        rows.append(("ana" if i % 2 else "bob", "public", text))
    store = _store(tmp_path, rows)
    yield store
    store.close()


def _match_count(conn: sqlite3.Connection, word: str) -> int:
    table = lexical_read._table(conn)
    (n,) = conn.execute(
        f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (f'"{word}"',)
    ).fetchone()
    return int(n)


def test_frequencies_come_from_the_vocabulary_under_the_index_s_stems(speakers: Store) -> None:
    with speakers.engine.read() as conn:
        terms = lexical.terms(conn, "Did Caroline fail painting the sunrises, failing?")
        total = 200
        for word, weight in terms.weights.items():
            n = _match_count(conn, word)
            assert weight == pytest.approx(max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6))
        # "fail", "failing" and "failed" meet under one stem, as the index stores it.
        assert terms.stems["failing"] == terms.stems["fail"] == ("fail",)
        assert terms.weights["failing"] == terms.weights["fail"]
        assert "did" not in terms.present  # no row holds it: nothing to search


def test_a_name_in_half_the_rows_is_not_searched_when_informative_words_remain(
    speakers: Store,
) -> None:
    with speakers.engine.read() as conn:
        terms = lexical.terms(conn, "When did Caroline paint the sunrise at the pottery class?")
        # Well within the postings budget, every word BM25 weighs is searched; the name in
        # half the rows and "the" in all of them weigh nothing and are left out.
        assert set(terms.searched) == {"paint", "sunrise", "pottery", "class"}
        share = lexical.terms(
            conn, "When did Caroline paint the sunrise at the pottery class?", prune="share"
        )
        assert set(share.searched) == {"paint", "sunrise"}  # ADR 0026's rule: <= 2% of rows
        assert "caroline" in terms.present
        assert "pottery" in terms.present
        # The name still weighs in match: the weights cover every word.
        assert set(terms.weights) >= {"caroline", "the", "pottery"}


def test_when_too_few_words_are_informative_the_two_rarest_are_searched(speakers: Store) -> None:
    with speakers.engine.read() as conn:
        # Only a name and common words: the rarest two of them (pottery, 10%; caroline, 50%).
        terms = lexical.terms(conn, "Caroline the pottery")
        assert terms.searched == ("caroline", "pottery")
        assert lexical.terms(conn, "Caroline and the pottery", prune="share").searched == (
            "caroline",
            "pottery",
        )
        hits = lexical.search(conn, "Caroline and the pottery", 5, agent="ana")
        assert len(hits) == 5
        assert all("pottery" in h.text and h.text.startswith("Caroline") for h in hits[:5])


def test_a_pruned_search_scores_the_pool_as_fts5_scores_the_whole_query(speakers: Store) -> None:
    query = "When did Caroline paint the sunrise?"
    with speakers.engine.read() as conn:
        assert lexical.terms(conn, query).pruned
        pruned = lexical.search(conn, query, 8, agent="ana")
        full = lexical.search(conn, query, 8, agent="ana", prune=False)
    assert [h.position for h in pruned] == [h.position for h in full]
    for a, b in zip(pruned, full, strict=True):
        assert a.score == pytest.approx(b.score, rel=1e-9)
        assert a.match == b.match


@settings(max_examples=25)
@given(rows=lexical_corpora(), query=lexical_queries)
def test_pruned_hits_are_visible_and_scored_as_the_full_query_scores_them(
    rows: list[tuple[str, str, str]], query: str
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = _store(Path(directory), rows)
        try:
            with store.engine.read() as conn:
                pruned = lexical.search(conn, query, 10, agent="ana")
                full = {
                    h.position: h.score
                    for h in lexical.search(conn, query, len(rows), agent="ana", prune=False)
                }
        finally:
            store.close()
    for hit in pruned:
        agent, visibility, _ = rows[hit.position - 1]
        assert visibility == "public" or agent == "ana"
        assert hit.score == pytest.approx(full[hit.position], rel=1e-9, abs=1e-12)
    # Ordered as scored, best first, ties by position.
    order = [(-h.score, h.position) for h in pruned]
    assert order == sorted(order)


def test_a_pool_of_private_rows_grows_until_enough_are_visible(tmp_path: Path) -> None:
    # The rarest words are in bob's private rows, which rank first: ana's rows sit lower.
    rows = [("bob", "private", "zebra zebra quartz") for _ in range(300)]
    rows += [("ana", "public", f"zebra note {i} " + "filler " * 20) for i in range(12)]
    store = _store(tmp_path, rows)
    try:
        with store.engine.read() as conn:
            hits = lexical.search(conn, "zebra quartz", 10, agent="ana")
    finally:
        store.close()
    assert len(hits) == 10
    assert all(h.agent == "ana" for h in hits)


def test_counts_follow_new_rows(tmp_path: Path) -> None:
    store = _store(tmp_path, [("ana", "public", "alpha beta") for _ in range(5)])
    try:
        with store.engine.read() as conn:
            before = lexical.terms(conn, "alpha gamma").weights
        store.ledger.append(
            NewEvent(
                stream="agent:ana",
                kind="memory.observed",
                payload=MemoryObserved(agent="ana", text="gamma"),
                at=T0,
            )
        )
        store.engine.catch_up()
        with store.engine.read() as conn:
            after = lexical.terms(conn, "alpha gamma")
            assert after.weights["gamma"] == pytest.approx(math.log((6 - 1 + 0.5) / 1.5))
            assert before["gamma"] == pytest.approx(math.log(5.5 / 0.5))  # no row held it
            assert "gamma" in after.present
    finally:
        store.close()


@pytest.fixture
def graded(tmp_path: Path) -> Iterator[Store]:
    """1,000 rows; four informative words held by 3, 5, 8 and 15 rows."""
    held = {"amber": 3, "basalt": 5, "cobalt": 8, "dune": 15}
    rows = []
    for i in range(1000):
        words = [w for w, n in held.items() if i % (1000 // n) == 0 and i // (1000 // n) < n]
        rows.append(("ana", "public", " ".join(["the weather report", *words])))
    store = _store(tmp_path, rows)
    yield store
    store.close()


@pytest.mark.parametrize(
    ("budget", "searched"),
    [
        (1, {"amber"}),  # the rarest always, over the budget or not
        (7, {"amber"}),
        (8, {"amber", "basalt"}),
        (10, {"amber", "basalt"}),
        (16, {"amber", "basalt", "cobalt"}),
        (30, {"amber", "basalt", "cobalt"}),
        (31, {"amber", "basalt", "cobalt", "dune"}),
    ],
)
def test_informative_words_are_searched_rarest_first_within_the_postings_budget(
    graded: Store, monkeypatch: pytest.MonkeyPatch, budget: int, searched: set[str]
) -> None:
    monkeypatch.setattr(lexical_read, "MAX_POSTINGS", budget)
    query = "dune cobalt the weather basalt amber"
    with graded.engine.read() as conn:
        terms = lexical.terms(conn, query)
        assert set(terms.searched) == searched
        assert list(terms.searched) == [w for w in terms.present if w in searched]  # query order
        pruned = lexical.search(conn, query, 5, agent="ana")
        full = {
            h.position: h.score for h in lexical.search(conn, query, 1000, agent="ana", prune=False)
        }
    assert pruned
    for hit in pruned:  # what the budget lets in is still scored with every word
        assert hit.score == pytest.approx(full[hit.position], rel=1e-9)


def test_the_postings_budget_also_bounds_the_two_rarest_fallback(
    speakers: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No informative word: the fallback's two rarest (pottery in 20 rows, caroline in 100)
    # hold 120 postings; within a budget of 100 only the rarer is searched.
    monkeypatch.setattr(lexical_read, "MAX_POSTINGS", 100)
    with speakers.engine.read() as conn:
        terms = lexical.terms(conn, "Caroline the pottery")
        assert terms.searched == ("pottery",)
        hits = lexical.search(conn, "Caroline and the pottery", 5, agent="ana")
    assert len(hits) == 5
    assert all("pottery" in h.text and h.text.startswith("Caroline") for h in hits)


class _Unwalkable(dict[str, tuple[str, ...]]):
    """A stem cache that refuses to be walked: only lookups by word are allowed."""

    def keys(self):  # type: ignore[override]
        raise AssertionError("the stem cache was walked")

    def __iter__(self):  # type: ignore[override]
        raise AssertionError("the stem cache was walked")


def test_a_lookup_in_the_stem_cache_never_walks_all_it_holds(
    speakers: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cache holds up to 200,000 words; a recall looks up a few hundred of them twice.
    with speakers.engine.read() as conn:
        first = lexical.terms(conn, "Did Caroline fail painting the sunrises?")
        table = lexical_read._table(conn)
        name = vocabulary._tokenizer(conn, table)
        known = vocabulary._STEMS[name]
        unwalkable = _Unwalkable(known.stems)
        unwalkable.update({f"filler{i}": (f"filler{i}",) for i in range(1000)})
        monkeypatch.setattr(known, "stems", unwalkable)
        again = lexical.terms(conn, "Did Caroline fail painting the sunrises?")
        assert again == first
        # New words are still stemmed by the index's tokenizer and remembered.
        found = vocabulary.known_terms(conn, table, {"pottery", "unheardofword"})
        assert found.stems["pottery"] == ("potteri",)
        assert dict.__contains__(found.stems, "unheardofword")


def test_few_long_rows_are_searched_with_every_word_bm25_weighs(tmp_path: Path) -> None:
    # 60 long rows: each telling word is held by 6-12 of them (10-20%, far above ADR 0026's
    # 2%), so the share rule searches only the two rarest; the postings budget costs nothing
    # here, so the search is the exact BM25 of the whole query.
    topics = ["flask", "budget", "schema", "deploy", "token"]
    rows = []
    for i in range(60):
        held = [t for n, t in enumerate(topics) if i % (5 + n) == 0]
        filler = " ".join(f"w{(i * 7 + j) % 90}" for j in range(200))
        rows.append(("ana", "public", f"user: {' '.join(held)} {filler}"))
    store = _store(tmp_path, rows)
    query = "How did the flask budget schema deploy token work?"
    try:
        with store.engine.read() as conn:
            terms = lexical.terms(conn, query)
            assert set(terms.searched) == set(topics)
            assert len(lexical.terms(conn, query, prune="share").searched) == 2
            budget = lexical.search(conn, query, 10, agent="ana")
            exact = lexical.search(conn, query, 10, agent="ana", prune=False)
            shared = lexical.search(conn, query, 10, agent="ana", prune="share")
    finally:
        store.close()
    assert [h.position for h in budget] == [h.position for h in exact]
    assert [h.position for h in shared] != [h.position for h in exact]


def test_an_unknown_pruning_rule_is_refused(speakers: Store) -> None:
    with speakers.engine.read() as conn, pytest.raises(QueryError, match="prune"):
        lexical.terms(conn, "pottery", prune="half")
