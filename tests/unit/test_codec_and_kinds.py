"""Event ids, event time text, payload encoding and the kind registry, without a database."""

from __future__ import annotations

import itertools
import os
import time
import uuid
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

import msgspec
import pytest

from engram.ledger import (
    EnvelopeError,
    KindRegistry,
    KindRegistryError,
    PayloadError,
    default_registry,
)
from engram.ledger.catalog import (
    KINDS,
    ConnectionCreated,
    MemoryObserved,
    MemoryRecalled,
    NeuronActivated,
    NeuronCreated,
    RecalledItem,
)
from engram.ledger.codec import canonical, decode_payload, encode_payload, format_at
from engram.ledger.ids import new_id, new_ids, normalize_id
from engram.ledger.kinds import KindSpec

LIMIT = 1 << 20


def spec_of(kind: str) -> KindSpec:
    spec = default_registry().get(kind)
    assert spec is not None
    return spec


# -- ids -------------------------------------------------------------------------------------


def test_new_id_is_a_canonical_uuid_v7_carrying_the_current_time() -> None:
    before = time.time_ns() // 1_000_000
    value = new_id()
    after = time.time_ns() // 1_000_000

    parsed = uuid.UUID(value)
    assert str(parsed) == value  # lowercase, hyphenated
    assert parsed.version == 7
    assert parsed.variant == uuid.RFC_4122
    assert before <= parsed.int >> 80 <= after + 1


def test_new_id_is_strictly_increasing_in_a_tight_loop() -> None:
    ids = [new_id() for _ in range(10_000)]
    # Fixed-width lowercase hex: text order is numeric order.
    assert all(a < b for a, b in itertools.pairwise(ids))
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 7 for i in ids[::97])


def test_new_ids_borrow_the_next_millisecond_when_the_counter_runs_out() -> None:
    # A batch larger than the 12-bit counter's room crosses into borrowed milliseconds; its
    # ids stay increasing, canonical, and carry the millisecond they were counted in.
    ids = new_ids(3 * 4096)
    assert all(a < b for a, b in itertools.pairwise(ids))
    parsed = [uuid.UUID(i) for i in ids]
    assert all(
        str(p) == i and p.version == 7 and p.variant == uuid.RFC_4122
        for p, i in zip(parsed, ids, strict=True)
    )
    millis = [p.int >> 80 for p in parsed]
    assert millis[-1] - millis[0] >= 2  # at most 4096 ids a millisecond
    assert all(b - a in (0, 1) for a, b in itertools.pairwise(millis))
    assert new_id() > ids[-1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_new_id_does_not_repeat_in_a_forked_child() -> None:
    # The child inherits the generator's state; without a reseed after fork, parent and child
    # would produce the very same ids in the same millisecond.
    new_id()  # the generator is warm in the parent before the fork
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read_fd)
            payload = "\n".join(new_id() for _ in range(5_000)).encode()
            with os.fdopen(write_fd, "wb") as out:
                out.write(payload)
        finally:
            os._exit(0)
    os.close(write_fd)
    parent = {new_id() for _ in range(5_000)}
    with os.fdopen(read_fd, "rb") as pipe:
        child = set(pipe.read().decode().split("\n"))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(child) == 5_000
    assert not parent & child


@pytest.mark.parametrize(
    "value",
    [
        "0190A6F0-1B2C-7D3E-8F40-123456789ABC",
        "{0190a6f0-1b2c-7d3e-8f40-123456789abc}",
        "urn:uuid:0190a6f0-1b2c-7d3e-8f40-123456789abc",
        "0190a6f01b2c7d3e8f40123456789abc",
        uuid.UUID("0190a6f0-1b2c-7d3e-8f40-123456789abc"),
        "0190a6f0-1b2c-7d3e-8f40-123456789abc",
    ],
    ids=["upper", "braces", "urn", "hex", "uuid-object", "canonical"],
)
def test_normalize_id_returns_the_canonical_form(value: object) -> None:
    assert normalize_id(value) == "0190a6f0-1b2c-7d3e-8f40-123456789abc"


@pytest.mark.parametrize(
    "value",
    [
        "0190a6f0----1b2c7d3e8f40123456789abc",  # hyphens in the wrong places
        "0190a6f0-1b2c-7d3e-8f40-1234_6789abc",  # int(..., 16) accepts '_' between digits
    ],
)
def test_normalize_id_never_returns_a_non_canonical_string(value: str) -> None:
    # Either refused, or returned in the one form every backend stores and compares.
    try:
        normalized = normalize_id(value)
    except EnvelopeError:
        return
    assert normalized == str(uuid.UUID(normalized))


