"""The MCP server: engram's memory as tools for a model, over stdio or streamable HTTP.

Built on the official SDK's :class:`MCPServer`. One worker thread opens the ledger and the
projections and runs every tool call, one at a time (SQLite connections stay in the thread
that opened them; concurrent calls queue, none is lost). A call is answered only after its
events are appended, so an acknowledged write survives the server being killed. Bad input
and engram's refusals come back as tool errors whose message says what to change; nothing a
call does can stop the server.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
from collections import deque
from collections.abc import AsyncIterable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Annotated, Any, Literal, TextIO, TypeVar

import anyio
import msgspec
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    ToolAnnotations,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engram import __version__
from engram.agents.context import MAX_BUDGET, MIN_BUDGET
from engram.agents.errors import AgentError
from engram.config import Settings
from engram.ledger import LedgerError
from engram.mcp import lesson_tools, seed, supersession_tools
from engram.mcp.auth import BearerGuard, loopback
from engram.mcp.dispatch import ToolServer
from engram.mcp.fields import Agent, Number, Whole
from engram.mcp.tools import KEY_ENV, KEY_ENV_PREFIX, MAX_ITEMS, MemoryTools, ToolInputError
from engram.projections.errors import ProjectionError
from engram.runtime import open_parts

T = TypeVar("T")

INSTRUCTIONS = """\
engram is your long-term memory, shared with other agents through an append-only ledger.
Search it before you act (search_memory), write down what you learn (upsert_memory), record
failures and victories with their lesson (record_scar). Everything you write is kept and
attributed to you; private items are seen only by you."""

MemoryKind = Literal["observation", "plan", "thought"]
MinScore = Annotated[
    Number | None,
    Field(ge=0.0, le=1.0, description="Leave out items scoring under this; omitted: the default."),
]
KeyEnv = Annotated[
    str,
    Field(
        description=f"The server's environment variable holding the pack key; its name must"
        f" start with {KEY_ENV_PREFIX}."
    ),
]
ConceptKind = Literal[
    "concept", "skill", "fact", "snippet", "pattern", "episode", "tool", "persona", "task"
]


class Observation(BaseModel):
    """Something the agent saw, planned or thought."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, description="The memory, in one or a few sentences.")
    type: MemoryKind = "observation"
    importance: Whole | None = Field(
        None, ge=1, le=10, description="1 (mundane) .. 10 (crucial); omitted: scored for you."
    )
    tags: list[str] = Field(default_factory=list, description="Short labels to find it by.")
    visibility: Literal["public", "private"] = "public"


class Link(BaseModel):
    """A typed, weighted link from a concept to another."""

    model_config = ConfigDict(extra="forbid")
    to: str = Field(description="The target concept's id, e.g. skill.python.asyncio.")
    rel: str = Field(description="The relation, e.g. uses, extends, contradicts.")
    weight: Number = Field(0.5, ge=0.0, le=1.0)


class Concept(BaseModel):
    """A node of the concept tree; the newest upsert of an id wins."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="Dot-separated lowercase path, e.g. skill.python.asyncio.")
    type: ConceptKind
    label: str = Field(min_length=1, description="A short human name.")
    payload: dict[str, Any] = Field(
        default_factory=dict, description="Free JSON: a snippet, a source."
    )
    links: list[Link] = Field(default_factory=list, description="Replace the concept's links.")
    visibility: Literal["public", "private"] = "public"


class Worker:
    """One thread that owns the opened engram and runs the tool calls in turn."""

    def __init__(
        self, settings: Settings, agents: Sequence[str], reviewers: Sequence[str] = ()
    ) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-mcp")
        self._stack = ExitStack()
        self._lock = threading.Lock()
        self.tools: MemoryTools = self._pool.submit(
            self._open, settings, list(agents), list(reviewers)
        ).result()

    def _open(self, settings: Settings, agents: list[str], reviewers: list[str]) -> MemoryTools:
        memory = self._stack.enter_context(open_parts(settings, actor=agents[0]))
        memory.engine.catch_up()
        return MemoryTools(
            memory, agents, pack_dir=settings.mcp_pack_dir or None, reviewers=reviewers
        )

    async def run(self, call: Callable[[], T]) -> T:
        """Run ``call`` on the worker thread; translate engram's refusals into tool errors."""
        try:
            return await asyncio.wrap_future(self._pool.submit(call))
        except (ToolInputError, AgentError, ProjectionError, LedgerError) as exc:
            raise ToolError(str(exc)) from None
        except msgspec.ValidationError as exc:
            raise ToolError(f"invalid value: {exc}") from None

    def close(self) -> None:
        """Close the engram on its own thread, then stop the thread."""
        self._pool.submit(self._stack.close).result()
        self._pool.shutdown()


