"""Open engram: the ledger with engram's kinds, from settings or a location."""

from __future__ import annotations

from typing import Any

from engram.config import Settings, resolve_settings
from ledger import KindRegistry, Ledger, default_registry


def open(
    ledger: str | None = None,
    *,
    registry: KindRegistry | None = None,
    config: str | None = None,
    **options: Any,
) -> Ledger:
    """Open engram's ledger (creating it if needed) and return it.

    ``ledger`` is a SQLite path or a PostgreSQL URL; when omitted it comes from
    ``ENGRAM_LEDGER``, a config file, or the default data directory (see engram.config).
    """
    return open_settings(resolve_settings(ledger, config=config, **options), registry)


def open_settings(settings: Settings, registry: KindRegistry | None = None) -> Ledger:
    """Open the ledger that resolved ``settings`` describe, with engram's kinds by default."""
    return Ledger.open(
        settings.ledger,
        registry if registry is not None else default_registry(),
        durability=settings.durability,
        busy_timeout=settings.busy_timeout,
        pg_schema=settings.pg_schema,
        max_payload_bytes=settings.max_payload_bytes,
    )
