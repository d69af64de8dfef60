"""The MCP server's lesson tools: review a suggestion (sending it elsewhere), and the doctrine.

- ``review_suggestion``: apply, refuse or modify a suggestion as the calling agent, with an
  optional ``destination`` that sends it elsewhere than drafted (ADR 0058, ADR 0079);
  checked by the lessons API, so a bad call appends nothing; only a caller the server was
  started with as a reviewer (``engram mcp --reviewer NAME``) may review (ADR 0183);
- ``find_doctrine``: the notes and skills a task calls for (tier 2, by meaning and by their
  links: :func:`engram.agents.doctrine.served`);
- ``list_skills``: every approved skill.

:class:`LessonTools` does the work over the same Python API as every interface;
:func:`register` turns it into tools beside :mod:`engram.mcp.server`'s own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from engram.agents import doctrine as served_doctrine
from engram.agents.lessons import DECISIONS, DESTINATIONS
from engram.ledger.catalog import Destination
from engram.mcp.fields import Agent, Flag, Whole
from engram.mcp.tools import MemoryTools, ToolInputError
from engram.projections import doctrine
from engram.projections.doctrine import ENTRY_KINDS, Entry

if TYPE_CHECKING:
    from engram.mcp.server import Worker

__all__ = ["LessonTools", "register"]


def _entry(e: Entry, score: float | None = None, via: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "position": e.position,
        "kind": e.kind,
        "text": e.text,
        "suggestion": e.suggestion,
        "scars": e.scars,
        "reviewer": e.reviewer,
    }
    if score is not None:
        out |= {"score": round(score, 4), "via": via}
    return out


class LessonTools:
    """The lesson tools over :class:`~engram.mcp.tools.MemoryTools`' opened engram."""

    def __init__(self, tools: MemoryTools) -> None:
        self.tools = tools

    def review_suggestion(
        self,
        suggestion: str,
        decision: str,
        *,
        destination: str | None = None,
        text: str | None = None,
        always: bool = False,
        note: str = "",
        agent: str | None = None,
    ) -> dict[str, Any]:
        """Review a suggestion as the calling agent; ``destination`` sends it elsewhere.
        Only a caller the server was started with as a reviewer may (ADR 0183)."""
        who = self.tools.caller(agent)
        if who not in self.tools.reviewers:
            raise ToolInputError(
                f"{who!r} may not review suggestions: a model is not the user, and an approved"
                " lesson reaches every agent's context (ADR 0046, 0183); review with `engram"
                " suggestions` or the hub, or start the server with --reviewer NAME"
            )
        if decision not in DECISIONS:
            raise ToolInputError(f"decision must be one of {list(DECISIONS)}, got {decision!r}")
        if destination is not None and destination not in DESTINATIONS:
            raise ToolInputError(
                f"destination must be one of {list(DESTINATIONS)}, got {destination!r}"
            )
        lessons = self.tools.memory.lessons()
        position = lessons.review(
            suggestion,
            decision,
            who,
            note=note,
            text=text,
            always=always,
            destination=cast(Destination | None, destination),
        )
        found = lessons.suggestion(suggestion)
        return {
            "suggestion": found.id,
            "status": found.status,
            "destination": found.destination,
            "position": position,
        }

    def find_doctrine(
        self, query: str, kind: str | None = None, limit: int = 3, agent: str | None = None
    ) -> dict[str, Any]:
        """Return the notes and skills ``query`` calls for, by meaning and by their links."""
        self.tools.caller(agent)
        if not isinstance(query, str) or not query.strip():
            raise ToolInputError(f"query must be a non-empty string, got {query!r}")
        if kind is not None and kind not in ENTRY_KINDS:
            raise ToolInputError(f"kind must be one of {list(ENTRY_KINDS)}, got {kind!r}")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 20:
            raise ToolInputError(f"limit must be an int of 1..20, got {limit!r}")
        memory = self.tools.memory
        memory.engine.wait_for(memory.ledger.head())
        with memory.engine.read() as conn:
            found = served_doctrine.served(
                conn, query, None, memory.embedder, kind=kind, limit=limit
            )
        return {"items": [_entry(s.entry, s.score, s.via) for s in found]}

    def list_skills(self, agent: str | None = None) -> dict[str, Any]:
        """Return every approved skill, in the order approved."""
        self.tools.caller(agent)
        memory = self.tools.memory
        memory.engine.wait_for(memory.ledger.head())
        with memory.engine.read() as conn:
            return {"skills": [_entry(e) for e in doctrine.entries(conn, "skill")]}


def register(
    server: MCPServer, worker: Worker, reads: ToolAnnotations, writes: ToolAnnotations
) -> None:
    """Add ``review_suggestion``, ``find_doctrine`` and ``list_skills`` to ``server``."""

    def tools() -> LessonTools:
        return LessonTools(worker.tools)

    @server.tool(annotations=writes)
    async def review_suggestion(
        suggestion: Annotated[str, Field(min_length=1, description="Its id or id prefix.")],
        decision: Literal["applied", "refused", "modified"],
        destination: Annotated[
            Literal["rules", "instructions_file", "settings", "notes_inbox", "skill", "task"]
            | None,
            Field(description="Send it here instead of where it was drafted (not refused)."),
        ] = None,
        text: Annotated[str | None, Field(description="The final text, with modified.")] = None,
        always: Annotated[Flag, Field(description="Mark an applied rule always-on.")] = False,
        note: str = "",
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Review a suggestion of the lessons loop: apply, refuse or modify it, optionally
        sending it to another destination (rules, notes_inbox, skill, ...)."""
        return await worker.run(
            lambda: tools().review_suggestion(
                suggestion,
                decision,
                destination=destination,
                text=text,
                always=always,
                note=note,
                agent=agent,
            )
        )

    @server.tool(annotations=reads)
    async def find_doctrine(
        query: Annotated[str, Field(min_length=1, description="The task at hand.")],
        kind: Annotated[
            Literal["note", "skill"] | None, Field(description="Only notes, or only skills.")
        ] = None,
        limit: Annotated[Whole, Field(ge=1, le=20)] = 3,
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Find the reviewed notes and skills (the doctrine) that apply to a task."""
        return await worker.run(lambda: tools().find_doctrine(query, kind, limit, agent))

    @server.tool(annotations=reads)
    async def list_skills(agent: Agent = None) -> dict[str, Any]:
        """List the approved skills: recurring successful patterns a person reviewed."""
        return await worker.run(lambda: tools().list_skills(agent))
