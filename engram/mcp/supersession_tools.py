"""The MCP server's supersession tools: say that a memory replaces earlier ones, list what
detection proposed, review a proposal and revert a supersession (ADRs 0052, 0075).

Every tool acts as the calling agent, over the same Python API as every other interface
(:class:`~engram.agents.memory.AgentMemory`): an agent supersedes only its own memories
(detection alone reaches other agents' public ones, ADR 0166, 0171), sees and reviews only
the proposals its own observations raised, and reverts the supersessions they made and
those that replaced one of its memories; it is the review's or the revert's ``reviewer``.
Every argument is checked before anything is appended, so a refused call writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from engram.agents import scopes
from engram.agents import supersession as acts
from engram.mcp.fields import Agent, Whole
from engram.mcp.tools import MemoryTools, ToolInputError, iso_time
from engram.projections import supersession

if TYPE_CHECKING:
    from engram.mcp.server import Worker

__all__ = ["SupersessionTools", "register"]

#: What ``list_supersessions`` lists: proposals waiting for review, or supersessions in force.
STATUSES = ("pending", "applied")
#: Characters of each memory's text a listing quotes.
QUOTE = 500

#: The largest ledger position (the ledger's positions are signed 64-bit integers).
MAX_POSITION = 2**63 - 1

Position = Annotated[Whole, Field(ge=1, le=MAX_POSITION, description="A ledger position.")]


class SupersessionTools:
    """The supersession tools, for the agents ``tools`` serves."""

    def __init__(self, tools: MemoryTools) -> None:
        self.tools = tools
        self.memory = tools.memory

    def supersede_memory(
        self,
        position: int,
        replaces: Sequence[int],
        valid_from: str | None = None,
        agent: str | None = None,
    ) -> dict[str, Any]:
        """Say that the caller's memory at ``position`` replaces its earlier ``replaces``.

        ``valid_from`` (ISO 8601 with a timezone) is when the old ones stopped being true;
        omitted: the new memory's time.
        """
        who = self.tools.caller(agent)
        _position(position, "position")
        if isinstance(replaces, str | bytes) or not isinstance(replaces, Sequence):
            raise ToolInputError(f"replaces must be a list of ledger positions, got {replaces!r}")
        olds = [_position(p, f"replaces[{i}]") for i, p in enumerate(replaces)]
        if not olds:
            raise ToolInputError("replaces must name at least one earlier memory")
        when = iso_time(valid_from, "valid_from")
        event = self.memory.agent(who).supersede(position, olds, valid_from=when)
        return {"agent": who, "event": event, "position": position, "replaces": olds}

    def list_supersessions(
        self, status: str = "pending", limit: int = 20, agent: str | None = None
    ) -> dict[str, Any]:
        """List the caller's pending proposals (``pending``) or supersessions in force
        (``applied``), each with the old and new memories' texts, oldest proposal first or
        newest supersession first."""
        who = self.tools.caller(agent)
        if status not in STATUSES:
            raise ToolInputError(f"status must be one of {list(STATUSES)}, got {status!r}")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise ToolInputError(f"limit must be an int in 1..1000, got {limit!r}")
        memory = self.memory
        memory.engine.wait_for(memory.ledger.head())
        with memory.engine.read() as conn:
            if status == "pending":
                rows = [
                    (p.event, p.new, p.replaces, {"similarity": p.similarity, "why": p.why})
                    for p in supersession.pending(conn, who)[:limit]
                ]
            else:
                rows = [
                    (s.event, s.new, s.replaces, {"method": s.method})
                    for s in supersession.in_force(conn, who, limit)
                ]
        texts = self._texts({p for _, new, olds, _ in rows for p in (new, *olds)})
        return {
            "agent": who,
            "status": status,
            "items": [
                {
                    "event": event,
                    "new": {"position": new, "text": texts.get(new, "")},
                    "replaces": [{"position": p, "text": texts.get(p, "")} for p in olds],
                    **extra,
                }
                for event, new, olds, extra in rows
            ],
        }

    def review_supersession(
        self, proposal: int, decision: str, note: str = "", agent: str | None = None
    ) -> dict[str, Any]:
        """Apply or refuse a pending proposal about the caller's memories, as its reviewer."""
        who = self.tools.caller(agent)
        _position(proposal, "proposal")
        if decision not in ("applied", "refused"):
            raise ToolInputError(f"decision must be 'applied' or 'refused', got {decision!r}")
        if not isinstance(note, str):
            raise ToolInputError("note must be a string")
        memory = self.memory
        memory.engine.wait_for(memory.ledger.head())
        with memory.engine.read() as conn:
            found = supersession.proposal(conn, proposal)
        if found is None or found.agent != who:
            raise ToolInputError(
                f"position {proposal} holds no supersession proposal about {who}'s memories"
            )
        event = acts.review(memory.agent(who), proposal, decision, reviewer=who, note=note)
        return {"agent": who, "proposal": proposal, "decision": decision, "event": event}

    def revert_supersession(
        self, event: int, note: str = "", agent: str | None = None
    ) -> dict[str, Any]:
        """Undo a supersession of the caller's memories: the old memory is current again."""
        who = self.tools.caller(agent)
        _position(event, "event")
        if not isinstance(note, str):
            raise ToolInputError("note must be a string")
        memory = self.memory
        memory.engine.wait_for(memory.ledger.head())
        with memory.engine.read() as conn:
            found = supersession.of_event(conn, event)
        if found is None or found.agent != who:
            raise ToolInputError(
                f"position {event} holds no supersession of {who}'s memories; list them with"
                " list_supersessions(status='applied')"
            )
        position = memory.agent(who).revert_supersession(event, reviewer=who, note=note)
        return {"agent": who, "supersession": event, "event": position}

    def _texts(self, positions: set[int]) -> dict[int, str]:
        events = scopes.held_events(self.memory.ledger, positions)
        return {e.position: scopes.item_text(e)[:QUOTE] for e in events}


