"""Open engram: the ledger with engram's kinds, and its projections, from settings.

Every handle's kinds are engram's own, the kinds of a ``registry=`` given, and the kinds the
config file declares (:func:`registry_for`, ADR 0018); a name two of them give different
payloads is refused with a ConfigError.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.agents.completion import Completer
from engram.agents.concepts import ConceptBook
from engram.agents.importance import ImportanceScorer, routed_scorer
from engram.agents.learning import routed_drafter
from engram.agents.lessons import Lessons
from engram.agents.memory import AgentMemory
from engram.agents.network import NeuronNetwork
from engram.agents.scars import Scars
from engram.agents.signals import Mailbox, SharedMemo
from engram.agents.supersession import routed_judge
from engram.config import Settings, resolve_settings
from engram.declared import add_kinds
from engram.keysplit import default_key_store, key_store_path
from engram.ledger import (
    ANY,
    FORGOTTEN,
    ConfigError,
    Expectation,
    KeyStore,
    KindRegistry,
    KindRegistryError,
    Ledger,
    NewEvent,
    Sealer,
    default_registry,
)
from engram.ledger.catalog import ReflectionRetracted
from engram.ledger.personal import personal_fields
from engram.projections import reflections as reflection_rows
from engram.projections.base import Projection
from engram.projections.concepts import Concepts
from engram.projections.copies import Copies
from engram.projections.doctrine import Doctrine
from engram.projections.embedding import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    embedder_for,
    load_routing,
)
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import ProjectionConfigError
from engram.projections.graph import NeuronGraph
from engram.projections.inbox import Inbox
from engram.projections.keyvalue import KeyValueStore
from engram.projections.lexical import LexicalIndex, item_text
from engram.projections.memo import Memo
from engram.projections.reflections import Reflections
from engram.projections.rules import RuleBook
from engram.projections.salience import SalienceIndex
from engram.projections.scars import ScarsTable
from engram.projections.semantic import SemanticIndex, VectorSearcher, passages
from engram.projections.sessions import SessionItems
from engram.projections.store import ProjectionStore, drop_set_aside
from engram.projections.suggestions import SuggestionQueue
from engram.projections.supersession import Supersessions

EMBEDDING_CACHE = "embeddings.db"


def open(
    ledger: str | None = None,
    *,
    registry: KindRegistry | None = None,
    config: str | None = None,
    **options: Any,
) -> Ledger:
    """Open engram's ledger (creating it if needed) and return it.

    ``ledger`` is a SQLite path or a PostgreSQL URL; when omitted it comes from
    ``ENGRAM_LEDGER``, a config file, or the default data directory (see engram.config).
    ``tenant="acme"`` (or ``ENGRAM_TENANT``) opens that tenant's namespace in it (ADR 0040).
    Its kinds are engram's, ``registry``'s and the config file's (:func:`merged_registry`).
    """
    return open_settings(resolve_settings(ledger, config=config, **options), registry)


def registry_for(settings: Settings) -> KindRegistry:
    """Return a new registry: engram's kinds plus the kinds the settings' config declares."""
    registry = default_registry()
    add_kinds(registry, settings.kinds)
    return registry


def merged_registry(settings: Settings, registry: KindRegistry | None = None) -> KindRegistry:
    """Return engram's kinds, ``registry``'s and the config's in one new registry.

    ``registry`` is copied, never changed. Raises ConfigError when it gives one of engram's
    kinds another payload type, or declares a kind the config file declares differently.
    """
    if registry is None:
        return registry_for(settings)
    if not isinstance(registry, KindRegistry):
        raise ConfigError(f"registry must be a KindRegistry, got {type(registry).__name__}")
    merged = registry.copy()
    for spec in default_registry():
        try:
            merged.register(spec.name, spec.type, schema=spec.schema)
        except KindRegistryError as exc:
            raise ConfigError(f"registry given: {exc}; engram's own kinds keep theirs") from None
    add_kinds(merged, settings.kinds)
    return merged


def open_settings(
    settings: Settings, registry: KindRegistry | None = None, *, readonly: bool = False
) -> Ledger:
    """Open the ledger that resolved ``settings`` describe, with :func:`merged_registry`.

    ``readonly`` opens an existing ledger for reading only (ADR 0022): nothing is created.
    With a ``keys`` setting, personal fields are sealed under per-subject keys (ADR 0039),
    a tenant's under its own (ADR 0047).
    """
    merged = merged_registry(settings, registry)
    sealer = None
    if settings.keys:
        path = key_store_path(settings, readonly=readonly, opener=_open_plain)
        store = KeyStore(path, create=not readonly)
        sealer = Sealer(store, settings.personal())
    try:
        ledger = Ledger.open(
            settings.ledger,
            merged,
            durability=settings.durability,
            busy_timeout=settings.busy_timeout,
            pg_schema=settings.pg_schema,
            max_payload_bytes=settings.max_payload_bytes,
            readonly=readonly,
            sealer=sealer,
        )
    except BaseException:
        if sealer is not None:
            sealer.keys.close()
        raise
    if sealer is None:
        try:
            default = default_key_store(settings, ledger, readonly=readonly)
        except BaseException:
            ledger.close()
            raise
        if default is not None:
            ledger.sealer = Sealer(default, settings.personal())
            ledger.finish_forgets()
    return ledger


def open_embedder(settings: Settings, use: str = "recall") -> Embedder:
    """Return the embedder the routing file assigns to ``use``, cached beside the store.

    The cache is its own SQLite file, so embedding inside a projection batch never waits on
    the store's write lock.
    """
    routing = load_routing(os.path.expanduser(settings.routing) if settings.routing else None)
    store = Path(settings.projection_store)
    if store.exists() and not store.is_dir():  # said as the store says it (ADR 0188)
        raise ProjectionConfigError(f"store {store} exists and is not a directory")
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    cache = EmbeddingCache(Path(settings.projection_store, EMBEDDING_CACHE))
    return embedder_for(use, routing, cache=cache)


def default_projections(settings: Settings, embedder: Embedder) -> list[Projection]:
    """Return engram's projections, configured from ``settings``."""
    return [
        NeuronGraph(),
        SalienceIndex(settings.decay_rate),
        LexicalIndex(),
        SemanticIndex(embedder, passages=True),  # read as a feature, not searched (ADR 0097)
        Inbox(),
        Memo(),
        Concepts(),
        ScarsTable(),
        Reflections(),
        SuggestionQueue(),
        RuleBook(),
        Doctrine(),
        KeyValueStore(),
        SessionItems(),
        Copies(),
        Supersessions(),
    ]


