"""Where the ledger lives: an explicit option, then ``ENGRAM_LEDGER``, then a config file.

Config files are TOML, read from ``--config``, ``ENGRAM_CONFIG``, ``./engram.toml`` or
``$XDG_CONFIG_HOME/engram/config.toml`` (first found)::

    ledger = "postgresql://127.0.0.1:5432/engram"   # or a SQLite file path
    pg_schema = "engram"                             # not information_schema or pg_* (ADR 0186)
    tenant = "acme"                                  # this process's tenant (ADR 0040; optional)
    durability = "full"                              # or "fast"
    projections = "/var/lib/engram/projections"      # the local projection store
    decay_rate = 0.99                                # salience kept per hour
    routing = "~/.config/engram/routing.toml"        # embedders by use, a file that exists
                                                     # (default: MiniLM on ONNX where
                                                     # installed, else hash)
    busy_timeout = 30                                # seconds a write waits for a lock (0..86400)
    reflect_every = 100                              # reflect after N visible memories (0: off)
    reflect_importance = 150                         # ... or once their importance sums to this
    seal = true                                      # seal personal fields (ADR 0039, 0086);
                                                     # default: on for SQLite, off for PostgreSQL
    keys = "/var/lib/engram/keys.db"                 # the key store (default: one per ledger
                                                     # in $XDG_DATA_HOME/engram-keys, ADR 0086)
    mcp_pack_dir = "~/engram-packs"                  # the only folder MCP pack tools may use
                                                     # (ADR 0046; default: pack tools refuse)
    supersede = "apply"                              # detected replacements: apply, review, off
    half_life_days = 30                              # recall's recency halves at this age

    [kinds."task.assigned"]                          # your own event kinds (ADR 0018)
    schema = 1                                       # the payload's schema number (default 1)
    fields = { task = "str", assignee = "str", priority = "int?", labels = "list[str]?" }
    personal = ["task"]                              # sealed under the subject's key (ADR 0039)

    [kinds."note.taken"]
    open = true                                      # payload {"data": {any JSON object}}

    [destinations]                                   # where applied suggestions are written
    instructions_file = "AGENTS.md"                  # a file: lines appended, diffs applied
    settings = "settings.md"
    notes_inbox = "notes/inbox"                      # a folder: one file per suggestion
    skill = "skills"
    task = "tasks"
    [jobs.sleep]                                     # the daemon's jobs (ADR 0031, 0032)
    every = "1h"                                     # a number of seconds, or 90s, 15m, 1h, 7d
    threshold = 50000                                # salience a consolidation candidate reaches
    boost = 512                                      # weight added per sleep, capped at 65535
    after_actions = 0                                # also sleep after N activations (0: off)
    saturation = 0                                   # also sleep past N active neurons (0: off)

    [jobs.archive]
    every = "1d"
    min_activations = 1                              # neurons activated fewer times than this...
    neuron_age = "30d"                               # ...and older than this are archived
    memory_age = "90d"                               # memories never recalled, older than this

Field types: ``str``, ``int``, ``float``, ``bool``, ``list[str]``, ``list[int]``,
``list[float]``, ``list[bool]`` and ``json`` (a JSON object); a trailing ``?`` makes a field
optional (absent means null). Payloads of these kinds are validated like engram's own.

With none of them, the ledger is ``$XDG_DATA_HOME/engram/ledger.db``
(``~/.local/share/engram/ledger.db``). The projection store defaults to a directory beside
a SQLite ledger (``ledger.db.projections``), or, for a PostgreSQL ledger, to one per
database and schema under ``$XDG_DATA_HOME/engram/projections``.

A tenant (``--tenant``, ``ENGRAM_TENANT``, ``tenant =``; ADR 0040) is a namespace of its own:
on PostgreSQL the schema ``<pg_schema>__<tenant>``, on SQLite the ledger
``<ledger>.tenants/<tenant>/ledger.db``; an explicit projection store becomes
``<projections>.tenants/<tenant>`` and a key store ``<keys>.tenants/<tenant>/keys.db``
(ADR 0047). Every other path derives from these, so a tenant's handle never names another
tenant's tables, files or keys (:func:`scope_to_tenant`).

Personal fields are sealed by default (ADR 0086): without ``keys``, a ledger's key store is
``$XDG_DATA_HOME/engram-keys/<ledger id>.db`` (:func:`default_key_store_path`), named after
the id stored in the ledger, so a tenant (a ledger of its own) has its own. ``seal = false``
writes them plain; a PostgreSQL ledger seals only when ``seal = true`` or ``keys`` says so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from engram.declared import KindDeclaration, declarations
from engram.ledger import ConfigError, backends
from engram.projections.tomlfile import TomlFileError, read_toml

_KEYS: dict[str, type | tuple[type, ...]] = {
    "ledger": str,
    "pg_schema": str,
    "tenant": str,
    "durability": str,
    "busy_timeout": (int, float),
    "max_payload_bytes": int,
    "projections": str,
    "decay_rate": (int, float),
    "routing": str,
    "reflect_every": int,
    "reflect_importance": (int, float),
    "keys": str,
    "seal": bool,
    "mcp_pack_dir": str,
    "supersede": str,
    "half_life_days": (int, float),
    "kinds": dict,
    "destinations": dict,
    "jobs": dict,
}
#: Where applied suggestions are written, by destination (``rules`` is served, not written).
DESTINATION_KEYS = ("instructions_file", "settings", "notes_inbox", "skill", "task")
#: A tenant name: a lowercase letter, then lowercase letters, digits and single underscores.
TENANT_PATTERN = re.compile(r"[a-z](?:[a-z0-9]|_(?!_))*\Z")
TENANT_MAX = 24
#: What separates a base PostgreSQL schema from the tenant in a tenant's schema name.
TENANT_SEPARATOR = "__"
#: The folder beside a SQLite ledger (or projection store) that holds its tenants.
TENANTS_SUFFIX = ".tenants"
TENANT_LEDGER_FILE = "ledger.db"
#: A tenant's own key store, in ``<keys>.tenants/<tenant>/`` (ADR 0047).
TENANT_KEYS_FILE = "keys.db"


#: The longest wait for a lock a setting may ask for: a day, in seconds.
MAX_BUSY_TIMEOUT = 86_400


@dataclass(frozen=True)
class Settings:
    """Resolved settings: where the ledger is and how to open it."""

    ledger: str
    pg_schema: str = "engram"
    durability: str = "full"
    busy_timeout: float = 30.0
    max_payload_bytes: int = 1 << 20
    projections: str = ""
    decay_rate: float = 0.99
    #: What detection does with a memory that seems to replace an earlier one (ADR 0052).
    supersede: str = "apply"
    #: The age in days at which recall's recency halves (ADR 0050).
    half_life_days: float = 30.0
    routing: str = ""
    #: Reflection triggers (ADR 0030): due after this many visible memories since the last
    #: reflection, or once their importance sums to ``reflect_importance``; 0 turns one off.
    reflect_every: int = 100
    reflect_importance: float = 150.0
    kinds: tuple[KindDeclaration, ...] = ()
    #: The key store file sealing personal fields (ADR 0039); empty: the ledger's default
    #: store, when it seals (:attr:`sealing`, ADR 0086).
    #: A tenant's is its own, ``<keys>.tenants/<tenant>/keys.db`` (ADR 0047).
    keys: str = ""
    #: For a tenant: the store its keys were kept in before each tenant had its own, split
    #: once on the tenant's first write (ADR 0047). Set by :func:`scope_to_tenant`.
    shared_keys: str = ""
    #: Seal personal fields (ADR 0086): None is the default, on for a SQLite ledger and off
    #: for a PostgreSQL one (its nodes would not share a key store file); ``keys`` implies on.
    seal: bool | None = None
    destinations: tuple[tuple[str, str], ...] = ()
    #: The one folder the MCP server's pack tools may read and write (ADR 0046); empty:
    #: they refuse, since a model is not the user.
    mcp_pack_dir: str = ""
    source: str = "default"
    #: The tenant whose namespace ``ledger``/``pg_schema``/``projections`` already name
    #: (ADR 0040); "" for none. Set it with :func:`scope_to_tenant`, never by hand.
    tenant: str = ""
    #: The config file's ``[jobs.*]`` tables as read; engram.jobs.settings checks them.
    jobs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tenant and not _names_tenant(self):
            raise ConfigError(
                f"settings claim tenant {self.tenant!r} but name another namespace"
                f" ({self.ledger!r}, schema {self.pg_schema!r}); use scope_to_tenant"
            )

    @property
    def on_server(self) -> bool:
        """Return whether the ledger is on a server (PostgreSQL), named by its URL."""
        kind = backends.find(self.ledger)
        return kind is not None and kind.server

    @property
    def is_postgres(self) -> bool:
        """Return whether the ledger is on a server: the old name of :attr:`on_server`."""
        return self.on_server

    @property
    def sealing(self) -> bool:
        """Return whether personal fields are sealed: ``keys`` given, else ``seal``, else
        on for a SQLite ledger and off for a PostgreSQL one (ADR 0086)."""
        if self.keys:
            return True
        return (not self.is_postgres) if self.seal is None else self.seal

    @property
    def projection_store(self) -> str:
        """Return the projection store directory: the setting, or beside the ledger."""
        if self.projections:
            return self.projections
        path = ledger_file(self.ledger)
        if path is not None:
            return path + ".projections"
        return self._server_folder("projections")

    @property
    def lessons_home(self) -> str:
        """Return the folder applied lessons are written to (AGENTS.md, notes, skills).

        Beside the projection store, as ``lessons``, where that folder is the ledger's own (a
        SQLite ledger's store beside it, a tenant's in its own folder); else the store's own
        ``<projection store>.lessons``: a server ledger's store sits in a folder shared with
        every other server ledger, an explicit store's tenants in one folder, and lessons
        written beside them reached them all."""
        store = self.projection_store
        if self.on_server or (self.tenant and self.projections):
            return store + ".lessons"
        return os.path.join(os.path.dirname(store), "lessons")

    def personal(self) -> dict[str, tuple[str, ...]]:
        """Return the personal fields by kind: engram's own, then the declared kinds'."""
        from engram.ledger.shred import DEFAULT_PERSONAL

        found = dict(DEFAULT_PERSONAL)
        found.update((d.name, d.personal) for d in self.kinds if d.personal)
        return found

    @property
    def cold_directory(self) -> str:
        """Return where cold ledger segments go: beside a SQLite ledger, else in the data home."""
        path = ledger_file(self.ledger)
        if path is not None:
            return path + ".cold"
        return self._server_folder("cold")

    def _server_folder(self, what: str) -> str:
        """Return the folder of a server ledger's local files: one per ledger, however its
        URL is spelt (a folder made before, under the URL as spelt, is kept)."""
        base = os.path.join(_data_home(), "engram", what)
        folder = os.path.join(base, _digest(f"{pg_identity(self.ledger)}|{self.pg_schema}"))
        legacy = os.path.join(base, _digest(f"{_without_password(self.ledger)}|{self.pg_schema}"))
        return legacy if not os.path.isdir(folder) and os.path.isdir(legacy) else folder


def ledger_file(ledger: str) -> str | None:
    """Return the file a file backend's ledger is in (its URL scheme dropped), else None."""
    kind = backends.find(ledger)
    return None if kind is None or kind.server else kind.location(ledger)


