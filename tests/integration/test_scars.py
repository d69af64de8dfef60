"""Scars end to end: record and archive through the API, the scars table, scoped recall."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engram.agents.errors import MemoryOwnerError, UnknownScarError
from engram.agents.memory import AgentMemory
from engram.agents.scopes import SCOPES, band, item_text, rerank_score
from engram.ledger import NewEvent, PayloadError
from engram.ledger.catalog import MemoryArchived
from engram.projections import scars
from engram.projections.embedding import HashEmbedder
from engram.projections.errors import EmbeddingUnavailableError, QueryError
from engram.runtime import Memory

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _row(memory: Memory, position: int) -> scars.Scar | None:
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        return scars.get(conn, position)


def test_record_stores_one_row_with_a_scored_importance(memory: Memory) -> None:
    position = memory.scars("alice").record(
        "failure",
        "the deploy failed because the migration locked the users table",
        "run migrations with a lock timeout before the deploy",
        sources={"task": "deploy-42", "file": "db/migrate.py"},
        tags=["deploy"],
        at=T0,
    )
    row = _row(memory, position)
    assert row is not None
    (event,) = memory.ledger.get([position])
    assert row.id == event.id
    assert (row.agent, row.kind, row.learnable, row.visibility) == (
        "alice",
        "failure",
        True,
        "public",
    )
    # Scored once and stored in the event: "failed" weighs in, the heuristic says so.
    assert event.payload.importance == row.importance
    assert row.importance >= 5
    assert row.sources == {
        "events": [],
        "task": "deploy-42",
        "file": "db/migrate.py",
        "agent": None,
    }
    assert row.tags == ["deploy"]
    assert (row.recall_count, row.last_recalled_us, row.archived_us) == (0, None, None)
    with memory.engine.read() as conn:
        assert scars.get(conn, event.id) == row


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"outcome": "mistake"}, "outcome must be"),
        ({"what": "  "}, "what must be a non-empty string"),
        ({"lesson": ""}, "lesson must be a non-empty string"),
        ({"tags": "deploy"}, "tags must be a sequence"),
        ({"sources": {"task": 3}}, "sources:"),
        ({"sources": {"events": ["not-a-uuid"]}}, "sources:"),
        ({"sources": {"unknown": 1}}, "sources:"),
    ],
)
def test_record_refuses_bad_input_and_writes_nothing(
    memory: Memory, kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"outcome": "failure", "what": "w", "lesson": "l", **kwargs}
    with pytest.raises(QueryError, match=message):
        memory.scars("alice").record(**args)  # type: ignore[arg-type]
    assert memory.ledger.head() == 0


def test_record_refuses_an_importance_out_of_range(memory: Memory) -> None:
    with pytest.raises(PayloadError, match="importance"):
        memory.scars("alice").record("victory", "w", "l", importance=11)
    assert memory.ledger.head() == 0


def test_archive_validates_every_position_before_appending(memory: Memory) -> None:
    s = memory.scars("alice")
    scar = s.record("failure", "the cache went stale", "expire keys on write", importance=5)
    note = memory.agent("alice").observe("lunch was good")
    private = memory.scars("bob").record(
        "failure", "bob's secret", "keep it", importance=3, visibility="private"
    )
    head = memory.ledger.head()
    cases: list[tuple[list[int], type[Exception], str]] = [
        ([], QueryError, "must not be empty"),
        ([scar, scar], QueryError, "must not repeat"),
        ([0], QueryError, "ledger positions"),
        ([scar, note], UnknownScarError, f"position {note} holds a memory.observed event"),
        ([head + 5], UnknownScarError, "holds no event"),
        ([private], MemoryOwnerError, "private scar of agent 'bob'"),
    ]
    for positions, error, message in cases:
        with pytest.raises(error, match=message):
            s.archive(positions)
        assert memory.ledger.head() == head
    archived_at = s.archive([scar], reason="fixed for good")
    row = _row(memory, scar)
    assert row is not None
    assert row.archived_us is not None
    with pytest.raises(UnknownScarError, match="archived already"):
        s.archive([scar])
    assert memory.ledger.head() == archived_at
    # The owner may archive its private scar.
    memory.scars("bob").archive([private])


def test_a_memory_archive_never_hides_a_scar_and_the_reverse(memory: Memory) -> None:
    scar = memory.scars("alice").record("failure", "the parser crashed", "fuzz it", importance=5)
    note = memory.agent("alice").observe("the parser crashed again today")
    # Raw events, past the API's checks: each archive kind reaches its own items only.
    memory.ledger.append(
        NewEvent(
            stream="agent:alice",
            kind="memory.archived",
            payload=MemoryArchived(agent="alice", positions=[scar]),
        )
    )
    got = memory.agent("alice").recall("parser crashed", scope="scars", record=False)
    assert [r.event.position for r in got.items] == [scar]
    memory.scars("alice").archive([scar])
    got = memory.agent("alice").recall("parser crashed", record=False)
    assert [r.event.position for r in got.items] == [note]


def test_memory_recall_is_unchanged_by_scars_and_reflections(memory: Memory) -> None:
    alice = memory.agent("alice")
    note = alice.observe("the deploy failed at 3am", at=T0)
    memory.scars("alice").record("failure", "the deploy failed at 3am", "add a canary", at=T0)
    got = alice.recall("deploy failed", record=False)
    assert [r.event.position for r in got.items] == [note]
    assert [r.event.position for r in alice.recall("deploy", types=["plan"]).items] == []
    head = memory.ledger.head()
    with pytest.raises(QueryError, match=r"\['failure'\] are not memory types"):
        alice.recall("deploy", types=["failure"])
    with pytest.raises(QueryError, match="types must be a sequence"):
        alice.recall("deploy", types="plan")
    assert memory.ledger.head() == head


def test_scopes_serve_their_items_ranked_by_the_formula(memory: Memory) -> None:
    alice = memory.agent("alice")
    book = memory.scars("alice")
    now = T0 + timedelta(days=30)
    failure = book.record(
        "failure", "the deploy failed on a locked table", "use a lock timeout", importance=8, at=T0
    )
    old = book.record(
        "failure",
        "the deploy failed on a locked table",
        "use a lock timeout",
        importance=8,
        at=T0 - timedelta(days=400),
    )
    victory = book.record(
        "victory", "the deploy went smoothly with a canary", "canary first", importance=6, at=T0
    )
    note = alice.observe("deploy notes: the table was locked", at=T0)
    got = alice.recall("deploy failed locked table", 5, scope="scars", as_of=now, record=False)
    assert [r.event.position for r in got.items] == [failure, old]
    for r in got.items:
        age = (now - r.event.at).total_seconds() / 86_400
        assert r.score == pytest.approx(rerank_score(r.relevance, r.event.payload.importance, age))
        assert r.relevance == pytest.approx(max(min(r.cosine or 0.0, 1.0), 0.0))
    assert got.items[0].score > got.items[1].score  # same text, older: decayed
    got = alice.recall("deploy", 5, scope="victories", as_of=now, record=False)
    assert [r.event.position for r in got.items] == [victory]
    assert item_text(got.items[0].event).endswith("lesson: canary first")
    got = alice.recall("deploy failed locked table", 10, scope="all", as_of=now, record=False)
    assert {r.event.position for r in got.items} == {failure, old, victory, note}
    scores = [r.score for r in got.items]
    assert scores == sorted(scores, reverse=True)


def test_served_scars_are_bumped_through_the_recorded_recall(memory: Memory) -> None:
    book = memory.scars("alice")
    served = book.record("failure", "the backup job failed", "check exit codes", importance=5)
    unserved = book.record("victory", "the release shipped", "ship small", importance=5)
    first = memory.agent("alice").recall("backup failed", scope="scars")
    assert first.recorded_at is not None
    memory.agent("bob").recall("backup job", scope="scars")
    row = _row(memory, served)
    assert row is not None
    assert row.recall_count == 2
    (last,) = memory.ledger.get([memory.ledger.head()])
    assert last.kind == "memory.recalled"
    assert row.last_recalled_us == int(last.at.timestamp() * 1_000_000)
    with memory.engine.read() as conn:
        never = scars.never_recalled(conn, 2**62)
    assert [s.position for s in never] == [unserved]
    # record=False serves without bumping.
    memory.agent("alice").recall("backup failed", scope="scars", record=False)
    assert _row(memory, served).recall_count == 2  # type: ignore[union-attr]


def test_visibility_holds_for_scars(memory: Memory) -> None:
    mine = memory.scars("bob").record(
        "failure", "the vault token leaked in a log", "mask tokens", visibility="private"
    )
    assert memory.agent("alice").recall("vault token leaked", scope="scars").items == []
    got = memory.agent("bob").recall("vault token leaked", scope="scars", record=False)
    assert [r.event.position for r in got.items] == [mine]


def test_as_of_sees_what_was_known_then(memory: Memory) -> None:
    book = memory.scars("alice")
    early = book.record("failure", "the queue overflowed", "bound the queue", at=T0)
    late = book.record(
        "failure", "the queue overflowed again", "alert on depth", at=T0 + timedelta(days=2)
    )
    book.archive([early])
    alice = memory.agent("alice")
    now = alice.recall("queue overflowed", scope="scars", record=False)
    assert [r.event.position for r in now.items] == [late]
    then = alice.recall(
        "queue overflowed", scope="scars", as_of=T0 + timedelta(days=1), record=False
    )
    assert [r.event.position for r in then.items] == [early]


def test_without_vectors_the_lexical_match_stands_in(memory: Memory) -> None:
    scar = memory.scars("alice").record("failure", "the printer jammed", "clear the tray")
    bare = AgentMemory("alice", memory.ledger, memory.engine)
    got = bare.recall("printer jammed", scope="scars", record=False)
    assert [r.event.position for r in got.items] == [scar]
    assert got.fallback is not None
    assert "lexical match stands in for similarity" in got.fallback
    assert got.items[0].cosine is None
    assert got.items[0].relevance == got.items[0].match > 0


def test_an_unknown_scope_is_refused_with_the_known_ones(memory: Memory) -> None:
    with pytest.raises(QueryError, match=r"scope must be one of \['memories', 'scars'"):
        memory.agent("alice").recall("x", scope="rule")
    assert "rules" in SCOPES  # the rules projection's scope is one entry
    assert memory.ledger.head() == 0


def test_list_filters_by_kind_agent_learnable_and_archival(memory: Memory) -> None:
    a = memory.scars("alice").record("failure", "f1", "l1", learnable=False)
    b = memory.scars("alice").record("victory", "v1", "l2")
    c = memory.scars("bob").record("failure", "f2", "l3")
    memory.scars("bob").archive([c])
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:

        def positions(**kw: object) -> list[int]:
            return [s.position for s in scars.list_scars(conn, **kw)]  # type: ignore[arg-type]

        assert positions() == [b, a]
        assert positions(archived=None) == [c, b, a]
        assert positions(archived=True) == [c]
        assert positions(kind="failure", archived=None) == [c, a]
        assert positions(agent="alice", learnable=True) == [b]
        assert positions(limit=1) == [b]
        with pytest.raises(QueryError, match="kind must be one of"):
            scars.list_scars(conn, kind="oops")


class _DownEmbedder(HashEmbedder):
    """The hash embedder's shape, but the model is down."""

    def embed(self, texts: Sequence[str]) -> Any:
        raise EmbeddingUnavailableError("the model is down")


