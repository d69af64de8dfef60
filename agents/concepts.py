"""An agent's view of the concept tree: upsert concepts, read subtrees as an HDoD, follow links.

Concepts (seed Kompanion HDoD) are path-like ids with a type, a label, a payload and typed,
weighted links. Each upsert is a ``concept.upserted`` event; the newest upsert of an id wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engram.agents.arguments import check_key
from engram.agents.errors import ConceptOwnerError
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import ConceptLink, ConceptType, ConceptUpserted, Visibility
from engram.projections import concepts
from engram.projections.concepts import Concept, Link
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError


class ConceptBook:
    """One agent's reads and writes of the shared concept tree."""

    def __init__(self, agent: str, ledger: Ledger, engine: ProjectionEngine) -> None:
        if not isinstance(agent, str) or not agent:
            raise QueryError(f"agent must be a non-empty string, got {agent!r}")
        self.agent = agent
        self.ledger = ledger
        self.engine = engine

    def upsert(
        self,
        concept_id: str,
        type: ConceptType,
        label: str,
        *,
        payload: Mapping[str, Any] | None = None,
        links: Sequence[ConceptLink | Mapping[str, Any]] = (),
        visibility: Visibility = "public",
    ) -> int:
        """Create or replace a concept; return the event's position.

        Links are :class:`ConceptLink` or mappings with ``to``, ``rel`` and ``weight``. The
        ledger refuses a malformed id, type or link with an error naming the field.

        Raises:
            ConceptOwnerError: the concept exists and another agent keeps it private.
        """
        check_key(concept_id, "concept_id")
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            current = concepts.get(conn, concept_id, agent=self.agent)
            hidden = current is None and concepts.exists(conn, concept_id)
        if hidden:
            raise ConceptOwnerError(
                f"concept {concept_id!r} is private to another agent; choose another id"
            )
        event = NewEvent(
            stream=f"concept:{concept_id}",
            kind=ConceptUpserted.__kind__,
            payload={
                "id": concept_id,
                "type": type,
                "label": label,
                "agent": self.agent,
                "payload": dict(payload or {}),
                "links": [_link(link) for link in links or ()],
                "visibility": visibility,
            },
            actor=self.agent,
        )
        return self.ledger.append(event)[0]

    def get(self, concept_id: str) -> Concept | None:
        """Return a concept this agent may read, or None."""
        check_key(concept_id, "concept_id")
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            return concepts.get(conn, concept_id, agent=self.agent)

    def tree(self, prefix: str = "") -> dict[str, Any]:
        """Return the subtree at ``prefix`` as a nested dictionary (an HDoD)."""
        check_key(prefix, "prefix")
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            rows = concepts.under(conn, prefix, agent=self.agent)
        return concepts.tree(rows, root=prefix)

    def neighbours(self, concept_id: str) -> list[tuple[Link, Concept]]:
        """Return the concepts linked from ``concept_id`` that this agent may read."""
        check_key(concept_id, "concept_id")
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            out = []
            for link in concepts.links_of(conn, [concept_id]):
                far = concepts.get(conn, link.target, agent=self.agent)
                if far is not None:
                    out.append((link, far))
            return out


def _link(link: ConceptLink | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(link, ConceptLink):
        return {"to": link.to, "rel": link.rel, "weight": link.weight}
    if isinstance(link, Mapping):
        return dict(link)
    raise QueryError(f"a link must be a ConceptLink or a mapping, got {type(link).__name__}")
