"""Export knowledge to a pack, import a pack into the ledger (ADR 0041).

Export reads through an agent's memory (so it sees what that agent may see) and packs only
public items: concepts under a prefix, an agent's live memories, or the memories a query
recalls. Import authenticates and checks the whole pack first, then appends every node and
the ``pack.imported`` record in one atomic batch whose event ids are uuid5 of the pack id and
the node id: importing twice appends nothing, and a failure appends nothing. The pack's
vectors seed the embedding cache only when its model fingerprint is the local embedder's;
otherwise the semantic index embeds the texts itself.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal, NamedTuple

import numpy as np

from engram.agents.arguments import check_key
from engram.agents.memory import AgentMemory
from engram.agents.packs.format import (
    ConceptNode,
    Manifest,
    MemoryNode,
    Node,
    PackConflictError,
    PackError,
    PackKey,
    decode_vector,
    encode_nodes,
    encode_vector,
    node_event_id,
    pack_id,
    read_pack,
    write_pack,
)
from engram.ledger import FORGOTTEN, Event, IdempotencyError, NewEvent
from engram.ledger.catalog import ConceptLink, ConceptUpserted, MemoryObserved, PackImported
from engram.ledger.collector import collector_paused
from engram.projections import concepts, salience
from engram.projections.embedding import MAX_CHARS, CachedEmbedder, cache_key
from engram.projections.errors import QueryError
from engram.projections.semantic import MAX_TEXT

#: Texts embedded per call when an export adds vectors.
EMBED_SLICE = 2_000

EmbeddingUse = Literal["used", "re-embedded", "none"]


class Imported(NamedTuple):
    """What an import did: the pack, how many events it appended, and its vectors' fate."""

    manifest: Manifest
    appended: int  # 0 when the pack was imported before
    position: int  # the pack.imported record's position
    embeddings: EmbeddingUse  # used (fingerprints match), re-embedded, or none in the pack


def export_pack(
    reader: AgentMemory,
    path: str | os.PathLike[str],
    key: PackKey,
    *,
    name: str,
    version: str,
    domain: Sequence[str] = (),
    select: str | None = None,
    concepts_under: str | None = None,
    agent: str | None = None,
    limit: int = 1000,
    embeddings: bool = True,
) -> Manifest:
    """Write the public items chosen by ``select``, ``concepts_under`` and ``agent`` to a pack
    (a forgotten subject's memories left out).

    ``select`` packs the ``limit`` memories a recall of that query serves (recorded as no
    read); ``concepts_under`` the concepts at and below a prefix; ``agent`` that agent's live
    memories. Several selectors add up. With ``embeddings``, memories carry their vectors
    and the manifest the embedder's fingerprint.

    Raises:
        PackError: no selector, or a bad name, version or domain tag; nothing is written.
    """
    if select is None and concepts_under is None and agent is None:
        raise PackError("choose what to export: a query, a concept prefix or an agent")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise PackError(f"limit must be a positive int, got {limit!r}")
    nodes: list[Node] = []
    if concepts_under is not None:
        nodes.extend(_concepts(reader, concepts_under, limit))
    memories: dict[str, Event] = {}
    if agent is not None:
        memories.update((e.id, e) for e in _memories_of(reader, agent))
    if select is not None:
        result = reader.recall(select, min(limit, 1000), record=False, min_score=0)
        memories.update(
            (r.event.id, r.event) for r in result.items if r.event.kind == "memory.observed"
        )
    # A forgotten memory's text reads [forgotten]: packing it would hand its importance and
    # tags on as a memory of its own (ADR 0039).
    public = [
        e
        for e in memories.values()
        if e.payload.visibility == "public" and e.payload.text != FORGOTTEN
    ]
    nodes.extend(_memory_nodes(reader, public, embeddings))
    embedder = reader.embedder if embeddings and public else None
    jsonl = encode_nodes(nodes)
    try:
        manifest = Manifest(
            id=pack_id(name, version),
            name=name,
            version=version,
            domain=list(domain),
            embedding_model=None if embedder is None else embedder.fingerprint.text,
            dimension=None if embedder is None else embedder.dimension,
            created_at=datetime.now(UTC),
            checksum=hashlib.sha256(jsonl).hexdigest(),
            nodes=len(nodes),
        )
        manifest = _checked(manifest)
    except (TypeError, ValueError) as exc:
        raise PackError(f"pack.json: {exc}") from None
    write_pack(path, manifest, jsonl, key)
    return manifest


