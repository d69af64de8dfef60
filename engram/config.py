"""Where the ledger lives: an explicit option, then ``ENGRAM_LEDGER``, then a config file.

Config files are TOML, read from ``--config``, ``ENGRAM_CONFIG``, ``./engram.toml`` or
``$XDG_CONFIG_HOME/engram/config.toml`` (first found)::

    ledger = "postgresql://127.0.0.1:5432/engram"   # or a SQLite file path
    pg_schema = "engram"
    durability = "full"                              # or "fast"
    projections = "/var/lib/engram/projections"      # the local projection store
    decay_rate = 0.99                                # salience kept per hour
    routing = "~/.config/engram/routing.toml"        # embedders by use (default: hash)

With none of them, the ledger is ``$XDG_DATA_HOME/engram/ledger.db``
(``~/.local/share/engram/ledger.db``). The projection store defaults to a directory beside
a SQLite ledger (``ledger.db.projections``), or, for a PostgreSQL ledger, to one per
database and schema under ``$XDG_DATA_HOME/engram/projections``.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from engram.ledger import ConfigError

_KEYS: dict[str, type | tuple[type, ...]] = {
    "ledger": str,
    "pg_schema": str,
    "durability": str,
    "busy_timeout": (int, float),
    "max_payload_bytes": int,
    "projections": str,
    "decay_rate": (int, float),
    "routing": str,
}


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
    routing: str = ""
    source: str = "default"

    @property
    def projection_store(self) -> str:
        """Return the projection store directory: the setting, or beside the ledger."""
        if self.projections:
            return self.projections
        if "://" not in self.ledger or self.ledger.startswith("sqlite:///"):
            return self.ledger.removeprefix("sqlite:///") + ".projections"
        digest = hashlib.sha256(f"{_without_password(self.ledger)}|{self.pg_schema}".encode())
        return os.path.join(_data_home(), "engram", "projections", digest.hexdigest()[:16])


def _data_home() -> str:
    return os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")


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
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    for key, value in data.items():
        expected = _KEYS.get(key)
        if expected is None:
            raise ConfigError(
                f"config file {path}: unknown key {key!r} (known: {', '.join(sorted(_KEYS))})"
            )
        if not isinstance(value, expected) or isinstance(value, bool):
            raise ConfigError(f"config file {path}: {key} has the wrong type ({value!r})")
    return data


def resolve_settings(
    ledger: str | None = None, *, config: str | None = None, **overrides: Any
) -> Settings:
    """Resolve settings from an explicit value, the environment, a config file, defaults."""
    values: dict[str, Any] = {}
    source = "default"
    for path, required in _config_candidates(config):
        if path.is_file() or required:
            values.update(_read_config(path))
            source = f"config file {path}"
            break
    env = os.environ.get("ENGRAM_LEDGER")
    if env:
        values["ledger"], source = env, "ENGRAM_LEDGER"
    if ledger:
        values["ledger"], source = ledger, "--ledger"
    unknown = sorted(set(overrides) - set(_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown option {', '.join(map(repr, unknown))} (known: {', '.join(sorted(_KEYS))})"
        )
    values.update({k: v for k, v in overrides.items() if v is not None})
    values.setdefault("ledger", default_ledger_path())
    timeout = values.get("busy_timeout", 30.0)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout < 0:
        raise ConfigError(f"busy_timeout must be a number of seconds >= 0, got {timeout!r}")
    rate = values.get("decay_rate", 0.99)
    if not isinstance(rate, int | float) or isinstance(rate, bool) or not 0 < rate <= 1:
        raise ConfigError(f"decay_rate must be a number in (0, 1], got {rate!r}")
    known = {f.name for f in fields(Settings)}
    return Settings(**{k: v for k, v in values.items() if k in known}, source=source)
