"""``memory.superseded`` and ``supersession.proposed`` gained ``reason`` at schema 2: events
written at schema 1 (before it) are read with an empty reason, and an older program reading a
schema 2 event is told it is newer, not handed an unknown field."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar

import msgspec
import pytest

from engram.ledger import KindRegistry, KindRegistryError, Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemorySuperseded, SupersessionProposed


class _SupersededV1(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    __kind__: ClassVar[str] = "memory.superseded"

    agent: str
    position: int
    replaces: Annotated[list[int], msgspec.Meta(min_length=1)]
    method: str = "explicit"


class _ProposedV1(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    __kind__: ClassVar[str] = "supersession.proposed"

    agent: str
    position: int
    replaces: Annotated[list[int], msgspec.Meta(min_length=1)]
    similarity: float
    method: str = "overlap"


def _old_registry() -> KindRegistry:
    old = KindRegistry()
    for spec in default_registry():
        if spec.name not in ("memory.superseded", "supersession.proposed"):
            old.register(spec.name, spec.type)
    old.register("memory.superseded", _SupersededV1)
    old.register("supersession.proposed", _ProposedV1)
    return old


def test_schema_1_events_are_read_with_an_empty_reason(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    with Ledger.open(path, registry=_old_registry()) as ledger:
        ledger.append(
            [
                NewEvent(stream="agent:alice", kind="supersession.proposed", payload=
                         _ProposedV1(agent="alice", position=3, replaces=[1], similarity=0.8)),
                NewEvent(stream="agent:alice", kind="memory.superseded", payload=
                         _SupersededV1(agent="alice", position=3, replaces=[1])),
            ]
        )  # fmt: skip
    with Ledger.open(path, readonly=True) as ledger:
        proposed, superseded = ledger.read()
    assert (proposed.schema, superseded.schema) == (1, 1)
    assert isinstance(proposed.payload, SupersessionProposed)
    assert isinstance(superseded.payload, MemorySuperseded)
    assert (proposed.payload.reason, superseded.payload.reason) == ("", "")
    assert superseded.payload.replaces == [1]


def test_an_older_program_is_told_the_event_is_newer(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    with Ledger.open(path) as ledger:
        ledger.append(
            [NewEvent(stream="agent:alice", kind="memory.superseded", payload=
                      MemorySuperseded(agent="alice", position=3, replaces=[1], reason="moved"))]
        )  # fmt: skip
    with (
        Ledger.open(path, readonly=True, registry=_old_registry()) as ledger,
        pytest.raises(KindRegistryError, match="newer than this program's schema 1"),
    ):
        list(ledger.read())
