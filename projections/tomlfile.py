"""Read engram's TOML files — the config file and the routing file — one way.

Every file engram reads for settings goes through :func:`read_toml`, and every
``[<section>.<use>]`` table of the routing file through :func:`route_tables`, so a bad file
is described the same way wherever it is read. The callers decide what a bad file means:
the config file's reader refuses it (a usage error); the routing file's readers warn and
fall back to their defaults.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from engram.ledger.files import read_small_file
from engram.projections.errors import ProjectionConfigError

__all__ = ["TomlFileError", "read_toml", "route_tables"]

R = TypeVar("R")
#: The most a settings file may hold: far more than any config or routing file needs, and
#: a device or a runaway file is refused instead of read until memory runs out.
MAX_TOML_BYTES = 4 << 20


class TomlFileError(ProjectionConfigError):
    """A settings file cannot be read, is not TOML, or holds a table of the wrong shape."""


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Return the document in the TOML file at ``path``.

    Raises:
        TomlFileError: the file cannot be read (the reason: also a device, a FIFO or a file
            over :data:`MAX_TOML_BYTES`) or is not valid TOML (where; also not UTF-8, or
            nested too deeply to read).
    """
    try:
        return tomllib.loads(read_small_file(path, MAX_TOML_BYTES).decode("utf-8"))
    except UnicodeDecodeError as error:
        byte = f"byte {error.start + 1}: 0x{error.object[error.start]:02x}"
        raise TomlFileError(f"is not valid TOML (not UTF-8 at {byte})") from None
    except OSError as error:
        raise TomlFileError(f"cannot be read ({error.strerror or error})") from None
    except tomllib.TOMLDecodeError as error:
        raise TomlFileError(f"is not valid TOML ({error})") from None
    except RecursionError:
        raise TomlFileError("is not valid TOML (its arrays or tables nest too deeply)") from None


def route_tables(
    table: dict[str, Any],
    section: str,
    route_type: Any,
    *,
    check: Callable[[Any], None] = lambda route: None,
    check_errors: tuple[type[Exception], ...] = (ProjectionConfigError,),
    needs: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Return the routes of a ``[<section>.<use>]`` table, each converted to ``route_type``.

    ``check`` may raise one of ``check_errors`` for a route whose values convert but do not
    work; ``needs`` is a key every use must name and the hint for it
    (``("provider", 'provider = "a" or "b"')``).

    Raises:
        TomlFileError: a use that is not a table, lacks ``needs``, does not convert or fails
            ``check``; the message names the table.
    """
    routes: dict[str, Any] = {}
    for use, options in table.items():
        where = f"[{section}.{use}]"
        if not isinstance(options, dict):
            raise TomlFileError(f"{section}.{use} must be a table, got {type(options).__name__}")
        if needs is not None and needs[0] not in options:
            raise TomlFileError(f"{where} needs {needs[1]}")
        try:
            route = msgspec.convert(options, route_type)
            check(route)
        except msgspec.ValidationError as error:
            message = str(error).replace(" - at `$.", " for key `")
            raise TomlFileError(f"{where}: {message}") from None
        except check_errors as error:
            raise TomlFileError(f"{where}: {error}") from None
        routes[use] = route
    return routes