def open_engine(
    ledger: Ledger, settings: Settings, embedder: Embedder, **options: Any
) -> ProjectionEngine:
    """Open the projection engine over ``ledger`` in the settings' projection store."""
    return ProjectionEngine(
        ledger,
        settings.projection_store,
        default_projections(settings, embedder),
        busy_timeout=settings.busy_timeout,
        **options,
    )


@dataclass
class Memory:
    """An opened engram: the ledger, its caught-up projections, the network, recall."""

    settings: Settings
    ledger: Ledger
    engine: ProjectionEngine
    network: NeuronNetwork
    embedder: Embedder
    searcher: VectorSearcher
    #: Rates importance: the routing file's ``[complete.importance]`` route (heuristic
    #: by default).
    scorer: ImportanceScorer | None = None
    #: Judges detected supersessions: the ``[complete.supersede]`` route (None: offline).
    judge: Completer | None = None

    def agent(self, name: str) -> AgentMemory:
        """Return ``name``'s memory stream (observe, recall)."""
        return AgentMemory(
            name,
            self.ledger,
            self.engine,
            embedder=self.embedder,
            searcher=self.searcher,
            rate=self.settings.decay_rate,
            scorer=self.scorer,
            half_life_days=self.settings.half_life_days,
            supersede=self.settings.supersede,
            supersede_judge=self.judge,
        )

    def mailbox(self, agent: str) -> Mailbox:
        """Return ``agent``'s signals: send, inbox, ack."""
        return Mailbox(agent, self.ledger, self.engine)

    def concepts(self, agent: str) -> ConceptBook:
        """Return ``agent``'s view of the concept tree: upsert, get, tree, neighbours."""
        return ConceptBook(agent, self.ledger, self.engine)

    def memo(self, session: str) -> SharedMemo:
        """Return ``session``'s shared memo: post, read."""
        return SharedMemo(session, self.ledger, self.engine)

    def scars(self, name: str) -> Scars:
        """Return ``name``'s scars (record, archive); recall them with ``agent(name).recall``."""
        return Scars(name, self.ledger, self.engine, scorer=self.scorer)

    def forget(
        self, subject: str, *, reason: str = "", actor: str = "engram", force: bool = False
    ) -> Forgotten:
        """Forget ``subject`` everywhere engram keeps its content (ADR 0039, ADR 0045).

        The subject's texts are first removed from the embedding cache (vectors and the
        hashes that key them), then its keys are destroyed and ``subject.forgotten`` is
        appended (:meth:`Ledger.forget`) with ``reflection.retracted`` for the other agents'
        reflections drawn from its memories in the same batch (ADR 0110, ADR 0138), then
        the projections catch up, so
        the lexical and semantic indexes drop its content before this returns; the vector
        index file and the store's write-ahead log are written before it returns too.

        Names are exact: a ``subject`` the key store never held a key of is refused, as
        ``engram forget`` refuses it (a mistyped name would leave the real subject
        remembered and record an erasure never made); ``force=True`` appends
        ``subject.forgotten`` anyway (ADR 0126).

        Raises:
            ConfigError: this ledger seals nothing (``seal = false``, or a PostgreSQL
                ledger without ``seal = true`` or ``keys``), a subject the key store holds
                no key of (without ``force``), or a bad subject, reason or actor.
        """
        if self.ledger.sealer is None:
            raise ConfigError(
                "this ledger seals no personal fields (seal = false, or a PostgreSQL ledger"
                " without seal = true or keys = PATH), so there is nothing to forget"
                " (ADR 0039, ADR 0086)"
            )
        if not isinstance(subject, str) or not subject:
            raise ConfigError(f"subject must be a non-empty string, got {subject!r}")
        if not isinstance(force, bool):
            raise ConfigError(f"force must be True or False, got {force!r}")
        try:
            subject.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError(f"subject must be valid UTF-8 text, got {subject!r}") from None
        unheld = not_held(self.ledger, subject)
        if unheld is not None and not force:
            raise ConfigError(unheld)
        also, dropped = self._erasing(subject, actor)
        position = self.ledger.forget(subject, reason=reason, actor=actor, also=also)
        self._settle()
        return Forgotten(subject, position, dropped)

    def append_erasing(self, events: Sequence[NewEvent], expect: Expectation = ANY) -> list[int]:
        """Append ``events`` as one batch (:meth:`Ledger.append`), each ``subject.forgotten``
        among them forgetting its subject as :meth:`forget` does: the subject's texts and the
        reflections drawn from them leave the embedding cache first, the reflections'
        ``reflection.retracted`` closes the batch, and what is on disk is written before
        this returns (ADR 0138); the positions of ``events`` are returned. A batch without
        one is appended as it is.
        """
        also: list[NewEvent] = []
        erasing = False
        for event in events:
            subject = _forgotten_subject(event)
            if subject is not None and not_held(self.ledger, subject) is None:
                also += self._erasing(subject, event.actor)[0]
                erasing = True
        # The retractions go last: an error names an event of ``events`` by its own index.
        positions = self.ledger.append([*events, *also], expect=expect)
        if erasing:
            self._settle()
        return positions[: len(events)]

    def _erasing(self, subject: str, actor: str) -> tuple[list[NewEvent], int]:
        """Drop ``subject``'s texts, and those of the reflections drawn from them, from the
        embedding cache; return the ``reflection.retracted`` to append with its erasure (none
        when nothing was drawn from it) and how many cached vectors were dropped."""
        drawn = self._drawn_from(subject)
        dropped = 0
        if isinstance(self.embedder, CachedEmbedder):
            # The subject's texts, and the reflections drawn from them: their vectors, and
            # the hashes that key them, would confirm a guess of what they said.
            texts = _personal_texts(self.ledger, subject) + _reflection_texts(self.ledger, drawn)
            dropped = self.embedder.cache.discard(texts)
        # Other agents' reflections made of the subject's words (ADR 0110), retracted in the
        # erasure's own batch: a process killed after it left them served (ADR 0138).
        retraction = ReflectionRetracted(
            positions=drawn, subject=subject, reason=f"drawn from {subject}'s memories"
        )
        also = [NewEvent.of(retraction, stream="retractions", actor=actor)] if drawn else []
        return also, dropped

    def _settle(self) -> None:
        """Catch the projections up after an erasure and write what is on disk now, not
        when this or another process next writes: the vector index file, and the store's
        write-ahead log (another process holding the store open keeps SQLite from
        checkpointing it on close); and delete the damaged stores a rebuild set aside."""
        self.engine.catch_up()
        with self.engine.read() as conn:
            if ProjectionStore.live_generation(conn, SemanticIndex.name) is not None:
                self.searcher.purge(conn)
        self.engine.store.scrub()
        # A damaged store set aside by a rebuild keeps the text as it was (ADR 0146).
        drop_set_aside(self.engine.store.directory)

    def _drawn_from(self, subject: str) -> list[int]:
        """Return the reflections drawn from ``subject``'s memories and reflections, at any
        depth (:func:`engram.projections.reflections.drawn_from`)."""
        self.engine.catch_up()
        with self.engine.read() as conn:
            if ProjectionStore.live_generation(conn, Reflections.name) is None:
                return []
            evidence = reflection_rows.cited(conn)
        theirs = [
            e.position
            for e in self.ledger.get(evidence)
            if e.kind in ("memory.observed", "memory.reflected") and e.payload.agent == subject
        ]
        if not theirs:
            return []
        with self.engine.read() as conn:
            return reflection_rows.drawn_from(conn, theirs)

    def lessons(self, completer: Completer | None = None) -> Lessons:
        """Return the lessons loop with the settings' places; drafts through ``completer``,
        else the routing file's ``learn`` route (offline by default)."""
        drafter = completer or routed_drafter(self.settings.routing or None)
        home = self.settings.lessons_home
        # A relative [destinations] path is the lessons folder's, one per ledger and tenant:
        # never the working directory's, which tenants and processes share (ADR 0126).
        places = {
            name: place if os.path.isabs(os.path.expanduser(place)) else os.path.join(home, place)
            for name, place in self.settings.destinations
        }
        return Lessons(
            self.ledger,
            self.engine,
            places=places,
            completer=drafter,
            embedder=self.embedder,
            home=home,
        )


