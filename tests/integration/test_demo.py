"""The demo's agents at work: triggers, frames, a conflict retried, sleep — told and proven."""

from __future__ import annotations

import io
from pathlib import Path

from engram.demo import run_demo
from engram.ledger import Ledger
from engram.runtime import open_memory


def test_the_demo_tells_the_agents_story_and_the_ledger_proves_it(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_demo(str(tmp_path / "demo"), out) == 0
    story = out.getvalue()
    assert "bootstrap grew 4 neurons" in story
    assert "then marked bootstrap.completed" in story
    assert "step 1: perception committed 3 events [spawned on: perception's salience" in story
    # Each commit's wave reaches the episode neuron: one activation more than the plan's.
    assert "step 2: memory committed 5 events [spawned on: signal #" in story
    assert "step 2: decision committed 6 events after 2 attempts (a conflict, retried)" in story
    assert "all triggers quiet after step 2: the agents sleep" in story
    assert "memory's context frames:" in story
    # The prompt contract's sections, in the seed's order, each with its tokens.
    assert "sections in order: identity " in story
    line = next(x for x in story.splitlines() if "sections in order:" in x)
    shown = [part.split()[0] for part in line.split("sections in order: ")[1].split(", ")]
    assert shown == ["identity", "problem", "knowledge", "episodic", "constraints", "scratchpad"]
    assert "verify: ok" in story
    # memory -influences-> decision sways decision's context without activating it.
    assert "on n_memory_001: 2 activations" in story
    assert "sways n_decision_001" in story
    # Inner, outer and observer: an addressed memo, a plan moved by events, reflections.
    assert "inner -> outer [request]: carry out q3-summary" in story
    assert "outer -> inner [answer]" in story
    assert "observer -> * [reflection]" in story
    assert "plan 'summarise the Q3 outage': DONE 3/3 (by inner)" in story
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
            ("memory", 6),
            ("decision", 7),
        ]
        # The brain view shows the network the bootstrap agent built, not the core alone.
        assert len({e.payload.id for e in events if e.kind == "neuron.created"}) == 7
        notes = [e.payload.agent for e in events if e.kind == "memo.posted"]
        assert notes == ["perception", "memory", "decision"]


def test_after_the_demo_the_hub_s_brain_view_shows_the_grown_network(tmp_path: Path) -> None:
    from engram.hub.views import graph

    assert run_demo(str(tmp_path / "demo"), io.StringIO()) == 0
    with open_memory(str(tmp_path / "demo" / "ledger.db")) as memory:
        shown = graph(memory, None)
    ids = {n["id"] for n in shown["neurons"]}
    assert len(ids) == 7
    assert {"n_affect_001", "n_episode_001", "n_role_planner", "n_role_critic"} <= ids
