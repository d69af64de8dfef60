"""The affect agent: urgency that overrides priority and holds decision back (ADR 0066).

A signal to the affect agent whose topic is ``urgent`` (or ``urgent.<something>``) wakes it
before every other agent (:data:`URGENT_PRIORITY`). Its commit activates the affect neuron at
full strength and raises the affect neuron's ``inhibits`` connection to the decision neuron
to full weight: the decision neuron is now inhibited, and an agent whose trigger is wrapped in
:func:`unless_inhibited` does not spawn while the pressure lasts. A ``calm`` signal lowers
the connection back to zero, and decision spawns again. Everything goes through the ledger
and the graph: the urgency is a connection's weight and a neuron's salience, not a flag.
"""

from __future__ import annotations

from engram.agents.runner import AgentSpec, Plan, Probe, Situation, Trigger
from engram.ledger import NewEvent
from engram.ledger.catalog import (
    ConnectionCreated,
    ConnectionReweighted,
    MemoPosted,
    NeuronActivated,
    NeuronCreated,
)
from engram.projections.inbox import Signal
from engram.projections.salience import MAX

AFFECT = "n_affect_001"
DECISION = "n_decision_001"
#: Above every ordinary agent (priority 0): affect commits before their triggers are read.
URGENT_PRIORITY = 100
#: The inhibition pressure (``weight x salience``, 0..1 per source) at which a neuron is
#: held back: a fresh affect neuron fired once at full weight (0.62) is over it; the same
#: neuron at rest (weight 0) is not.
INHIBITED_AT = 0.5


def _urgent(signal: Signal) -> bool:
    return signal.topic == "urgent" or signal.topic.startswith("urgent.")


def _affecting(probe: Probe) -> str:
    return ", ".join(
        f"{s.topic} #{s.position}: {s.body}" for s in probe.inbox if _urgent(s) or s.topic == "calm"
    )


def grow_affect(actor: str = "bootstrap") -> list[NewEvent]:
    """Return the events that grow the affect neuron and its resting inhibition of decision."""
    stream = f"neuron:{AFFECT}"
    return [
        NewEvent.of(
            NeuronCreated(id=AFFECT, concept="affect", type="core"), stream=stream, actor=actor
        ),
        NewEvent.of(
            ConnectionCreated(
                source=AFFECT, target=DECISION, type="inhibits", weight=0, reason="at rest"
            ),
            stream=stream,
            actor=actor,
        ),
    ]


def affect_agent(name: str = "affect", *, session: str | None = None) -> AgentSpec:
    """Return the affect agent: on ``urgent`` it inhibits decision, on ``calm`` it lets go."""

    def feel(situation: Situation) -> Plan | None:
        felt = [s for s in situation.inbox if _urgent(s) or s.topic == "calm"]
        if not felt:
            return None
        stream = f"neuron:{AFFECT}"
        events: list[NewEvent] = []
        for signal in felt:
            urgent = _urgent(signal)
            if urgent:
                activated = NeuronActivated(id=AFFECT, strength=1.0, cause=f"urgent: {signal.body}")
                events.append(NewEvent.of(activated, stream=stream, actor=name))
            weight = MAX if urgent else 0
            reason = f"{signal.topic}: {signal.body}" if signal.body else signal.topic
            link = ConnectionReweighted(
                source=AFFECT, target=DECISION, type="inhibits", weight=weight, reason=reason
            )
            events.append(NewEvent.of(link, stream=stream, actor=name))
            if session is not None:
                verb = "holds decision back" if urgent else "lets decision go"
                note = MemoPosted(agent=name, session=session, text=f"affect {verb}: {reason}")
                events.append(NewEvent.of(note, stream=f"memo:{session}", actor=name))
        return Plan(events=events, handled=[s.id for s in felt])

    return AgentSpec(name, feel, trigger=_affecting, session=session, priority=URGENT_PRIORITY)


def unless_inhibited(neuron: str, trigger: Trigger, *, at: float = INHIBITED_AT) -> Trigger:
    """Wrap ``trigger`` so that it does not hold while ``neuron`` is inhibited past ``at``."""

    def gated(probe: Probe) -> object:
        if probe.inhibition(neuron) >= at:
            return ""
        return trigger(probe)

    return gated
