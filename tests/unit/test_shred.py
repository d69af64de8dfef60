"""Crypto-shredding (ADR 0039): the key store file, sealing on append, opening on read, forget."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from engram.config import resolve_settings
from engram.ledger import (
    FORGOTTEN,
    ConfigError,
    KeyStore,
    KeyStoreError,
    Ledger,
    NewEvent,
    PayloadError,
    ReadOnlyLedgerError,
    Sealer,
)
from engram.ledger.catalog import (
    MemoryObserved,
    MemoryRecalled,
    RecalledItem,
    ScarRecorded,
    SignalSent,
)
from engram.ledger.errors import DamagedEventError
from engram.ledger.personal import masked
from engram.ledger.shred import PRIVATE, SEALED_PREFIX, is_sealed
from engram.runtime import open_settings

SECRET = "the vault code is 7361 zebra"


def observed(agent: str, text: str, **kw: object) -> NewEvent:
    return NewEvent.of(
        MemoryObserved(agent=agent, text=text, **kw),  # type: ignore[arg-type]
        stream=f"agent:{agent}",
        actor=agent,
    )


def raw_payloads(path: Path) -> list[bytes]:
    conn = sqlite3.connect(path)
    try:
        return [bytes(r[0]) for r in conn.execute("SELECT payload FROM events ORDER BY position")]
    finally:
        conn.close()


@pytest.fixture
def paths(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "ledger.db", tmp_path / "keys.db"


@pytest.fixture
def ledger(paths: tuple[Path, Path]) -> Iterator[Ledger]:
    db, keys = paths
    with Ledger.open(str(db), sealer=Sealer(KeyStore(keys))) as opened:
        yield opened


# -- the key store file ------------------------------------------------------------------------


def test_the_key_store_is_created_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "keys.db"
    with KeyStore(path) as store:
        store.live_key("alice")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in tmp_path.glob("keys.db*"))


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o666])
def test_a_key_store_others_can_read_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "keys.db"
    KeyStore(path).close()
    os.chmod(path, mode)
    with pytest.raises(KeyStoreError, match=r"readable by others \(mode 0\d+\).*chmod 600"):
        KeyStore(path)


def test_a_file_that_is_not_a_key_store_is_a_clear_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all, just bytes" * 100)
    os.chmod(junk, 0o600)
    with pytest.raises(KeyStoreError, match="is not an engram key store"):
        KeyStore(junk)
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    os.chmod(other, 0o600)
    with pytest.raises(KeyStoreError, match="is not an engram key store"):
        KeyStore(other)
    assert junk.read_bytes().startswith(b"not a database")  # left as it was


def test_a_missing_key_store_is_refused_when_not_creating(tmp_path: Path) -> None:
    with pytest.raises(KeyStoreError, match="does not exist"):
        KeyStore(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_a_sealer_needs_a_key_store() -> None:
    with pytest.raises(KeyStoreError, match="must be a KeyStore"):
        Sealer("keys.db")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be a Sealer"):
        Ledger.open(":memory:", sealer="keys.db")  # type: ignore[arg-type]


# -- sealing and opening -------------------------------------------------------------------------


def test_personal_fields_are_sealed_in_the_ledger_and_open_on_read(
    ledger: Ledger, paths: tuple[Path, Path]
) -> None:
    ledger.append(observed("alice", SECRET, tags=["private-note"]))
    ledger.append(
        NewEvent.of(
            ScarRecorded(
                agent="alice", kind="failure", what="lost 7361", lesson="zebra", importance=3
            ),
            stream="scars",
            actor="alice",
        )
    )
    ledger.append(NewEvent.of(SignalSent(to="bob", topic="zebra"), stream="s", actor="alice"))
    stored = b"".join(raw_payloads(paths[0]))
    assert b" 7361" not in stored  # with its space: the hex of a sealed value has none
    assert b"vault" not in stored
    assert b"lost" not in stored
    assert b"zebra" in stored  # the signal's topic is not a personal field
    assert b"private-note" in stored  # tags are not sealed either
    events = list(ledger.read())
    assert events[0].payload.text == SECRET
    assert (events[1].payload.what, events[1].payload.lesson) == ("lost 7361", "zebra")
    assert ledger.verify().ok


def test_a_retry_seals_to_the_same_bytes_and_keeps_its_position(ledger: Ledger) -> None:
    event = msgspec.structs.replace(
        observed("alice", SECRET), id="0190a0a0-0000-7000-8000-000000000001"
    )
    first = ledger.append(event)
    assert ledger.append(event) == first
    twin = msgspec.structs.replace(event, id="0190a0a0-0000-7000-8000-000000000002")
    ledger.append(twin)
    a, b = (e.payload for e in ledger.read(first[0] - 1))
    assert a.text == b.text == SECRET


def test_the_sealed_value_is_bound_to_its_event(ledger: Ledger, paths: tuple[Path, Path]) -> None:
    ledger.append([observed("alice", SECRET), observed("alice", "another")])
    payloads = raw_payloads(paths[0])
    first = msgspec.json.decode(payloads[0])["text"]
    second = msgspec.json.decode(payloads[1])["text"]
    assert is_sealed(first)
    assert is_sealed(second)
    assert first.split(":")[3] == second.split(":")[3]  # one key for the subject
    conn = sqlite3.connect(paths[0])
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    for name in [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'")]:
        conn.execute(f'DROP TRIGGER "{name}"')
    swapped = payloads[1].replace(second.encode(), first.encode())
    conn.execute("UPDATE events SET payload = ? WHERE position = 2", (swapped,))
    conn.commit()
    conn.close()
    # The row no longer matches its hash: it is refused before its seal is tried (ADR 0128);
    # the seal's binding to its event would refuse it next.
    with pytest.raises(DamagedEventError, match=r"position 2 was changed outside engram"):
        list(ledger.read())
    report = ledger.verify()
    assert not report.ok
    assert report.first_bad == 2


@pytest.mark.parametrize(
    ("body", "why"),
    [("zz", "not hex"), ("abc", "odd length"), ("é" * 40, "not ASCII"), ("00" * 20, "short")],
)
def test_a_mangled_sealed_body_is_a_clear_error(ledger: Ledger, body: str, why: str) -> None:
    """Whatever replaces the hex of a sealed value, the read names the field, never crashes."""
    ledger.append(observed("alice", SECRET))
    event = next(ledger.read())
    assert ledger.sealer is not None
    sealed = ledger.sealer.seal(event.kind, event.id, event.actor, event.payload)
    head = sealed.text[: len(SEALED_PREFIX) + 17]
    mangled = msgspec.structs.replace(sealed, text=head + body)
    with pytest.raises(KeyStoreError, match=r"field text does not open with key"):
        ledger.sealer.open(event.kind, event.id, mangled)
    assert mangled.text == head + body, why  # open works on a copy


def test_open_returns_a_copy_and_open_decoded_opens_in_place(ledger: Ledger) -> None:
    ledger.append(observed("alice", SECRET))
    event = next(ledger.read())
    sealer = ledger.sealer
    assert sealer is not None
    sealed = sealer.seal(event.kind, event.id, event.actor, event.payload)
    assert sealer.open(event.kind, event.id, sealed).text == SECRET
    assert is_sealed(sealed.text)
    assert sealer.open_decoded(event.kind, event.id, sealed) is sealed
    assert sealed.text == SECRET


def test_validation_happens_before_sealing(ledger: Ledger) -> None:
    with pytest.raises(PayloadError, match="text"):
        ledger.append(observed("alice", ""))  # an empty text is refused, not sealed
    assert ledger.head() == 0
    small = Ledger(ledger.backend, sealer=ledger.sealer, max_payload_bytes=160)
    with pytest.raises(PayloadError, match="once its personal fields are sealed"):
        small.append(observed("alice", "x" * 40))
    assert ledger.head() == 0


def test_mapping_payloads_are_sealed_too(ledger: Ledger, paths: tuple[Path, Path]) -> None:
    ledger.append(
        NewEvent(
            stream="agent:alice",
            kind="memory.observed",
            payload={"agent": "alice", "text": SECRET},
            actor="alice",
        )
    )
    assert b"vault" not in raw_payloads(paths[0])[0]
    assert next(ledger.read()).payload.text == SECRET


def test_without_the_key_store_sealed_fields_read_as_stored(
    ledger: Ledger, paths: tuple[Path, Path]
) -> None:
    ledger.append(observed("alice", SECRET))
    with Ledger.open(str(paths[0]), readonly=True) as plain:
        text = next(plain.read()).payload.text
    assert text.startswith(SEALED_PREFIX)
    assert "vault" not in text


def test_another_key_store_is_a_clear_error(
    ledger: Ledger, paths: tuple[Path, Path], tmp_path: Path
) -> None:
    ledger.append(observed("alice", SECRET))
    wrong = Ledger.open(str(paths[0]), sealer=Sealer(KeyStore(tmp_path / "other.db")))
    with wrong, pytest.raises(KeyStoreError, match=r"key \w+ is not in key store .*other\.db"):
        list(wrong.read())


# -- forgetting ----------------------------------------------------------------------------------


def test_forget_destroys_the_key_and_the_chain_still_verifies(
    ledger: Ledger, paths: tuple[Path, Path]
) -> None:
    ledger.append([observed("alice", SECRET), observed("bob", "bob keeps this")])
    before = ledger.verify()
    position = ledger.forget("alice", reason="erasure request", actor="dpo")
    events = list(ledger.read())
    assert [getattr(e.payload, "text", None) for e in events] == [FORGOTTEN, "bob keeps this", None]
    forgotten = events[-1]
    assert (forgotten.position, forgotten.kind, forgotten.actor) == (
        position,
        "subject.forgotten",
        "dpo",
    )
    assert forgotten.payload.subject == "alice"
    after = ledger.verify(expect_head=before.head, expect_hash=before.head_hash)
    assert after.ok
    assert after.head == 3
    # the key bytes are gone from the key store file, not merely marked
    conn = sqlite3.connect(paths[1])
    rows = conn.execute(
        "SELECT subject, key IS NULL, forgotten IS NOT NULL FROM subject_keys"
    ).fetchall()
    conn.close()
    assert sorted(rows) == [("alice", 1, 1), ("bob", 0, 0)]
    # a new event of the subject gets a new key and reads back
    ledger.append(observed("alice", "after the erasure"))
    assert next(iter(ledger.read(position))).payload.text == "after the erasure"
    assert next(iter(ledger.read(limit=1))).payload.text == FORGOTTEN


def test_another_process_key_cache_is_dropped_when_it_reads_the_forget(
    paths: tuple[Path, Path],
) -> None:
    db, keys = paths
    with (
        Ledger.open(str(db), sealer=Sealer(KeyStore(keys))) as writer,
        Ledger.open(str(db), sealer=Sealer(KeyStore(keys))) as reader,
    ):
        writer.append(observed("alice", SECRET))
        assert next(reader.read()).payload.text == SECRET  # the reader caches alice's key
        writer.forget("alice")
        assert [getattr(e.payload, "text", None) for e in reader.read()] == [FORGOTTEN, None]


def test_forget_needs_a_key_store_a_writable_ledger_and_a_subject(
    ledger: Ledger, paths: tuple[Path, Path], tmp_path: Path
) -> None:
    plain = Ledger.open(str(tmp_path / "plain.db"))
    with plain, pytest.raises(ConfigError, match="no key store"):
        plain.forget("alice")
    for bad in ("", "  ", 7, "x" * 513):
        with pytest.raises(ConfigError, match="subject must be"):
            ledger.forget(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="reason must be a string"):
        ledger.forget("alice", reason=None)  # type: ignore[arg-type]
    for actor in ("", " dpo", None):
        with pytest.raises(ConfigError, match="actor must be"):
            ledger.forget("alice", actor=actor)  # type: ignore[arg-type]
    ledger.append(observed("alice", SECRET))
    with (
        Ledger.open(
            str(paths[0]), readonly=True, sealer=Sealer(KeyStore(paths[1], create=False))
        ) as reader,
        pytest.raises(ReadOnlyLedgerError),
    ):
        reader.forget("alice")
    assert next(ledger.read()).payload.text == SECRET  # nothing was destroyed
    assert ledger.head() == 1


def test_a_subject_of_the_longest_name_is_forgotten(ledger: Ledger) -> None:
    name = "s" * 512
    ledger.append(NewEvent.of(MemoryObserved(agent=name, text=SECRET), stream="long", actor="x"))
    position = ledger.forget(name)
    events = list(ledger.read())
    assert events[0].payload.text == FORGOTTEN
    assert (events[1].position, events[1].stream) == (position, "subjects")


def test_subjects_lists_live_and_forgotten(ledger: Ledger) -> None:
    ledger.append([observed("alice", "a"), observed("bob", "b")])
    ledger.forget("alice")
    ledger.append(observed("alice", "again"))
    found = {s.subject: (s.keys, s.forgotten, s.live) for s in ledger.sealer.keys.subjects()}  # type: ignore[union-attr]
    assert found == {"alice": (2, 1, True), "bob": (1, 0, True)}


def test_a_subject_whose_name_holds_nul_is_refused_and_nothing_is_written(
    ledger: Ledger,
) -> None:
    # ADR 0135: `engram append` sealed a memory under "a\x00b", which no command line can
    # name, so `engram forget` could never erase it.
    with pytest.raises(PayloadError, match="NUL") as refused:
        ledger.append(
            [
                observed("bob", "fine"),
                NewEvent.of(MemoryObserved(agent="a\x00b", text=SECRET), stream="x", actor="x"),
            ]
        )
    assert (refused.value.index, refused.value.field) == (1, "agent")
    assert ledger.head() == 0
    assert "a\x00b" not in {k.subject for k in ledger.sealer.keys.subjects()}  # type: ignore[union-attr]


# -- who sees what -------------------------------------------------------------------------------


def test_recall_queries_and_private_items_are_masked_for_other_viewers(ledger: Ledger) -> None:
    from datetime import UTC, datetime

    ledger.append(
        [
            observed("alice", "public note"),
            observed("alice", SECRET, visibility="private"),
            NewEvent.of(
                MemoryRecalled(
                    agent="alice",
                    query="vault code",
                    items=[RecalledItem(position=2, score=1.0)],
                    as_of=datetime.now(UTC),
                ),
                stream="agent:alice",
                actor="alice",
            ),
        ]
    )
    events = list(ledger.read())
    for viewer in (None, "bob"):
        seen = [masked(e, viewer) for e in events]
        assert seen[0].payload.text == "public note"
        assert seen[1].payload.text == PRIVATE
        assert seen[2].payload.query == PRIVATE
        assert seen[2].payload.items == events[2].payload.items
    own = [masked(e, "alice") for e in events]
    assert [own[1].payload.text, own[2].payload.query] == [SECRET, "vault code"]


def test_a_private_concept_reads_private_for_another_viewer(ledger: Ledger) -> None:
    # ADR 0135: `engram log` and the hub's ledger pages showed a private concept's label and
    # payload in full beside a private memory shown as [private].
    from engram.ledger.catalog import ConceptUpserted

    def concept(visibility: str) -> NewEvent:
        upsert = ConceptUpserted(id=f"fact.plan_{visibility}", type="fact", label="buy Contoso",
                                 agent="alice", payload={"price": "4.2B"}, visibility=visibility)  # type: ignore[arg-type]  # fmt: skip
        return NewEvent.of(upsert, stream=f"concept:{upsert.id}", actor="alice")

    ledger.append([concept("private"), concept("public")])
    private, public = list(ledger.read())
    for viewer in (None, "bob"):
        assert (masked(private, viewer).payload.label, masked(private, viewer).payload.payload) == (
            PRIVATE,
            {},
        )
        assert masked(public, viewer).payload.label == "buy Contoso"
    assert masked(private, "alice").payload.payload == {"price": "4.2B"}


# -- configuration -------------------------------------------------------------------------------


def test_declared_personal_fields_of_user_kinds_are_sealed(tmp_path: Path) -> None:
    config = tmp_path / "engram.toml"
    config.write_text(
        f'ledger = "{tmp_path / "l.db"}"\nkeys = "{tmp_path / "keys.db"}"\n'
        '[kinds."task.assigned"]\n'
        'fields = { task = "str", assignee = "str", note = "str?" }\n'
        'personal = ["task", "note"]\n'
    )
    settings = resolve_settings(config=str(config))
    assert settings.personal()["task.assigned"] == ("task", "note")
    with open_settings(settings) as ledger:
        ledger.append(
            NewEvent(
                stream="tasks",
                kind="task.assigned",
                payload={"task": "call 555-0199", "assignee": "bob"},
                actor="carol",
            )
        )
        payload = next(ledger.read()).payload
        assert (payload.task, payload.note, payload.assignee) == ("call 555-0199", None, "bob")
        ledger.forget("carol")  # a kind without an agent field: its subject is the actor
        assert next(ledger.read()).payload.task == FORGOTTEN
    assert b"555-0199" not in raw_payloads(tmp_path / "l.db")[0]


@pytest.mark.parametrize(
    ("personal", "message"),
    [
        ('["missing"]', "is not a declared field"),
        ('["count"]', "only str fields can be sealed"),
        ('"task"', "personal must be a list"),
        ('["task", "task"]', "names a field twice"),
    ],
)
def test_bad_personal_declarations_are_refused(tmp_path: Path, personal: str, message: str) -> None:
    config = tmp_path / "engram.toml"
    config.write_text(
        '[kinds."task.assigned"]\n'
        f'fields = {{ task = "str", count = "int" }}\npersonal = {personal}\n'
    )
    with pytest.raises(ConfigError, match=message):
        resolve_settings(str(tmp_path / "l.db"), config=str(config))


def test_a_blank_keys_setting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="keys must be the path"):
        resolve_settings(str(tmp_path / "l.db"), keys="   ")


def test_a_sealed_value_is_the_documented_construction(tmp_path: Path) -> None:
    # The stored bytes must not drift (ADR 0039, 0084): a retried append of an event sealed by
    # an earlier version compares equal only if the nonce and the frame are made the same way.
    import hashlib

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    with KeyStore(tmp_path / "keys") as store:
        sealer = Sealer(store)
        payload = MemoryObserved(agent="alice", text=SECRET)
        sealed = sealer.seal_fields("memory.observed", "evt-1", "someone", payload)
        key_id, _cipher, key = store.live_key("alice")
        aad = b"evt-1\x00memory.observed\x00text"
        plain = SECRET.encode()
        nonce = hashlib.blake2b(aad + b"\x00" + plain, key=key, digest_size=12).digest()
        body = nonce + AESGCM(key).encrypt(nonce, plain, aad)
        assert sealed == {"text": f"{SEALED_PREFIX}{key_id}:{body.hex()}"}


def test_a_writer_seals_under_the_new_key_after_another_process_forgets(
    paths: tuple[Path, Path],
) -> None:
    db, keys = paths
    with (
        Ledger.open(str(db), sealer=Sealer(KeyStore(keys))) as writer,
        Ledger.open(str(db), sealer=Sealer(KeyStore(keys))) as other,
    ):
        writer.append(observed("alice", SECRET))  # the writer caches alice's sealing key
        other.forget("alice")
        writer.append(observed("alice", "after the erasure"))
        with Ledger.open(str(db)) as unsealed:
            stored = [e.payload.text for e in unsealed.read(kinds=["memory.observed"])]
        assert stored[0].split(":")[3] != stored[1].split(":")[3]  # another key id
        assert [getattr(e.payload, "text", None) for e in writer.read()] == [
            FORGOTTEN,
            None,
            "after the erasure",
        ]
