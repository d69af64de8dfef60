"""The hub's web application: Starlette routes over one opened engram (ADR 0042).

Pages are views of projections and the ledger (:mod:`engram.hub.views`); the only write is
a review, appended through :class:`~engram.agents.lessons.Lessons` like any other. Every
read of the engram runs on one worker thread that owns the opened handle, so the event loop
never blocks on SQLite and the handle is never shared between threads; live events come
from :class:`~engram.hub.live.Broadcaster`, which follows the ledger on its own handle.
"""

from __future__ import annotations

import asyncio
import getpass
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import jinja2
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from engram.agents import supersession as superseding
from engram.agents.errors import AgentError
from engram.config import Settings
from engram.errors import InterfaceError
from engram.hub import views
from engram.hub.live import Broadcaster
from engram.hub.plots import plot
from engram.hub.security import Guard, new_token
from engram.ledger import ConfigError, EventError, LedgerError
from engram.projections.errors import ProjectionError
from engram.runtime import Memory, open_parts, open_settings, registry_for

T = TypeVar("T")
HERE = Path(__file__).parent
#: A review form is a few fields and one text: anything larger is refused unread.
MAX_FORM = 256 * 1024
PLOTS = (
    ("active_neurons", "active neurons"),
    ("mean_salience", "mean salience"),
    ("density", "connection density"),
    ("inhibition", "inhibition balance"),
    ("appends_per_s", "appends per second"),
    ("projection_lag", "projection lag (events)"),
    ("job_runs_per_h", "job runs per hour"),
)


class BadRequestError(InterfaceError):
    """A request the hub refuses, with the reason shown to the user (status 400)."""


@dataclass
class HubConfig:
    """How the hub runs: the engram it opens, its token, who reviews, what it may do."""

    settings: Settings
    token: str = field(default_factory=new_token)
    read_only: bool = False
    reviewer: str = field(default_factory=getpass.getuser)
    hosts: tuple[str, ...] = ()
    checkpoints: Path | None = None
    public_key: Path | None = None
    sample_every: float = 5.0


