"""Context frames: what an agent should have in mind for a query, cut to a token budget.

:func:`build_context` runs four steps over the projections (ADR 0037), the first three in
:mod:`engram.agents.resonance`:

1. **probe** — seeds from the semantic index and the lexical index (``k = 32`` each), for
   memories (with scars and reflections: the episodic items) and for concepts, with the
   agent's visibility;
2. **bloom** — up to ``hops`` hops (1..3) from the strongest ``BEAM`` (16) nodes of each hop,
   at most ``fanout`` (6) neighbours a node: a concept follows its links both ways
   (:func:`engram.projections.concepts.spread`), a memory its episode (the items told next to
   it, :func:`engram.projections.lexical.neighbours`);
   a neighbour's ``edge`` is its parent's strength × the link's weight × 0.8 per hop;
3. **score** — resonance, a weighted sum of components in 0..1 (:class:`ContextWeights`):
   ``similarity`` (the cosine to the query, clipped, or the lexical match where it is higher),
   ``edge`` (the pull of the frontier that reached it), ``recency``
   (``exp(−age / half_life)``, the age counted from the newest candidate, ADR 0108),
   ``usage`` (how often it was recalled: ``1 − 1/(1 + n)``),
   ``task`` (the share of the task's words it holds) and ``influence`` (the sway live
   ``influences`` connections put on a neuron concept the item stands for — its author's
   role, or a concept whose every word it holds; :func:`engram.projections.activation.influence`,
   ADR 0083: the score moves, the neuron is not activated);
4. **trim** — the top k of each node type (:data:`engram.agents.frames.TOP_K`), then the
   best first while each frame keeps its share and the frames' token count
   (:mod:`engram.agents.tokens`) stays within the budget; a long text's details are
   summarised when the budget is tight (ADR 0082).

The frames (:mod:`engram.agents.frames`) follow the prompt contract: identity, problem,
knowledge (an HDoD: the chosen concepts as a nested dictionary, at most half the budget),
episodic, constraints (the applied rules that match) and scratchpad (the agent's
unacknowledged signals). Rules are chosen by meaning (:mod:`engram.agents.guidance`:
always-on ones, and the situational ones the task calls for) and take a reserved share of the
budget before anything else (ADR 0057). Every item resolves to a ledger event; an agent never
sees another agent's private item. ``save=True`` appends ``context.saved``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property

from engram.agents.arguments import check_query
from engram.agents.frames import assemble, for_ledger
from engram.agents.frames import sections as frame_sections
from engram.agents.memory import AgentMemory

# Re-exported ("as"): the weights are given to build_context, so they are named from here.
from engram.agents.resonance import ContextWeights as ContextWeights
from engram.agents.resonance import Probe
from engram.agents.resonance import frame_text as frame_text
from engram.agents.tokens import TokenCounter, default_counter
from engram.ledger import NewEvent
from engram.ledger.catalog import ContextSaved
from engram.projections.errors import QueryError
from engram.projections.timetravel import check_as_of

#: The smallest budget: the empty frames and a short problem fit in it.
MIN_BUDGET = 128
#: The largest budget: its frames stay well within the ledger's payload limit when saved.
MAX_BUDGET = 100_000


@dataclass(frozen=True)
class ContextItem:
    """One item behind a frame: its event, type, frame, score and the score's components."""

    event_id: str
    position: int
    type: str
    frame: str
    score: float
    components: dict[str, float]
    hop: int = 0


@dataclass(frozen=True)
class Context:
    """Frames cut to a budget, the items behind them, and the ``context.saved`` event's id."""

    agent: str
    query: str
    task: str
    frames: dict[str, object]
    items: list[ContextItem]
    tokens: int
    budget: int
    tokenizer: str
    event_id: str | None = None
    as_of: datetime = field(default_factory=lambda: datetime.now(UTC))
    counter: TokenCounter | None = field(default=None, repr=False, compare=False)

    @cached_property
    def sections(self) -> dict[str, int]:
        """Each frame's size in tokens, in the frames' order (the prompt contract's sections),
        counted by the build's counter when first asked."""
        return frame_sections(self.frames, self.counter or default_counter())


