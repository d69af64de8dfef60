"""Find the tenants of a ledger: the namespaces :func:`engram.config.scope_to_tenant` makes.

A tenant exists once its ledger does (``engram --tenant NAME init`` or the first append):
on PostgreSQL a schema ``<pg_schema>__<tenant>`` holding an ``events`` table, on SQLite a
file ``<ledger>.tenants/<tenant>/ledger.db`` (ADR 0040). Listing reads names only; it opens
no tenant's ledger.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from engram.config import (
    TENANT_LEDGER_FILE,
    TENANT_MAX,
    TENANT_PATTERN,
    TENANT_SEPARATOR,
    Settings,
    scope_to_tenant,
    tenants_directory,
)
from engram.ledger import ConfigError, StoreError, backends

__all__ = ["Tenant", "list_tenants"]


@dataclass(frozen=True)
class Tenant:
    """One tenant of a ledger: its name and the settings that open its namespace."""

    name: str
    settings: Settings

    @property
    def location(self) -> str:
        """Return where the tenant's ledger lives: a file, or a schema (URL not shown)."""
        if self.settings.on_server:
            return f"schema {self.settings.pg_schema}"
        return self.settings.ledger


def list_tenants(settings: Settings) -> list[Tenant]:
    """Return the tenants under the (unscoped) ``settings``' ledger, sorted by name.

    Raises ConfigError when ``settings`` are already a tenant's, StoreError when the
    PostgreSQL server cannot be reached.
    """
    if settings.tenant:
        raise ConfigError(
            f"settings are scoped to tenant {settings.tenant!r}; list tenants from the base"
            " ledger (without --tenant or ENGRAM_TENANT)"
        )
    names = _server_names(settings) if settings.on_server else _file_names(settings)
    valid = sorted(n for n in names if TENANT_PATTERN.match(n) and len(n) <= TENANT_MAX)
    return [Tenant(name, scope_to_tenant(settings, name)) for name in valid]


def _file_names(settings: Settings) -> list[str]:
    folder = tenants_directory(settings.ledger)
    if not os.path.isdir(folder):
        return []
    return [
        entry.name
        for entry in os.scandir(folder)
        if entry.is_dir() and os.path.isfile(os.path.join(entry.path, TENANT_LEDGER_FILE))
    ]


def _server_names(settings: Settings) -> list[str]:
    list_schemas = backends.resolve(settings.ledger).schemas
    if list_schemas is None:
        return []
    prefix = settings.pg_schema + TENANT_SEPARATOR
    try:
        schemas = list_schemas(settings.ledger, prefix)
    except StoreError as exc:
        raise StoreError(f"cannot list the tenants: {exc}") from None
    return [schema[len(prefix) :] for schema in schemas]
