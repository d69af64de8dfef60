"""Crypto-shredding: personal payload fields sealed under per-subject keys kept outside the ledger.

A personal field (observation text, scar context, recall query, reflection text, a saved
context's query, task and notes, declared fields of user kinds) is stored as a sealed string,
``engram:sealed:v1:<key id>:<hex>``, AES-256-GCM under its subject's key with the event's id,
kind and field as associated data (ADR 0039). The subject of an event is the agent its
payload names (``agent``), or its actor for kinds without one. Keys live in a
:class:`KeyStore`: a SQLite file of its own (mode 0600) beside the ledger or anywhere
configured, never inside the ledger.

:meth:`KeyStore.forget` destroys a subject's keys; the ledger keeps the ciphertext, so its hash
chain still verifies, and every read of those fields gives :data:`FORGOTTEN`. The nonce is
derived from the key, the associated data and the plaintext (a synthetic IV), so re-appending
the same event seals it to the same bytes and stays idempotent; distinct plaintexts of one
event id never share a nonce.
"""

from __future__ import annotations

import binascii
import hashlib
import os
import secrets
import sqlite3
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engram.ledger.chunks import chunked
from engram.ledger.errors import KeyStoreError

__all__ = [
    "DEFAULT_PERSONAL",
    "FORGOTTEN",
    "PRIVATE",
    "SEALED_PREFIX",
    "KeyStore",
    "Sealer",
    "SealingKey",
    "SubjectKeys",
    "is_sealed",
    "subject_of",
]

#: What a personal field reads as once its subject's key is destroyed.
FORGOTTEN = "[forgotten]"
#: What another subject's private personal field reads as where it is shown (engram log).
PRIVATE = "[private]"
SEALED_PREFIX = "engram:sealed:v1:"
#: engram's own personal fields, by kind.
DEFAULT_PERSONAL: Mapping[str, tuple[str, ...]] = {
    "memory.observed": ("text",),
    "memory.recalled": ("query",),
    "scar.recorded": ("what", "lesson"),
    # A reflection's focal question names what its memories speak of (ADR 0039).
    "memory.reflected": ("text", "question"),
    "context.saved": ("query", "task", "notes"),
    # Detection's reason quotes the values that changed ("0101 -> 0199"), a model's its words.
    "memory.superseded": ("reason",),
    "supersession.proposed": ("reason",),
    # The adapters' free text (ADR 0062, 0063): a LangGraph store's value and a session's
    # items, written as JSON text so they seal; the subject is the session's agent or the
    # writer (catalog_adapters).
    "store.put": ("value",),
    "session.items_added": ("items",),
    # Free text an agent writes of its own memories and projects: an archive's reason, how a
    # project ended (the post-project lesson quotes it).
    "memory.archived": ("reason",),
    "project.closed": ("outcome",),
}
_FORMAT = "engram-keys/1"
#: The ``keystore_meta`` key prefix of a subject's unfinished forgetting.
_UNFINISHED = "forgetting:"
_NONCE = 12
_KEY_ID_CHARS = 16
_PREFIX_LEN = len(SEALED_PREFIX)
_BOX = _PREFIX_LEN + _KEY_ID_CHARS + 1  # where the hex of nonce and ciphertext starts
_unhex = binascii.a2b_hex  # bytes.fromhex's equal, a third cheaper
_blake2b = hashlib.blake2b
_set = msgspec.structs.force_setattr


def _aad(event_id: str, kind: str, field: str) -> bytes:
    """Return the associated data binding a sealed value to its event, kind and field."""
    return (event_id + "\x00" + kind + "\x00" + field).encode()


def _where(event_id: str, kind: str, field: str) -> str:
    return f"event {event_id} ({kind}) field {field}"


def is_sealed(value: object) -> bool:
    """Say whether ``value`` is a sealed personal field as the ledger stores it."""
    return type(value) is str and value.startswith(SEALED_PREFIX)


def subject_of(actor: str, payload: object) -> str:
    """Return an event's subject: the agent its payload names, else its actor."""
    agent = getattr(payload, "agent", None)
    return agent if isinstance(agent, str) and agent else actor


class SealingKey(NamedTuple):
    """A subject's live key as sealing uses it: the sealed value's head, cipher, nonce hash."""

    head: str  # SEALED_PREFIX, the key id and ":"
    cipher: AESGCM
    nonce_hash: Any  # BLAKE2b keyed with the key; copied for each value


