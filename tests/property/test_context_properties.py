"""Properties of context frames: within the budget, resolvable, private items stay private."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import context_queries, context_worlds

import engram
from engram.agents import ConceptOwnerError
from engram.agents.context import MIN_BUDGET, build_context
from engram.agents.frames import encode
from engram.agents.tokens import Estimate, default_counter
from engram.projections import concepts
from engram.projections.concepts import SELF


@settings(max_examples=12, deadline=None)
@given(world=context_worlds(), query=context_queries, budget=st.integers(MIN_BUDGET, 700))
def test_frames_never_exceed_the_budget_resolve_to_events_and_hide_private_items(
    tmp_path_factory: pytest.TempPathFactory,
    world: list[tuple[str, str, str, str]],
    query: str,
    budget: int,
) -> None:
    path = tmp_path_factory.mktemp("ctx") / "ledger.db"
    with engram.open_memory(str(path)) as memory:
        for what, agent, visibility, text in world:
            if what == "memory":
                memory.agent(agent).observe(text, visibility=visibility)  # type: ignore[arg-type]
                continue
            book = memory.concepts(agent)
            links = (
                [{"to": "skill.cpp", "rel": "near", "weight": 0.7}] if what != "skill.cpp" else []
            )
            try:
                book.upsert(what, "skill", text, links=links, visibility=visibility)  # type: ignore[arg-type]
            except ConceptOwnerError:
                continue
        for counter in (Estimate(), default_counter()):
            context = build_context(memory.agent("ana"), query, budget=budget, save=False,
                                    counter=counter)  # fmt: skip
            assert context.tokens <= budget
            assert counter.count(encode(context.frames)) == context.tokens
            events = memory.ledger.get([i.position for i in context.items])
            for item, event in zip(context.items, events, strict=True):
                assert event.id == item.event_id
                p = event.payload
                if getattr(p, "visibility", "public") == "private":
                    assert p.agent == "ana"
            with memory.engine.read() as conn:
                for concept_id in _paths(context.frames["knowledge"]):  # type: ignore[arg-type]
                    assert concepts.get(conn, concept_id, agent="ana") is not None


def _paths(tree: dict[str, object], prefix: str = "") -> list[str]:
    """Return the concept ids a knowledge frame holds (the paths that carry a SELF entry)."""
    out = []
    for key, value in tree.items():
        if key == SELF:
            out.append(prefix)
        elif isinstance(value, dict):
            out += _paths(value, f"{prefix}.{key}" if prefix else key)
    return out