def check_tenant(name: object, where: str = "tenant") -> str:
    """Return ``name`` if it is a valid tenant name, else raise ConfigError saying why."""
    if not isinstance(name, str):
        raise ConfigError(f"{where} must be a string, got {type(name).__name__}")
    if not TENANT_PATTERN.match(name) or len(name) > TENANT_MAX:
        raise ConfigError(
            f"{where} {name!r} is invalid: a lowercase letter, then lowercase letters, digits"
            f" and single underscores, at most {TENANT_MAX} characters (e.g. 'acme', 'team_2')"
        )
    return name


def tenant_schema(base: str, tenant: str) -> str:
    """Return the PostgreSQL schema of ``tenant`` under the base schema ``base``."""
    return f"{base}{TENANT_SEPARATOR}{tenant}"


def tenants_directory(ledger: str) -> str:
    """Return the folder that holds the tenants of the SQLite ledger ``ledger``."""
    return os.path.expanduser(ledger_file(ledger) or ledger) + TENANTS_SUFFIX


def scope_to_tenant(settings: Settings, tenant: str) -> Settings:
    """Return ``settings`` moved into ``tenant``'s namespace (ADR 0040).

    PostgreSQL: the schema ``<pg_schema>__<tenant>`` in the same database; SQLite: the file
    ``<ledger>.tenants/<tenant>/ledger.db``. An explicit projection store moves to
    ``<projections>.tenants/<tenant>``; a derived one (and the cold folder) follows the
    ledger. A key store moves to ``<keys>.tenants/<tenant>/keys.db`` (ADR 0047). Raises
    ConfigError for a bad name or settings already scoped to a tenant.
    """
    check_tenant(tenant)
    if settings.tenant:
        raise ConfigError(
            f"settings are already scoped to tenant {settings.tenant!r}; a tenant has no tenants"
        )
    changes: dict[str, Any] = {"tenant": tenant}
    if settings.on_server:
        if TENANT_SEPARATOR in settings.pg_schema:
            raise ConfigError(
                f"pg_schema {settings.pg_schema!r} holds {TENANT_SEPARATOR!r}, which separates"
                " a tenant; give the base schema with a tenant, or the schema alone"
            )
        changes["pg_schema"] = tenant_schema(settings.pg_schema, tenant)
        if len(changes["pg_schema"]) > 48:
            raise ConfigError(
                f"tenant {tenant!r} makes the schema {changes['pg_schema']!r} longer than"
                " PostgreSQL's 48 characters engram allows; use a shorter tenant or pg_schema"
            )
    elif ledger_file(settings.ledger) is None:
        raise ConfigError(f"cannot scope ledger {settings.ledger!r} to a tenant")
    else:
        base = tenants_directory(settings.ledger)
        changes["ledger"] = os.path.join(base, tenant, TENANT_LEDGER_FILE)
    if settings.projections:
        folder = os.path.expanduser(settings.projections).rstrip(os.sep) or os.sep
        changes["projections"] = os.path.join(folder + TENANTS_SUFFIX, tenant)
    if settings.keys:
        shared = os.path.expanduser(settings.keys)
        changes["keys"] = os.path.join(shared + TENANTS_SUFFIX, tenant, TENANT_KEYS_FILE)
        changes["shared_keys"] = shared
    return dataclasses.replace(settings, **changes)