@dataclass(frozen=True)
class SubjectKeys:
    """One subject's keys in a key store: how many, and how many were destroyed."""

    subject: str
    keys: int
    forgotten: int
    live: bool


class KeyStore:
    """Per-subject AES-256 keys in a SQLite file of their own, readable by its owner only.

    Thread-safe; several processes may share the file. ``create=False`` refuses a missing
    file (a reader never creates keys). The file is created with mode 0600, and a file that
    group or others may read is refused, as is a file that is not an engram key store.
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._keys: dict[str, bytes | None] = {}  # key id -> key (None: destroyed)
        self._live: dict[str, str] = {}  # subject -> its live key id
        self._ciphers: dict[str, AESGCM] = {}
        self._owners: dict[str, str] = {}  # key id -> subject
        # subject -> what sealing needs of its live key (ADR 0084): cleared with ``_live``.
        self._sealing: dict[str, SealingKey] = {}
        self._conn = self._open(create)
        self._version = self._data_version()

    # -- the file ----------------------------------------------------------------------------

    def _open(self, create: bool) -> sqlite3.Connection:
        where = f"key store {self.path}"
        fresh = False
        if not self.path.exists():
            if not create:
                raise KeyStoreError(f"{where} does not exist")
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                pass  # another process created it meanwhile
            except OSError as exc:
                raise KeyStoreError(f"cannot create {where}: {exc.strerror}") from None
            else:
                os.close(fd)
                fresh = True
        try:
            mode = self.path.stat().st_mode
        except OSError as exc:
            raise KeyStoreError(f"cannot read {where}: {exc.strerror}") from None
        if not stat.S_ISREG(mode):
            raise KeyStoreError(f"{where} is not a regular file")
        if mode & 0o077:
            raise KeyStoreError(
                f"{where} is readable by others (mode {stat.S_IMODE(mode):04o}); "
                f"keys must be private: chmod 600 {self.path}"
            )
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise KeyStoreError(f"cannot open {where}: {exc}") from None
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA secure_delete = ON")  # destroyed keys are overwritten
            if fresh or self.path.stat().st_size == 0:
                self._create(conn)
            self._check(conn, where)
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.Error as exc:
            conn.close()
            raise KeyStoreError(f"{where} is not an engram key store: {exc}") from None
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _create(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS keystore_meta (key TEXT PRIMARY KEY, value TEXT)"
            )
            conn.execute(
                "INSERT OR IGNORE INTO keystore_meta (key, value) VALUES ('format', ?)", (_FORMAT,)
            )
            conn.execute(
                """CREATE TABLE IF NOT EXISTS subject_keys (
                    key_id    TEXT PRIMARY KEY,
                    subject   TEXT NOT NULL,
                    key       BLOB,
                    created   TEXT NOT NULL,
                    forgotten TEXT
                )"""
            )
            conn.execute(
                "CREATE UNIQUE INDEX IF NOT EXISTS subject_keys_live ON subject_keys (subject)"
                " WHERE key IS NOT NULL"
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _check(conn: sqlite3.Connection, where: str) -> None:
        try:
            row = conn.execute("SELECT value FROM keystore_meta WHERE key = 'format'").fetchone()
            conn.execute("SELECT key_id, subject, key, forgotten FROM subject_keys LIMIT 1")
        except sqlite3.DatabaseError as exc:
            raise KeyStoreError(f"{where} is not an engram key store ({exc})") from None
        if row is None or row[0] != _FORMAT:
            found = "no format" if row is None else f"format {row[0]!r}"
            raise KeyStoreError(f"{where} has {found}, not {_FORMAT!r}")

    # -- keys --------------------------------------------------------------------------------

    def live_key(self, subject: str) -> tuple[str, AESGCM, bytes]:
        """Return ``subject``'s live key (id, cipher, raw key), creating one if it has none."""
        key_id = self._live.get(subject)
        if key_id is not None:
            key = self._keys.get(key_id)
            if key is not None:
                return key_id, self._ciphers[key_id], key
        with self._lock:
            try:
                return self._live_key(subject)
            except sqlite3.Error as exc:
                raise KeyStoreError(f"key store {self.path}: {exc}") from None

    def sealing_key(self, subject: str) -> SealingKey:
        """Return what sealing under ``subject``'s live key needs, creating the key if needed.

        The append path's lookup (ADR 0084): one dictionary read once the subject's key is
        known, and the nonce's keyed hash set up once per key instead of once per field.
        """
        found = self._sealing.get(subject)
        if found is not None:
            return found
        key_id, cipher, key = self.live_key(subject)
        made = SealingKey(
            f"{SEALED_PREFIX}{key_id}:", cipher, _blake2b(key=key, digest_size=_NONCE)
        )
        with self._lock:
            if self._live.get(subject) == key_id:  # not forgotten or refreshed meanwhile
                self._sealing[subject] = made
        return made

    def _live_key(self, subject: str) -> tuple[str, AESGCM, bytes]:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "SELECT key_id, key FROM subject_keys WHERE subject = ? AND key IS NOT NULL",
                (subject,),
            ).fetchone()
            if row is None:
                row = (secrets.token_hex(_KEY_ID_CHARS // 2), AESGCM.generate_key(bit_length=256))
                conn.execute(
                    "INSERT INTO subject_keys (key_id, subject, key, created) VALUES (?, ?, ?, ?)",
                    (row[0], subject, row[1], datetime.now(UTC).isoformat()),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        key_id, key = str(row[0]), bytes(row[1])
        self._remember(key_id, subject, key)
        self._live[subject] = key_id
        return key_id, self._ciphers[key_id], key

    def cipher(self, key_id: str) -> AESGCM | None:
        """Return the cipher of key ``key_id``, or None once that key is destroyed.

        Raises:
            KeyStoreError: no such key: the ledger was sealed with another key store.
        """
        if key_id in self._keys:
            return self._ciphers.get(key_id)
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT subject, key FROM subject_keys WHERE key_id = ?", (key_id,)
                ).fetchone()
            except sqlite3.Error as exc:
                raise KeyStoreError(f"key store {self.path}: {exc}") from None
        if row is None:
            raise KeyStoreError(
                f"key {key_id} is not in key store {self.path}: the ledger's personal fields"
                " were sealed with another key store (configure the right one: keys = PATH)"
            )
        self._remember(key_id, str(row[0]), None if row[1] is None else bytes(row[1]))
        return self._ciphers.get(key_id)

    def _remember(self, key_id: str, subject: str, key: bytes | None) -> None:
        if key is not None:
            if len(key) != 32:
                raise KeyStoreError(f"key {key_id} in key store {self.path} is not 32 bytes")
            self._ciphers[key_id] = AESGCM(key)
        self._keys[key_id] = key
        self._owners[key_id] = subject

    def forget(self, subject: str, *, unfinished: str | None = None) -> int:
        """Destroy every key of ``subject``; return how many were live (0: none, or already).

        The rows stay as tombstones (key id, subject, when) so a read tells a destroyed key
        from a key store that never held it. SQLite's secure_delete overwrites the key bytes,
        and the write-ahead log is checkpointed and truncated before returning.

        With ``unfinished``, the store keeps it, in the transaction that destroys the keys,
        until :meth:`forgetting_done` (what a ledger needs to finish after a crash).
        """
        if not isinstance(subject, str) or not subject:
            raise KeyStoreError(f"subject must be a non-empty string, got {subject!r}")
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    count = self._conn.execute(
                        "UPDATE subject_keys SET key = NULL, forgotten = ?"
                        " WHERE subject = ? AND key IS NOT NULL",
                        (datetime.now(UTC).isoformat(), subject),
                    ).rowcount
                    if unfinished is not None:
                        self._conn.execute(
                            "INSERT OR REPLACE INTO keystore_meta (key, value) VALUES (?, ?)",
                            (_UNFINISHED + subject, unfinished),
                        )
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                raise KeyStoreError(f"key store {self.path}: {exc}") from None
            self.evict(subject)
        return count

    def unfinished_forgets(self) -> dict[str, str]:
        """Return each subject whose forgetting is unfinished, with what :meth:`forget` kept."""
        sql = "SELECT substr(key, 12), value FROM keystore_meta WHERE key LIKE 'forgetting:%'"
        with self._lock:
            return {str(s): str(v) for s, v in self._conn.execute(sql).fetchall()}

    def forgetting_done(self, subject: str) -> None:
        """Drop ``subject``'s unfinished forgetting: its ``subject.forgotten`` is appended."""
        with self._lock:
            self._conn.execute("DELETE FROM keystore_meta WHERE key = ?", (_UNFINISHED + subject,))

    def _data_version(self) -> int:
        row = self._conn.execute("PRAGMA data_version").fetchone()
        return int(row[0]) if row else 0

    def refresh(self) -> None:
        """Drop the cached live keys if another connection changed the store since last time.

        Called before every page read and every append: a key another process destroyed is
        not used from this process's cache afterwards (SQLite's ``data_version``).
        """
        with self._lock:
            try:
                version = self._data_version()
            except sqlite3.Error as exc:
                raise KeyStoreError(f"key store {self.path}: {exc}") from None
            if version == self._version:
                return
            self._version = version
            self._live.clear()
            self._sealing.clear()
            for key_id in [k for k, key in self._keys.items() if key is not None]:
                del self._keys[key_id], self._ciphers[key_id], self._owners[key_id]

    def evict(self, subject: str) -> None:
        """Drop ``subject``'s keys from this process's cache (another process forgot them)."""
        self._live.pop(subject, None)
        self._sealing.pop(subject, None)
        for key_id in [k for k, owner in self._owners.items() if owner == subject]:
            if self._keys.get(key_id) is not None:  # a destroyed key stays known as such
                self._keys.pop(key_id, None)
                self._ciphers.pop(key_id, None)
                self._owners.pop(key_id, None)

    def subjects(self) -> list[SubjectKeys]:
        """Return every subject the store holds keys of, by name."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT subject, count(*), count(forgotten), count(key) FROM subject_keys"
                " GROUP BY subject ORDER BY subject"
            ).fetchall()
        return [SubjectKeys(s, int(n), int(f), bool(live)) for s, n, f, live in rows]

    def copy_keys(self, key_ids: Sequence[str], into: KeyStore) -> int:
        """Copy keys ``key_ids`` (live or destroyed, with their subject) into ``into``.

        For moving keys between stores (a shared store split per tenant, ADR 0047): a key
        ``into`` holds already is left as it is. Returns how many rows were added.
        """
        with self._lock:
            rows = [
                row
                for chunk in chunked(list(key_ids))
                for row in self._conn.execute(
                    "SELECT key_id, subject, key, created, forgotten FROM subject_keys"
                    f" WHERE key_id IN ({', '.join('?' * len(chunk))})",
                    chunk,
                )
            ]
        with into._lock:
            conn = into._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                added = sum(
                    conn.execute(
                        "INSERT OR IGNORE INTO subject_keys"
                        " (key_id, subject, key, created, forgotten) VALUES (?, ?, ?, ?, ?)",
                        row,
                    ).rowcount
                    for row in rows
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return added

    def destroy_keys(self, key_ids: Sequence[str]) -> int:
        """Destroy keys ``key_ids`` as :meth:`forget` does a subject's; return how many."""
        with self._lock:
            now = datetime.now(UTC).isoformat()
            count = sum(
                self._conn.execute(
                    "UPDATE subject_keys SET key = NULL, forgotten = ?"
                    f" WHERE key IS NOT NULL AND key_id IN ({', '.join('?' * len(chunk))})",
                    (now, *chunk),
                ).rowcount
                for chunk in chunked(list(key_ids))
            )
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._live.clear()
            self._sealing.clear()
            for key_id in key_ids:
                if self._keys.get(key_id) is not None:
                    del self._keys[key_id], self._ciphers[key_id], self._owners[key_id]
        return count

    def close(self) -> None:
        """Close the file; the store cannot be used afterwards."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> KeyStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Sealer:
    """Seal the personal fields of events on append and open them on read.

    ``personal`` maps a kind to its personal fields (top-level string fields).
    """

    def __init__(self, keys: KeyStore, personal: Mapping[str, Sequence[str]] | None = None):
        if not isinstance(keys, KeyStore):
            raise KeyStoreError(f"keys must be a KeyStore, got {type(keys).__name__}")
        chosen = DEFAULT_PERSONAL if personal is None else personal
        self.keys = keys
        self.personal: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in chosen.items()}
        self._tails = {
            kind: [(name, _aad("", kind, name)) for name in names]
            for kind, names in self.personal.items()
        }
        self._open_decoded = self._opener()

    def seal(self, kind: str, event_id: str, actor: str, payload: Any) -> Any:
        """Return ``payload`` (a Struct) with its personal string fields sealed.

        The append path's hot loop for personal kinds (ADR 0059, 0084, 0089): each field's
        associated data is the event id's bytes and the field's tail built once per sealer;
        the subject's cipher and keyed nonce hash come from one lookup; the sealed values go
        straight into one copy of the payload, made at the first field to seal. ``payload``
        itself is left as it was, and returned when nothing is to be sealed.
        """
        agent = getattr(payload, "agent", None)
        subject = agent if type(agent) is str and agent else actor  # subject_of, inline
        keys = self.keys
        head, cipher, nonce_hash = keys._sealing.get(subject) or keys.sealing_key(subject)
        copy = None
        ident = b""
        for name, tail in self._tails[kind]:
            value = getattr(payload, name, None)
            if type(value) is not str or value.startswith(SEALED_PREFIX):
                continue
            ident = ident or event_id.encode()
            aad = ident + tail  # == _aad(event_id, kind, name)
            plain = value.encode()  # validated already: no lone surrogates
            # A synthetic IV: BLAKE2b keyed with the key, of the associated data, a NUL and
            # the plaintext (the keyed state is copied, not set up again: the same digest;
            # three updates are cheaper than one update of the three joined).
            h = nonce_hash.copy()
            h.update(aad)
            h.update(b"\x00")
            h.update(plain)
            nonce = h.digest()
            if copy is None:
                copy = payload.__copy__()
            _set(copy, name, head + (nonce + cipher.encrypt(nonce, plain, aad)).hex())
        return payload if copy is None else copy

    def seal_fields(self, kind: str, event_id: str, actor: str, payload: Any) -> dict[str, str]:
        """Return the sealed value of each personal string field of ``payload`` not sealed yet."""
        sealed = self.seal(kind, event_id, actor, payload)
        if sealed is payload:
            return {}
        return {
            name: getattr(sealed, name)
            for name, _ in self._tails[kind]
            if getattr(sealed, name, None) is not getattr(payload, name, None)
        }

    def open(self, kind: str, event_id: str, payload: Any) -> Any:
        """Return ``payload`` with its sealed fields opened, or :data:`FORGOTTEN`.

        ``payload`` is left as it was; the opened fields are in a copy.
        """
        return self.open_decoded(kind, event_id, msgspec.structs.replace(payload))

    def open_decoded(self, kind: str, event_id: str, payload: Any) -> Any:
        """Open the sealed fields of a payload just decoded, in place, and return it.

        The read path's hot loop for personal kinds (ADR 0039): ``payload`` must be a Struct
        nobody else holds yet, since its fields are set in place. Built once per sealer as a
        closure over its tables (cached ciphers, each field's associated-data tail), so a
        sealed field costs one hex decoding, one AES-GCM call and no global lookups.
        """
        return self._open_decoded(kind, event_id, payload)

    def _opener(self) -> Callable[[str, str, Any], Any]:
        tails, get, cipher_of = self._tails, self.keys._ciphers.get, self._cipher_of
        prefix, start, end, box, nonce = SEALED_PREFIX, _PREFIX_LEN, _BOX - 1, _BOX, _NONCE
        unhex, setter, forgotten, refuse = _unhex, _set, FORGOTTEN, self._refuse

        def open_decoded(kind: str, event_id: str, payload: Any) -> Any:
            for name, tail in tails[kind]:
                value = getattr(payload, name, None)
                if type(value) is not str or value[:start] != prefix:
                    continue
                cipher = get(value[start:end])
                if cipher is None:
                    cipher = cipher_of(value, event_id, kind, name)
                    if cipher is None:
                        setter(payload, name, forgotten)
                        continue
                try:
                    raw = unhex(value[box:])
                    plain = cipher.decrypt(raw[:nonce], raw[nonce:], event_id.encode() + tail)
                except (InvalidTag, ValueError):
                    raise refuse(value, event_id, kind, name) from None
                setter(payload, name, plain.decode())
            return payload

        return open_decoded

    def _refuse(self, value: str, event_id: str, kind: str, name: str) -> KeyStoreError:
        return KeyStoreError(
            f"{_where(event_id, kind, name)} does not open with key"
            f" {value[_PREFIX_LEN : _BOX - 1]} of key store {self.keys.path}: the value"
            " was altered or the key store's key is not the one it was sealed with"
        )

    def _cipher_of(self, value: str, event_id: str, kind: str, name: str) -> AESGCM | None:
        """Return the cipher of a sealed value's key (None: destroyed), checking its frame."""
        if value[_BOX - 1 : _BOX] != ":" or len(value) <= _BOX:
            raise KeyStoreError(f"{_where(event_id, kind, name)}: malformed sealed value")
        return self.keys.cipher(value[_PREFIX_LEN : _BOX - 1])

    def forgotten(self, subject: str) -> None:
        """Forget a subject's cached keys: called when a ``subject.forgotten`` event is read."""
        self.keys.evict(subject)