@dataclass(frozen=True)
class Forgotten:
    """What :meth:`Memory.forget` did: where ``subject.forgotten`` landed, what it dropped."""

    subject: str
    position: int
    cached_vectors: int  # vectors of the subject's texts removed from the embedding cache


#: The personal kinds whose text the indexes embed (:func:`item_text`); an archive's
#: reason, say, is personal but embeds nothing.
_EMBEDDED = frozenset(("memory.observed", "scar.recorded", "memory.reflected"))


def _personal_texts(ledger: Ledger, subject: str) -> list[str]:
    """Return every text of ``subject``'s sealed fields, while they still open.

    Each personal field's value (a recall's query, a saved context's task...) and, for the
    kinds the indexes hold, the text they embed (:func:`item_text`) and its passages
    (:func:`passages`): what an embedding cache may have keyed.
    """
    sealer = ledger.sealer
    if sealer is None:
        return []
    texts: list[str] = []
    events = ledger.read(kinds=list(sealer.personal))
    for event, personal in personal_fields(events, sealer.personal, subject):
        fields = list(personal.values())
        if event.kind in _EMBEDDED:
            text = item_text(event)[0]
            fields += [text, *passages(text)]  # a long text's passages are cached too
        texts += [t for t in fields if isinstance(t, str) and t and FORGOTTEN not in t]
    return texts


