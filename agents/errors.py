"""Errors raised by the agents layer.

Every error derives from :class:`AgentError`, under engram's one root
:class:`~engram.ledger.errors.EngramError` (the whole tree is drawn in ``engram.errors``).

    AgentError
    ├── UnknownNeuronError      a neuron that does not exist (or is archived) was named
    ├── NeuronExistsError       creating a neuron whose id is taken
    ├── ConnectionStateError    creating a connection that exists, reweighting one that does not
    ├── UnknownMemoryError      a position that holds no memory (or an archived one) was named
    ├── MemoryOwnerError        an agent named another agent's memory where only its own will do
    ├── UnknownSignalError      acknowledging a signal the ledger does not hold
    ├── SignalRecipientError    acknowledging a signal that was not addressed to the agent
    ├── SignalAckedError        acknowledging, with effects, a signal already acknowledged
    ├── ConceptOwnerError       replacing a concept another agent keeps private
    ├── UnknownScarError        a position that holds no scar (or an archived one) was named
    ├── CompletionError         a model gave no valid answer (engram.agents.completion)
    │   ├── CompletionUnavailableError   unreachable or kept failing; try again later
    │   ├── CompletionRejectedError      the provider refused the request (4xx)
    │   ├── CompletionFormatError        the answer was not JSON of the expected schema
    │   └── CompletionConfigError        a completer option is malformed
    └── SuggestionError         the lessons loop refused a request (engram.agents.lessons)
        ├── SuggestionInputError         an argument is malformed (the message names it)
        ├── UnknownSuggestionError       no suggestion (or more than one) has this id or prefix
        ├── SuggestionStateError         an illegal transition, or another review came first
        └── DestinationError             the destination is not configured, or its file moved on
"""

from __future__ import annotations

from engram.ledger.errors import EngramError


class AgentError(EngramError):
    """Root of every error the agents layer raises."""


class UnknownNeuronError(AgentError):
    """A neuron that does not exist, or is archived, was named."""


class NeuronExistsError(AgentError):
    """A neuron with this id exists already."""


class ConnectionStateError(AgentError):
    """A connection exists when it should not, or does not when it should."""


class UnknownMemoryError(AgentError):
    """A position that holds no memory, or holds an archived one, was named."""


class MemoryOwnerError(AgentError):
    """An agent named another agent's memory where only its own will do."""


class UnknownSignalError(AgentError):
    """A signal id names no ``signal.sent`` event."""


class SignalRecipientError(AgentError):
    """An agent acknowledged a signal that was not addressed to it."""


class ConceptOwnerError(AgentError):
    """An agent tried to replace a concept that another agent keeps private."""


class SignalAckedError(AgentError):
    """A signal was acknowledged already, so the effects given with the ack were not appended."""


class UnknownScarError(AgentError):
    """A position that holds no scar, or holds an archived one, was named."""


class SuggestionError(AgentError):
    """The lessons loop refused a request; nothing was appended."""


class SuggestionInputError(SuggestionError):
    """An argument of the lessons loop is malformed; the message names it."""


class UnknownSuggestionError(SuggestionError):
    """No suggestion, or more than one, has this id or id prefix."""


class SuggestionStateError(SuggestionError):
    """The suggestion is not in a state that allows this (or another review came first)."""


class DestinationError(SuggestionError):
    """A destination is not configured, or its file is not what the suggestion expects."""