def _names_tenant(settings: Settings) -> bool:
    """Return whether ``settings``' namespace is the one its tenant's scoping gives."""
    if settings.on_server:
        return settings.pg_schema.endswith(TENANT_SEPARATOR + settings.tenant)
    parts = Path(ledger_file(settings.ledger) or settings.ledger).parts
    return parts[-2:] == (settings.tenant, TENANT_LEDGER_FILE) and (
        len(parts) > 2 and parts[-3].endswith(TENANTS_SUFFIX)
    )


def _data_home() -> str:
    return os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")


#: The folder, in the user's data directory, of the default key stores (ADR 0086): beside
#: the default ledger's folder, not in it, so a copy of a ledger's folder leaves them behind.
KEYS_FOLDER = "engram-keys"


def default_key_folder() -> str:
    """Return the folder of the default key stores: ``$XDG_DATA_HOME/engram-keys`` (ADR 0086).

    Raises ConfigError when there is no absolute data directory to put it in (neither HOME
    nor XDG_DATA_HOME): sealing cannot be the default there.
    """
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, KEYS_FOLDER)
    try:  # the XDG spec ignores a relative XDG_DATA_HOME
        home = str(Path.home())
    except RuntimeError:
        home = ""
    if not os.path.isabs(home) or home == os.sep:
        raise ConfigError(
            "personal fields are sealed by default, but there is no data directory for the"
            " ledger's key store (neither HOME nor XDG_DATA_HOME is set): set XDG_DATA_HOME,"
            " or keys = PATH, or seal = false to write personal fields in plain text"
        )
    return os.path.join(home, ".local", "share", KEYS_FOLDER)