def _reflection_texts(ledger: Ledger, positions: list[int]) -> list[str]:
    """Return the texts an embedding cache may have keyed for the reflections at
    ``positions`` (their text as the indexes embed it, its passages, the question)."""
    texts: list[str] = []
    for event in ledger.get(positions):
        text = item_text(event)[0]
        texts += [text, *passages(text), event.payload.text, event.payload.question or ""]
    return [t for t in texts if isinstance(t, str) and t and FORGOTTEN not in t]


@contextmanager
def open_parts(
    settings: Settings, *, actor: str = "agent", registry: KindRegistry | None = None
) -> Iterator[Memory]:
    """Open the ledger, the embedder and the projections that ``settings`` describe."""
    with ExitStack() as stack:
        led = stack.enter_context(open_settings(settings, registry))
        embedder = open_embedder(settings)
        if isinstance(embedder, CachedEmbedder):
            stack.callback(embedder.cache.close)
        engine = stack.enter_context(open_engine(led, settings, embedder))
        searcher = VectorSearcher(
            settings.projection_store,
            embedder.dimension,
            str(embedder.fingerprint),
            passages=False,  # the items' own vectors; their passages are a feature (ADR 0097)
        )
        yield Memory(
            settings,
            led,
            engine,
            NeuronNetwork(led, engine, actor=actor, rate=settings.decay_rate),
            embedder,
            searcher,
            routed_scorer(settings.routing or None),
            routed_judge(settings.routing or None),
        )
        searcher.save()


