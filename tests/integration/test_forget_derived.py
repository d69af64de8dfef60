"""What engram writes about a memory, not only the memory, is forgotten with it.

A reflection's focal question names what the agent's memories speak of ("What do I know
about Dana?") and a detected supersession's reason quotes the values that changed
("0101 -> 0199"): both were stored in plain text, in the ledger and in the projections, and
outlived ``forget``. They are personal fields now, sealed under the subject's key.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import engram
from engram.agents.reflection import reflect
from engram.ledger import FORGOTTEN
from engram.projections.engine import ProjectionEngine
from engram.runtime import Memory

#: Words of the memories that the derived fields quote; nothing else in the store says them.
SECRETS = (b"Dana", b"Quist", b"7340101", b"7340199")


def files(root: Path) -> Iterator[Path]:
    for folder, _, names in os.walk(root):
        yield from (Path(folder, name) for name in names)


def holding(root: Path, secret: bytes) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in files(root) if secret in p.read_bytes())


def test_a_reflection_question_and_a_supersession_reason_go_with_their_subject(
    tmp_path: Path,
) -> None:
    ledger_path = str(tmp_path / "ledger.db")
    with engram.open_memory(ledger_path, config=os.devnull, projections=str(tmp_path / "s")) as m:
        alice = m.agent("alice")
        alice.observe("Dana Quist's phone number is 555 7340101.")
        new = alice.observe("Dana Quist's phone number is now 555 7340199.")
        outcome = reflect(alice)
        questions = [r.payload.question for r in m.ledger.read(kinds=["memory.reflected"])]
        assert "What do I know about Dana?" in questions, (outcome, questions)
        (superseded,) = m.ledger.read(kinds=["memory.superseded"])
        assert superseded.payload.position == new
        assert "7340101 -> 7340199" in superseded.payload.reason
        ledger_files = [str(p.relative_to(tmp_path)) for p in tmp_path.glob("ledger.db*")]
        assert "ledger.db-wal" in ledger_files  # what is not checkpointed yet counts too
        for secret in SECRETS:  # sealed in the ledger's files (the projections hold it plain)
            assert [f for f in holding(tmp_path, secret) if f in ledger_files] == [], secret
            assert holding(tmp_path, secret) != []  # the test can fail

        m.forget("alice", reason="erasure request")
        questions = [r.payload.question for r in m.ledger.read(kinds=["memory.reflected"])]
        assert questions
        assert set(questions) == {FORGOTTEN}
        (superseded,) = m.ledger.read(kinds=["memory.superseded"])
        assert superseded.payload.reason == FORGOTTEN
        for name in ("supersessions", "reflections"):  # rebuild equals catch-up
            assert m.engine.digest(name) == rebuilt(m, tmp_path / f"fresh-{name}", name)
    for secret in SECRETS:  # nor in the projection store, its freed pages included
        assert holding(tmp_path, secret) == [], secret


def rebuilt(memory: Memory, store: Path, name: str) -> str:
    """Return the digest of projection ``name`` replayed from scratch into ``store``."""
    engine = ProjectionEngine(memory.ledger, store, [type(memory.engine.projections[name])()])
    try:
        engine.catch_up()
        return engine.digest(name)
    finally:
        engine.close()


def test_a_retracted_reflection_leaves_the_hub_and_the_embedding_cache(tmp_path: Path) -> None:
    from engram.hub import views
    from engram.projections.embedding.cache import cache_key

    ledger_path = str(tmp_path / "ledger.db")
    with engram.open_memory(ledger_path, config=os.devnull, projections=str(tmp_path / "s")) as m:
        for i in range(6):
            m.agent("alice").observe(f"alice zqxinsulin dosage changed again, round {i}, clinic")
        (insight, *_) = reflect(m.agent("bob")).insights
        assert "zqxinsulin" in insight.text or "dosage" in insight.text
        said = [insight.text, insight.question]
        cache = m.embedder.cache  # type: ignore[attr-defined]
        fingerprint = m.embedder.fingerprint

        def cached() -> list[bool]:
            found = cache.get_many([cache_key(fingerprint, t) for t in said])
            return [cache_key(fingerprint, t) in found for t in said]

        def pages() -> str:
            return repr(
                (
                    views.events(m.ledger, limit=500),
                    views.event(m, insight.position),
                    views.memories(m, "bob", None)["stream"],
                )
            )

        m.engine.catch_up()  # the semantic index embeds it, through the cache
        assert any(cached())  # the test can fail
        assert insight.text in pages()
        m.forget("alice")
        assert not any(cached())
        assert insight.text not in pages()
        assert FORGOTTEN in pages()


def test_an_archive_reason_and_a_project_outcome_go_with_their_subject(tmp_path: Path) -> None:
    from engram.agents.postproject import close_project

    ledger_path = str(tmp_path / "ledger.db")
    with engram.open_memory(ledger_path, config=os.devnull, projections=str(tmp_path / "s")) as m:
        alice = m.agent("alice")
        kept = alice.observe("The quarterly review moved to Friday.")
        alice.archive([kept], reason="Zephyrine asked me to drop it")
        close_project(m.ledger, "falcon", "alice", outcome="Zephyrine quit before launch")
        assert holding(tmp_path, b"Zephyrine") == []  # sealed from the start
        (archived,) = m.ledger.read(kinds=["memory.archived"])
        assert archived.payload.reason == "Zephyrine asked me to drop it"
        m.forget("alice")
        (archived,) = m.ledger.read(kinds=["memory.archived"])
        (closed,) = m.ledger.read(kinds=["project.closed"])
        assert (archived.payload.reason, closed.payload.outcome) == (FORGOTTEN, FORGOTTEN)


def test_a_question_is_kept_by_no_embedding_cache_on_disk(tmp_path: Path) -> None:
    from engram.agents.context import build_context
    from engram.projections.embedding.cache import cache_key

    ledger_path = str(tmp_path / "ledger.db")
    with engram.open_memory(ledger_path, config=os.devnull, projections=str(tmp_path / "s")) as m:
        alice = m.agent("alice")
        alice.observe("The deploy failed at 3am on the billing service.")
        m.engine.catch_up()
        asked = [
            "Is Zephyrine on the layoffs list?",  # nothing answers it: not recorded
            "Why did the billing deploy fail?",
        ]
        alice.recall(asked[0])
        alice.recall(asked[1], record=False, min_score=0.0)
        alice.recall(asked[1] + " (scars)", scope="all", record=False)
        build_context(alice, "Plan Zephyrine's billing migration", budget=500)
        asked += [asked[1] + " (scars)", "Plan Zephyrine's billing migration"]
        cache = m.embedder.cache  # type: ignore[attr-defined]
        fingerprint = m.embedder.fingerprint
        keys = [cache_key(fingerprint, q) for q in asked]
        assert cache.get_many(keys) == {}
        memory_text = cache_key(fingerprint, "The deploy failed at 3am on the billing service.")
        assert memory_text in cache.get_many([memory_text])  # the test can fail


def test_a_damaged_store_set_aside_goes_with_a_forgetting(tmp_path: Path) -> None:
    from engram.projections.store import set_aside

    ledger_path, store = str(tmp_path / "ledger.db"), tmp_path / "s"
    with engram.open_memory(ledger_path, config=os.devnull, projections=str(store)) as m:
        m.agent("dana").observe("Dana Quist keeps the spare key under the blue pot.")
        m.agent("bo").observe("The loading bay opens at six.")
        m.engine.catch_up()
    # What a rebuild does with a store SQLite cannot read: set it aside, start anew.
    aside = set_aside(store)
    assert aside is not None
    assert holding(tmp_path, b"Quist")  # the copy holds the text, so the test can fail
    with engram.open_memory(ledger_path, config=os.devnull, projections=str(store)) as m:
        m.engine.catch_up()
        m.forget("dana", reason="asked to")
    assert holding(tmp_path, b"Quist") == []
    assert not list(store.glob("*.damaged-*"))
    assert (store / "projections.db").exists()
