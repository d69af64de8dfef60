"""The lexical index's tokenizer choice (ADR 0043) and recall's fusion constant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram.agents.memory import AgentMemory
from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemoryObserved
from engram.projections import lexical
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import SalienceIndex

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TEXTS = [f"row {i} about the weather" for i in range(40)] + [
    "the deploy failed at night",
    "she is failing her exams",
    "the river walk was long",
]


def _ledger(path: Path) -> Ledger:
    ledger = Ledger.open(str(path / "ledger.db"), default_registry())
    ledger.append(
        [
            NewEvent(
                stream="agent:ana",
                kind="memory.observed",
                payload=MemoryObserved(agent="ana", text=text),
                at=T0 + timedelta(seconds=i),
            )
            for i, text in enumerate(TEXTS)
        ]
    )
    return ledger


def _found(engine: ProjectionEngine, query: str) -> set[str]:
    with engine.read() as conn:
        return {hit.text for hit in lexical.search(conn, query, 10, agent="ana")}


def test_porter_stems_meet_and_unicode61_keeps_words_apart(tmp_path: Path) -> None:
    with _ledger(tmp_path) as ledger:
        with ProjectionEngine(ledger, str(tmp_path / "porter"), [LexicalIndex()]) as porter:
            porter.catch_up()
            assert _found(porter, "fails") == {TEXTS[40], TEXTS[41]}
        plain = LexicalIndex(tokenizer="unicode61")
        with ProjectionEngine(ledger, str(tmp_path / "plain"), [plain]) as engine:
            engine.catch_up()
            assert _found(engine, "fails") == set()
            assert _found(engine, "failed") == {TEXTS[40]}
            # Counts and IDF come from the unstemmed vocabulary: "failing" is in one row.
            with engine.read() as conn:
                terms = lexical.terms(conn, "failing weather")
            assert terms.stems == {"failing": ("failing",), "weather": ("weather",)}
            assert terms.searched == ("failing", "weather")


def test_the_tokenizer_is_part_of_the_index_identity_and_checked() -> None:
    assert LexicalIndex().identity() == f"v{LexicalIndex.version}"
    assert LexicalIndex(tokenizer="unicode61").identity().endswith(";tokenizer=unicode61")
    with pytest.raises(QueryError, match="tokenizer must be one of"):
        LexicalIndex(tokenizer="trigram'); DROP TABLE x; --")


def test_rrf_k_sets_the_fused_score_and_is_validated(tmp_path: Path) -> None:
    with _ledger(tmp_path) as ledger:
        projections = [SalienceIndex(), LexicalIndex()]
        with ProjectionEngine(ledger, str(tmp_path / "store"), projections) as engine:
            for k in (10, 60):
                memory = AgentMemory("ana", ledger, engine, rrf_k=k, bloom=False)
                result = memory.recall("deploy failed", 3, paths=("lexical",), record=False)
                assert result.items[0].event.payload.text == TEXTS[40]
                assert result.items[0].fused == pytest.approx(1 / (k + 1))
            for bad in (-1, 1.5, True, 10_001):
                with pytest.raises(QueryError, match="rrf_k must be an int"):
                    AgentMemory("ana", ledger, engine, rrf_k=bad)  # type: ignore[arg-type]
