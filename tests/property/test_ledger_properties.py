"""Properties of the codec and of a SQLite ledger under random batches.

Each example opens a fresh ledger in its own temporary directory (``tmp_path`` is shared by
every example of a Hypothesis test, so it cannot give a fresh file per example). Example
counts come from the profile registered in ``tests/conftest.py``.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    batch_sequences,
    event_sequences,
    kind_payloads,
    partitions,
    split,
)

from engram.ledger import NO_STREAM, ConcurrencyError, Ledger, NewEvent, default_registry
from engram.ledger.codec import decode_payload, encode_payload

REGISTRY = default_registry()
LIMIT = 1 << 20


# A RAM-backed directory when there is one: opening, syncing and closing a SQLite file on
# disk costs more than the rest of an example. It is still a real SQLite file.
_TMP_ROOT = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@contextmanager
def fresh_ledger() -> Iterator[Ledger]:
    # "fast" only relaxes fsync; every property here is about what one process sees.
    with (
        tempfile.TemporaryDirectory(prefix="engram-prop-", dir=_TMP_ROOT) as tmp,
        Ledger.open(os.path.join(tmp, "ledger.db"), durability="fast") as ledger,
    ):
        yield ledger


# -- codec -----------------------------------------------------------------------------------


@given(kind_payloads)
def test_payload_round_trips_through_canonical_bytes(
    kind_and_payload: tuple[str, msgspec.Struct],
) -> None:
    kind, payload = kind_and_payload
    spec = REGISTRY.get(kind)
    assert spec is not None

    data = encode_payload(spec, payload, index=0, max_bytes=LIMIT)
    decoded = decode_payload(spec, data, spec.schema)

    assert decoded == payload
    assert type(decoded) is type(payload)
    # Canonical: re-encoding what was read, or the same payload given as a mapping, gives the
    # very same bytes.
    assert encode_payload(spec, decoded, index=0, max_bytes=LIMIT) == data
    assert encode_payload(spec, msgspec.to_builtins(payload), index=0, max_bytes=LIMIT) == data
    assert msgspec.json.decode(data) == msgspec.json.decode(msgspec.json.encode(decoded))


# -- positions, versions, idempotency ----------------------------------------------------------


@given(batch_sequences(max_events=40), st.data())
def test_random_batches_get_gap_free_positions_and_per_stream_versions(
    batches: list[list[NewEvent]], data: st.DataObject
) -> None:
    with fresh_ledger() as ledger:
        returned: list[list[int]] = []
        for batch in batches:
            positions = ledger.append(batch)
            start = sum(len(b) for b in returned) + 1
            assert positions == list(range(start, start + len(batch)))
            returned.append(positions)
        total = sum(len(b) for b in batches)
        assert ledger.head() == total

        stored = list(ledger.read())
        appended = [e for batch in batches for e in batch]
        assert [e.position for e in stored] == list(range(1, total + 1))
        assert [e.id for e in stored] == [e.id for e in appended]
        assert [(e.stream, e.kind, e.payload) for e in stored] == [
            (e.stream, e.kind, e.payload) for e in appended
        ]
        versions: dict[str, list[int]] = defaultdict(list)
        for e in stored:
            versions[e.stream].append(e.version)
        for stream, seen in versions.items():
            assert seen == list(range(1, len(seen) + 1)), stream
            assert [e.version for e in ledger.read_stream(stream)] == seen

        # Any earlier batch, retried verbatim (even with a now-stale expectation), is a no-op.
        retries = data.draw(
            st.lists(st.integers(min_value=0, max_value=len(batches) - 1), min_size=1, max_size=3),
            label="retried batches",
        )
        for i in retries:
            expect = dict.fromkeys({e.stream for e in batches[i]}, NO_STREAM)
            assert ledger.append(batches[i], expect=expect) == returned[i]
            assert ledger.head() == total

        report = ledger.verify()
        assert report.ok, report
        assert report.checked == total
        assert report.head_hash == stored[-1].hash.hex()


@given(event_sequences(max_events=30, with_at=True), st.data())
def test_hash_chain_does_not_depend_on_how_events_were_batched(
    events: list[NewEvent], data: st.DataObject
) -> None:
    # With ids and times fixed, the ledger content is a function of the event sequence only.
    first = data.draw(partitions(len(events)), label="first partition")
    second = data.draw(partitions(len(events)), label="second partition")
    results = []
    for sizes in (first, second):
        with fresh_ledger() as ledger:
            for batch in split(events, sizes):
                ledger.append(batch)
            report = ledger.verify()
            assert report.ok, report
            rows = [msgspec.structs.astuple(e) for e in ledger.read()]
        results.append((report.head_hash, rows))
    assert results[0] == results[1]


@given(event_sequences(max_events=30), st.data())
def test_expectations_agree_with_a_model_of_stream_versions(
    events: list[NewEvent], data: st.DataObject
) -> None:
    model: dict[str, int] = defaultdict(int)
    head = 0
    with fresh_ledger() as ledger:
        for batch in split(events, data.draw(partitions(len(events), 5), label="batches")):
            streams = list(dict.fromkeys(e.stream for e in batch))
            expect: dict[str, object] = {}
            for s in streams:
                choice = data.draw(
                    st.sampled_from(["any", "no_stream", "current", "stale"]), label=f"expect {s}"
                )
                if choice == "no_stream":
                    expect[s] = NO_STREAM
                elif choice == "current" and model[s] > 0:
                    expect[s] = model[s]
                elif choice == "stale":
                    expect[s] = model[s] + data.draw(st.integers(1, 3), label="off by")
            fits = all(
                (v is NO_STREAM and model[s] == 0) or (isinstance(v, int) and v == model[s])
                for s, v in expect.items()
            )
            if fits:
                positions = ledger.append(batch, expect=expect)  # type: ignore[arg-type]
                assert positions == list(range(head + 1, head + 1 + len(batch)))
                head += len(batch)
                for e in batch:
                    model[e.stream] += 1
            else:
                with pytest.raises(ConcurrencyError) as caught:
                    ledger.append(batch, expect=expect)  # type: ignore[arg-type]
                bad = caught.value
                assert bad.stream in expect
                assert bad.actual == model[bad.stream]
                assert bad.expected == expect[bad.stream]
                assert ledger.head() == head
        assert {s: v for s, v in model.items() if v} == {
            s: max(e.version for e in ledger.read_stream(s))
            for s in {e.stream for e in ledger.read()}
        }
        assert ledger.verify().ok


@given(event_sequences(max_events=40), st.data())
def test_read_filters_select_exactly_the_matching_events(
    events: list[NewEvent], data: st.DataObject
) -> None:
    with fresh_ledger() as ledger:
        ledger.append(events)
        everything = list(ledger.read())
        n = len(everything)
        for _ in range(3):
            after = data.draw(st.integers(0, n + 1), label="after")
            upto = data.draw(st.none() | st.integers(0, n + 1), label="upto")
            limit = data.draw(st.none() | st.integers(1, n + 1), label="limit")
            kinds = data.draw(
                st.none()
                | st.lists(st.sampled_from(sorted({e.kind for e in everything})), min_size=1),
                label="kinds",
            )
            streams = data.draw(
                st.none()
                | st.lists(st.sampled_from(sorted({e.stream for e in everything})), min_size=1),
                label="streams",
            )
            expected = [
                e
                for e in everything
                if e.position > after
                and (upto is None or e.position <= upto)
                and (kinds is None or e.kind in kinds)
                and (streams is None or e.stream in streams)
            ][:limit]
            got = list(ledger.read(after, kinds=kinds, streams=streams, limit=limit, upto=upto))
            assert got == expected
