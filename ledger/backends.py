"""One descriptor per ledger backend: the only place a backend's name and URL schemes are spelt.

The store opens a ledger, the audit attaches it, the CLI checks it exists, settings place its
local files and tenants, and jobs pick its lease, all by asking this registry what the target
names; none of them compares a backend's name or a URL scheme of its own (a test enforces
it). To add a backend: its adapter module (the port is :mod:`engram.ledger.backend`), one
:class:`BackendKind` registered here, and its subclass of the ledger contract suite.

A target is a path or a URL. A bare path (no ``://``) is the default backend's (SQLite); a
URL belongs to the backend one of whose schemes it starts with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engram.ledger.errors import ConfigError

if TYPE_CHECKING:
    from engram.ledger.backend import Backend

#: Opens an adapter: (location, durability, busy_timeout, schema, readonly) -> Backend.
Opener = Callable[[str, str, float, str, bool], "Backend"]


@dataclass(frozen=True)
class BackendKind:
    """What engram needs to know about one ledger backend, in one place."""

    #: The backend's name, as :class:`~engram.ledger.backend.AuditTarget` carries it.
    name: str
    #: How people call it in messages ("SQLite", "PostgreSQL").
    title: str
    #: The URL prefixes it owns, the canonical one first.
    schemes: tuple[str, ...]
    #: Prefixes rewritten on opening (an alias scheme to the canonical one, or to nothing).
    aliases: tuple[tuple[str, str], ...]
    #: On a server, named by a URL: its local files go to the data home, tenants are schemas.
    #: Otherwise a local file: its files sit beside it, tenants are files in a folder.
    server: bool
    #: DuckDB's ATTACH type and the scanner extension that reads it.
    duckdb_type: str
    duckdb_extension: str
    #: The lease style the jobs layer takes on it ("file" or "advisory").
    lease: str
    opener: Opener = field(repr=False)
    #: Whether a server ledger exists in (location, schema); None for a file backend.
    exists: Callable[[str, str], bool] | None = field(default=None, repr=False)
    #: The ledger schemas of a server whose names start with a prefix (tenants).
    schemas: Callable[[str, str], list[str]] | None = field(default=None, repr=False)

    def owns(self, target: str) -> bool:
        """Say whether ``target`` (a path or URL) names a ledger of this backend."""
        return find(target) is self

    def location(self, target: str) -> str:
        """Return ``target`` with an alias scheme rewritten: a file's path, a server's URL."""
        for alias, canonical in self.aliases:
            if target.startswith(alias):
                return canonical + target[len(alias) :]
        return target

    def open(
        self, target: str, *, durability: str, busy_timeout: float, schema: str, readonly: bool
    ) -> Backend:
        """Open the adapter over ``target``."""
        return self.opener(self.location(target), durability, busy_timeout, schema, readonly)


_REGISTRY: dict[str, BackendKind] = {}
_DEFAULT: list[BackendKind] = []


def register(kind: BackendKind, *, default: bool = False) -> None:
    """Register a backend; ``default`` makes it the one a bare path names."""
    taken = [s for other in _REGISTRY.values() if other.name != kind.name for s in other.schemes]
    clash = [s for s in kind.schemes if s.startswith(tuple(taken)) or s in taken]
    if clash:
        raise ConfigError(f"backend {kind.name!r}: scheme(s) {clash} are already registered")
    _REGISTRY[kind.name] = kind
    if default:
        _DEFAULT[:] = [kind]


def find(target: str) -> BackendKind | None:
    """Return the backend ``target`` names, None for a URL no backend owns."""
    for kind in _REGISTRY.values():
        if target.startswith(kind.schemes):
            return kind
    return _DEFAULT[0] if _DEFAULT and "://" not in target else None


def resolve(target: object) -> BackendKind:
    """Return the backend ``target`` names; raise ConfigError for a blank or unowned one."""
    if not isinstance(target, str) or not target.strip():
        raise ConfigError(f"ledger location must be a path or URL, got {target!r}")
    kind = find(target)
    if kind is None:
        spelt = " or ".join(f"{k.schemes[0]}..." for k in _REGISTRY.values())
        raise ConfigError(f"unsupported ledger URL {target!r}: use a file path, {spelt}")
    return kind


def named(name: str) -> BackendKind:
    """Return the backend registered as ``name``; raise ConfigError for an unknown one."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown ledger backend {name!r}; known: {sorted(_REGISTRY)}") from None


def names() -> tuple[str, ...]:
    """Return the registered backends' names."""
    return tuple(_REGISTRY)


# -- the two backends engram ships --------------------------------------------------------------


def _open_sqlite(
    location: str, durability: str, busy_timeout: float, _schema: str, readonly: bool
) -> Backend:
    from engram.ledger.sqlite import SQLiteBackend

    return SQLiteBackend(
        location, durability=durability, busy_timeout=busy_timeout, readonly=readonly
    )


def _open_postgres(
    location: str, durability: str, busy_timeout: float, schema: str, readonly: bool
) -> Backend:
    from engram.ledger.postgres import PostgresBackend

    return PostgresBackend(
        location, schema=schema, durability=durability, busy_timeout=busy_timeout, readonly=readonly
    )


def _postgres_exists(url: str, schema: str) -> bool:
    from engram.ledger.postgres_server import ledger_exists

    return ledger_exists(url, schema)


def _postgres_schemas(url: str, prefix: str) -> list[str]:
    from engram.ledger.postgres_server import ledger_schemas

    return ledger_schemas(url, prefix)


SQLITE = BackendKind(
    name="sqlite",
    title="SQLite",
    schemes=("sqlite:///",),
    aliases=(("sqlite:///", ""),),
    server=False,
    duckdb_type="sqlite",
    duckdb_extension="sqlite_scanner",
    lease="file",
    opener=_open_sqlite,
)
POSTGRESQL = BackendKind(
    name="postgresql",
    title="PostgreSQL",
    schemes=("postgresql://", "postgresql+psycopg://", "postgres://"),
    aliases=(("postgres://", "postgresql://"),),
    server=True,
    duckdb_type="postgres",
    duckdb_extension="postgres_scanner",
    lease="advisory",
    opener=_open_postgres,
    exists=_postgres_exists,
    schemas=_postgres_schemas,
)
register(SQLITE, default=True)
register(POSTGRESQL)