def import_pack(writer: AgentMemory, path: str | os.PathLike[str], key: PackKey) -> Imported:
    """Authenticate and check the pack at ``path``, then append its nodes as ``writer``.

    Equivalent to :func:`read_pack` then :func:`import_nodes`.
    """
    if isinstance(path, str):
        try:
            check_key(path, "path", longest=4096)
        except QueryError as exc:
            raise PackError(str(exc)) from None
    manifest, nodes = read_pack(path, key)
    return import_nodes(writer, manifest, nodes)


def import_nodes(writer: AgentMemory, manifest: Manifest, nodes: list[Node]) -> Imported:
    """Append a checked pack's nodes as ``writer`` (read them with :func:`read_pack`).

    Concepts become ``concept.upserted`` and memories ``memory.observed`` of the importing
    agent (public, ``source`` naming the pack), all in one batch with the ``pack.imported``
    record. A pack imported before appends nothing and returns that record.

    Raises:
        PackFormatError, PackAuthError, PackChecksumError: the file is refused; nothing
            is written.
        PackConflictError: a concept is private to another agent, or this pack's name and
            version were imported with other content; nothing is written.
    """
    ledger, agent = writer.ledger, writer.agent
    stream = f"pack:{manifest.id}"
    earlier = _earlier(writer, stream, manifest)
    if earlier is not None:
        return Imported(manifest, 0, earlier, _seed(writer, manifest, nodes))
    _check_concepts(writer, [n.id for n in nodes if isinstance(n, ConceptNode)])
    source = f"pack:{manifest.name}@{manifest.version}"
    with collector_paused():
        events = [event_for(manifest.id, node, agent, source) for node in nodes]
    record = PackImported(
        pack=manifest.id,
        name=manifest.name,
        version=manifest.version,
        checksum=manifest.checksum,
        nodes=len(nodes),
        appended=len(nodes),
    )
    events.append(
        NewEvent.of(
            record, stream=stream, actor=agent, id=node_event_id(manifest.id, "pack.imported")
        )
    )
    head = ledger.head()
    try:
        positions = ledger.append(events)
    except IdempotencyError as exc:
        raise PackConflictError(
            f"pack {manifest.name}@{manifest.version} was imported before with other content"
            f" or by another agent ({exc}); export changed content under a new version"
        ) from None
    appended = sum(1 for p in positions if p > head) - (positions[-1] > head)
    return Imported(manifest, appended, positions[-1], _seed(writer, manifest, nodes))


def _checked(manifest: Manifest) -> Manifest:
    """Round-trip the manifest through the codec so its field constraints are enforced."""
    import msgspec

    try:
        return msgspec.json.decode(msgspec.json.encode(manifest), type=Manifest)
    except msgspec.ValidationError as exc:
        raise PackError(f"pack.json: {exc}") from None


def _concepts(reader: AgentMemory, prefix: str, limit: int) -> list[ConceptNode]:
    reader.engine.wait_for(reader.ledger.head())
    with reader.engine.read() as conn:
        rows = [c for c in concepts.under(conn, prefix, agent=reader.agent, limit=limit)]
        rows = [c for c in rows if c.visibility == "public"]
        links: dict[str, list[ConceptLink]] = defaultdict(list)
        for link in concepts.links_of(conn, [c.id for c in rows]):
            links[link.source].append(ConceptLink(to=link.target, rel=link.rel, weight=link.weight))
    return [
        ConceptNode(id=c.id, type=c.type, label=c.label, payload=c.payload, links=links[c.id])  # type: ignore[arg-type]
        for c in rows
    ]


def _memories_of(reader: AgentMemory, agent: str) -> list[Event]:
    found = [
        e
        for e in reader.ledger.read(kinds=["memory.observed"])
        if e.payload.agent == agent and e.payload.visibility == "public"
    ]
    reader.engine.wait_for(reader.ledger.head())
    with reader.engine.read() as conn:
        facts = salience.memory_facts(conn, [e.position for e in found])
    return [e for e in found if not (e.position in facts and facts[e.position].archived)]


def _memory_nodes(reader: AgentMemory, events: list[Event], embeddings: bool) -> list[MemoryNode]:
    events = sorted(events, key=lambda e: e.position)
    vectors: list[str | None] = [None] * len(events)
    if embeddings and reader.embedder is not None:
        for start in range(0, len(events), EMBED_SLICE):
            part = events[start : start + EMBED_SLICE]
            embedded = reader.embedder.embed([e.payload.text[:MAX_TEXT] for e in part])
            for i, vector in enumerate(embedded):
                vectors[start + i] = encode_vector(vector)
    return [
        MemoryNode(
            id=e.id,
            text=e.payload.text,
            type=e.payload.type,
            importance=e.payload.importance,
            tags=list(e.payload.tags),
            embedding=vector,
        )
        for e, vector in zip(events, vectors, strict=True)
    ]


