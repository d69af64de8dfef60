"""Open engram: the ledger with engram's kinds, and its projections, from settings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agents.network import NeuronNetwork
from engram.config import Settings, resolve_settings
from ledger import KindRegistry, Ledger, default_registry
from projections.base import Projection
from projections.engine import ProjectionEngine
from projections.graph import NeuronGraph
from projections.salience import SalienceIndex


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


def default_projections(settings: Settings) -> list[Projection]:
    """Return engram's projections, configured from ``settings``."""
    return [NeuronGraph(), SalienceIndex(settings.decay_rate)]


def open_engine(ledger: Ledger, settings: Settings, **options: Any) -> ProjectionEngine:
    """Open the projection engine over ``ledger`` in the settings' projection store."""
    return ProjectionEngine(
        ledger,
        settings.projection_store,
        default_projections(settings),
        busy_timeout=settings.busy_timeout,
        **options,
    )


@dataclass
class Memory:
    """An opened engram: the ledger, its caught-up projections, and the neuron network."""

    settings: Settings
    ledger: Ledger
    engine: ProjectionEngine
    network: NeuronNetwork


@contextmanager
def open_memory(
    ledger: str | None = None, *, actor: str = "agent", config: str | None = None, **options: Any
) -> Iterator[Memory]:
    """Open the ledger and its projections for a block; close both after it."""
    settings = resolve_settings(ledger, config=config, **options)
    led = open_settings(settings)
    try:
        engine = open_engine(led, settings)
        try:
            yield Memory(settings, led, engine, NeuronNetwork(led, engine, actor=actor))
        finally:
            engine.close()
    finally:
        led.close()