@pytest.mark.parametrize(
    "value",
    ["", "not-a-uuid", "0190a6f0-1b2c-7d3e-8f40-123456789ab", 42, None, b"0" * 16],
    ids=["empty", "words", "short", "int", "none", "bytes"],
)
def test_normalize_id_refuses_what_is_not_a_uuid(value: object) -> None:
    with pytest.raises(EnvelopeError, match="causation_id") as caught:
        normalize_id(value, field="causation_id", index=3)
    assert caught.value.field == "causation_id"
    assert caught.value.index == 3
    assert "event #3" in str(caught.value)


# -- event time ------------------------------------------------------------------------------


def test_format_at_keeps_utc_with_fixed_width_microseconds() -> None:
    assert (
        format_at(datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)) == "2024-05-06T07:08:09.000000+00:00"
    )
    assert (
        format_at(datetime(2024, 5, 6, 7, 8, 9, 12, tzinfo=UTC))
        == "2024-05-06T07:08:09.000012+00:00"
    )


@pytest.mark.parametrize(
    ("tz", "expected"),
    [
        (timezone(timedelta(hours=5, minutes=30)), "2024-05-06T01:38:09.123456+00:00"),
        (timezone(timedelta(hours=-7)), "2024-05-06T14:08:09.123456+00:00"),
        (timezone(timedelta(seconds=-21)), "2024-05-06T07:08:30.123456+00:00"),
        (ZoneInfo("Europe/Paris"), "2024-05-06T05:08:09.123456+00:00"),
        (ZoneInfo("UTC"), "2024-05-06T07:08:09.123456+00:00"),
    ],
    ids=["+05:30", "-07:00", "-00:00:21", "Europe/Paris", "zoneinfo-UTC"],
)
def test_format_at_converts_other_zones_to_utc(tz: tzinfo, expected: str) -> None:
    assert format_at(datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=tz)) == expected


class _NoOffset(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None


@pytest.mark.parametrize(
    "value",
    [datetime(2024, 5, 6, 7, 8, 9), datetime(2024, 5, 6, tzinfo=_NoOffset())],
    ids=["naive", "tzinfo-without-offset"],
)
def test_format_at_refuses_naive_datetimes(value: datetime) -> None:
    with pytest.raises(EnvelopeError, match="naive") as caught:
        format_at(value, index=2)
    assert (caught.value.index, caught.value.field) == (2, "at")


@pytest.mark.parametrize("value", ["2024-05-06T07:08:09Z", 1714979289, None])
def test_format_at_refuses_what_is_not_a_datetime(value: object) -> None:
    with pytest.raises(EnvelopeError, match="must be a datetime") as caught:
        format_at(value, index=0)  # type: ignore[arg-type]
    assert caught.value.field == "at"


def test_format_at_refuses_times_that_fall_outside_the_range_in_utc() -> None:
    edge = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))  # year 0 in UTC
    with pytest.raises(EnvelopeError) as caught:
        format_at(edge, index=0)
    assert caught.value.field == "at"


# -- payload encoding ------------------------------------------------------------------------


def test_encode_payload_writes_sorted_compact_json_and_fills_defaults() -> None:
    data = encode_payload(
        spec_of("neuron.activated"),
        NeuronActivated(strength=0.5, id="n1"),
        index=0,
        max_bytes=LIMIT,
    )
    assert data == b'{"cause":"","id":"n1","strength":0.5}'
    # The same payload as a mapping, keys in any order, gives the same bytes.
    assert (
        encode_payload(
            spec_of("neuron.activated"), {"strength": 0.5, "id": "n1"}, index=0, max_bytes=LIMIT
        )
        == data
    )


def test_encode_payload_keeps_unicode_and_decode_gives_back_the_struct() -> None:
    payload = MemoryObserved(agent="inner", text='naïve café — 東京 🙂\n"quoted"', tags=["ü", "x"])
    spec = spec_of("memory.observed")
    data = encode_payload(spec, payload, index=0, max_bytes=LIMIT)
    assert "東京 🙂".encode() in data
    assert decode_payload(spec, data, 1) == payload


def test_canonical_bytes_are_the_envelope_header_then_the_payload() -> None:
    header = [1, "id", "s", 1, "k.k", 1, "a", "2024-01-01T00:00:00.000000+00:00", None, None]
    fields = (*header[:8], b'{"x":1}', *header[8:])
    assert canonical(fields) == msgspec.json.encode(header) + b'\n{"x":1}'


