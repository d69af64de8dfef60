"""Every error engram raises to a caller, in one tree under :class:`EngramError`.

Catch ``engram.EngramError`` to catch anything engram refuses or fails at; catch a family
root to catch one layer's errors. Each family lives with its layer (imports point down, so
the root itself is defined in the lowest layer, ``engram.ledger.errors``) and each family's
module draws its own subtree in full; this is the map of the whole.

    EngramError
    ├── LedgerError                 engram.ledger.errors: the append-only log
    │   ├── ConfigError             bad location, option or URL
    │   │   └── LedgerNotFoundError a read-only open of a ledger that does not exist
    │   ├── EventError              UnknownKindError, PayloadError, EnvelopeError
    │   ├── AppendError             ConcurrencyError, IdempotencyError
    │   ├── StoreError              AppendOnlyError, DamagedEventError, DamagedLedgerError,
    │   │                           InsertConflictError
    │   ├── KindRegistryError, LedgerClosedError, ReadOnlyLedgerError
    │   ├── CheckpointError, KeyStoreError
    │   └── AuditError              AuditWriteError, AuditQueryError, AuditUnavailableError
    ├── ProjectionError             engram.projections.errors: derived state and its reads
    │   ├── ProjectionConfigError, UnknownProjectionError, ProjectionStoreError
    │   ├── HandlerError            CatchUpError
    │   ├── WaitTimeoutError, QueryError
    │   └── EmbeddingError          EmbeddingConfigError, EmbeddingInputError,
    │                               EmbeddingProviderError, EmbeddingUnavailableError,
    │                               RetryableError (a failed request worth another try)
    ├── AgentError                  engram.agents.errors: what agents may and may not do
    │   ├── UnknownNeuronError, NeuronExistsError, ConnectionStateError
    │   ├── UnknownMemoryError, MemoryOwnerError, UnknownScarError, ConceptOwnerError
    │   ├── UnknownSignalError, SignalRecipientError, SignalAckedError
    │   ├── CompletionError         CompletionUnavailableError, CompletionRejectedError,
    │   │                           CompletionFormatError, CompletionConfigError
    │   ├── SuggestionError         SuggestionInputError, UnknownSuggestionError,
    │   │                           SuggestionStateError, DestinationError
    │   └── PackError               PackKeyError, PackFormatError, PackAuthError,
    │                               PackChecksumError, PackConflictError
    ├── JobError                    engram.jobs.errors: JobConfigError, LeaseError, DaemonError
    └── InterfaceError              the interfaces of the composition root
        ├── CliError                a command failed (exit 1); NoLedgerError
        ├── ToolInputError          an MCP tool got arguments it cannot use
        ├── BadRequestError         the hub refuses a request (status 400)
        ├── LocomoError             a benchmark data file is missing or malformed
        └── FitError                a calibration table cannot be fitted as asked
"""

from __future__ import annotations

from engram.agents.errors import AgentError
from engram.jobs.errors import JobError
from engram.ledger.errors import EngramError, LedgerError
from engram.projections.errors import ProjectionError

__all__ = [
    "AgentError",
    "EngramError",
    "InterfaceError",
    "JobError",
    "LedgerError",
    "ProjectionError",
]


class InterfaceError(EngramError):
    """Root of the errors raised by engram's interfaces: the CLI, MCP, the hub, the benches."""
