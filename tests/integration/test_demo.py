"""The demo's agents at work: triggers, frames, a conflict retried, sleep — told and proven."""

from __future__ import annotations

import io
from pathlib import Path

from engram.demo import run_demo
from engram.ledger import Ledger


def test_the_demo_tells_the_agents_story_and_the_ledger_proves_it(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_demo(str(tmp_path / "demo"), out) == 0
    story = out.getvalue()
    assert "step 1: perception committed 3 events" in story
    assert "step 2: memory committed 4 events" in story
    assert "step 2: decision committed 5 events after 2 attempts (a conflict, retried)" in story
    assert "all triggers quiet after step 2: the agents sleep" in story
    assert "memory's context frames:" in story
    assert "verify: ok" in story
    with Ledger.open(str(tmp_path / "demo" / "ledger.db")) as ledger:
        events = list(ledger.read())
        (saved,) = [e for e in events if e.kind == "context.saved"]
        assert saved.actor == "memory"
        assert saved.payload.tokens <= saved.payload.budget == 600
        ids = {e.id for e in events}
        assert saved.payload.items
        assert set(saved.payload.items) <= ids
        assert "incident" in saved.payload.frames["knowledge"]
        shared = [e for e in events if e.stream == "neuron:n_memory_001"]
        # memory committed first; decision's commit conflicted and landed on fresh state, once.
        assert [(e.actor, e.version) for e in shared if e.actor in ("memory", "decision")] == [
            ("memory", 4),
            ("decision", 5),
        ]
        notes = [e.payload.agent for e in events if e.kind == "memo.posted"]
        assert notes == ["perception", "memory", "decision"]
