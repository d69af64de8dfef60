"""Event kinds declared in a config file's ``[kinds]`` tables: checked, typed, registered.

A declaration names its schema, its typed fields (or ``open = true`` for a free ``data``
payload) and the fields sealed as personal (ADR 0039, ADR 0086). Each becomes a msgspec
Struct that validates the kind's payloads; :func:`add_kinds` registers them beside the
built-in kinds, and older schemas read with the current fields.
"""

from __future__ import annotations

import functools
import keyword
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from engram.ledger import ConfigError, KindRegistry, KindRegistryError, default_registry

__all__ = ["FIELD_TYPES", "KindDeclaration", "add_kinds", "declarations"]

#: Field types a config-declared kind may use, and the Python type each becomes.
FIELD_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list[str]": list[str],
    "list[int]": list[int],
    "list[float]": list[float],
    "list[bool]": list[bool],
    "json": dict[str, Any],
}

_KIND_KEYS = ("schema", "fields", "open", "personal")


@dataclass(frozen=True)
class KindDeclaration:
    """An event kind declared in a config file: its name, schema and typed fields."""

    name: str
    schema: int
    fields: tuple[tuple[str, str], ...]  # (field, type); a type ending in "?" is optional
    source: str  # the config file that declared it
    open: bool = False
    #: Fields sealed under the subject's key when the ledger seals (ADR 0039, ADR 0086).
    personal: tuple[str, ...] = ()

    def payload_type(self) -> type[msgspec.Struct]:
        """Return the msgspec Struct that validates this kind's payloads (one per declaration)."""
        return _struct(self)


@functools.cache
def _struct(declaration: KindDeclaration) -> type[msgspec.Struct]:
    spec: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for field, text in declaration.fields:
        base = FIELD_TYPES[text.removesuffix("?")]
        spec.append((field, base | None, None) if text.endswith("?") else (field, base))
    title = "".join(part.title() for part in declaration.name.replace("_", ".").split("."))
    return msgspec.defstruct(
        title, spec, kw_only=True, frozen=True, forbid_unknown_fields=True, module=__name__
    )


def declarations(path: Path, table: dict[str, Any]) -> tuple[KindDeclaration, ...]:
    """Check the ``[kinds]`` tables of a config file; the errors name the file, kind, field."""
    built_in = default_registry()
    probe = KindRegistry()
    found = []
    for name, body in table.items():
        where = f"config file {path}: kind {name!r}"
        if not isinstance(body, dict):
            raise ConfigError(f"{where} must be a table (schema, fields or open), got {body!r}")
        if name in built_in:
            raise ConfigError(f"{where} clashes with engram's built-in kind of that name")
        unknown = sorted(set(body) - set(_KIND_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown} (known: {list(_KIND_KEYS)})")
        schema = body.get("schema", 1)
        if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
            raise ConfigError(f"{where}: schema must be an int >= 1, got {schema!r}")
        is_open = body.get("open", False)
        if not isinstance(is_open, bool):
            raise ConfigError(f"{where}: open must be true or false, got {is_open!r}")
        declared = body.get("fields")
        if is_open:
            if declared is not None:
                raise ConfigError(f"{where}: an open kind takes no fields (its payload is data)")
            declared = {"data": "json"}
        if not isinstance(declared, dict) or not declared:
            raise ConfigError(
                f"{where}: fields must be a table of field = type (or set open = true)"
            )
        for field, text in declared.items():
            if not field.isidentifier() or keyword.iskeyword(field) or field.startswith("_"):
                raise ConfigError(
                    f"{where}: field {field!r}: a field name must be an identifier"
                    " (letters, digits, underscores; not a Python keyword; no leading _)"
                )
            if not isinstance(text, str) or text.removesuffix("?") not in FIELD_TYPES:
                raise ConfigError(
                    f"{where}: field {field!r} has unknown type {text!r}"
                    f" (known: {', '.join(FIELD_TYPES)}; add ? for optional)"
                )
        personal = _personal_fields(where, body.get("personal", []), declared)
        declaration = KindDeclaration(
            name, schema, tuple(declared.items()), str(path), open=is_open, personal=personal
        )
        try:
            probe.register(name, declaration.payload_type(), schema=schema)
        except KindRegistryError as exc:
            raise ConfigError(f"config file {path}: {exc}") from None
        found.append(declaration)
    return tuple(found)


def _personal_fields(where: str, value: object, declared: dict[str, Any]) -> tuple[str, ...]:
    """Check a kind's ``personal`` list: declared string fields, each named once."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: personal must be a list of field names, got {value!r}")
    if len(set(value)) != len(value):
        raise ConfigError(f"{where}: personal names a field twice: {value!r}")
    for field in value:
        if field not in declared:
            raise ConfigError(f"{where}: personal field {field!r} is not a declared field")
        if declared[field].removesuffix("?") != "str":
            raise ConfigError(
                f"{where}: personal field {field!r} is {declared[field]}; only str fields"
                " can be sealed"
            )
    return tuple(value)


def add_kinds(registry: KindRegistry, declarations: tuple[KindDeclaration, ...]) -> None:
    """Register config-declared kinds in ``registry``, refusing a clash with a kind in it.

    Older schemas of a kind are read with its current fields (no upcaster is needed when a
    schema only adds optional fields; anything else fails to read, naming the kind).
    """
    for declaration in declarations:
        try:
            registry.register(
                declaration.name, declaration.payload_type(), schema=declaration.schema
            )
        except KindRegistryError as exc:
            raise ConfigError(
                f"config file {declaration.source}: kind {declaration.name!r}: {exc}"
            ) from None
        for older in range(1, declaration.schema):
            registry.register_upcaster(declaration.name, older, _same)


def _same(payload: dict[str, Any]) -> dict[str, Any]:
    return payload
