"""What a projection is: a name, a version, the kinds it consumes, its tables, its handler.

A projection is a pure function of the ledger (DESIGN.md, rule 2): ``apply`` reads nothing
but the events it is given and the projection's own tables — no clock, no randomness, no
network. The engine (:mod:`engram.projections.engine`) decides when and in which generation it runs.
"""

from __future__ import annotations

import abc
import hashlib
import re
import sqlite3
from collections.abc import Sequence
from typing import Any, ClassVar

import msgspec

from engram.ledger import Event, KindRegistryError, kind_name
from engram.ledger.kinds import declared_kind
from engram.projections.errors import ProjectionConfigError

_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}\Z")


class Tables:
    """The physical tables of one generation of a projection, by logical name.

    ``db["neurons"]`` is the quoted physical name to put in SQL; ``db.conn`` is the store's
    connection, inside the engine's transaction (handlers never commit).
    """

    __slots__ = ("_names", "conn")

    def __init__(self, conn: sqlite3.Connection, names: dict[str, str]) -> None:
        self.conn = conn
        self._names = names

    def __getitem__(self, table: str) -> str:
        try:
            return self._names[table]
        except KeyError:
            raise ProjectionConfigError(
                f"no table {table!r} in this projection (declared: {sorted(self._names)})"
            ) from None


class Projection(abc.ABC):
    """A derived view of the ledger, rebuilt at will and caught up incrementally.

    Subclasses set the class attributes and implement :meth:`create` and :meth:`apply`.
    ``kinds`` may name a kind by its payload Struct type; the class keeps the stored name
    (ADR 0020), so ``kinds`` reads as names wherever it is read.
    Contract for ``apply``: events arrive in position order, each exactly once per
    generation, in batches of any size; the state after any split into batches is the same
    (rule 4). It must not commit, and must keep no state outside its tables between calls.
    """

    name: ClassVar[str]
    version: ClassVar[int]
    #: The kinds consumed: stored names, or payload Struct types (their ``__kind__``).
    kinds: ClassVar[tuple[str | type[msgspec.Struct], ...]]
    tables: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kinds = vars(cls).get("kinds")
        if isinstance(kinds, tuple):
            # A type not named yet (registered later) stays; the engine names it at open.
            cls.kinds = tuple(_named(kind) for kind in kinds)

    def config(self) -> str:
        """Return the parameters that shape the stored state (changing them forces a rebuild)."""
        return ""

    def identity(self) -> str:
        """Return what a stored generation must match to be reused: version and config."""
        config = self.config()
        return f"v{self.version}" + (f";{config}" if config else "")

    @abc.abstractmethod
    def create(self, db: Tables) -> None:
        """Create this projection's (empty) tables and indexes."""

    @abc.abstractmethod
    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Apply a batch of events of this projection's kinds, in position order."""

    def digest(self, db: Tables) -> str:
        """Return a sha256 over the canonical state: every table's rows in sorted order."""
        h = hashlib.sha256()
        encode = msgspec.json.encode
        for table in sorted(self.tables):
            physical = db[table]
            columns = db.conn.execute(f"SELECT * FROM {physical} LIMIT 0").description
            order = ", ".join(str(i) for i in range(1, len(columns) + 1))
            h.update(encode([table, [c[0] for c in columns]]))
            for row in db.conn.execute(f"SELECT * FROM {physical} ORDER BY {order}"):
                h.update(encode(row))
        return h.hexdigest()


def check_projection(projection: Any) -> Projection:
    """Validate a projection's declaration, naming what is wrong."""
    if not isinstance(projection, Projection):
        raise ProjectionConfigError(f"not a Projection: {projection!r}")
    label = type(projection).__name__
    name = getattr(projection, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        raise ProjectionConfigError(
            f"{label}.name must match [a-z][a-z0-9_]* (at most 63 characters), got {name!r}"
        )
    version = getattr(projection, "version", None)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ProjectionConfigError(f"{label}.version must be a positive int, got {version!r}")
    kind_names(projection)
    tables = getattr(projection, "tables", None)
    if not isinstance(tables, tuple) or not tables:
        raise ProjectionConfigError(f"{label}.tables must be a non-empty tuple of table names")
    for table in tables:
        if not isinstance(table, str) or not _NAME.match(table):
            raise ProjectionConfigError(
                f"{label}.tables: {table!r} must match [a-z][a-z0-9_]* (at most 63 characters)"
            )
    if len(set(tables)) != len(tables):
        raise ProjectionConfigError(f"{label}.tables has duplicates: {tables}")
    return projection


def _named(kind: Any) -> Any:
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return declared_kind(kind) or kind
    return kind


def kind_names(projection: Projection) -> tuple[str, ...]:
    """Return the stored names of the kinds a projection consumes, in declaration order.

    Raises:
        ProjectionConfigError: ``kinds`` is not a non-empty tuple of kind names and payload
            types, or names a type that carries no kind.
    """
    label = type(projection).__name__
    kinds = getattr(projection, "kinds", None)
    if not isinstance(kinds, tuple) or not kinds:
        raise ProjectionConfigError(
            f"{label}.kinds must be a non-empty tuple of kind names or payload types, got {kinds!r}"
        )
    try:
        return tuple(dict.fromkeys(kind_name(kind) for kind in kinds))
    except KindRegistryError as exc:
        raise ProjectionConfigError(f"{label}.kinds: {exc}") from None
