"""The kind registry: each event kind maps to a msgspec payload Struct and a schema number.

A payload is validated against its kind's Struct on append and stored as canonical JSON.
When a kind's Struct changes shape, bump its schema and register an upcaster from the old
schema: stored bytes never change, old payloads are upcast (as dicts) when read.

A payload Struct carries its kind's stored name in the class attribute ``__kind__``, declared
on the class or set when it is registered, so code may name a kind by its payload type
(:func:`kind_name`, ``NewEvent.of``) without repeating the string (ADR 0020).
"""

from __future__ import annotations

import re
import typing
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import msgspec

from engram.ledger.errors import KindRegistryError

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
S = TypeVar("S", bound=type[msgspec.Struct])

_KIND_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
#: The class attribute naming a payload type's kind.
KIND_ATTRIBUTE = "__kind__"
#: Payload types whose kind name registration set (not declared by their author).
_assigned: weakref.WeakSet[type] = weakref.WeakSet()


def declared_kind(payload_type: type) -> str | None:
    """Return the kind name ``payload_type`` itself declares or was registered under.

    Only the class's own attribute counts: a subclass of a registered Struct is another
    type, with no kind until it is registered or declares one.
    """
    value = vars(payload_type).get(KIND_ATTRIBUTE)
    return value if isinstance(value, str) else None


def kind_name(kind: object) -> str:
    """Return the stored name of a kind given as its name or its payload Struct type.

    Raises:
        KindRegistryError: ``kind`` is neither a non-empty string nor a Struct type with a
            kind name (declared as ``__kind__`` or given by registration).
    """
    if isinstance(kind, str):
        if not kind:
            raise KindRegistryError("a kind name must not be empty")
        return kind
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        name = declared_kind(kind)
        if name is None and kind in _assigned:
            raise KindRegistryError(
                f"{kind.__name__} is the payload of several kinds: name the kind as a string"
            )
        if name is None:
            raise KindRegistryError(
                f"{kind.__name__} carries no kind name: register it as a kind's payload, "
                f"or declare `{KIND_ATTRIBUTE}: ClassVar[str] = 'noun.verbed'` on the class"
            )
        return name
    raise KindRegistryError(f"a kind is named by a string or a payload Struct type, got {kind!r}")


@dataclass
class KindSpec:
    """A registered kind: its payload type, current schema and upcasters from older ones."""

    name: str
    type: type[msgspec.Struct]
    schema: int
    upcasters: dict[int, Upcaster] = field(default_factory=dict)
    decoder: msgspec.json.Decoder[Any] = field(init=False, repr=False)
    #: Whether payloads can be compared after a round trip (Structs with eq=False cannot).
    compare: bool = field(init=False, repr=False)
    #: The payload's top-level datetime fields: an append refuses a naive one (it names no
    #: moment, and the projections that read it compare it with aware times).
    times: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.decoder = msgspec.json.Decoder(self.type)
        self.compare = bool(self.type.__struct_config__.eq)
        self.times = tuple(
            f.name for f in msgspec.structs.fields(self.type) if _holds_datetime(f.type)
        )

    def decode(self, data: bytes, schema: int) -> msgspec.Struct:
        """Decode stored payload bytes written at ``schema`` into the current Struct."""
        if schema == self.schema:
            return self.decoder.decode(data)  # type: ignore[no-any-return]
        if schema > self.schema:
            raise KindRegistryError(
                f"kind {self.name!r} was written at schema {schema}, newer than this "
                f"program's schema {self.schema}: upgrade the program that reads it"
            )
        obj: dict[str, Any] = msgspec.json.decode(data)
        for step in range(schema, self.schema):
            upcast = self.upcasters.get(step)
            if upcast is None:
                raise KindRegistryError(
                    f"cannot read kind {self.name!r} at schema {schema}: "
                    f"no upcaster registered from schema {step}"
                )
            obj = upcast(obj)
        return msgspec.convert(obj, self.type)


