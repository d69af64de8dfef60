"""What an agent uses: the memory stream and the neuron network (built on projections).

Agents read projections through the projections' own read functions and change the world
only by appending to the ledger. :class:`AgentMemory` observes, recalls and archives;
:class:`NeuronNetwork` grows, stimulates and inspects the graph; :func:`reflect` turns an
agent's memories into beliefs citing their evidence (:mod:`engram.agents.reflection`).
"""

from engram.agents.errors import (
    AgentError,
    ConnectionStateError,
    MemoryOwnerError,
    NeuronExistsError,
    UnknownMemoryError,
    UnknownNeuronError,
)
from engram.agents.importance import HeuristicScorer, ImportanceScorer
from engram.agents.insight import ModelGenerator, OfflineGenerator
from engram.agents.memory import (
    DEFAULT_FUSION,
    DEFAULT_MIN_SCORE,
    DEFAULT_WEIGHTS,
    FUSION_BY_PROVIDER,
    PATHS,
    RRF_K,
    AgentMemory,
    Recalled,
    RecallResult,
)
from engram.agents.network import CORE_CONNECTIONS, CORE_NEURONS, NeuronNetwork, Stimulation
from engram.agents.reflection import Insight, Outcome, Triggers, reflect, reflect_if_due

__all__ = [
    "CORE_CONNECTIONS",
    "CORE_NEURONS",
    "DEFAULT_FUSION",
    "DEFAULT_MIN_SCORE",
    "DEFAULT_WEIGHTS",
    "FUSION_BY_PROVIDER",
    "PATHS",
    "RRF_K",
    "AgentError",
    "AgentMemory",
    "ConnectionStateError",
    "HeuristicScorer",
    "ImportanceScorer",
    "Insight",
    "MemoryOwnerError",
    "ModelGenerator",
    "NeuronExistsError",
    "NeuronNetwork",
    "OfflineGenerator",
    "Outcome",
    "RecallResult",
    "Recalled",
    "Stimulation",
    "Triggers",
    "UnknownMemoryError",
    "UnknownNeuronError",
    "reflect",
    "reflect_if_due",
]
