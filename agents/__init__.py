"""What an agent uses: the memory stream and the neuron network (built on projections).

Agents read projections through the projections' own read functions and change the world
only by appending to the ledger. :class:`AgentMemory` observes, recalls and archives;
:class:`NeuronNetwork` grows, stimulates and inspects the graph; :class:`Lessons` runs the
lessons loop (scars drafted into suggestions, reviewed by a person, applied as rules).
"""

from engram.agents.errors import (
    AgentError,
    ConnectionStateError,
    DestinationError,
    MemoryOwnerError,
    NeuronExistsError,
    SuggestionError,
    SuggestionInputError,
    SuggestionStateError,
    UnknownMemoryError,
    UnknownNeuronError,
    UnknownSuggestionError,
)
from engram.agents.importance import HeuristicScorer, ImportanceScorer
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
    Recalled,
    RecallResult,
)
from engram.agents.network import CORE_CONNECTIONS, CORE_NEURONS, NeuronNetwork, Stimulation

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
    "DestinationError",
    "HeuristicScorer",
    "ImportanceScorer",
    "LearnReport",
    "Lessons",
    "MemoryOwnerError",
    "NeuronExistsError",
    "NeuronNetwork",
    "RecallResult",
    "Recalled",
    "Stimulation",
    "SuggestionError",
    "SuggestionInputError",
    "SuggestionStateError",
    "UnknownMemoryError",
    "UnknownNeuronError",
    "UnknownSuggestionError",
]
