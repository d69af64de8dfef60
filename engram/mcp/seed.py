"""The seed's MCP contract: its ``kom.*`` tool names and the shapes of its context tools.

A client written against the seed calls ``kom.meta.v1.project_snapshot``,
``kom.local.v1.backup.export_encrypted`` / ``import_encrypted``,
``kom.memory.v1.search_memory`` / ``upsert_memory`` (engram's own tools under those names,
registered by :func:`engram.mcp.server.build_server`) and ``kom.memory.v1.recall_context`` /
``save_context``, whose shapes differ from engram's and are adapted here:

- ``save_context`` takes the context for a ``session`` and/or ``task`` as ``context`` (an
  object of frames, or plain text kept as a scratchpad), or ``frames``; it is appended as
  ``context.saved`` exactly as engram's own ``save_context`` does (what the agent wrote is
  sealed under its key; ledger quotes stay positions).
- ``recall_context`` returns what was saved for that session/task when it exists (newest
  first wins), else builds fresh frames for the query, with ``types`` keeping only items of
  the seed's node types (``concept|skill|fact|snippet|pattern|episode|tool|persona|task``)
  and of engram's memory types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from engram.mcp.fields import Agent, Number, Whole
from engram.mcp.tools import ToolInputError, check_finite

if TYPE_CHECKING:
    from engram.mcp.server import Worker

__all__ = ["NodeType", "register"]

NodeType = Literal[
    "concept", "skill", "fact", "snippet", "pattern", "episode", "tool", "persona", "task",
    "observation", "plan", "thought", "reflection", "failure", "victory", "rule",
]  # fmt: skip


def register(server: MCPServer, worker: Worker, writes: ToolAnnotations) -> None:
    """Add the seed-shaped ``kom.memory.v1.recall_context`` and ``save_context`` to ``server``."""

    @server.tool(name="kom.memory.v1.save_context", annotations=writes)
    async def save_context(
        session: Annotated[str, Field(description="The work session it is saved for.")] = "",
        task: Annotated[str, Field(description="The task it is saved for.")] = "",
        context: Annotated[
            dict[str, Any] | str | None,
            Field(description="Frame name -> content, or text (kept as the scratchpad)."),
        ] = None,
        frames: Annotated[dict[str, Any] | None, Field(description="Same as context.")] = None,
        query: str = "",
        budget: Annotated[Whole, Field(ge=1, le=100_000)] = 2000,
        items: list[str] = [],  # noqa: B006 - pydantic copies defaults
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Save context for a session or task, so recall_context can give it back."""

        def run() -> dict[str, Any]:
            content = frames if frames is not None else context
            if isinstance(content, str):
                content = {"scratchpad": content}
            if not content:
                raise ToolInputError("give the context to save: `context` (frames or text)")
            check_finite(content, "frames" if frames is not None else "context")
            return worker.tools.save_context(content, query, task, budget, items, agent, session)

        return await worker.run(run)

    @server.tool(name="kom.memory.v1.recall_context", annotations=writes)
    async def recall_context(
        query: Annotated[str, Field(description="What you are about to do.")] = "",
        session: Annotated[str, Field(description="The work session to resume.")] = "",
        task: Annotated[str, Field(description="The task at hand.")] = "",
        types: Annotated[
            list[NodeType], Field(description="Only items of these node types; empty: all.")
        ] = [],  # noqa: B006
        k: Annotated[
            Whole | None,
            Field(
                ge=1, le=100, description="Items of each node type at most; none: each type's own."
            ),
        ] = None,
        budget: Annotated[Whole, Field(ge=128, le=100_000)] = 2000,
        min_score: Annotated[Number, Field(ge=0.0, le=1.0)] = 0.0,
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Give back the context saved for this session/task, else build it for the query."""

        def run() -> dict[str, Any]:
            tools = worker.tools
            saved = tools.saved_context(session, task, agent)
            if saved is not None:
                return saved
            if not query:
                raise ToolInputError(
                    "nothing was saved for this session/task: give a `query` to build context"
                )
            built = tools.recall_context(
                query, "task", k, task, "", budget, agent, min_score=min_score
            )
            built["saved"] = False
            return _only(built, set(types)) if types else built

        return await worker.run(run)


def _only(context: dict[str, Any], types: set[str]) -> dict[str, Any]:
    """Keep only the items (and list frames' entries) whose type is one of ``types``."""
    frames = {
        name: [e for e in content if not isinstance(e, dict) or e.get("type") in types]
        if isinstance(content, list)
        else content
        for name, content in context["frames"].items()
    }
    items = [i for i in context["items"] if i.get("type") in types]
    return {**context, "frames": frames, "items": items}