def not_held(ledger: Ledger, subject: str) -> str | None:
    """Return why forgetting ``subject`` would forget nothing (its key store never held a
    key of it; a near name as a hint), or None when it holds one."""
    sealer = ledger.sealer
    held = [s.subject for s in sealer.keys.subjects()] if sealer is not None else []
    if subject in held:
        return None
    near = [s for s in held if s.strip().casefold() == subject.strip().casefold()]
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return (
        f"the key store holds no key of {subject!r}: nothing of it is sealed here, so"
        f" nothing was forgotten{hint} (names are exact; `engram keys` lists them;"
        " force appends subject.forgotten anyway)"
    )


def _forgotten_subject(event: object) -> str | None:
    """Return the subject a ``subject.forgotten`` event names (None: another event)."""
    if not isinstance(event, NewEvent) or event.kind != "subject.forgotten":
        return None
    payload = event.payload
    subject = (
        payload.get("subject")
        if isinstance(payload, Mapping)
        else getattr(payload, "subject", None)
    )
    return subject if isinstance(subject, str) and subject else None


@contextmanager
def open_memory(
    ledger: str | None = None,
    *,
    actor: str = "agent",
    config: str | None = None,
    registry: KindRegistry | None = None,
    **options: Any,
) -> Iterator[Memory]:
    """Open the ledger and its projections for a block; close both after it.

    ``tenant="acme"`` (or ``ENGRAM_TENANT``, or ``tenant`` in the config file) opens that
    tenant's ledger and projection store only (ADR 0040); every other option is as for
    :func:`open`.

    ``registry`` adds its kinds to engram's and the config's (:func:`merged_registry`), so
    one handle appends custom kinds and recalls.
    """
    settings = resolve_settings(ledger, config=config, **options)
    with open_parts(settings, actor=actor, registry=registry) as memory:
        yield memory


def _open_plain(settings: Settings) -> Ledger:
    """Open the ledger of ``settings`` read-only, to read what its sealed fields name."""
    return open_settings(settings, readonly=True)