def default_key_store_path(ledger_id: str) -> str:
    """Return the default key store file of the ledger whose id is ``ledger_id`` (ADR 0086):
    ``<default_key_folder()>/<ledger id>.db``."""
    if not re.fullmatch(r"[0-9a-f]{32}", ledger_id):
        raise ConfigError(f"{ledger_id!r} is not a ledger id (32 lowercase hex digits)")
    return os.path.join(default_key_folder(), f"{ledger_id}.db")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pg_identity(url: str) -> str:
    """Return one spelling of a PostgreSQL URL for every spelling of the same ledger.

    The scheme's aliases, the host's case, an omitted default port, the order of query
    options and the password do not change which database a URL names.
    """
    parts = urlsplit(_without_password(url))
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = f"{parts.username}@{host}" if parts.username else host
    netloc += f":{parts.port or 5432}" if host else ""
    query = "&".join(sorted(part for part in parts.query.split("&") if part))
    path = parts.path if parts.path not in ("", "/") else ""
    return urlunsplit(("postgresql", netloc, path, query, ""))


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", "@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def default_ledger_path() -> str:
    """Return the default SQLite ledger path in the user's data directory."""
    return os.path.join(_data_home(), "engram", "ledger.db")


def _config_candidates(explicit: str | None) -> list[tuple[Path, bool]]:
    if explicit:
        return [(Path(explicit), True)]
    env = os.environ.get("ENGRAM_CONFIG")
    if env:
        return [(Path(env), True)]
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return [(Path("engram.toml"), False), (Path(xdg) / "engram" / "config.toml", False)]


