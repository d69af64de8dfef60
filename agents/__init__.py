"""What an agent uses: the memory stream and the neuron network (built on projections).

Agents read projections through the projections' own read functions and change the world
only by appending to the ledger. :class:`AgentMemory` observes, recalls and archives;
:class:`NeuronNetwork` grows, stimulates and inspects the graph; :class:`Scars` records and
archives failures and victories, which recall serves with a scope (:mod:`engram.agents.scopes`);
:class:`Mailbox` and :class:`SharedMemo` carry signals and the session memo through the
ledger; :class:`Runner` runs agents' cycles (spawn, cognition, commit with retries, sleep);
:func:`reflect` turns an agent's memories into beliefs citing their evidence
(:mod:`engram.agents.reflection`); :class:`Lessons` runs the lessons loop (scars drafted into
suggestions, reviewed by a person, applied as rules).
"""

from engram.agents.affect import affect_agent, unless_inhibited
from engram.agents.concepts import ConceptBook
from engram.agents.errors import (
    AgentError,
    ConceptOwnerError,
    ConnectionStateError,
    DestinationError,
    MemoryOwnerError,
    NeuronExistsError,
    SignalAckedError,
    SignalRecipientError,
    SuggestionError,
    SuggestionInputError,
    SuggestionStateError,
    UnknownMemoryError,
    UnknownNeuronError,
    UnknownScarError,
    UnknownSignalError,
    UnknownSuggestionError,
)
from engram.agents.importance import HeuristicScorer, ImportanceScorer
from engram.agents.insight import ModelGenerator, OfflineGenerator
from engram.agents.learning import LearnReport
from engram.agents.lessons import Lessons
from engram.agents.memory import (
    DEFAULT_FUSION,
    DEFAULT_MIN_SCORE,
    DEFAULT_WEIGHTS,
    FUSION_BY_PROVIDER,
    PATHS,
    RRF_K,
    AgentMemory,
)
from engram.agents.network import CORE_CONNECTIONS, CORE_NEURONS, NeuronNetwork, Stimulation
from engram.agents.recalled import Recalled, RecallResult
from engram.agents.reflection import Insight, Outcome, Triggers, reflect, reflect_if_due
from engram.agents.roles import observer_agent
from engram.agents.runner import (
    AgentSpec,
    CycleResult,
    Plan,
    Probe,
    RetryPolicy,
    Runner,
    Situation,
    any_of,
    inbox_waiting,
    ledger_moved,
    memo_addressed,
    salience_above,
)
from engram.agents.scars import Scars
from engram.agents.scopes import SCOPES, Scope
from engram.agents.signals import Mailbox, SharedMemo

__all__ = [
    "CORE_CONNECTIONS",
    "CORE_NEURONS",
    "DEFAULT_FUSION",
    "DEFAULT_MIN_SCORE",
    "DEFAULT_WEIGHTS",
    "FUSION_BY_PROVIDER",
    "PATHS",
    "RRF_K",
    "SCOPES",
    "AgentError",
    "AgentMemory",
    "AgentSpec",
    "ConceptBook",
    "ConceptOwnerError",
    "ConnectionStateError",
    "CycleResult",
    "DestinationError",
    "HeuristicScorer",
    "ImportanceScorer",
    "Insight",
    "LearnReport",
    "Lessons",
    "Mailbox",
    "MemoryOwnerError",
    "ModelGenerator",
    "NeuronExistsError",
    "NeuronNetwork",
    "OfflineGenerator",
    "Outcome",
    "Plan",
    "Probe",
    "RecallResult",
    "Recalled",
    "RetryPolicy",
    "Runner",
    "Scars",
    "Scope",
    "SharedMemo",
    "SignalAckedError",
    "SignalRecipientError",
    "Situation",
    "Stimulation",
    "SuggestionError",
    "SuggestionInputError",
    "SuggestionStateError",
    "Triggers",
    "UnknownMemoryError",
    "UnknownNeuronError",
    "UnknownScarError",
    "UnknownSignalError",
    "UnknownSuggestionError",
    "affect_agent",
    "any_of",
    "inbox_waiting",
    "ledger_moved",
    "memo_addressed",
    "observer_agent",
    "reflect",
    "reflect_if_due",
    "salience_above",
    "unless_inhibited",
]
