"""Errors raised by the projection engine and the projections.

Every error derives from :class:`ProjectionError`, under engram's one root
:class:`~engram.ledger.errors.EngramError` (the whole tree is drawn in ``engram.errors``).

    ProjectionError
    ├── ProjectionConfigError       a bad projection definition, option or store location
    ├── UnknownProjectionError      a name no registered projection has
    ├── ProjectionStoreError        the projection store is unusable (other ledger, corrupt)
    │   └── ProjectionStoreDamagedError  its file is damaged: set it aside and rebuild
    ├── HandlerError                a projection's handler raised; names projection/position/kind
    │   └── CatchUpError            one or more projections stopped during a catch-up
    ├── WaitTimeoutError            wait_for() ran out of time
    ├── QueryError                  a projection query got bad arguments (names the argument)
    └── EmbeddingError              an embedder could not turn texts into vectors
        ├── EmbeddingConfigError    a bad embedder option or route; an unset API key variable
        ├── EmbeddingInputError     embed() got no list of str (names the offending index)
        ├── EmbeddingProviderError  the provider failed or answered nonsense (``.status``)
        └── EmbeddingUnavailableError   an optional extra is not installed (names it)
"""

from __future__ import annotations

from engram.ledger.errors import EngramError


class ProjectionError(EngramError):
    """Root of every error the projection layer raises."""


class ProjectionConfigError(ProjectionError):
    """A projection definition, option or store location is invalid."""


class UnknownProjectionError(ProjectionError):
    """No registered projection has this name."""


class ProjectionStoreError(ProjectionError):
    """The projection store cannot be used as it is (belongs to another ledger, damaged)."""


class ProjectionStoreDamagedError(ProjectionStoreError):
    """The projection store's file is damaged (not a database, or a malformed one).

    It is derived from the ledger: :func:`engram.projections.store.set_aside` moves the file
    away (``engram rebuild`` does), and a rebuild builds it again.
    """

    def __init__(self, message: str, directory: str) -> None:
        super().__init__(message)
        self.directory = directory


class HandlerError(ProjectionError):
    """A projection's handler raised while applying an event.

    The projection stopped just before ``position``: everything before it is applied and
    committed, nothing of the failing event remains.
    """

    def __init__(self, projection: str, position: int, kind: str, cause: str) -> None:
        super().__init__(
            f"projection {projection!r} failed at position {position} ({kind}): {cause}"
        )
        self.projection = projection
        self.position = position
        self.kind = kind
        self.cause = cause


class CatchUpError(HandlerError):
    """One or more projections stopped during a catch-up; the others went on.

    Behaves as the first failure; ``failures`` lists them all.
    """

    def __init__(self, failures: list[HandlerError]) -> None:
        first = failures[0]
        super().__init__(first.projection, first.position, first.kind, first.cause)
        self.failures = failures
        if len(failures) > 1:
            others = ", ".join(f"{f.projection!r} at {f.position}" for f in failures[1:])
            self.args = (f"{self.args[0]} (also failed: {others})",)


class WaitTimeoutError(ProjectionError):
    """The projections did not reach the wanted position in time."""


class QueryError(ProjectionError):
    """A query got an argument it cannot use; the message names it."""


class EmbeddingError(ProjectionError):
    """Root of every error an embedder raises."""


class EmbeddingConfigError(EmbeddingError):
    """An embedder option or route is invalid, or its API key variable is not set."""


class EmbeddingInputError(EmbeddingError):
    """``embed()`` got something other than a list of str; the message names the index."""


class EmbeddingProviderError(EmbeddingError):
    """The embedding provider failed, or answered with something that is not embeddings.

    ``status`` is the HTTP status of the last attempt when there was one, else None.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EmbeddingUnavailableError(EmbeddingError):
    """A provider needs an optional extra that is not installed; the message names it."""