@pytest.mark.parametrize(
    ("kind", "payload", "field"),
    [
        ("neuron.activated", NeuronActivated(id="n", strength="high"), "payload.strength"),  # type: ignore[arg-type]
        ("neuron.activated", NeuronActivated(id=7, strength=1.0), "payload.id"),  # type: ignore[arg-type]
        ("neuron.activated", NeuronActivated(id="", strength=1.0), "payload.id"),
        ("neuron.activated", NeuronActivated(id="n", strength=-1.0), "payload.strength"),
        ("neuron.activated", NeuronActivated(id="n", strength=True), "payload.strength"),  # type: ignore[arg-type]
        ("neuron.created", NeuronCreated(id="n", concept="c", type="imaginary"), "payload.type"),  # type: ignore[arg-type]
        (
            "connection.created",
            ConnectionCreated(source="a", target="b", type="recalls", weight=65536),
            "payload.weight",
        ),
        (
            "memory.observed",
            MemoryObserved(agent="a", text="t", importance=11),
            "payload.importance",
        ),
        (
            "memory.observed",
            MemoryObserved(agent="a", text="t", tags=["ok", ""]),
            "payload.tags[1]",
        ),
    ],
    ids=[
        "str-for-float",
        "int-for-str",
        "empty-name",
        "below-min",
        "bool-for-float",
        "bad-literal",
        "uint16-overflow",
        "importance-11",
        "nested-list-item",
    ],
)
def test_encode_payload_refuses_structs_built_with_wrong_field_values(
    kind: str, payload: msgspec.Struct, field: str
) -> None:
    # msgspec does not validate at construction: the codec must, and name the field.
    with pytest.raises(PayloadError) as caught:
        encode_payload(spec_of(kind), payload, index=4, max_bytes=LIMIT)
    assert caught.value.index == 4
    assert caught.value.field == field
    assert "event #4" in str(caught.value)
    assert f"`${field.removeprefix('payload')}`" in str(caught.value)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"id": "n"}, "payload"),  # missing required field
        ({"id": "n", "strength": 1.0, "mood": "x"}, "payload"),  # unknown field
        ({"id": "n", "strength": "1.0"}, "payload.strength"),
        (["n", 1.0], "payload"),
        ("n", "payload"),
        (NeuronCreated(id="n", concept="c", type="core"), "payload"),  # another kind's Struct
    ],
    ids=["missing", "unknown-field", "str-for-float", "list", "str", "other-struct"],
)
def test_encode_payload_refuses_payloads_of_the_wrong_shape(payload: object, field: str) -> None:
    with pytest.raises(PayloadError) as caught:
        encode_payload(spec_of("neuron.activated"), payload, index=0, max_bytes=LIMIT)
    assert (caught.value.index, caught.value.field) == (0, field)


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("neuron.activated", NeuronActivated(id="n", strength=float("nan"))),
        ("neuron.activated", {"id": "n", "strength": float("inf")}),
        (
            "memory.recalled",
            MemoryRecalled(
                agent="a",
                query="q",
                items=[RecalledItem(position=1, score=float("-inf"))],
                as_of=datetime(2024, 1, 1, tzinfo=UTC),
            ),
        ),
    ],
    ids=["nan", "inf-in-mapping", "nested-minus-inf"],
)
def test_encode_payload_refuses_non_finite_floats(kind: str, payload: object) -> None:
    # JSON has no NaN or infinity: msgspec would write null, which then reads back wrong.
    with pytest.raises(PayloadError) as caught:
        encode_payload(spec_of(kind), payload, index=2, max_bytes=LIMIT)
    assert caught.value.index == 2
    assert str(caught.value).startswith("event #2")


@pytest.mark.parametrize(
    "payload",
    [
        NeuronActivated(id=object(), strength=1.0),  # type: ignore[arg-type]
        NeuronActivated(id="n\ud800", strength=1.0),
        {"id": "n\ud800", "strength": 1.0},
    ],
    ids=["object-field", "surrogate-in-struct", "surrogate-in-mapping"],
)
def test_encode_payload_refuses_unencodable_values_with_payload_error(payload: object) -> None:
    with pytest.raises(PayloadError) as caught:
        encode_payload(spec_of("neuron.activated"), payload, index=1, max_bytes=LIMIT)
    assert caught.value.index == 1