def _earlier(writer: AgentMemory, stream: str, manifest: Manifest) -> int | None:
    """Return the position of this pack's import record, if it was imported before."""
    for event in writer.ledger.read_stream(stream):
        if event.kind != PackImported.__kind__:
            continue
        if event.payload.checksum != manifest.checksum:
            raise PackConflictError(
                f"pack {manifest.name}@{manifest.version} was imported at position"
                f" {event.position} with other content (checksum {event.payload.checksum[:12]}…);"
                " export changed content under a new version"
            )
        return event.position
    # A pack of the same name and version under another id (crafted, or exported twice) is
    # the same pack: its content must be the one imported (ADR 0124).
    for event in writer.ledger.read(0, kinds=[PackImported.__kind__]):
        same = (event.payload.name, event.payload.version) == (manifest.name, manifest.version)
        if same and event.payload.checksum != manifest.checksum:
            raise PackConflictError(
                f"pack {manifest.name}@{manifest.version} was imported at position"
                f" {event.position} with other content (checksum {event.payload.checksum[:12]}…);"
                " export changed content under a new version"
            )
    return None


def _check_concepts(writer: AgentMemory, ids: list[str]) -> None:
    if not ids:
        return
    writer.engine.wait_for(writer.ledger.head())
    with writer.engine.read() as conn:
        hidden = [
            i
            for i in ids
            if concepts.get(conn, i, agent=writer.agent) is None and concepts.exists(conn, i)
        ]
    if hidden:
        raise PackConflictError(
            f"concept(s) {hidden[:5]} are private to another agent; nothing was imported"
        )


def event_for(pack: str, node: Node, agent: str, source: str) -> NewEvent:
    """Return the event ``node`` of pack ``pack`` becomes when ``agent`` imports it."""
    event_id = node_event_id(pack, f"{type(node).__name__}:{node.id}")
    if isinstance(node, ConceptNode):
        concept = ConceptUpserted(
            id=node.id,
            type=node.type,
            label=node.label,
            agent=agent,
            payload=node.payload,
            links=node.links,
        )
        return NewEvent.of(concept, stream=f"concept:{node.id}", actor=agent, id=event_id)
    memory = MemoryObserved(
        agent=agent,
        text=node.text,
        type=node.type,
        importance=node.importance,
        source=source,
        tags=node.tags,
    )
    return NewEvent.of(memory, stream=f"agent:{agent}", actor=agent, id=event_id)


def _seed(writer: AgentMemory, manifest: Manifest, nodes: list[Node]) -> EmbeddingUse:
    """Put the pack's vectors in the embedding cache if they come from the local model.

    A cached vector stands for what the local model gives its text, for every agent of the
    store and every rebuild: a pack may only save the work (ADR 0144). So a vector fills a
    text the cache does not hold yet (one held stays), and :data:`VERIFIED` of them, drawn
    at random, are embedded again first: if one differs from the model's, no vector of the
    pack is used and its memories are embedded here ("re-embedded")."""
    carried = [n for n in nodes if isinstance(n, MemoryNode) and n.embedding is not None]
    if not carried or manifest.dimension is None:
        return "none"
    embedder = writer.embedder
    if (
        not isinstance(embedder, CachedEmbedder)
        or manifest.embedding_model != embedder.fingerprint.text
        or manifest.dimension != embedder.dimension
    ):
        return "re-embedded"
    fingerprint = embedder.fingerprint
    given = {
        cache_key(fingerprint, n.text[:MAX_TEXT][:MAX_CHARS]): (
            n.text[:MAX_TEXT][:MAX_CHARS],
            decode_vector(n.embedding, manifest.dimension, n.id),  # type: ignore[arg-type]
        )
        for n in carried
    }
    held = embedder.cache.get_many(list(given))
    fresh = {key: pair for key, pair in given.items() if key not in held}
    if not fresh:
        return "used"
    sample = random.SystemRandom().sample(sorted(fresh), min(VERIFIED, len(fresh)))
    local = embedder.embedder.embed([fresh[key][0] for key in sample])
    for key, vector in zip(sample, local, strict=True):
        theirs = fresh[key][1]
        norms = float(np.linalg.norm(vector)) * float(np.linalg.norm(theirs))
        if norms == 0 or float(np.dot(vector, theirs)) / norms < AGREEMENT:
            return "re-embedded"
    embedder.cache.put_many(fingerprint, [(key, pair[1]) for key, pair in fresh.items()])
    return "used"


#: How many of a pack's vectors are embedded again before any is used (ADR 0144).
VERIFIED = 16
#: The cosine a pack's vector must reach with the local model's of its text.
AGREEMENT = 0.999
