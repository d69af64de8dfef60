"""What an agent uses: the memory stream and the neuron network (built on projections).

Agents read projections through the projections' own read functions and change the world
only by appending to the ledger. :class:`AgentMemory` observes, recalls and archives;
:class:`NeuronNetwork` grows, stimulates and inspects the graph; :class:`Scars` records and archives
failures and victories, which recall serves with a scope (:mod:`engram.agents.scopes`).
"""

from engram.agents.errors import (
    AgentError,
    ConnectionStateError,
    MemoryOwnerError,
    NeuronExistsError,
    UnknownMemoryError,
    UnknownNeuronError,
    UnknownScarError,
)
from engram.agents.importance import HeuristicScorer, ImportanceScorer
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
from engram.agents.scars import Scars
from engram.agents.scopes import SCOPES, Scope

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
    "ConnectionStateError",
    "HeuristicScorer",
    "ImportanceScorer",
    "MemoryOwnerError",
    "NeuronExistsError",
    "NeuronNetwork",
    "RecallResult",
    "Recalled",
    "Scars",
    "Scope",
    "Stimulation",
    "UnknownMemoryError",
    "UnknownNeuronError",
    "UnknownScarError",
]