def test_a_model_down_degrades_to_the_lexical_match(memory: Memory) -> None:
    scar = memory.scars("alice").record("failure", "the printer jammed", "clear the tray")
    down = AgentMemory("alice", memory.ledger, memory.engine, embedder=_DownEmbedder(),
                       searcher=memory.searcher)  # fmt: skip
    got = down.recall("printer jammed", scope="scars")
    assert [r.event.position for r in got.items] == [scar]
    assert got.fallback is not None
    assert "semantic index unavailable (EmbeddingUnavailableError: the model is down)" in (
        got.fallback
    )
    assert got.fallback.endswith("lexical match stands in for similarity")
    assert got.recorded_at is not None  # served, so recorded and counted
    assert _row(memory, scar).recall_count == 1  # type: ignore[union-attr]


def test_bands_and_the_formula_at_their_edges() -> None:
    assert [band(s) for s in (1.0, 0.75, 0.7499, 0.65, 0.6499, 0.0)] == [
        "highly relevant",
        "highly relevant",
        "relevant",
        "relevant",
        "check by hand",
        "check by hand",
    ]
    assert rerank_score(0.5, 10, 0.0) == 1.0
    assert rerank_score(0.5, None, 365.0) == pytest.approx(0.5 * 1.5 / math.e)
    assert rerank_score(0.5, 1, -3.0) == pytest.approx(0.55)  # a future item is age 0
