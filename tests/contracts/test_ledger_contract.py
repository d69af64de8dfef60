"""The ledger contract: one suite, run against a real SQLite file and the real PostgreSQL server.

:class:`LedgerContract` states what every backend promises; each ``Test*`` subclass only
provides an :class:`Env` — how to open a ledger on its backend and how to reach the
database underneath with its own driver (to prove the database itself refuses changes, and
to tamper with rows behind the ledger's back).
"""

from __future__ import annotations

import abc
import gc
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec
import psycopg
import pytest
from psycopg import sql

from engram.ledger import (
    ANY,
    NO_STREAM,
    ConcurrencyError,
    ConfigError,
    EnvelopeError,
    Event,
    EventError,
    IdempotencyError,
    KindRegistry,
    KindRegistryError,
    Ledger,
    LedgerClosedError,
    NewEvent,
    PayloadError,
    UnknownKindError,
    default_registry,
    new_id,
)
from engram.ledger.catalog import (
    ConnectionCreated,
    MemoryObserved,
    MemoryRecalled,
    NeuronActivated,
    NeuronCreated,
    RecalledItem,
    SignalSent,
)
from engram.ledger.schema import APPEND_ONLY_MESSAGE, COLUMNS

Statement = str | tuple[str, Sequence[Any]]

# -- backends --------------------------------------------------------------------------------


class Env(abc.ABC):
    """One backend: open ledgers on it, and talk to its database with the raw driver."""

    #: The driver's exception for a statement the database refuses.
    driver_error: type[Exception]
    #: Statements beyond UPDATE/DELETE that only this database has and must refuse.
    extra_refused: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._opened: list[Ledger] = []

    def open(self, registry: KindRegistry | None = None, **options: Any) -> Ledger:
        ledger = self._open(registry, **options)
        self._opened.append(ledger)
        return ledger

    @abc.abstractmethod
    def _open(self, registry: KindRegistry | None, **options: Any) -> Ledger: ...

    @abc.abstractmethod
    def run(self, *statements: Statement) -> list[tuple[Any, ...]]:
        """Run statements (``?`` placeholders) in one transaction; return the last one's rows."""

    @abc.abstractmethod
    def disable_triggers(self) -> None:
        """Switch off the append-only triggers, as an attacker with DDL rights could."""

    def close(self) -> None:
        for ledger in self._opened:
            ledger.close()


_ROW = "id, stream, version, kind, schema, {actor}, at, payload, causation_id, correlation_id, hash"
_MALLORY_ROW = _ROW.format(actor="'mallory'")
_SAME_ROW = _ROW.format(actor="actor")
_OTHER_ID = "'00000000-0000-7000-8000-00000000beef'"


class SQLiteEnv(Env):
    driver_error = sqlite3.DatabaseError
    # REPLACE deletes the row it collides with without firing a delete trigger.
    extra_refused = (
        "REPLACE INTO events SELECT * FROM events WHERE position = 1",
        f"INSERT OR REPLACE INTO events SELECT position, {_MALLORY_ROW}"
        " FROM events WHERE position = 1",
        # the same id at a new position: would delete the original row
        f"INSERT OR REPLACE INTO events SELECT 99, {_SAME_ROW} FROM events WHERE position = 1",
        # the same stream and version under a new id and position
        f"INSERT OR REPLACE INTO events SELECT 99, {_OTHER_ID}, stream, version, kind, schema,"
        " actor, at, payload, causation_id, correlation_id, hash FROM events WHERE position = 2",
        "INSERT INTO events SELECT * FROM events WHERE position = 1"
        " ON CONFLICT (position) DO UPDATE SET actor = 'mallory'",
    )

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def _open(self, registry: KindRegistry | None, **options: Any) -> Ledger:
        return Ledger.open(self.path, registry, **options)

    def run(self, *statements: Statement) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            rows: list[tuple[Any, ...]] = []
            try:
                for statement in statements:
                    text, params = (statement, ()) if isinstance(statement, str) else statement
                    rows = conn.execute(text, tuple(params)).fetchall()
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return rows
        finally:
            conn.close()

    def disable_triggers(self) -> None:
        self.run(
            "DROP TRIGGER events_no_update",
            "DROP TRIGGER events_no_delete",
            "DROP TRIGGER events_no_replace",
        )


class PostgresEnv(Env):
    driver_error = psycopg.Error
    extra_refused = (
        "TRUNCATE events",
        "INSERT INTO events SELECT * FROM events WHERE position = 1"
        " ON CONFLICT (position) DO UPDATE SET actor = 'mallory'",
        "MERGE INTO events e USING (SELECT 1 AS p) s ON e.position = s.p"
        " WHEN MATCHED THEN UPDATE SET actor = 'mallory'",
        "MERGE INTO events e USING (SELECT 2 AS p) s ON e.position = s.p WHEN MATCHED THEN DELETE",
    )

    def __init__(self, dsn: str, schema: str) -> None:
        super().__init__()
        self.dsn = dsn
        self.schema = schema

    def _open(self, registry: KindRegistry | None, **options: Any) -> Ledger:
        return Ledger.open(self.dsn, registry, pg_schema=self.schema, **options)

    def run(self, *statements: Statement) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn, connect_timeout=5) as conn:  # commits, or rolls back
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
            rows: list[tuple[Any, ...]] = []
            for statement in statements:
                text, params = (statement, ()) if isinstance(statement, str) else statement
                cursor = conn.execute(text.replace("?", "%s"), tuple(params))  # type: ignore[call-overload]
                rows = cursor.fetchall() if cursor.description else []
            return rows

    def disable_triggers(self) -> None:
        self.run("ALTER TABLE events DISABLE TRIGGER USER")


# -- events used throughout ------------------------------------------------------------------


def act(stream: str, n: int = 0, **envelope: Any) -> NewEvent:
    return NewEvent(
        stream=stream,
        kind="neuron.activated",
        payload=NeuronActivated(id=f"n{n}", strength=float(n), cause="test"),
        **envelope,
    )