def _read_config(path: Path) -> dict[str, Any]:
    try:
        data = read_toml(path)
    except TomlFileError as exc:
        raise ConfigError(f"config file {path} {exc}") from None
    for key, value in data.items():
        expected = _KEYS.get(key)
        if expected is None:
            raise ConfigError(
                f"config file {path}: unknown key {key!r} (known: {', '.join(sorted(_KEYS))})"
            )
        if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
            raise ConfigError(f"config file {path}: {key} has the wrong type ({value!r})")
    if data.get("max_payload_bytes", 1) < 1:  # said where it was given (ADR 0188)
        raise ConfigError(
            f"config file {path}: max_payload_bytes must be a positive int,"
            f" got {data['max_payload_bytes']!r}"
        )
    if "kinds" in data:
        data["kinds"] = declarations(path, data["kinds"])
    if "destinations" in data:
        data["destinations"] = _destinations(f"config file {path}", data["destinations"])
    return data


def _destinations(where: str, table: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Check a ``[destinations]`` table: known destinations, each a non-empty path."""
    for name, place in table.items():
        if name not in DESTINATION_KEYS:
            raise ConfigError(
                f"{where}: [destinations] {name!r} is not a destination written to a file"
                f" (known: {', '.join(DESTINATION_KEYS)})"
            )
        if not isinstance(place, str) or not place.strip():
            raise ConfigError(f"{where}: [destinations] {name} must be a path, got {place!r}")
    return tuple(sorted(table.items()))


def resolve_settings(
    ledger: str | None = None,
    *,
    config: str | None = None,
    untenanted: bool = False,
    **overrides: Any,
) -> Settings:
    """Resolve settings from an explicit value, the environment, a config file, defaults.

    ``untenanted`` resolves the base namespace whatever ``ENGRAM_TENANT`` or the config
    file's ``tenant`` say (``engram tenants`` lists from there); a ``tenant`` of "" given
    as an option or in the config file is refused, never read as the base namespace."""
    values: dict[str, Any] = {}
    source = "default"
    origin: dict[str, str] = {}  # where each value was given, for its error (ADR 0160)
    for path, required in _config_candidates(config):
        if path.is_file() or required:
            values.update(_read_config(path))
            source = f"config file {path}"
            origin = dict.fromkeys(values, f"{source}: ")
            break
    tenant_from = source
    env = os.environ.get("ENGRAM_LEDGER")
    if env:
        values["ledger"], source = env, "ENGRAM_LEDGER"
    tenant_env = os.environ.get("ENGRAM_TENANT")
    if tenant_env:
        values["tenant"], tenant_from = tenant_env, "ENGRAM_TENANT"
    if ledger:
        values["ledger"], source = ledger, "--ledger"
    unknown = sorted(set(overrides) - set(_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown option {', '.join(map(repr, unknown))} (known: {', '.join(sorted(_KEYS))})"
        )
    values.update({k: v for k, v in overrides.items() if v is not None})
    origin.update({k: "" for k, v in overrides.items() if v is not None})
    if overrides.get("tenant") is not None:
        tenant_from = "the tenant option"
    if isinstance(overrides.get("kinds"), dict):
        values["kinds"] = declarations(Path("<options>"), overrides["kinds"])
    if isinstance(overrides.get("destinations"), dict):
        values["destinations"] = _destinations("options", overrides["destinations"])
    values.setdefault("ledger", default_ledger_path())
    routing = values.get("routing")
    if isinstance(routing, str) and routing and not os.path.isfile(os.path.expanduser(routing)):
        # A routing file named and not there would leave every use on its default unsaid.
        raise ConfigError(
            f"{origin.get('routing', '')}routing {routing!r} is not a file: name a routing"
            " file that exists, or leave routing unset for the defaults (ADR 0183)"
        )
    timeout = values.get("busy_timeout", 30.0)
    if (
        not isinstance(timeout, int | float)
        or isinstance(timeout, bool)
        or not 0 <= timeout <= MAX_BUSY_TIMEOUT  # nan and inf too (ADR 0183)
    ):
        raise ConfigError(
            f"{origin.get('busy_timeout', '')}busy_timeout must be a number of seconds in"
            f" 0..{MAX_BUSY_TIMEOUT:,}, got {timeout!r}"
        )
    rate = values.get("decay_rate", 0.99)
    if not isinstance(rate, int | float) or isinstance(rate, bool) or not 0 < rate <= 1:
        raise ConfigError(
            f"{origin.get('decay_rate', '')}decay_rate must be a number in (0, 1], got {rate!r}"
        )
    policy = values.get("supersede", "apply")
    if policy not in ("apply", "review", "off"):
        raise ConfigError(
            f"{origin.get('supersede', '')}"
            f"supersede must be 'apply', 'review' or 'off', got {policy!r}"
        )
    half = values.get("half_life_days", 30.0)
    if not isinstance(half, int | float) or isinstance(half, bool) or not 0 < half <= 36_500:
        raise ConfigError(
            f"{origin.get('half_life_days', '')}"
            f"half_life_days must be a number in (0, 36500], got {half!r}"
        )
    every = values.get("reflect_every", 100)
    if not isinstance(every, int) or isinstance(every, bool) or every < 0:
        raise ConfigError(
            f"{origin.get('reflect_every', '')}"
            f"reflect_every must be an int >= 0 (0: off), got {every!r}"
        )
    threshold = values.get("reflect_importance", 150.0)
    if (
        not isinstance(threshold, int | float)
        or isinstance(threshold, bool)
        or not 0 <= threshold < float("inf")
    ):
        raise ConfigError(
            f"{origin.get('reflect_importance', '')}"
            f"reflect_importance must be a number >= 0 (0: off), got {threshold!r}"
        )
    # Only an unset (or empty) ENGRAM_TENANT means "no tenant": a tenant given as "" by the
    # option or the config file is refused, never read as the base namespace, which a
    # launcher that builds --tenant from its input would otherwise open.
    given = "tenant" in values and tenant_from != "ENGRAM_TENANT"
    tenant = values.pop("tenant", "")
    if untenanted:
        tenant, given = "", False
    if tenant != "" or given:
        check_tenant(tenant, f"tenant (from {tenant_from})")
    keys = values.get("keys", "")
    if not isinstance(keys, str) or (keys and not keys.strip()):
        raise ConfigError(
            f"{origin.get('keys', '')}keys must be the path of a key store file, got {keys!r}"
        )
    seal = values.get("seal")
    if seal is not None and not isinstance(seal, bool):
        raise ConfigError(
            f"seal must be true or false (seal personal fields under per-subject keys;"
            f" default: on for a SQLite ledger), got {seal!r}"
        )
    if seal is False and keys:
        raise ConfigError(
            f"seal = false and keys = {keys!r} contradict each other: keys names the store"
            " that seals personal fields; remove one of them"
        )
    known = {f.name for f in fields(Settings)}
    settings = Settings(**{k: v for k, v in values.items() if k in known}, source=source)
    return scope_to_tenant(settings, tenant) if tenant else settings