def _position(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_POSITION:
        raise ToolInputError(
            f"{name} must be a ledger position (an int in 1..{MAX_POSITION}), got {value!r}"
        )
    return value


def register(
    server: MCPServer, worker: Worker, reads: ToolAnnotations, writes: ToolAnnotations
) -> None:
    """Add the four supersession tools to ``server``."""

    def tools() -> SupersessionTools:
        return SupersessionTools(worker.tools)

    @server.tool(annotations=writes)
    async def supersede_memory(
        position: Annotated[Position, Field(description="Your newer memory's position.")],
        replaces: Annotated[
            list[Position],
            Field(min_length=1, description="Your earlier memories it replaces (positions)."),
        ],
        valid_from: Annotated[
            str | None,
            Field(
                description="ISO 8601 time the old ones stopped being true; default: the new"
                " memory's time."
            ),
        ] = None,
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Say that one of your memories replaces earlier ones (a fact changed).

        Search then serves the replaced ones below it, labelled replaced_by; nothing is
        deleted, and revert_supersession undoes it."""
        return await worker.run(
            lambda: tools().supersede_memory(position, replaces, valid_from, agent)
        )

    @server.tool(annotations=reads)
    async def list_supersessions(
        status: Annotated[
            Literal["pending", "applied"],
            Field(description="pending: proposals waiting for your review; applied: in force."),
        ] = "pending",
        limit: Annotated[Whole, Field(ge=1, le=1000)] = 20,
        agent: Agent = None,
    ) -> dict[str, Any]:
        """List replacements of your memories: proposed by detection, or in force.

        Each item gives the event to review or revert, the new memory and the ones it replaces."""
        return await worker.run(lambda: tools().list_supersessions(status, limit, agent))

    @server.tool(annotations=writes)
    async def review_supersession(
        proposal: Annotated[Position, Field(description="The proposal's event position.")],
        decision: Literal["applied", "refused"],
        note: Annotated[str, Field(max_length=acts.MAX_NOTE)] = "",
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Apply or refuse a proposed replacement of one of your memories; you are the reviewer."""
        return await worker.run(
            lambda: tools().review_supersession(proposal, decision, note, agent)
        )

    @server.tool(annotations=writes)
    async def revert_supersession(
        event: Annotated[Position, Field(description="The supersession's event position.")],
        note: Annotated[str, Field(max_length=acts.MAX_NOTE)] = "",
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Undo a replacement of one of your memories: the old memory is current again."""
        return await worker.run(lambda: tools().revert_supersession(event, note, agent))