def build_server(worker: Worker) -> MCPServer:
    """Return the MCP server whose tools call ``worker``'s :class:`MemoryTools`."""
    server = ToolServer(
        "engram", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )

    def tools() -> MemoryTools:
        return worker.tools

    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    @server.tool(annotations=reads)
    async def search_memory(
        query: Annotated[str, Field(min_length=1, description="What you are looking for.")],
        k: Annotated[Whole, Field(ge=1, le=100, description="How many items at most.")] = 10,
        types: Annotated[
            list[MemoryKind] | None, Field(description="Only these memory types (memories scope).")
        ] = None,
        scope: Annotated[
            Literal["memories", "scars", "victories", "reflections", "rules", "all"],
            Field(
                description="What to search: memories, scars, victories, reflections, rules, all."
            ),
        ] = "memories",
        agent: Agent = None,
        min_score: MinScore = None,
        valid_at: Annotated[
            str | None,
            Field(
                description="Ask what was true at this time (ISO 8601 with a timezone; memories"
                " scope): a memory not yet true then is left out, one replaced by then comes"
                " below what replaced it; omitted: now."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Search long-term memory; best matches first, each with its id, text and score.

        A score is an absolute relevance from 0 to 1, comparable across queries; items under
        ``min_score`` are left out, so a question nothing answers gets few or no items. A
        memory replaced by a later one comes below it, with ``replaced_by``. You see public
        items and your own private ones. The search is recorded, which keeps the items it
        serves alive in memory."""
        return await worker.run(
            lambda: tools().search_memory(
                query, k, types, scope, agent, min_score=min_score, valid_at=valid_at
            )
        )

    @server.tool(annotations=writes)
    async def upsert_memory(
        observations: Annotated[
            list[Observation],
            Field(max_length=MAX_ITEMS, description="Memories to add (append-only)."),
        ] = [],  # noqa: B006 - pydantic copies defaults
        concepts: Annotated[
            list[Concept],
            Field(max_length=MAX_ITEMS, description="Concepts to create or replace (newest wins)."),
        ] = [],  # noqa: B006
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Write memories and concepts; returns their ledger positions once stored durably.

        All items are checked first: if one is wrong, nothing is written and the error says
        which item and field."""
        obs = [o.model_dump() for o in observations]
        cons = [c.model_dump() for c in concepts]
        return await worker.run(lambda: tools().upsert_memory(obs, cons, agent))

    @server.tool(annotations=writes)
    async def recall_context(
        query: Annotated[str, Field(min_length=1, description="What you are about to do.")],
        scope: Annotated[
            Literal["task", "session", "agent"],
            Field(
                description="task: for the query and the task; agent: your own memories only;"
                " session: the session's shared memo, then memories."
            ),
        ] = "task",
        k: Annotated[
            Whole | None,
            Field(
                ge=1, le=100, description="Items of each node type at most; none: each type's own."
            ),
        ] = None,
        task: Annotated[str, Field(description="The task at hand, if any.")] = "",
        session: Annotated[str, Field(description="The session's name (scope session).")] = "",
        budget: Annotated[
            Whole, Field(ge=MIN_BUDGET, le=MAX_BUDGET, description="Token budget.")
        ] = 2000,
        agent: Agent = None,
        min_score: Annotated[
            Number,
            Field(
                ge=0.0,
                le=1.0,
                description="Leave out recalled items whose similarity to the query"
                " (components.similarity, 0..1) is under this; an item's score is its rank in"
                " the frames, on another scale.",
            ),
        ] = 0.0,
    ) -> dict[str, Any]:
        """Assemble context frames for your next step within a token budget.

        The frames shown to you are saved (context.saved), so what you saw is auditable."""
        return await worker.run(
            lambda: tools().recall_context(
                query, scope, k, task, session, budget, agent, min_score=min_score
            )
        )

    @server.tool(annotations=writes)
    async def save_context(
        frames: Annotated[
            dict[str, Any], Field(description="Frame name -> content, e.g. {'scratchpad': '...'}.")
        ],
        query: str = "",
        task: str = "",
        budget: Annotated[Whole, Field(ge=1, le=MAX_BUDGET)] = 2000,
        items: Annotated[list[str], Field(description="Ids of the events behind the frames.")] = [],  # noqa: B006
        agent: Agent = None,
        session: Annotated[str, Field(description="The work session it is saved for.")] = "",
    ) -> dict[str, Any]:
        """Write context frames back (a scratchpad, a plan) so the next step can start from them."""
        return await worker.run(
            lambda: tools().save_context(frames, query, task, budget, items, agent, session)
        )

    @server.tool(annotations=reads)
    async def project_snapshot(agent: Agent = None) -> dict[str, Any]:
        """Return an immutable snapshot id: ledger head and hash, projection digests, counts.

        The same snapshot id means the same state; the head reproduces it by replay."""
        return await worker.run(lambda: tools().project_snapshot(agent))

    @server.tool(annotations=writes)
    async def export_pack(
        path: Annotated[str, Field(description="Pack file to write on the server's machine.")],
        name: Annotated[str, Field(min_length=1)],
        version: Annotated[str, Field(min_length=1, description="A new version per change.")],
        select: Annotated[
            str | None, Field(description="Pack the memories this query finds.")
        ] = None,
        concepts: Annotated[
            str | None, Field(description="Pack concepts under this prefix.")
        ] = None,
        from_agent: Annotated[str | None, Field(description="Pack this agent's memories.")] = None,
        domain: list[str] = [],  # noqa: B006
        limit: Annotated[Whole, Field(ge=1, le=100_000)] = 1000,
        key_env: KeyEnv = KEY_ENV,
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Export public knowledge to an encrypted, authenticated pack file."""
        return await worker.run(
            lambda: tools().export_pack(
                path, name, version, select, concepts, from_agent, domain, limit, key_env, agent
            )
        )

    @server.tool(annotations=writes)
    async def import_pack(
        path: Annotated[str, Field(description="Pack file on the server's machine.")],
        key_env: KeyEnv = KEY_ENV,
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Import a pack as you; checked before anything is written; twice adds nothing."""
        return await worker.run(lambda: tools().import_pack(path, key_env, agent))

    @server.tool(annotations=writes)
    async def record_scar(
        what: Annotated[str, Field(min_length=1, description="What happened, concretely.")],
        lesson: Annotated[
            str,
            Field(
                min_length=1,
                description="Failure: what avoids a repeat; victory: what to reproduce.",
            ),
        ],
        outcome: Annotated[
            Literal["failure", "victory"] | None,
            Field(description="What happened: a failure or a victory."),
        ] = None,
        importance: Annotated[Whole | None, Field(ge=1, le=10)] = None,
        tags: list[str] = [],  # noqa: B006
        agent: Agent = None,
        kind: Annotated[
            Literal["failure", "victory"] | None,
            Field(description="Deprecated name of outcome (one release)."),
        ] = None,
    ) -> dict[str, Any]:
        """Record a failure or a victory and its lesson; lessons become suggestions for review."""
        return await worker.run(
            lambda: tools().record_scar(outcome, what, lesson, importance, tags, agent, kind)
        )

    @server.tool(annotations=reads)
    async def list_suggestions(
        status: Annotated[
            list[Literal["pending", "applied", "refused", "modified"]]
            | Literal["pending", "applied", "refused", "modified"],
            Field(description="Only this status, or these statuses; empty: all."),
        ] = [],  # noqa: B006
        limit: Annotated[Whole, Field(ge=1, le=1000)] = 20,
        agent: Agent = None,
    ) -> dict[str, Any]:
        """List the lessons loop's suggestions (drafted from scars, reviewed by people)."""
        chosen = [status] if isinstance(status, str) else status
        return await worker.run(lambda: tools().list_suggestions(chosen, limit, agent))

    # The seed's tool names, for clients written against its contract (engram.mcp.seed).
    for name, fn, hint in (
        ("kom.meta.v1.project_snapshot", project_snapshot, reads),
        ("kom.local.v1.backup.export_encrypted", export_pack, writes),
        ("kom.local.v1.backup.import_encrypted", import_pack, writes),
        ("kom.memory.v1.search_memory", search_memory, reads),
        ("kom.memory.v1.upsert_memory", upsert_memory, writes),
    ):
        server.add_tool(fn, name=name, annotations=hint)
    seed.register(server, worker, writes)
    lesson_tools.register(server, worker, reads, writes)
    supersession_tools.register(server, worker, reads, writes)
    return server


@contextmanager
def serving(
    settings: Settings, agents: Sequence[str], reviewers: Sequence[str] = ()
) -> Iterator[MCPServer]:
    """Open engram for ``agents`` (``reviewers`` among them may review suggestions) and
    yield the server; close engram afterwards."""
    worker = Worker(settings, agents, reviewers)
    try:
        yield build_server(worker)
    finally:
        worker.close()


def serve(
    settings: Settings,
    agents: Sequence[str],
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    reviewers: Sequence[str] = (),
) -> None:
    """Run the server until its client goes away (stdio) or it is stopped (HTTP).

    Over HTTP, ``token`` (required on an address other than loopback, ADR 0124) must come
    with every request as ``Authorization: Bearer TOKEN``."""
    if transport == "http" and token is None and not loopback(host):
        raise ValueError(
            f"host {host} is not a loopback address: choose a token (--token or"
            " ENGRAM_MCP_TOKEN) that every request must carry"
        )
    with serving(settings, agents, reviewers) as server:
        if transport == "stdio":
            anyio.run(_run_stdio, server)
        else:
            anyio.run(_run_http, server, host, port, token)


async def _run_http(server: MCPServer, host: str, port: int, token: str | None) -> None:
    """Serve streamable HTTP as the SDK does, behind the bearer token where one is given."""
    import uvicorn

    from engram import httpguard

    httpguard.plain_logs()
    app: Any = server.streamable_http_app(host=host)
    if token is not None:
        app = BearerGuard(app, token)
    config = httpguard.config(app, host, port, log_level=server.settings.log_level.lower())
    await uvicorn.Server(config).serve()


async def _run_stdio(server: MCPServer) -> None:
    """Serve over stdio as the SDK does, and answer a line it cannot read (JSON-RPC 2.0, 5.1).

    The SDK's stdio transport hands a line that is not a JSON-RPC message (bad JSON, a lone
    surrogate, nesting past the parser's depth) to the session as an exception, which drops
    it, and reads a request whose id is no string or integer (an object, an array, a
    fraction, a bool, null) as a notification, which gets no answer: either way the client
    would wait for an answer forever. Each such line gets an error response with a null id:
    -32700 when it is not JSON, -32600 when it is JSON but no message or its id is wrong.
    """
    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async uses it the same way
    with _wire_stdin() as wire:
        lines = _Lines(anyio.wrap_file(wire))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            replies = _Replies(write_stream)

            async def forward() -> None:
                async with send:
                    async for item in read_stream:
                        line = lines.read.popleft()  # the line the SDK read this item from
                        if isinstance(item, Exception):
                            await write_stream.send(SessionMessage(_unreadable(item)))
                        elif isinstance(item.message, JSONRPCNotification) and _has_id(line):
                            await write_stream.send(SessionMessage(_invalid_id()))
                        else:
                            if isinstance(item.message, JSONRPCRequest):
                                replies.owe(item.message.id)
                            await send.send(item)
                    # stdin ended: the requests read are answered before the session closes
                    # (it answered each "Connection closed", one of them written; ADR 0125).
                    with anyio.move_on_after(DRAIN_SECONDS):
                        await replies.settled.wait()

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(forward)
                await lowlevel.run(receive, replies, lowlevel.create_initialization_options())
                tasks.cancel_scope.cancel()


#: How long, once stdin has ended, the requests already read have to be answered.
DRAIN_SECONDS = 60.0


class _Replies:
    """The session's write stream, noting which requests it has answered: what is still
    owed once stdin has ended."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._owed: set[str | int] = set()
        self.settled = anyio.Event()
        self.settled.set()

    def owe(self, request: str | int) -> None:
        """Note a request sent on to the session."""
        self._owed.add(request)
        if self.settled.is_set():
            self.settled = anyio.Event()

    async def send(self, item: SessionMessage) -> None:
        await self._stream.send(item)
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._owed.discard(message.id)
            if not self._owed:
                self.settled.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def __aenter__(self) -> _Replies:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        return await self._stream.__aexit__(*exc)  # type: ignore[no-any-return]


@contextmanager
def _wire_stdin() -> Iterator[TextIO]:
    """Yield stdin as text read from a private descriptor, fd 0 pointing at the null device.

    What the SDK's transport does when it reads stdin itself (it is given the lines here, to
    keep each until its message is checked): a tool, or a process it starts, reading stdin
    reads nothing rather than the client's messages. fd 0 is the wire again afterwards; the
    private descriptor stays open, as a thread may still be blocked reading it.
    """
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        yield io.TextIOWrapper(
            os.fdopen(wire, "rb", closefd=False), encoding="utf-8", errors="replace"
        )
    finally:
        os.dup2(wire, 0)


class _Lines:
    """stdin's lines as the SDK's reader takes them, each kept in :attr:`read` until forwarded.

    The SDK turns every line into exactly one item (a message or an exception), in order, so
    the oldest kept line is the one the next item was read from.
    """

    def __init__(self, source: AsyncIterable[str]) -> None:
        self._source = aiter(source)
        self.read: deque[str] = deque()

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await anext(self._source)
        self.read.append(line)
        return line


def _has_id(line: str) -> bool:
    """Say whether ``line``, read as a notification, carries an ``id``: a request whose id the
    SDK could not take (a notification has no id at all)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and "id" in message


def _invalid_id() -> JSONRPCError:
    """Return the error response to a request whose id is no string or integer."""
    message = "Invalid Request: the id must be a string or an integer"
    return JSONRPCError(
        jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=message)
    )


def _unreadable(exc: Exception) -> JSONRPCError:
    """Return the error response to a line that is no JSON-RPC message (input not echoed)."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if errors and errors[0].get("type") != "json_invalid":
        code, message = INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
    else:
        code, message = PARSE_ERROR, "Parse error: the line is not JSON this server can read"
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))