class Hub:
    """The opened engram, its worker thread, the live broadcaster and the samples taken."""

    def __init__(self, config: HubConfig) -> None:
        self.config = config
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="engram-hub")
        self.stack = ExitStack()
        self.memory: Memory | None = None
        self.samples: deque[dict[str, Any]] = deque(maxlen=720)
        self.broadcaster = Broadcaster(
            lambda: open_settings(config.settings, registry_for(config.settings), readonly=True)
        )

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(memory, *args)`` on the worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, partial(self._call, fn, *args))

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        assert self.memory is not None
        return fn(self.memory, *args)

    def _open(self) -> None:
        self.memory = self.stack.enter_context(open_parts(self.config.settings, actor="hub"))

    async def start(self) -> None:
        """Open the engram on the worker thread, start following and sampling."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.pool, self._open)
        self.broadcaster.start()
        self._sampler = asyncio.create_task(self._sample())

    async def stop(self) -> None:
        """Stop sampling and following; close the engram on its thread."""
        self._sampler.cancel()
        self.broadcaster.stop()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.pool, self.stack.close)
        self.pool.shutdown()

    async def _sample(self) -> None:
        while True:
            try:
                self.samples.append(await self.run(views.sample))
            except (LedgerError, ProjectionError) as exc:
                self.samples.append({"at": datetime.now().astimezone(), "lag": 0, "error": exc})
            await asyncio.sleep(self.config.sample_every)


def create_app(config: HubConfig) -> Guard:
    """Return the hub as an ASGI application, guarded (:class:`~engram.hub.security.Guard`)."""
    hub = Hub(config)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # event content is untrusted text written by agents
        undefined=jinja2.StrictUndefined,
    )
    guard_box: list[Guard] = []

    def page(request: Request, name: str, code: int = 200, **context: Any) -> Response:
        html = env.get_template(name).render(
            request=request,
            read_only=config.read_only,
            csrf=guard_box[0].csrf,
            live_error=hub.broadcaster.error,
            **context,
        )
        return Response(html, code, media_type="text/html; charset=utf-8")

    async def brain(request: Request) -> Response:
        return page(request, "brain.html")

    async def graph_api(request: Request) -> Response:
        as_of = _time(request.query_params.get("as_of"))
        return JSONResponse(await hub.run(views.graph, as_of))

    async def live(request: Request) -> Response:
        kinds = [k for k in request.query_params.get("kinds", "").split(",") if k]
        known = set(_kind_names(config.settings))
        unknown = sorted(set(kinds) - known)
        if unknown:
            raise BadRequestError(f"kinds: unknown {unknown}")
        sub = hub.broadcaster.subscribe(kinds or None)

        async def body() -> AsyncIterator[bytes]:
            try:
                yield f"retry: 2000\nevent: hello\ndata: {hub.broadcaster.head}\n\n".encode()
                while True:
                    try:
                        message = await asyncio.wait_for(sub.queue.get(), 15)
                    except TimeoutError:
                        yield b": keep-alive\n\n"
                        continue
                    if message is None:
                        return
                    yield message
            finally:
                hub.broadcaster.unsubscribe(sub)

        return StreamingResponse(body(), media_type="text/event-stream")

    async def vitality(request: Request) -> Response:
        data = await hub.run(views.vitality, list(hub.samples))
        plots = [plot(title, data["series"][key]) for key, title in PLOTS]
        return page(request, "vitality.html", plots=plots, **data)

    async def review(request: Request) -> Response:
        data = await hub.run(views.review)
        done = request.query_params.get("done")
        return page(request, "review.html", reviewer=config.reviewer, done=done, **data)

    async def review_post(request: Request) -> Response:
        if config.read_only:
            return page(request, "error.html", 403, message="the hub runs read-only: no reviews")
        form = await _form(request)
        if not guard_box[0].csrf_ok(form.get("csrf")):
            return page(request, "error.html", 403, message="missing or wrong CSRF token")
        decision = form.get("decision", "")
        text = form.get("text") if decision == "modified" else None
        suggestion = request.path_params["suggestion"]
        position = await hub.run(
            _review,
            suggestion,
            decision,
            form.get("reviewer", ""),
            form.get("note", ""),
            text,
            form.get("destination") or None,
        )
        return RedirectResponse(f"/review?done={position}", 303)

    async def supersession_post(request: Request) -> Response:
        if config.read_only:
            return page(request, "error.html", 403, message="the hub runs read-only: no reviews")
        form = await _form(request)
        if not guard_box[0].csrf_ok(form.get("csrf")):
            return page(request, "error.html", 403, message="missing or wrong CSRF token")
        event = _int(request.path_params["event"], "event", 1, 1)
        action = request.path_params["action"]
        if action not in ("review", "revert"):
            raise BadRequestError(f"{action!r}: a supersession is reviewed or reverted")
        reviewer, note = form.get("reviewer", ""), form.get("note", "")
        decision = form.get("decision", "") if action == "review" else "reverted"
        if action == "review" and decision not in ("applied", "refused"):
            # A review applies or refuses; reverting is its own action (ADR 0171).
            raise BadRequestError(f"decision must be 'applied' or 'refused', got {decision!r}")
        position = await hub.run(_supersession, event, decision, reviewer, note)
        return RedirectResponse(f"/review?done={position}", 303)

    async def memories(request: Request) -> Response:
        names = await hub.run(_agents)
        agent = request.query_params.get("agent") or (names[0] if names else "")
        query = request.query_params.get("q", "").strip()
        if agent and agent not in names:
            raise BadRequestError(f"agent {agent!r}: no such agent in the projections")
        data = await hub.run(views.memories, agent, query) if agent else {}
        memo = await hub.run(views.memos)
        return page(
            request, "memories.html", agents=names, agent=agent, query=query, memos=memo, **data
        )

    async def ledger(request: Request) -> Response:
        q = request.query_params
        kind = q.get("kind") or None
        stream = q.get("stream") or None
        after = _int(q.get("after"), "after", 0)
        limit = _int(q.get("limit"), "limit", 100, 1, views.MAX_EVENTS)
        kinds = _kind_names(config.settings)
        if kind is not None and kind not in kinds:
            raise BadRequestError(f"kind {kind!r} is not a kind this ledger knows")
        rows = await hub.run(
            _events, [kind] if kind else None, [stream] if stream else None, after, limit, not after
        )
        checkpoint = await hub.run(_checkpoint, config, False)
        return page(
            request,
            "ledger.html",
            rows=rows,
            kinds=kinds,
            kind=kind or "",
            stream=stream or "",
            after=after,
            limit=limit,
            checkpoint=checkpoint,
        )

    async def event(request: Request) -> Response:
        position = _int(request.path_params["position"], "position", 1, 1)
        try:
            found = await hub.run(_event, position)
        except ConfigError as exc:
            raise BadRequestError(str(exc)) from None
        return page(request, "event.html", event=found)

    async def verify(request: Request) -> Response:
        report = await hub.run(_verify)
        checkpoint = await hub.run(_checkpoint, config, True)
        return page(request, "verify.html", report=report, checkpoint=checkpoint)

    async def refused(request: Request, exc: Exception) -> Response:
        return page(request, "error.html", 400, message=str(exc))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await hub.start()
        try:
            yield
        finally:
            await hub.stop()

    routes = [
        Route("/", lambda request: RedirectResponse("/brain", 303)),
        Route("/brain", brain),
        Route("/api/graph", graph_api),
        Route("/api/events", live),
        Route("/vitality", vitality),
        Route("/review", review),
        Route("/review/{suggestion}", review_post, methods=["POST"]),
        Route("/review/supersession/{event}/{action}", supersession_post, methods=["POST"]),
        Route("/memories", memories),
        Route("/ledger", ledger),
        Route("/ledger/event/{position}", event),
        Route("/ledger/verify", verify),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            BadRequestError: refused,
            AgentError: refused,
            ProjectionError: refused,
            ConfigError: refused,
            EventError: refused,  # a form's value the event's envelope or payload refuses
        },
    )
    app.state.hub = hub
    guard = Guard(app, token=config.token, hosts=config.hosts, public=("/static/",))
    guard_box.append(guard)
    return guard


def _kind_names(settings: Settings) -> list[str]:
    return sorted(spec.name for spec in registry_for(settings))


# -- work done on the worker thread ---------------------------------------------------------


def _agents(memory: Memory) -> list[str]:
    views.fresh(memory)
    return views.agents(memory)


def _review(
    memory: Memory,
    suggestion: str,
    decision: str,
    reviewer: str,
    note: str,
    text: str | None,
    destination: str | None = None,
) -> int:
    """Append a review; ``destination`` (when applied or modified) sends it elsewhere."""
    return memory.lessons().review(
        suggestion,
        decision,
        reviewer,
        note=note,
        text=text,
        destination=destination if decision != "refused" else None,  # type: ignore[arg-type]
    )


def _supersession(memory: Memory, event: int, decision: str, reviewer: str, note: str) -> int:
    """Apply or refuse the proposal at ``event`` (``decision``), or revert the supersession
    it applied (``"reverted"``), through the agents layer; return the appended position."""
    handle = memory.agent("hub")  # the events name the memories' agent and the reviewer
    if decision == "reverted":
        return superseding.revert(handle, event, reviewer=reviewer, note=note)
    return superseding.review(handle, event, decision, reviewer=reviewer, note=note)


def _events(
    memory: Memory,
    kinds: list[str] | None,
    streams: list[str] | None,
    after: int,
    limit: int,
    newest: bool,
) -> list[dict[str, Any]]:
    return views.events(
        memory.ledger, kinds=kinds, streams=streams, after=after, limit=limit, newest=newest
    )


def _event(memory: Memory, position: int) -> dict[str, Any]:
    return views.event(memory, position)


def _verify(memory: Memory) -> Any:
    return memory.ledger.verify()


def _checkpoint(memory: Memory, config: HubConfig, check: bool) -> dict[str, Any] | None:
    """Return the newest signed checkpoint (and, with ``check``, the ledger checked against
    every one); None when the hub was not given a checkpoint folder and key."""
    if config.checkpoints is None or config.public_key is None:
        return None
    from engram.ledger.checkpoints import (
        load_checkpoints,
        load_public_key,
        verify_checkpoints,
    )

    try:
        found = load_checkpoints(config.checkpoints, load_public_key(config.public_key))
    except LedgerError as exc:
        return {"error": str(exc), "newest": None, "count": 0, "report": None}
    report = str(verify_checkpoints(memory.ledger, found)) if check else None
    return {"error": None, "newest": found[-1], "count": len(found), "report": report}


# -- request parsing ------------------------------------------------------------------------


async def _form(request: Request) -> dict[str, str]:
    if request.headers.get("content-type", "").split(";")[0] != (
        "application/x-www-form-urlencoded"
    ):
        raise BadRequestError("a review is posted as a form (application/x-www-form-urlencoded)")
    body = b""
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM:
                raise BadRequestError(f"the form is larger than {MAX_FORM} bytes")
    except ClientDisconnect:
        # Cut at its deadline, or the client left: no form to read, nothing to log as a
        # fault of the hub's (ADR 0163).
        raise BadRequestError("the form's body did not arrive whole") from None
    try:
        return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        raise BadRequestError("the form is not UTF-8") from None


def _time(value: str | None) -> datetime | None:
    if not value or value == "now":
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequestError(f"as_of: not an ISO-8601 time: {value!r}") from None
    if parsed.tzinfo is None:
        raise BadRequestError(f"as_of: {value!r} has no timezone")
    return parsed


def _int(value: str | None, name: str, default: int, low: int = 0, high: int | None = None) -> int:
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise BadRequestError(f"{name}: not a whole number: {value!r}") from None
    if number < low or (high is not None and number > high):
        raise BadRequestError(f"{name}: {number} is outside {low}..{high or '∞'}")
    return number