class KindRegistry:
    """Map event kinds to payload Structs; validate registrations.

    Kind names are dotted lowercase past-tense facts such as ``neuron.activated``.
    """

    def __init__(self) -> None:
        self._specs: dict[str, KindSpec] = {}
        self._readers: tuple[dict[str, int], dict[str, Callable[[bytes], Any]]] | None = None

    def register(self, name: str, payload_type: type[msgspec.Struct], *, schema: int = 1) -> None:
        """Register ``payload_type`` as the payload of kind ``name`` at ``schema``.

        Raises:
            KindRegistryError: bad name or schema, not a Struct, or already registered
                with another type.
        """
        if not isinstance(name, str) or not _KIND_RE.match(name):
            raise KindRegistryError(
                f"kind name {name!r} is invalid: "
                "use dotted lowercase words, e.g. 'neuron.activated'"
            )
        if not (isinstance(payload_type, type) and issubclass(payload_type, msgspec.Struct)):
            raise KindRegistryError(
                f"kind {name!r}: payload type must be a msgspec.Struct subclass"
            )
        if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
            raise KindRegistryError(f"kind {name!r}: schema must be an int >= 1, got {schema!r}")
        declared = vars(payload_type).get(KIND_ATTRIBUTE)
        assigned = payload_type in _assigned
        if declared is not None and not assigned and declared != name:
            raise KindRegistryError(
                f"kind {name!r}: {payload_type.__name__} declares kind {declared!r}; "
                "register it under that name"
            )
        existing = self._specs.get(name)
        if existing is not None:
            if existing.type is payload_type and existing.schema == schema:
                return
            raise KindRegistryError(
                f"kind {name!r} is already registered with {existing.type.__name__} "
                f"at schema {existing.schema}"
            )
        self._specs[name] = KindSpec(name, payload_type, schema)
        self._readers = None
        if not assigned and declared is None:
            setattr(payload_type, KIND_ATTRIBUTE, name)
            _assigned.add(payload_type)
        elif assigned and declared != name:
            # A type registered under two names names neither: callers pass the string.
            setattr(payload_type, KIND_ATTRIBUTE, None)

    def kind(self, name: str, *, schema: int = 1) -> Callable[[S], S]:
        """Register the decorated Struct as the payload of kind ``name``."""

        def decorate(payload_type: S) -> S:
            self.register(name, payload_type, schema=schema)
            return payload_type

        return decorate

    def register_upcaster(self, name: str, from_schema: int, fn: Upcaster) -> None:
        """Register ``fn`` turning a payload dict of ``from_schema`` into ``from_schema + 1``."""
        spec = self._require(name)
        if (
            not isinstance(from_schema, int)
            or isinstance(from_schema, bool)
            or not (1 <= from_schema < spec.schema)
        ):
            raise KindRegistryError(
                f"kind {name!r}: an upcaster must start below the current schema "
                f"{spec.schema}, got from_schema={from_schema}"
            )
        spec.upcasters[from_schema] = fn

    def upcaster(self, name: str, from_schema: int) -> Callable[[Upcaster], Upcaster]:
        """Register the decorated function as an upcaster (see :meth:`register_upcaster`)."""

        def decorate(fn: Upcaster) -> Upcaster:
            self.register_upcaster(name, from_schema, fn)
            return fn

        return decorate

    def get(self, name: str) -> KindSpec | None:
        """Return the spec of ``name``, or None when it is not registered."""
        return self._specs.get(name)

    def readers(self) -> tuple[dict[str, int], dict[str, Callable[[bytes], Any]]]:
        """Return each kind's current schema and its decoder's ``decode``, by kind name.

        The read loop's tables (ADR 0104): built once and kept until another kind is
        registered, where every page of a replay used to sort and walk the specs for them
        (15 µs a page). Shared: the caller reads them and never changes them.
        """
        readers = self._readers
        if readers is None:
            specs = self._specs.values()
            readers = self._readers = (
                {spec.name: spec.schema for spec in specs},
                {spec.name: spec.decoder.decode for spec in specs},
            )
        return readers

    def _require(self, name: str) -> KindSpec:
        spec = self._specs.get(name)
        if spec is None:
            raise KindRegistryError(f"kind {name!r} is not registered")
        return spec

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[KindSpec]:
        return iter(sorted(self._specs.values(), key=lambda s: s.name))

    def __len__(self) -> int:
        return len(self._specs)

    def copy(self) -> KindRegistry:
        """Return an independent registry with the same kinds and upcasters."""
        other = KindRegistry()
        for spec in self._specs.values():
            clone = KindSpec(spec.name, spec.type, spec.schema)
            clone.upcasters.update(spec.upcasters)
            other._specs[spec.name] = clone
        return other


def _holds_datetime(annotation: Any) -> bool:
    """Say whether a field's type is a datetime, alone or in a union (``datetime | None``)."""
    if annotation is datetime:
        return True
    args = typing.get_args(annotation)
    return any(_holds_datetime(a) for a in args) if args else False
