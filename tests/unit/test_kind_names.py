"""Kinds named by their payload types: ``__kind__``, ``kind_name`` and ``NewEvent.of``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

import msgspec
import pytest

from engram.ledger import (
    EnvelopeError,
    KindRegistry,
    KindRegistryError,
    NewEvent,
    default_registry,
    kind_name,
)
from engram.ledger.catalog import KINDS, MemoryObserved, NeuronActivated
from engram.ledger.kinds import declared_kind


def test_every_catalog_struct_declares_the_name_it_is_stored_under() -> None:
    assert {t.__kind__: t for t in KINDS.values()} == KINDS  # type: ignore[attr-defined]
    registry = default_registry()
    assert {spec.name: spec.type for spec in registry} == KINDS
    assert kind_name(NeuronActivated) == "neuron.activated"
    assert kind_name("neuron.activated") == "neuron.activated"


def test_registration_names_a_struct_that_declares_nothing() -> None:
    class Waved(msgspec.Struct, frozen=True):
        hand: str

    with pytest.raises(KindRegistryError, match="Waved carries no kind name"):
        kind_name(Waved)
    KindRegistry().register("user.waved", Waved)
    assert kind_name(Waved) == "user.waved"


def test_a_subclass_of_a_registered_struct_has_no_kind_of_its_own() -> None:
    class Loud(NeuronActivated, frozen=True):
        volume: int = 0

    assert Loud.__kind__ == "neuron.activated"  # inherited, and not trusted:
    assert declared_kind(Loud) is None
    with pytest.raises(KindRegistryError, match="Loud carries no kind name"):
        kind_name(Loud)


def test_a_declared_kind_must_match_the_name_it_is_registered_under() -> None:
    class Nodded(msgspec.Struct, frozen=True):
        __kind__: ClassVar[str] = "user.nodded"
        times: int

    registry = KindRegistry()
    with pytest.raises(KindRegistryError, match=r"Nodded declares kind 'user.nodded'"):
        registry.register("user.shrugged", Nodded)
    assert "user.shrugged" not in registry
    registry.register("user.nodded", Nodded)
    assert kind_name(Nodded) == "user.nodded"


def test_a_struct_registered_under_two_names_names_neither() -> None:
    class Blinked(msgspec.Struct, frozen=True):
        eye: str

    KindRegistry().register("user.blinked", Blinked)
    KindRegistry().register("user.winked", Blinked)
    with pytest.raises(KindRegistryError, match="payload of several kinds"):
        kind_name(Blinked)
    with pytest.raises(EnvelopeError, match="payload of several kinds"):
        NewEvent.of(Blinked("left"), stream="face:x")
    KindRegistry().register("user.blinked", Blinked)  # registering again does not revive it
    with pytest.raises(KindRegistryError, match="payload of several kinds"):
        kind_name(Blinked)


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("", "a kind name must not be empty"),
        (None, "a kind is named by a string or a payload Struct type, got None"),
        (dict, "a kind is named by a string or a payload Struct type"),
    ],
)
def test_kind_name_refuses_what_names_no_kind(kind: object, message: str) -> None:
    with pytest.raises(KindRegistryError, match=message):
        kind_name(kind)


def test_new_event_of_takes_the_kind_from_the_payload_type() -> None:
    at = datetime(2026, 11, 23, tzinfo=UTC)
    payload = MemoryObserved(agent="ada", text="the cache is cold")
    event = NewEvent.of(
        payload,
        stream="agent:ada",
        actor="ada",
        id="0192b7a0-0000-7000-8000-000000000001",
        at=at,
        causation_id="0192b7a0-0000-7000-8000-000000000002",
        correlation_id="0192b7a0-0000-7000-8000-000000000003",
    )
    assert event == NewEvent(
        stream="agent:ada",
        kind="memory.observed",
        payload=payload,
        actor="ada",
        id="0192b7a0-0000-7000-8000-000000000001",
        at=at,
        causation_id="0192b7a0-0000-7000-8000-000000000002",
        correlation_id="0192b7a0-0000-7000-8000-000000000003",
    )
    assert NewEvent.of(payload, stream="agent:ada").actor == "system"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"agent": "ada"}, "payload must be a kind's payload Struct, got dict"),
        (None, "payload must be a kind's payload Struct, got NoneType"),
    ],
)
def test_new_event_of_refuses_a_payload_that_names_no_kind(payload: Any, message: str) -> None:
    with pytest.raises(EnvelopeError, match=message) as caught:
        NewEvent.of(payload, stream="agent:ada")
    assert caught.value.field == "payload"


def test_new_event_of_refuses_a_struct_that_is_no_kind() -> None:
    class Stray(msgspec.Struct, frozen=True):
        x: int

    with pytest.raises(EnvelopeError, match=r"NewEvent\.of: Stray carries no kind name"):
        NewEvent.of(Stray(1), stream="agent:ada")