def build_context(
    memory: AgentMemory,
    query: str,
    *,
    task: str = "",
    budget: int = 2000,
    weights: ContextWeights | None = None,
    save: bool = True,
    as_of: datetime | None = None,
    counter: TokenCounter | None = None,
    min_score: float = 0.0,
) -> Context:
    """Build ``memory``'s agent's context frames for ``query`` within ``budget`` tokens.

    ``as_of`` builds them from what was known then (items recorded after it are left out;
    the concepts are their newest versions). ``counter`` counts tokens (default: the MiniLM
    tokenizer if installed, else the estimate). With ``save``, the frames and their items'
    event ids are appended as ``context.saved`` on the stream ``context:<agent>``.
    ``min_score`` (0..1) leaves out recalled items whose similarity to the query (0..1,
    comparable across queries) is below it; rules and signals are not recalled, so stay.

    Raises:
        QueryError: a bad query, task, budget, weights or as_of (nothing is appended).
    """
    if not isinstance(memory, AgentMemory):
        raise QueryError(f"memory must be an AgentMemory, got {type(memory).__name__}")
    check_query(query)
    if not isinstance(task, str):
        raise QueryError(f"task must be a string, got {type(task).__name__}")
    if task:
        check_query(task, "task")
    if (
        not isinstance(budget, int)
        or isinstance(budget, bool)
        or not MIN_BUDGET <= budget <= MAX_BUDGET
    ):
        raise QueryError(
            f"budget must be an int of {MIN_BUDGET}..{MAX_BUDGET} tokens, got {budget!r}"
        )
    if weights is None:
        weights = ContextWeights()
    elif not isinstance(weights, ContextWeights):
        raise QueryError(f"weights must be ContextWeights, got {type(weights).__name__}")
    if not isinstance(save, bool):
        raise QueryError(f"save must be a bool, got {save!r}")
    if (
        isinstance(min_score, bool)
        or not isinstance(min_score, int | float)
        or not (0 <= min_score <= 1)
    ):
        raise QueryError(f"min_score must be a number in 0..1, got {min_score!r}")
    when = as_of or datetime.now(UTC)
    at_us = check_as_of(when)
    cut = None if as_of is None else at_us
    counter = counter or default_counter()
    if not callable(getattr(counter, "count", None)) or not isinstance(
        getattr(counter, "name", None), str
    ):
        raise QueryError(f"counter must be a TokenCounter, got {type(counter).__name__}")
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        probe = Probe(memory, conn, query, task, cut)
        probe.influences(when)
        found = probe.seeds()
        probe.bloom(found, weights)
        candidates = [
            c
            for c in probe.score(found, weights, at_us)
            if c.components.get("similarity", 1.0) >= min_score
        ]
    frames, chosen, tokens = assemble(
        memory.agent, query, task, when, candidates, budget, counter,
        cap=weights.cap, query_weights=probe.query_terms,
    )  # fmt: skip
    items = [
        ContextItem(c.event.id, c.event.position, c.type, c.frame, c.score, c.components, c.hop)
        for c in chosen
    ]
    event_id = None
    if save:
        payload = ContextSaved(
            agent=memory.agent,
            budget=budget,
            tokens=tokens,
            frames=for_ledger(frames),
            query=query,
            task=task,
            tokenizer=counter.name,
            items=[i.event_id for i in items],
        )
        event = NewEvent.of(payload, stream=f"context:{memory.agent}", actor=memory.agent)
        (position,) = memory.ledger.append(event)
        event_id = memory.ledger.get([position])[0].id
    return Context(
        memory.agent, query, task, frames, items, tokens, budget, counter.name, event_id, when,
        counter,
    )  # fmt: skip