def signal(stream: str, topic: str = "ping", **envelope: Any) -> NewEvent:
    return NewEvent(
        stream=stream, kind="signal.sent", payload=SignalSent(to="*", topic=topic), **envelope
    )


def created(stream: str, name: str = "n", **envelope: Any) -> NewEvent:
    return NewEvent(
        stream=stream,
        kind="neuron.created",
        payload=NeuronCreated(id=name, concept=f"concept {name}", type="core"),
        **envelope,
    )


def positions(events: Iterator[Event] | list[Event]) -> list[int]:
    return [e.position for e in events]


def conflict(exc: ConcurrencyError) -> tuple[str, object, int]:
    return exc.stream, exc.expected, exc.actual


class GreetedV1(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str


class GreetedV2(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    first: str
    last: str


def registry_v1() -> KindRegistry:
    registry = default_registry()
    registry.register("test.greeted", GreetedV1)
    return registry


def registry_v2() -> KindRegistry:
    registry = default_registry()
    registry.register("test.greeted", GreetedV2, schema=2)

    @registry.upcaster("test.greeted", 1)
    def split_name(old: dict[str, Any]) -> dict[str, Any]:
        first, _, last = old["name"].partition(" ")
        return {"first": first, "last": last}

    return registry


# Bad events: (event, error class, field). Each is placed in the MIDDLE of a batch.
BAD_EVENTS: dict[str, tuple[Any, type[EventError], str | None]] = {
    "unknown-kind": (
        NewEvent(stream="bad:x", kind="neuron.teleported", payload={"id": "n"}),
        UnknownKindError,
        "kind",
    ),
    "payload-field-wrong-type": (
        NewEvent(
            stream="bad:x",
            kind="neuron.activated",
            payload=NeuronActivated(id="n", strength="high"),  # type: ignore[arg-type]
        ),
        PayloadError,
        "payload.strength",
    ),
    "payload-mapping-field-wrong-type": (
        NewEvent(stream="bad:x", kind="neuron.activated", payload={"id": "n", "strength": "high"}),
        PayloadError,
        "payload.strength",
    ),
    "payload-missing-field": (
        NewEvent(stream="bad:x", kind="neuron.activated", payload={"id": "n"}),
        PayloadError,
        "payload",
    ),
    "payload-unknown-field": (
        NewEvent(
            stream="bad:x", kind="neuron.activated", payload={"id": "n", "strength": 1, "mood": 2}
        ),
        PayloadError,
        "payload",
    ),
    "payload-of-another-kind": (
        NewEvent(
            stream="bad:x",
            kind="neuron.activated",
            payload=NeuronCreated(id="n", concept="c", type="core"),
        ),
        PayloadError,
        "payload",
    ),
    "payload-weight-over-uint16": (
        NewEvent(
            stream="bad:x",
            kind="connection.created",
            payload=ConnectionCreated(source="a", target="b", type="recalls", weight=70_000),
        ),
        PayloadError,
        "payload.weight",
    ),
    "payload-importance-out-of-range": (
        NewEvent(
            stream="bad:x",
            kind="memory.observed",
            payload=MemoryObserved(agent="a", text="t", importance=0),
        ),
        PayloadError,
        "payload.importance",
    ),
    "payload-nested-item": (
        NewEvent(
            stream="bad:x",
            kind="memory.recalled",
            payload=MemoryRecalled(
                agent="a",
                query="q",
                items=[RecalledItem(position=1, score=0.5), RecalledItem(position=0, score=0.1)],
                as_of=datetime(2024, 1, 1, tzinfo=UTC),
            ),
        ),
        PayloadError,
        "payload.items[1].position",
    ),
    "naive-at": (act("bad:x", at=datetime(2024, 1, 1, 12, 0)), EnvelopeError, "at"),
    "at-not-a-datetime": (act("bad:x", at="2024-01-01T12:00:00Z"), EnvelopeError, "at"),
    "malformed-id": (act("bad:x", id="not-a-uuid"), EnvelopeError, "id"),
    "malformed-causation-id": (act("bad:x", causation_id="1234"), EnvelopeError, "causation_id"),
    "malformed-correlation-id": (
        act("bad:x", correlation_id="zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz"),
        EnvelopeError,
        "correlation_id",
    ),
    "empty-stream": (act(""), EnvelopeError, "stream"),
    "padded-stream": (act(" bad:x"), EnvelopeError, "stream"),
    "stream-too-long": (act("s" * 513), EnvelopeError, "stream"),
    "stream-not-a-str": (act(7), EnvelopeError, "stream"),  # type: ignore[arg-type]
    "empty-actor": (act("bad:x", actor=""), EnvelopeError, "actor"),
    # PostgreSQL text cannot hold NUL, and no driver can send a lone surrogate: refused up
    # front on every backend, never a StoreError that would fail a whole commit group.
    "stream-with-nul": (act("bad:x\x00y"), EnvelopeError, "stream"),
    "stream-with-lone-surrogate": (act("bad:\ud800"), EnvelopeError, "stream"),
    "actor-with-nul": (act("bad:x", actor="agent:\x00"), EnvelopeError, "actor"),
    "not-a-new-event": (
        {"stream": "bad:x", "kind": "neuron.activated", "payload": {"id": "n", "strength": 1}},
        EnvelopeError,
        None,
    ),
}


# -- the contract ----------------------------------------------------------------------------


class LedgerContract:
    """What every ledger backend promises. Subclasses provide the ``env`` fixture."""

    @pytest.fixture
    def env(self) -> Iterator[Env]:
        raise NotImplementedError("a backend's test class provides its Env")

    @pytest.fixture
    def ledger(self, env: Env) -> Ledger:
        return env.open()

    # -- positions and versions ------------------------------------------------------------

    def test_append_returns_gap_free_positions_starting_at_one(self, ledger: Ledger) -> None:
        assert ledger.head() == 0
        assert ledger.append(act("neuron:a", 1)) == [1]
        second = ledger.append([act("neuron:a", 2), act("neuron:b", 3), signal("agent:x")])
        assert second == [2, 3, 4]
        assert ledger.append([created("neuron:c"), act("neuron:c", 5)]) == [5, 6]
        assert ledger.head() == 6
        assert positions(ledger.read()) == [1, 2, 3, 4, 5, 6]

    def test_versions_count_from_one_within_each_stream(self, ledger: Ledger) -> None:
        ledger.append([act("neuron:a", 1), act("neuron:b", 1), act("neuron:a", 2)])
        ledger.append([act("neuron:b", 2)])
        ledger.append([act("neuron:a", 3), act("neuron:c", 1), act("neuron:a", 4)])

        assert [(e.stream, e.version) for e in ledger.read()] == [
            ("neuron:a", 1),
            ("neuron:b", 1),
            ("neuron:a", 2),
            ("neuron:b", 2),
            ("neuron:a", 3),
            ("neuron:c", 1),
            ("neuron:a", 4),
        ]
        assert [e.version for e in ledger.read_stream("neuron:a")] == [1, 2, 3, 4]
        assert [e.payload.id for e in ledger.read_stream("neuron:a")] == ["n1", "n2", "n3", "n4"]

    # -- optimistic concurrency ------------------------------------------------------------

    def test_no_stream_succeeds_once_then_conflicts(self, ledger: Ledger) -> None:
        assert ledger.append(act("neuron:a"), expect=NO_STREAM) == [1]
        with pytest.raises(ConcurrencyError, match="expected not to exist") as caught:
            ledger.append(act("neuron:a"), expect=NO_STREAM)
        assert conflict(caught.value) == ("neuron:a", NO_STREAM, 1)
        assert ledger.head() == 1

    def test_an_exact_version_must_be_the_current_one(
        self, ledger: Ledger, subtests: pytest.Subtests
    ) -> None:
        ledger.append([act("neuron:a", 1), act("neuron:a", 2), act("neuron:a", 3)])
        for stale in (1, 2, 4):
            with subtests.test(expect=stale):
                with pytest.raises(
                    ConcurrencyError, match=f"expected at version {stale}, but is at 3"
                ) as caught:
                    ledger.append(act("neuron:a", 9), expect=stale)
                assert conflict(caught.value) == ("neuron:a", stale, 3)
                assert ledger.head() == 3

        assert ledger.append(act("neuron:a", 4), expect=3) == [4]
        assert [e.version for e in ledger.read_stream("neuron:a")] == [1, 2, 3, 4]

    def test_an_exact_version_of_a_missing_stream_conflicts_with_actual_zero(
        self, ledger: Ledger
    ) -> None:
        with pytest.raises(ConcurrencyError) as caught:
            ledger.append(act("neuron:ghost"), expect=1)
        assert (caught.value.stream, caught.value.actual) == ("neuron:ghost", 0)
        assert ledger.head() == 0

    def test_any_never_conflicts(self, ledger: Ledger) -> None:
        assert ledger.append(act("neuron:a"), expect=ANY) == [1]
        assert ledger.append(act("neuron:a"), expect=ANY) == [2]
        assert ledger.append([act("neuron:a"), act("neuron:b")], expect={"neuron:a": ANY}) == [3, 4]

    def test_a_mapping_sets_one_expectation_per_stream(self, ledger: Ledger) -> None:
        ledger.append([act("neuron:a"), act("neuron:a")])
        batch = [act("neuron:a", 3), act("neuron:b", 1), act("neuron:c", 1)]
        assert ledger.append(batch, expect={"neuron:a": 2, "neuron:b": NO_STREAM}) == [3, 4, 5]

        # One stream off: the whole batch is refused, the streams that fit included.
        with pytest.raises(ConcurrencyError) as caught:
            ledger.append(
                [act("neuron:a", 4), act("neuron:b", 2), act("neuron:d", 1)],
                expect={"neuron:a": 3, "neuron:b": 5, "neuron:d": NO_STREAM},
            )
        assert conflict(caught.value) == ("neuron:b", 5, 1)
        assert ledger.head() == 5
        assert list(ledger.read(streams=["neuron:d"])) == []
        assert [e.version for e in ledger.read_stream("neuron:a")] == [1, 2, 3]

    def test_no_stream_for_a_multi_stream_batch_applies_to_every_stream(
        self, ledger: Ledger
    ) -> None:
        ledger.append(act("neuron:b"))
        with pytest.raises(ConcurrencyError) as caught:
            ledger.append([act("neuron:a"), act("neuron:b")], expect=NO_STREAM)
        assert caught.value.stream == "neuron:b"
        assert ledger.head() == 1
        assert ledger.append([act("neuron:a"), act("neuron:c")], expect=NO_STREAM) == [2, 3]

    def test_an_int_expectation_for_a_multi_stream_batch_is_refused(self, ledger: Ledger) -> None:
        ledger.append([act("neuron:a"), act("neuron:b")])
        with pytest.raises(EnvelopeError, match="ambiguous") as caught:
            ledger.append([act("neuron:a"), act("neuron:b")], expect=1)
        assert caught.value.field == "expect"
        assert ledger.head() == 2

    def test_malformed_expectations_are_refused(
        self, ledger: Ledger, subtests: pytest.Subtests
    ) -> None:
        for expect in (0, -1, True, "1", 1.0, None):
            with subtests.test(expect=expect):
                with pytest.raises(EnvelopeError) as caught:
                    ledger.append(act("neuron:a"), expect=expect)  # type: ignore[arg-type]
                assert caught.value.field == "expect"
                with pytest.raises(EnvelopeError) as caught:
                    ledger.append(act("neuron:a"), expect={"neuron:a": expect})  # type: ignore[dict-item]
                assert caught.value.field == "expect"
                assert ledger.head() == 0

    def test_a_mapping_naming_a_stream_outside_the_batch_is_refused(self, ledger: Ledger) -> None:
        with pytest.raises(EnvelopeError, match="'neuron:z'") as caught:
            ledger.append(act("neuron:a"), expect={"neuron:a": NO_STREAM, "neuron:z": NO_STREAM})
        assert caught.value.field == "expect"
        assert ledger.head() == 0

    # -- idempotency -----------------------------------------------------------------------

    def test_re_appending_the_same_ids_returns_the_original_positions(self, ledger: Ledger) -> None:
        ledger.append(signal("agent:other"))
        batch = [act("neuron:a", 1, id=new_id()), act("neuron:b", 2, id=new_id())]
        first = ledger.append(batch, expect=NO_STREAM)
        assert first == [2, 3]

        # A retry is not a conflict, whatever the (now stale) expectation says.
        assert ledger.append(batch) == first
        assert ledger.append(batch, expect=NO_STREAM) == first
        assert ledger.append(batch, expect={"neuron:a": 7, "neuron:b": NO_STREAM}) == first
        assert ledger.append(batch[1], expect=5) == [3]
        assert ledger.head() == 3
        assert [e.id for e in ledger.read(after=1)] == [e.id for e in batch]

    def test_a_retry_without_explicit_times_and_with_upper_case_ids_is_the_same_batch(
        self, ledger: Ledger
    ) -> None:
        # `at` taken at append differs between the attempts; ids are compared normalized.
        ids = [new_id(), new_id()]
        first = ledger.append([act("neuron:a", 1, id=ids[0]), signal("agent:x", id=ids[1])])
        time.sleep(0.002)
        retry = [act("neuron:a", 1, id=ids[0].upper()), signal("agent:x", id=ids[1].upper())]
        assert ledger.append(retry) == first
        assert [e.id for e in ledger.read()] == ids

    def test_the_same_id_with_other_content_is_refused(
        self, ledger: Ledger, subtests: pytest.Subtests
    ) -> None:
        original = act("neuron:a", 1, id=new_id())
        ledger.append(original)
        other_id = "0190a6f0-1b2c-7d3e-8f40-123456789abc"
        changes: dict[str, dict[str, Any]] = {
            "payload": {"payload": NeuronActivated(id="n1", strength=2.0, cause="test")},
            "stream": {"stream": "neuron:elsewhere"},
            "actor": {"actor": "agent:mallory"},
            "kind": {
                "kind": "neuron.created",
                "payload": NeuronCreated(id="n1", concept="c", type="core"),
            },
            "causation_id": {"causation_id": other_id},
            "correlation_id": {"correlation_id": other_id},
        }
        for name, change in changes.items():
            with subtests.test(changed=name):
                changed = msgspec.structs.replace(original, **change)
                with pytest.raises(
                    IdempotencyError, match="already stored at position 1 with other content"
                ):
                    ledger.append(changed)
                with pytest.raises(IdempotencyError):
                    ledger.append([act("neuron:b"), changed])
                assert ledger.head() == 1
                assert [e.payload for e in ledger.read()] == [original.payload]

    def test_a_partial_retry_is_refused_and_writes_nothing(self, ledger: Ledger) -> None:
        stored = [act("neuron:a", 1, id=new_id()), act("neuron:a", 2, id=new_id())]
        ledger.append(stored)
        fresh = act("neuron:a", 3, id=new_id())
        with pytest.raises(IdempotencyError, match="already stored") as caught:
            ledger.append([stored[0], fresh])
        assert "event #1" in str(caught.value)
        with pytest.raises(IdempotencyError):
            ledger.append([fresh, *stored])
        assert ledger.head() == 2
        assert fresh.id not in {e.id for e in ledger.read()}

    def test_a_batch_repeating_an_id_is_refused(self, ledger: Ledger) -> None:
        ledger.append(act("neuron:z"))
        same = new_id()
        with pytest.raises(IdempotencyError, match="appears twice"):
            ledger.append(
                [act("neuron:a", 1, id=same), act("neuron:b", 2), act("neuron:a", 3, id=same)]
            )
        with pytest.raises(IdempotencyError, match="appears twice"):
            ledger.append([act("neuron:a", 1, id=same), act("neuron:a", 1, id=same.upper())])
        assert ledger.head() == 1

    # -- bad input -------------------------------------------------------------------------

    def test_a_bad_event_in_the_middle_of_a_batch_writes_nothing(
        self, ledger: Ledger, subtests: pytest.Subtests
    ) -> None:
        ledger.append([act("neuron:a", 1), act("neuron:b", 2)])
        for case, (bad, error, field) in BAD_EVENTS.items():
            with subtests.test(case=case):
                batch = [act("neuron:first", 3), bad, act("neuron:last", 4)]

                with pytest.raises(error) as caught:
                    ledger.append(batch)

                assert type(caught.value) is error
                assert caught.value.index == 1
                assert caught.value.field == field
                assert str(caught.value).startswith("event #1")
                if field and field.startswith("payload."):
                    # msgspec's path, e.g. `$.strength`, is in the message
                    assert f"`${field.removeprefix('payload')}`" in str(caught.value)
                assert ledger.head() == 2
                assert list(ledger.read(streams=["neuron:first", "neuron:last", "bad:x"])) == []

    def test_an_empty_or_non_sequence_batch_is_refused(
        self, ledger: Ledger, subtests: pytest.Subtests
    ) -> None:
        ledger.append(act("neuron:z"))
        cases: dict[str, tuple[Any, int | None]] = {
            "empty-list": ([], None),
            "empty-tuple": ((), None),
            "iterator": (iter([act("neuron:a")]), None),
            "set": ({act("neuron:a")}, None),
            "none": (None, None),
            "str": ("neuron:a", 0),  # a str is a sequence, of things that are not NewEvents
        }
        for case, (batch, index) in cases.items():
            with subtests.test(case=case):
                with pytest.raises(EnvelopeError) as caught:
                    ledger.append(batch)
                assert caught.value.index == index
                assert ledger.head() == 1

    def test_payloads_over_the_configured_limit_are_refused(self, env: Env) -> None:
        text = "é" * 40  # 80 bytes of UTF-8
        fits = MemoryObserved(agent="a", text=text)
        limit = len(msgspec.json.encode(fits, order="sorted"))
        ledger = env.open(max_payload_bytes=limit)

        at_limit = NewEvent(stream="agent:a", kind="memory.observed", payload=fits)
        assert ledger.append(at_limit) == [1]
        too_big = NewEvent(
            stream="agent:a",
            kind="memory.observed",
            payload=MemoryObserved(agent="a", text=text + "e"),
        )
        with pytest.raises(
            PayloadError, match=f"{limit + 1} bytes, over the limit of {limit}"
        ) as caught:
            ledger.append([act("neuron:a"), too_big])
        assert (caught.value.index, caught.value.field) == (1, "payload")
        assert ledger.head() == 1

    # -- reading ---------------------------------------------------------------------------

    @pytest.fixture
    def eight(self, ledger: Ledger) -> Ledger:
        ledger.append([act("a", 1), created("b"), act("a", 3)])
        ledger.append(signal("c"))
        ledger.append([act("b", 5), signal("a"), created("c"), act("a", 8)])
        return ledger

    def test_read_filters(self, eight: Ledger, subtests: pytest.Subtests) -> None:
        everything = {e.position: e for e in eight.read()}
        assert sorted(everything) == [1, 2, 3, 4, 5, 6, 7, 8]
        cases: list[tuple[dict[str, Any], list[int]]] = [
            ({}, [1, 2, 3, 4, 5, 6, 7, 8]),
            ({"after": 5}, [6, 7, 8]),
            ({"after": 8}, []),
            ({"after": 80}, []),
            ({"kinds": ["neuron.activated"]}, [1, 3, 5, 8]),
            ({"kinds": "signal.sent"}, [4, 6]),
            ({"kinds": ["neuron.created", "signal.sent"]}, [2, 4, 6, 7]),
            ({"kinds": ["memory.observed"]}, []),
            ({"streams": ["a", "c"]}, [1, 3, 4, 6, 7, 8]),
            ({"streams": "b"}, [2, 5]),
            ({"limit": 3}, [1, 2, 3]),
            ({"after": 2, "limit": 2}, [3, 4]),
            ({"limit": 0}, []),
            ({"upto": 4}, [1, 2, 3, 4]),
            ({"after": 2, "upto": 5}, [3, 4, 5]),
            ({"upto": 0}, []),
            (
                {
                    "after": 1,
                    "kinds": ["neuron.activated", "signal.sent"],
                    "streams": ["a"],
                    "limit": 2,
                },
                [3, 6],
            ),
            ({"kinds": ["neuron.activated"], "streams": ["a"], "upto": 7}, [1, 3]),
        ]
        for options, expected in cases:
            with subtests.test(**options):
                got = list(eight.read(**options))
                assert positions(got) == expected
                assert got == [everything[p] for p in expected]

    def test_read_refuses_malformed_arguments(
        self, eight: Ledger, subtests: pytest.Subtests
    ) -> None:
        for options in (
            {"after": -1},
            {"after": "1"},
            {"after": True},
            {"kinds": []},
            {"streams": [1]},
        ):
            with subtests.test(**options), pytest.raises(ConfigError):
                list(eight.read(**options))

    def test_get_returns_events_in_the_order_asked(self, eight: Ledger) -> None:
        everything = {e.position: e for e in eight.read()}
        assert eight.get([7, 2, 7, 5]) == [
            everything[7],
            everything[2],
            everything[7],
            everything[5],
        ]
        assert eight.get([]) == []

    def test_get_reads_more_positions_than_one_sql_list(self, ledger: Ledger) -> None:
        ledger.append([signal("agent:many", f"t{i}") for i in range(1200)])
        wanted = list(range(1200, 0, -3))
        assert [e.position for e in ledger.get(wanted)] == wanted

    def test_get_refuses_a_missing_or_malformed_position(
        self, eight: Ledger, subtests: pytest.Subtests
    ) -> None:
        for bad in ([9], [0], [-1], ["3"], [True]):
            with subtests.test(positions=bad), pytest.raises(ConfigError):
                eight.get(bad)

    def test_wait_returns_the_head_once_it_passes(self, eight: Ledger) -> None:
        assert eight.wait(3, timeout=5) == 8
        started = time.monotonic()
        assert eight.wait(8, timeout=0.05) == 8
        assert time.monotonic() - started >= 0.04
        with pytest.raises(ConfigError):
            eight.wait(8, timeout=-1)

    def test_read_stream_yields_one_stream_in_version_order(self, eight: Ledger) -> None:
        def versions_and_positions(after_version: int = 0) -> list[tuple[int, int]]:
            return [(e.version, e.position) for e in eight.read_stream("a", after_version)]

        assert versions_and_positions() == [(1, 1), (2, 3), (3, 6), (4, 8)]
        assert versions_and_positions(2) == [(3, 6), (4, 8)]
        assert list(eight.read_stream("a", after_version=4)) == []
        assert list(eight.read_stream("nowhere")) == []
        with pytest.raises(ConfigError):
            list(eight.read_stream("a", after_version=-1))

    def test_versions_name_each_stream_s_committed_version(self, eight: Ledger) -> None:
        streams = [e.stream for e in eight.read()]
        expected = {s: streams.count(s) for s in streams}
        assert eight.versions([*expected, "nowhere"]) == {**expected, "nowhere": 0}
        assert eight.versions(["a", "a"]) == {"a": 4}
        with pytest.raises(ConfigError):
            eight.versions([""])

    def test_reads_page_through_more_events_than_one_page(self, ledger: Ledger) -> None:
        n = 10_100  # more than two pages of either backend (500 rows, 5000 rows)
        ledger.append([signal("agent:many" if i % 2 else "agent:other", f"t{i}") for i in range(n)])
        assert positions(ledger.read()) == list(range(1, n + 1))
        assert positions(ledger.read(after=10, limit=10_050)) == list(range(11, 10_061))
        assert positions(ledger.read(streams=["agent:many"], after=2)) == list(range(4, n + 1, 2))
        assert [e.version for e in ledger.read_stream("agent:many", after_version=5)] == list(
            range(6, n // 2 + 1)
        )

    # -- round trip ------------------------------------------------------------------------

    def test_events_round_trip_with_their_envelope(self, ledger: Ledger) -> None:
        at = datetime(
            2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=-5, minutes=-30))
        )
        payload = MemoryObserved(
            agent="inner",
            text='naïve café — 東京 🙂 "quoted" \\ \n\x00 end',
            type="thought",
            importance=7,
            tags=["ü", "x"],
            source="chat:42",
        )
        event_id, cause, corr = new_id(), new_id(), new_id()
        ledger.append(signal("agent:other"))
        [position] = ledger.append(
            NewEvent(
                stream="agent:inner",
                kind="memory.observed",
                payload=payload,
                actor="agent:inner",
                id=event_id.upper(),
                at=at,
                causation_id=cause,
                correlation_id=corr.upper(),
            )
        )
        [got] = ledger.read(after=1)

        assert type(got.payload) is MemoryObserved
        assert got.payload == payload
        assert (got.position, got.id, got.stream, got.version) == (
            position,
            event_id,
            "agent:inner",
            1,
        )
        assert (got.kind, got.schema, got.actor) == ("memory.observed", 1, "agent:inner")
        assert (got.causation_id, got.correlation_id) == (cause, corr)
        assert got.at == at
        assert got.at.utcoffset() == timedelta(0)
        assert got.at.replace(tzinfo=None) == datetime(2024, 5, 6, 12, 38, 9, 123456)
        assert isinstance(got.hash, bytes)
        assert len(got.hash) == 32
        assert list(ledger.read_stream("agent:inner")) == [got]

    def test_mapping_payloads_are_read_back_as_structs_and_at_defaults_to_now(
        self, ledger: Ledger
    ) -> None:
        as_of = datetime(2023, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
        before = datetime.now(UTC)
        ledger.append(
            [
                NewEvent(
                    stream="agent:inner",
                    kind="memory.recalled",
                    payload={
                        "agent": "inner",
                        "query": "where?",
                        "items": [{"position": 1, "score": 0.25}, {"position": 7, "score": -1.5}],
                        "as_of": as_of,
                    },
                ),
                NewEvent(
                    stream="neuron:a", kind="neuron.activated", payload={"id": "a", "strength": 3}
                ),
            ]
        )
        after = datetime.now(UTC)
        recalled, activated = ledger.read()
        assert recalled.payload == MemoryRecalled(
            agent="inner",
            query="where?",
            items=[RecalledItem(position=1, score=0.25), RecalledItem(position=7, score=-1.5)],
            as_of=as_of,
        )
        assert activated.payload == NeuronActivated(id="a", strength=3.0, cause="")
        assert (recalled.causation_id, recalled.correlation_id) == (None, None)
        assert recalled.actor == "system"
        assert before <= recalled.at <= after
        assert recalled.at == activated.at  # one batch, one clock reading

    # -- schemas and kinds -----------------------------------------------------------------

    def test_old_payloads_are_upcast_on_read_and_stored_bytes_never_change(self, env: Env) -> None:
        with env.open(registry_v1()) as old:
            old.append(
                [
                    NewEvent(
                        stream="user:ada", kind="test.greeted", payload=GreetedV1("Ada Lovelace")
                    ),
                    act("neuron:a"),
                ]
            )
            assert old.verify().ok
        stored_before = env.run("SELECT position, payload, hash FROM events ORDER BY position")

        new = env.open(registry_v2())
        first, _ = new.read()
        assert first.payload == GreetedV2(first="Ada", last="Lovelace")
        new.append(
            NewEvent(stream="user:ada", kind="test.greeted", payload=GreetedV2("Alan", "Turing"))
        )
        assert [e.payload for e in new.read_stream("user:ada")] == [
            GreetedV2("Ada", "Lovelace"),
            GreetedV2("Alan", "Turing"),
        ]

        stored_after = env.run("SELECT position, payload, hash FROM events ORDER BY position")
        assert [(p, bytes(b), bytes(h)) for p, b, h in stored_after[:2]] == [
            (p, bytes(b), bytes(h)) for p, b, h in stored_before
        ]
        assert bytes(stored_before[0][1]) == b'{"name":"Ada Lovelace"}'
        report = new.verify()
        assert report.ok, report
        assert report.checked == 3
        assert env.open(registry_v1()).verify().ok

    def test_a_schema_newer_than_the_reader_knows_is_an_error_on_read(self, env: Env) -> None:
        with env.open(registry_v2()) as writer:
            writer.append(
                [
                    act("neuron:a"),
                    NewEvent(stream="user:ada", kind="test.greeted", payload=GreetedV2("Ada", "L")),
                ]
            )
        reader = env.open(registry_v1())
        with pytest.raises(KindRegistryError, match="newer than this program's schema 1"):
            list(reader.read())
        assert positions(reader.read(kinds=["neuron.activated"])) == [1]
        assert reader.verify().ok

    def test_kinds_the_reader_does_not_know_are_read_as_plain_dicts(self, env: Env) -> None:
        with env.open(registry_v1()) as writer:
            writer.append(
                [
                    NewEvent(stream="user:ada", kind="test.greeted", payload=GreetedV1("Ada")),
                    act("neuron:a", 1),
                ]
            )
        reader = env.open()  # default_registry(): no test.greeted
        greeted, activated = reader.read()
        assert greeted.payload == {"name": "Ada"}
        assert type(greeted.payload) is dict
        assert activated.payload == NeuronActivated(id="n1", strength=1.0, cause="test")
        assert reader.verify().ok
        with pytest.raises(UnknownKindError):
            reader.append(NewEvent(stream="user:ada", kind="test.greeted", payload={"name": "Bob"}))
        assert reader.head() == 2

    def test_one_read_decodes_current_upcast_and_unknown_kinds_across_pages(self, env: Env) -> None:
        greeted = NewEvent(stream="user:ada", kind="test.greeted", payload=GreetedV1("Ada L"))
        with env.open(registry_v1()) as writer:
            writer.append([greeted, *[act("neuron:a", i % 7) for i in range(5001)], greeted])
        with env.open(registry_v2()) as reader:
            events = list(reader.read())
            assert [e.payload for e in (events[0], events[-1])] == [GreetedV2("Ada", "L")] * 2
            assert (events[-1].position, events[-1].schema) == (5003, 1)
            assert all(type(e.payload) is NeuronActivated for e in events[1:-1])
            assert [e.payload.strength for e in events[1:8]] == [float(i) for i in range(7)]
            assert all(e.at.tzinfo is UTC for e in events)
        with env.open() as plain:  # no test.greeted: plain dicts, the rest as Structs
            first, second = plain.read(limit=2)
            assert first.payload == {"name": "Ada L"}
            assert second.payload == NeuronActivated(id="n0", strength=0.0, cause="test")

    def test_a_read_leaves_the_garbage_collector_as_it_found_it(self, ledger: Ledger) -> None:
        ledger.append([act("neuron:a") for _ in range(20)])
        events = ledger.read()
        next(events)  # a page is built; the caller holds the generator between events
        assert gc.isenabled()
        events.close()
        gc.disable()
        try:
            assert len(list(ledger.read())) == 20
            assert not gc.isenabled()
        finally:
            gc.enable()

    def test_events_built_with_of_store_the_kind_of_their_payload(self, ledger: Ledger) -> None:
        (position,) = ledger.append(
            NewEvent.of(SignalSent(to="*", topic="hello"), stream="agent:ada", actor="ada")
        )
        (event,) = ledger.get([position])
        assert (event.kind, event.actor, event.payload) == (
            "signal.sent",
            "ada",
            SignalSent(to="*", topic="hello"),
        )

    # -- append-only and tamper evidence ---------------------------------------------------

    def test_the_database_refuses_updates_deletes_and_replacements(
        self, env: Env, ledger: Ledger, subtests: pytest.Subtests
    ) -> None:
        ledger.append([act("neuron:a", 1), act("neuron:a", 2), signal("agent:x")])
        before = list(ledger.read())
        statements = (
            "UPDATE events SET actor = 'mallory' WHERE position = 1",
            "UPDATE events SET payload = payload",
            "DELETE FROM events WHERE position = 2",
            "DELETE FROM events",
            *env.extra_refused,
        )
        for statement in statements:
            with subtests.test(statement=statement):
                with pytest.raises(env.driver_error, match=APPEND_ONLY_MESSAGE):
                    env.run(statement)
                assert list(ledger.read()) == before
        assert ledger.verify().ok

    def test_verify_an_empty_ledger(self, ledger: Ledger) -> None:
        report = ledger.verify()
        assert (report.ok, report.checked, report.head, report.head_hash) == (True, 0, 0, "00" * 32)
        assert (report.first_bad, report.reason) == (None, None)

    @pytest.fixture
    def five(self, env: Env, ledger: Ledger) -> Ledger:
        ledger.append([act("neuron:a", 1), act("neuron:b", 2)])
        ledger.append([act("neuron:a", 3), signal("agent:x")])
        ledger.append(act("neuron:a", 5))
        report = ledger.verify()
        assert report.ok, report
        assert (report.checked, report.head, report.first_bad) == (5, 5, None)
        assert report.head_hash == list(ledger.read())[-1].hash.hex()
        env.disable_triggers()
        return ledger

    def test_verify_names_an_edited_row(
        self, env: Env, five: Ledger, subtests: pytest.Subtests
    ) -> None:
        edits: dict[str, object] = {
            "payload": b'{"cause":"test","id":"n3","strength":300.0}',
            "actor": "agent:mallory",
            "stream": "neuron:c",
            "version": 9,
            "hash": bytes(32),
        }
        for column, value in edits.items():
            with subtests.test(column=column):
                [(original,)] = env.run(f"SELECT {column} FROM events WHERE position = 3")
                env.run((f"UPDATE events SET {column} = ? WHERE position = 3", (value,)))
                try:
                    report = five.verify()
                    assert not report.ok
                    assert (report.first_bad, report.checked) == (3, 2)
                    assert "hash mismatch" in (report.reason or "")
                    assert "FAILED at position 3" in str(report)
                finally:
                    env.run((f"UPDATE events SET {column} = ? WHERE position = 3", (original,)))
                assert five.verify().ok  # the chain is about content: restored, it holds again

    def test_verify_names_a_deleted_row(self, env: Env, five: Ledger) -> None:
        env.run("DELETE FROM events WHERE position = 3")
        report = five.verify()
        assert not report.ok
        assert (report.first_bad, report.checked) == (3, 2)
        assert "position 3 is missing" in (report.reason or "")

    def test_verify_names_the_lower_of_two_swapped_rows(self, env: Env, five: Ledger) -> None:
        columns = ", ".join(COLUMNS)
        row2, row4 = env.run(
            f"SELECT {columns} FROM events WHERE position IN (2, 4) ORDER BY position"
        )
        insert = f"INSERT INTO events ({columns}) VALUES ({', '.join('?' * len(COLUMNS))})"
        env.run(
            "DELETE FROM events WHERE position IN (2, 4)",
            (insert, (2, *row4[1:])),
            (insert, (4, *row2[1:])),
        )
        kinds = [e.kind for e in five.read()]
        assert kinds[1:4] == ["signal.sent", "neuron.activated", "neuron.activated"]
        report = five.verify()
        assert not report.ok
        assert (report.first_bad, report.checked) == (2, 1)

    def test_dropping_the_newest_rows_shows_only_against_a_recorded_head_hash(
        self, env: Env, five: Ledger
    ) -> None:
        # A hash chain cannot see a truncated tail by itself: keep the head hash elsewhere.
        recorded = five.verify().head_hash
        env.run("DELETE FROM events WHERE position = 5")
        report = five.verify()
        assert report.ok
        assert report.head == 4
        assert report.head_hash != recorded

    # -- lifecycle -------------------------------------------------------------------------

    def test_a_closed_ledger_refuses_every_call(self, env: Env, subtests: pytest.Subtests) -> None:
        with env.open() as ledger:
            ledger.append(act("neuron:a"))
        ledger.close()  # closing twice is harmless
        uses: dict[str, Callable[[Ledger], object]] = {
            "append": lambda ledger: ledger.append(act("neuron:a")),
            "head": lambda ledger: ledger.head(),
            "read": lambda ledger: list(ledger.read()),
            "read_stream": lambda ledger: list(ledger.read_stream("neuron:a")),
            "follow": lambda ledger: list(ledger.follow(timeout=0.1)),
            "verify": lambda ledger: ledger.verify(),
        }
        for name, use in uses.items():
            with subtests.test(call=name), pytest.raises(LedgerClosedError, match="closed"):
                use(ledger)
        with env.open() as reopened:
            assert reopened.head() == 1

    def test_reopening_keeps_every_event_and_the_hash_chain(self, env: Env) -> None:
        with env.open() as first:
            first.append([act("neuron:a", 1), signal("agent:x")])
            first.append(act("neuron:a", 3))
            events = list(first.read())
            report = first.verify()
        with env.open() as second:
            assert second.head() == 3
            assert list(second.read()) == events
            assert second.verify() == report
            assert second.append(act("neuron:a", 4), expect=2) == [4]
            [fourth] = second.read(after=3)
            assert fourth.version == 3
            assert second.verify().ok

    def test_options_are_checked_when_opening(self, env: Env) -> None:
        with pytest.raises(ConfigError, match="durability"):
            env.open(durability="sometimes")
        with pytest.raises(ConfigError, match="max_payload_bytes"):
            env.open(max_payload_bytes=0)
        with pytest.raises(ConfigError, match="unsupported ledger URL"):
            Ledger.open("mysql://127.0.0.1/test")

    # -- follow ----------------------------------------------------------------------------

    def test_follow_yields_what_another_writer_appends_then_stops_when_idle(
        self, env: Env, ledger: Ledger
    ) -> None:
        ledger.append(act("neuron:a", 1))
        writer = env.open()
        failures: list[BaseException] = []
        written: list[int] = []

        def write() -> None:
            try:
                for i in range(3):
                    time.sleep(0.05)
                    written.extend(writer.append([act("neuron:a", 10 + i), signal("agent:x")]))
            except BaseException as exc:
                failures.append(exc)

        thread = threading.Thread(target=write)
        idle = 1.0
        start = last_seen = time.monotonic()
        thread.start()
        seen: list[Event] = []
        for event in ledger.follow(after=1, timeout=idle):
            seen.append(event)
            last_seen = time.monotonic()
        stopped = time.monotonic()
        thread.join(10)

        assert not failures, failures
        assert positions(seen) == written == [2, 3, 4, 5, 6, 7]
        assert [e.payload.id for e in seen if e.kind == "neuron.activated"] == ["n10", "n11", "n12"]
        assert idle <= stopped - last_seen < idle + 2.0
        assert stopped - start < 10

    def test_follow_first_catches_up_and_applies_filters(self, ledger: Ledger) -> None:
        ledger.append([act("neuron:a"), signal("agent:x"), act("neuron:b"), signal("agent:y")])
        start = time.monotonic()
        got = list(ledger.follow(kinds=["signal.sent"], timeout=0.2))
        assert positions(got) == [2, 4]
        assert positions(ledger.follow(after=1, streams=["neuron:b"], timeout=0.1)) == [3]
        assert time.monotonic() - start < 5

    def test_follow_stops_when_asked(self, ledger: Ledger) -> None:
        ledger.append(act("neuron:a"))
        stop = threading.Event()
        timer = threading.Timer(0.2, stop.set)
        timer.start()
        start = time.monotonic()
        try:
            assert positions(ledger.follow(stop=stop)) == [1]
        finally:
            timer.cancel()
        assert time.monotonic() - start < 5

    # -- concurrency -----------------------------------------------------------------------

    def test_concurrent_writers_get_distinct_gap_free_positions(
        self, env: Env, ledger: Ledger
    ) -> None:
        other = env.open()  # two write paths: group commit within one, the database lock between
        threads, rounds = 6, 8
        barrier = threading.Barrier(threads)
        acked: list[tuple[list[int], list[NewEvent]]] = []
        conflicts: list[ConcurrencyError] = []
        failures: list[BaseException] = []
        lock = threading.Lock()

        def work(k: int) -> None:
            mine = ledger if k % 2 else other
            try:
                barrier.wait(10)
                for i in range(rounds):
                    if i % 2:
                        batch = [
                            act(f"neuron:w{k}", i, id=new_id()),
                            signal("agent:shared", f"{k}:{i}", id=new_id()),
                        ]
                        expect: Any = ANY
                    else:
                        version = sum(1 for _ in mine.read_stream("agent:shared"))
                        batch = [signal("agent:shared", f"{k}:{i}", id=new_id())]
                        expect = version or NO_STREAM
                    try:
                        got = mine.append(batch, expect=expect)
                    except ConcurrencyError as exc:
                        with lock:
                            conflicts.append(exc)
                        continue
                    with lock:
                        acked.append((got, batch))
            except BaseException as exc:
                failures.append(exc)

        workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join(60)
        assert not failures, failures

        head = ledger.head()
        stored = {e.position: e for e in ledger.read()}
        assert sorted(stored) == list(range(1, head + 1))
        assert sorted(p for got, _ in acked for p in got) == list(range(1, head + 1))
        for got, batch in acked:
            assert got == list(range(got[0], got[0] + len(batch)))  # a batch is contiguous
            assert [stored[p].id for p in got] == [e.id for e in batch]
            assert [stored[p].payload for p in got] == [e.payload for e in batch]
        assert [e.version for e in ledger.read_stream("agent:shared")] == list(
            range(1, sum(1 for e in stored.values() if e.stream == "agent:shared") + 1)
        )
        for exc in conflicts:
            assert exc.stream == "agent:shared"
            assert exc.actual != exc.expected
        report = ledger.verify()
        assert report.ok, report
        assert report.checked == head


# -- backends --------------------------------------------------------------------------------


class TestSQLiteLedger(LedgerContract):
    @pytest.fixture
    def env(self, tmp_ledger_path: str) -> Iterator[Env]:
        env = SQLiteEnv(tmp_ledger_path)
        yield env
        env.close()


@pytest.mark.postgres
class TestPostgresLedger(LedgerContract):
    @pytest.fixture
    def env(self, pg_dsn: str, pg_schema: str) -> Iterator[Env]:
        env = PostgresEnv(pg_dsn, pg_schema)
        yield env
        env.close()