def test_encode_payload_names_a_sane_field_for_a_bad_mapping_key() -> None:
    with pytest.raises(PayloadError) as caught:
        encode_payload(
            spec_of("neuron.activated"),
            {"id": "n", "strength": 1.0, 3: 4},
            index=0,
            max_bytes=LIMIT,
        )
    assert caught.value.field == "payload"


def test_a_payload_datetime_is_refused_or_stored_exactly() -> None:
    paris_1900 = datetime(1900, 1, 1, tzinfo=ZoneInfo("Europe/Paris"))  # LMT offset +00:09:21
    payload = MemoryRecalled(agent="a", query="q", items=[], as_of=paris_1900)
    spec = spec_of("memory.recalled")
    try:
        data = encode_payload(spec, payload, index=0, max_bytes=LIMIT)
    except PayloadError:
        return
    assert decode_payload(spec, data, 1) == payload


def test_encode_payload_enforces_the_size_limit_on_the_encoded_bytes() -> None:
    spec = spec_of("memory.observed")
    payload = MemoryObserved(agent="a", text="é" * 50)
    size = len(encode_payload(spec, payload, index=0, max_bytes=LIMIT))
    assert encode_payload(spec, payload, index=0, max_bytes=size)
    with pytest.raises(PayloadError, match=f"{size} bytes, over the limit of {size - 1}") as caught:
        encode_payload(spec, payload, index=2, max_bytes=size - 1)
    assert (caught.value.index, caught.value.field) == (2, "payload")


def test_decode_payload_of_an_unknown_kind_is_a_plain_dict() -> None:
    assert decode_payload(None, b'{"a":[1,"x"],"b":null}', 1) == {"a": [1, "x"], "b": None}


# -- kind registry ---------------------------------------------------------------------------


class Greeted(msgspec.Struct, frozen=True):
    name: str


class GreetedV2(msgspec.Struct, frozen=True):
    first: str
    last: str


class GreetedV3(msgspec.Struct, frozen=True):
    first: str
    last: str
    polite: bool


def test_default_registry_holds_the_catalog_and_is_independent_per_call() -> None:
    registry = default_registry()
    assert {spec.name for spec in registry} == set(KINDS)
    assert all(registry.get(name).type is t for name, t in KINDS.items())  # type: ignore[union-attr]
    registry.register("test.greeted", Greeted)
    assert "test.greeted" in registry
    assert "test.greeted" not in default_registry()


def test_the_read_tables_follow_the_kinds_registered_since_they_were_built() -> None:
    # The read loop keeps them between pages (ADR 0104); a kind registered later is in them.
    registry = KindRegistry()
    registry.register("test.greeted", Greeted)
    schemas, decoders = registry.readers()
    assert registry.readers()[0] is schemas
    assert schemas == {"test.greeted": 1}
    assert decoders["test.greeted"](b'{"name":"Ada"}') == Greeted(name="Ada")
    registry.register("test.greeted", Greeted)  # a no-op keeps them
    assert registry.readers()[0] is schemas
    registry.register("test.regreeted", GreetedV2, schema=2)
    schemas, decoders = registry.readers()
    assert schemas == {"test.greeted": 1, "test.regreeted": 2}
    assert decoders["test.regreeted"](b'{"first":"A","last":"L"}') == GreetedV2("A", "L")


@pytest.mark.parametrize(
    "name",
    [
        "greeted",
        "Test.greeted",
        "test.",
        ".greeted",
        "test..greeted",
        "test.greeted!",
        "test-x.greeted",
        "1test.greeted",
        "test.greeted ",
        "",
        7,
    ],
)
def test_register_refuses_bad_kind_names(name: object) -> None:
    with pytest.raises(KindRegistryError, match="invalid"):
        KindRegistry().register(name, Greeted)  # type: ignore[arg-type]


@pytest.mark.parametrize("payload_type", [dict, Greeted(name="x"), int])
def test_register_refuses_payload_types_that_are_not_structs(payload_type: object) -> None:
    with pytest.raises(KindRegistryError, match=r"msgspec\.Struct"):
        KindRegistry().register("test.greeted", payload_type)  # type: ignore[arg-type]


@pytest.mark.parametrize("schema", [0, -1, True, 1.0, "1"])
def test_register_refuses_bad_schemas(schema: object) -> None:
    with pytest.raises(KindRegistryError, match="schema"):
        KindRegistry().register("test.greeted", Greeted, schema=schema)  # type: ignore[arg-type]


