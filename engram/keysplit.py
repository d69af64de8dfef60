"""Where a ledger's key store is: its default one, each tenant's own, and the one-time
split of a store tenants used to share.

Without ``keys``, a ledger that seals (the default for SQLite, ADR 0086) keeps its keys in
``$XDG_DATA_HOME/engram-keys/<ledger id>.db`` (:func:`default_key_store`): created with the
ledger's first writable open, mode 0600, in a folder a copy of the ledger's folder leaves
behind, and named after the id stored in the ledger, so a moved ledger finds its keys and
two ledgers (two tenants) never share them. A reader never creates one; a writer that finds
its ledger's store missing while sealed fields exist refuses to open, loudly (a new store
could never open them, and the old keys would be mixed with new ones).

Keys belong to a tenant (ADR 0047): a subject is (tenant, name), and tenant ``acme``'s keys
live in ``<keys>.tenants/acme/keys.db`` (:func:`engram.config.scope_to_tenant`), so
forgetting ``alice`` in one tenant leaves another tenant's ``alice`` readable, and listing
keys shows the tenant's own subjects only.

Before, every tenant sealed under the one store named by ``keys``. The first write in any
tenant splits it: each namespace (the base ledger and every tenant) is read once for the
key ids its sealed fields name; each tenant's store receives the keys its ledger uses; the
shared store keeps the keys the base ledger uses and destroys the ones only tenants used.
A key that two namespaces used (the same subject name sealed in both before the split)
is copied to each: forgetting the subject in one then leaves the other's copy, so that
older data stays readable where it was written; the ADR says so. Until a writer has split
it, a reader reads the shared store, as before.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from engram.config import (
    TENANT_SEPARATOR,
    TENANTS_SUFFIX,
    Settings,
    default_key_folder,
    default_key_store_path,
    ledger_file,
)
from engram.ledger import ConfigError, DamagedLedgerError, KeyStore, KeyStoreError, Ledger
from engram.ledger.files import write_atomically
from engram.ledger.personal import personal_fields
from engram.ledger.shred import SEALED_PREFIX, is_sealed

__all__ = [
    "SPLIT_MARK",
    "Opener",
    "default_key_store",
    "key_store_file",
    "key_store_path",
    "split_shared_keys",
]

#: Opens the ledger of some settings read-only (the composition root's ``open_settings``).
Opener = Callable[[Settings], Ledger]

#: The file, in ``<keys>.tenants/``, that says the shared store was split (and how).
SPLIT_MARK = ".split"
_KEY_ID = slice(len(SEALED_PREFIX), len(SEALED_PREFIX) + 16)


def key_store_path(settings: Settings, *, readonly: bool, opener: Opener) -> str:
    """Return the key store file ``settings`` seal and open with (ADR 0039, ADR 0047).

    A tenant's is its own; a writer first splits the store tenants shared, if not done yet
    (:func:`split_shared_keys`, reading the ledgers through ``opener``: the composition
    root's, which opens a ledger for settings read-only); a reader meanwhile reads the
    shared store.
    """
    path = os.path.expanduser(settings.keys)
    shared = settings.shared_keys
    if not settings.tenant or not shared or not os.path.isfile(shared) or _split(shared):
        if not readonly:
            os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        return path
    if readonly:
        return shared
    split_shared_keys(settings, opener)
    return path


def default_key_store(settings: Settings, ledger: Ledger, *, readonly: bool) -> KeyStore | None:
    """Return the default key store of ``ledger`` (ADR 0086), or None when nothing is sealed.

    For settings without ``keys``. A writer that seals names an unnamed ledger and creates
    its store (mode 0600, folder 0700); a reader never creates either, and reads without a
    store when there is none (sealed fields then read as stored). ``seal = false`` uses no
    store: a reader reads sealed fields as stored, and a writer of a ledger that already has
    a store is refused (its fields would be sealed by some processes, plain in others).

    Raises:
        KeyStoreError: a writer's ledger holds sealed fields but its key store is missing.
        ConfigError: ``seal = false`` for a writer of a ledger that seals, or no data
            directory to put the store in.
    """
    ledger_id, made = ledger.identity()
    if not settings.sealing:
        if readonly or not ledger_id:
            return None
        try:
            path = default_key_store_path(ledger_id)
        except ConfigError:
            return None  # no data directory: no store to find
        if os.path.isfile(path):
            raise ConfigError(
                f"seal = false, but this ledger (id {ledger_id}) already seals personal fields"
                f" under its key store {path}: remove seal = false to write to it, or start a"
                " new ledger for plain text"
            )
        return None
    if not ledger_id:
        if readonly:
            return None
        default_key_folder()  # no data directory: refused before the ledger is named
        if ledger.head() and _holds_sealed(ledger, settings):
            # Sealed fields are sealed under a key store named after the ledger's id: one
            # holding them had an id, which was taken out of it (ADR 0160).
            raise DamagedLedgerError(
                "the ledger's identity (ledger_meta 'ledger_id') is missing, but the ledger"
                " holds sealed personal fields: it was changed outside engram; restore the"
                " ledger from a backup (nothing was written)"
            )
        ledger_id, made = ledger.identity(create=True)
    path = default_key_store_path(ledger_id)
    if os.path.isfile(path):
        return KeyStore(path, create=False)
    if readonly:
        return None
    if not made and _holds_sealed(ledger, settings):
        raise KeyStoreError(
            f"the key store of this ledger (id {ledger_id}) is missing: {path} does not"
            " exist, but the ledger holds sealed personal fields, which can never be read"
            " without it. Restore the file from your backup of it (or set keys = PATH to"
            " where it is); opening this ledger to write is refused so that no new keys"
            " mix with the lost ones. Readers still open it, sealed fields as stored."
        )
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    return KeyStore(path, create=True)


def key_store_file(settings: Settings, opener: Opener) -> str:
    """Return the key store file ``settings``' ledger seals with, for a reader ("" if none).

    ``opener`` opens the ledger read-only (the composition root's). The configured
    ``keys`` (a tenant's own, or the shared store until it is split), else the ledger's
    default store when it has one.
    """
    if settings.keys:
        return key_store_path(settings, readonly=True, opener=opener)
    with opener(dataclasses.replace(settings, seal=False)) as ledger:
        ledger_id = ledger.identity()[0]
    if not ledger_id:
        return ""
    path = default_key_store_path(ledger_id)
    return path if os.path.isfile(path) else ""


def _holds_sealed(ledger: Ledger, settings: Settings) -> bool:
    """Say whether any personal field of ``ledger`` is sealed (read as stored, no keys)."""
    personal = settings.personal()
    events = ledger.read(kinds=[k for k in personal if k in ledger.registry])
    found = personal_fields(events, personal)
    return any(is_sealed(value) for _, fields in found for value in fields.values())


def _split(shared: str) -> bool:
    return os.path.isfile(os.path.join(shared + TENANTS_SUFFIX, SPLIT_MARK))


def split_shared_keys(settings: Settings, opener: Opener) -> dict[str, int]:
    """Give every tenant its own copy of the shared store's keys its ledger uses.

    ``settings`` are a tenant's. Returns, by namespace ("" for the base ledger), how many
    keys its store received; the shared store destroys the keys only tenants used. Safe to
    run again after a crash: copies skip what is there, and the mark is written last.
    """
    from engram.tenancy import list_tenants

    shared = settings.shared_keys
    folder = shared + TENANTS_SUFFIX
    os.makedirs(folder, mode=0o700, exist_ok=True)
    _check_private(folder)
    base = _base(settings)
    with _locked(os.path.join(folder, ".split.lock")):
        if _split(shared):
            return {}
        namespaces = {"": base, **{t.name: t.settings for t in list_tenants(base)}}
        namespaces.setdefault(settings.tenant, settings)
        used = {name: _key_ids(ns, opener) for name, ns in namespaces.items()}
        copied: dict[str, int] = {}
        with KeyStore(shared, create=False) as source:
            for name, ns in namespaces.items():
                if not name:
                    continue
                path = os.path.expanduser(ns.keys)
                os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
                with KeyStore(path) as own:
                    copied[name] = source.copy_keys(sorted(used[name]), own)
            tenants_only = set().union(*(ids for n, ids in used.items() if n)) - used[""]
            copied[""] = -source.destroy_keys(sorted(tenants_only))
        mark = os.path.join(folder, SPLIT_MARK)
        # Through a fresh file of its own, never a name another user could have planted.
        written = {"at": datetime.now(UTC).isoformat(), "keys": copied}
        write_atomically(mark, json.dumps(written).encode())
    return copied


def _check_private(folder: str) -> None:
    """Refuse a tenants' key folder that is a link, another user's, or writable by others:
    they could plant links there to redirect what is written, or replace the key stores."""
    found = os.lstat(folder)
    if stat.S_ISLNK(found.st_mode) or not stat.S_ISDIR(found.st_mode):
        raise ConfigError(f"the tenants' key folder {folder} is not a directory of its own")
    if found.st_uid != os.getuid() or found.st_mode & 0o022:
        raise ConfigError(
            f"the tenants' key folder {folder} is writable by other users (mode"
            f" {stat.S_IMODE(found.st_mode):o}, owner uid {found.st_uid}): it must be this"
            " user's alone (chmod 700); nothing was copied into it"
        )


def _base(settings: Settings) -> Settings:
    """Return the unscoped settings a tenant's were made from (ledger, schema, keys)."""
    ledger, schema = settings.ledger, settings.pg_schema
    if settings.on_server:
        schema = schema.removesuffix(TENANT_SEPARATOR + settings.tenant)
    else:
        tenants = os.path.dirname(os.path.dirname(ledger_file(ledger) or ledger))
        ledger = tenants.removesuffix(TENANTS_SUFFIX)
    return dataclasses.replace(
        settings,
        ledger=ledger,
        pg_schema=schema,
        tenant="",
        keys=settings.shared_keys,
        shared_keys="",
        projections="",
    )


def _key_ids(settings: Settings, opener: Opener) -> set[str]:
    """Return the ids of the keys the sealed fields of ``settings``' ledger name."""
    from engram.ledger import LedgerNotFoundError

    plain = dataclasses.replace(settings, keys="", shared_keys="", seal=False)
    personal = settings.personal()
    found: set[str] = set()
    try:
        ledger = opener(plain)
    except LedgerNotFoundError:
        return found  # a tenant whose ledger is not created yet uses no key
    with ledger:
        events = ledger.read(kinds=[k for k in personal if k in ledger.registry])
        for _, fields in personal_fields(events, personal):
            found.update(v[_KEY_ID] for v in fields.values() if isinstance(v, str) and is_sealed(v))
    return found


@contextmanager
def _locked(path: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if need be) for the block."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