def test_registering_the_same_kind_again_is_a_no_op_and_another_type_is_refused() -> None:
    registry = KindRegistry()
    registry.register("test.greeted", Greeted)
    registry.register("test.greeted", Greeted)
    assert len(registry) == 1
    with pytest.raises(KindRegistryError, match="already registered with Greeted at schema 1"):
        registry.register("test.greeted", GreetedV2)
    with pytest.raises(KindRegistryError, match="already registered"):
        registry.register("test.greeted", Greeted, schema=2)
    assert registry.get("test.greeted").type is Greeted  # type: ignore[union-attr]


def test_kind_decorator_registers_and_returns_the_struct() -> None:
    registry = KindRegistry()

    @registry.kind("test.waved", schema=3)
    class Waved(msgspec.Struct):
        hand: str

    spec = registry.get("test.waved")
    assert spec is not None
    assert (spec.type, spec.schema) == (Waved, 3)


@pytest.mark.parametrize("from_schema", [0, 2, 3, -1])
def test_upcasters_must_start_below_the_current_schema(from_schema: int) -> None:
    registry = KindRegistry()
    registry.register("test.greeted", GreetedV2, schema=2)
    with pytest.raises(KindRegistryError, match="below the current schema 2"):
        registry.register_upcaster("test.greeted", from_schema, dict)


def test_an_upcaster_needs_a_registered_kind() -> None:
    with pytest.raises(KindRegistryError, match="not registered"):
        KindRegistry().register_upcaster("test.greeted", 1, dict)


@pytest.mark.parametrize("from_schema", [1.5, True])
def test_upcasters_need_an_int_from_schema(from_schema: object) -> None:
    registry = KindRegistry()
    registry.register("test.greeted", GreetedV3, schema=3)
    with pytest.raises(KindRegistryError):
        registry.register_upcaster("test.greeted", from_schema, dict)  # type: ignore[arg-type]


def _split(old: dict[str, object]) -> dict[str, object]:
    first, _, last = str(old["name"]).partition(" ")
    return {"first": first, "last": last}


def test_old_schemas_are_upcast_step_by_step() -> None:
    registry = KindRegistry()
    registry.register("test.greeted", GreetedV3, schema=3)

    @registry.upcaster("test.greeted", 2)
    def add_politeness(old: dict[str, object]) -> dict[str, object]:
        return {**old, "polite": True}

    registry.register_upcaster("test.greeted", 1, _split)
    spec = registry.get("test.greeted")
    assert spec is not None

    assert spec.decode(b'{"name":"Ada Lovelace"}', 1) == GreetedV3("Ada", "Lovelace", True)
    assert spec.decode(b'{"first":"Ada","last":"L"}', 2) == GreetedV3("Ada", "L", True)
    assert spec.decode(b'{"first":"Ada","last":"L","polite":false}', 3) == GreetedV3(
        "Ada", "L", False
    )


def test_a_missing_upcaster_in_the_chain_is_named() -> None:
    registry = KindRegistry()
    registry.register("test.greeted", GreetedV3, schema=3)
    registry.register_upcaster("test.greeted", 1, _split)  # 2 -> 3 is missing
    spec = registry.get("test.greeted")
    assert spec is not None
    with pytest.raises(
        KindRegistryError,
        match=r"cannot read kind 'test\.greeted' at schema 1: no upcaster registered from schema 2",
    ):
        spec.decode(b'{"name":"Ada Lovelace"}', 1)


def test_reading_a_schema_newer_than_the_program_knows_says_to_upgrade() -> None:
    registry = KindRegistry()
    registry.register("test.greeted", Greeted)
    spec = registry.get("test.greeted")
    assert spec is not None
    with pytest.raises(
        KindRegistryError,
        match=r"'test\.greeted' was written at schema 2, newer than this program's schema 1: "
        "upgrade",
    ):
        spec.decode(b'{"first":"Ada","last":"L"}', 2)


def test_copy_is_independent_of_the_original() -> None:
    registry = KindRegistry()
    registry.register("test.greeted", GreetedV2, schema=2)
    clone = registry.copy()
    clone.register_upcaster("test.greeted", 1, _split)
    clone.register("test.waved", Greeted)
    assert "test.waved" not in registry
    with pytest.raises(KindRegistryError, match="no upcaster"):
        registry.get("test.greeted").decode(b'{"name":"A B"}', 1)  # type: ignore[union-attr]
    assert clone.get("test.greeted").decode(b'{"name":"A B"}', 1) == GreetedV2("A", "B")  # type: ignore[union-attr]
