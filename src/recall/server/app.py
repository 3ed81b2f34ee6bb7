"""The REST API under `/v1` (spec §6), on the same service as the Python API and the CLI.

Handlers are thin: check who is calling, call the service, shape the JSON. Nothing that
reads the store or calls a model runs on the event loop: handlers that do not wait are plain
functions, which FastAPI runs in its worker threads, and the few that wait (posts, which join
a group commit, and inbox checks, which long-poll) are async and send each store call to a
worker thread, so a slow query or a context waiting on a model never delays the others.
Waiting checks sleep on futures that posts wake (see `inbox.py`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

from anyio import to_thread
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from recall import __version__
from recall.app.gate import Gate, Principal
from recall.app.posting import PostRequest
from recall.app.service import RecallService
from recall.core.inbox import CheckResult
from recall.core.models import Message
from recall.core.routing import would_respond
from recall.errors import AuthenticationError as AuthError
from recall.errors import (
    BudgetExceededError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    RecallError,
)
from recall.server import schemas
from recall.server.access import Caller, KeyRing, RateLimiter
from recall.server.config import ServerConfig
from recall.server.docs import add_docs_routes
from recall.server.guard import RequestGuard
from recall.server.inbox import Notifier, wait_for_mentions
from recall.server.long_term_routes import add_long_term_routes
from recall.server.metrics import Metrics
from recall.server.ui import add_ui_routes
from recall.server.writer import PostWriter
from recall.store.base import WorldRecord

MAX_WAIT_SECONDS = 300


@dataclass
class ServerState:
    service: RecallService
    config: ServerConfig
    keys: KeyRing
    limiter: RateLimiter
    writer: PostWriter
    notifier: Notifier = field(default_factory=Notifier)
    metrics: Metrics = field(default_factory=Metrics)


def _error(
    status: int,
    kind: str,
    message: str,
    field: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    **more: Any,
) -> JSONResponse:
    """Every error body: `{"error": {"type", "message", "field"?, …}}`."""
    body: dict[str, Any] = {"type": kind, "message": message}
    if field is not None:
        body["field"] = field
    return JSONResponse({"error": {**body, **more}}, status_code=status, headers=headers)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(InvalidInputError)
    async def invalid(_: Request, exc: InvalidInputError) -> JSONResponse:
        return _error(422, "invalid_input", exc.problem, exc.field)

    @app.exception_handler(BudgetExceededError)
    async def budget(_: Request, exc: BudgetExceededError) -> JSONResponse:
        return _error(422, "budget_exceeded", str(exc), "max_tokens")

    @app.exception_handler(NotFoundError)
    async def not_found(_: Request, exc: NotFoundError) -> JSONResponse:
        return _error(404, "not_found", str(exc))

    @app.exception_handler(PermissionDeniedError)
    async def not_permitted(_: Request, exc: PermissionDeniedError) -> JSONResponse:
        return _error(403, "forbidden", str(exc))

    @app.exception_handler(ConflictError)
    async def conflict(_: Request, exc: ConflictError) -> JSONResponse:
        return _error(409, "conflict", str(exc))

    @app.exception_handler(RecallError)
    async def other(_: Request, exc: RecallError) -> JSONResponse:
        return _error(400, "bad_request", str(exc))

    @app.exception_handler(AuthError)
    async def unauthorized(_: Request, exc: AuthError) -> JSONResponse:
        return _error(401, "unauthorized", str(exc), headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(RateLimitedError)
    async def limited(_: Request, exc: RateLimitedError) -> JSONResponse:
        return _error(429, "rate_limited", str(exc), headers={"Retry-After": str(exc.retry_after)})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Unknown routes, wrong methods: the same error shape as everything else.
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _error(exc.status_code, kind, str(exc.detail), headers=dict(exc.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {"field": ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body", "message": e.get("msg", "")}
            for e in exc.errors()
        ]
        first = problems[0] if problems else {"field": "body", "message": "invalid request"}
        return _error(422, "invalid_input", first["message"], first["field"], problems=problems)


def create_app(service: RecallService, config: ServerConfig | None = None) -> FastAPI:
    config = config or ServerConfig()
    # A store that keeps rate-limit buckets (PostgreSQL) shares them among the replicas.
    shared = service.store if hasattr(service.store, "rate_hit") else None
    limiter = RateLimiter(config.rate_limit, shared)  # type: ignore[arg-type]  # checked just above
    state = ServerState(service, config, KeyRing(config.keys), limiter, PostWriter(service))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with _mounted_lifespans(app), _posts_from_other_replicas(state):
            yield

    app = FastAPI(
        title="recall",
        version=__version__,
        description="Memory and context for LLM agents: worlds, messages, long-poll inboxes, contexts.",
        lifespan=lifespan,
        # Served from the package by `add_docs_routes`: the defaults load Swagger UI from a CDN.
        docs_url=None,
        redoc_url=None,
    )
    app.state.recall = state
    # Keyless, only loopback Host names (no DNS rebinding); never a non-finite number in a body.
    app.add_middleware(RequestGuard, loopback_only=not state.keys.enabled and not config.allow_unauthenticated_remote)
    _install_error_handlers(app)

    gate = Gate(service, state.limiter)

    def world_of(world: str, who: Principal) -> WorldRecord:
        return gate.world(who, world)

    def agent_of(world: str, agent: str, who: Principal) -> tuple[str, str]:
        """(world key, agent id) of an agent the caller may act as."""
        record, agent_id = gate.agent(who, world, agent)
        return record.key, agent_id

    def posted(message: Message, world_key: str, delivered: tuple[str, ...]) -> dict[str, Any]:
        state.notifier.notify(world_key, message)
        state.metrics.observe_post(len(delivered))
        return {**message.to_dict(), "delivered_to": list(delivered)}

    # -- health and metrics -------------------------------------------------------------------

    @app.get("/healthz", tags=["ops"], summary="The process is up")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], summary="The store is reachable and its migrations are current")
    def readyz(_: Caller) -> JSONResponse:
        try:
            service.store.schema_version()
        except Exception as exc:  # noqa: BLE001 - any store failure means not ready
            return JSONResponse({"status": "unavailable", "error": str(exc)}, status_code=503)
        return JSONResponse({"status": "ready"})

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse, summary="Prometheus metrics")
    async def metrics(who: Caller) -> str:
        # The counters cover every tenant: with keys, only an admin key reads them.
        who.require_operator("read /metrics (its counters cover every tenant)")
        extraction = service.long_term.extraction
        return state.metrics.render(
            waiting=state.notifier.waiting(),
            rate_limited=state.limiter.rejected,
            extraction_queue=0 if extraction is None else extraction.depth(),
        )

    # -- worlds and participants ----------------------------------------------------------------

    @app.post("/v1/worlds", status_code=201, tags=["worlds"], summary="Create a world")
    def create_world(body: schemas.WorldIn, who: Caller) -> dict[str, Any]:
        who.require_admin("create worlds")
        record = service.create_world(body.id, body.name, body.turn_limit, tenant=who.tenant)
        return _world_json(record)

    @app.get("/v1/worlds", tags=["worlds"], summary="List the caller's worlds")
    def list_worlds(who: Caller) -> dict[str, Any]:
        worlds = gate.worlds(who)
        return {"worlds": [_world_json(w) for w in worlds]}

    @app.get("/v1/worlds/{world}", tags=["worlds"], summary="A world with its participants and chats")
    def get_world(world: str, who: Caller) -> dict[str, Any]:
        record = world_of(world, who)
        people = service.participants(record.key)
        return {
            **_world_json(record),
            "agents": [p.id for p in people if p.kind == "agent"],
            "humans": [p.id for p in people if p.kind == "human"],
            "chats": [{"id": c, "messages": n} for c, n in service.store.list_chats(record.key)],
        }

    @app.post("/v1/worlds/{world}/agents", status_code=201, tags=["participants"], summary="Register an agent")
    def add_agent(world: str, body: schemas.AgentIn, who: Caller) -> dict[str, Any]:
        who.require_admin("register agents")
        record = world_of(world, who)
        settings = body.model_dump(exclude={"id"})
        profile = service.add_agent(record.key, body.id, **settings)
        return {"world_id": record.id, "id": profile.id, "kind": "agent", **settings}

    @app.post("/v1/worlds/{world}/humans", status_code=201, tags=["participants"], summary="Register a human")
    def add_human(world: str, body: schemas.HumanIn, who: Caller) -> dict[str, Any]:
        who.require_admin("register humans")
        record = world_of(world, who)
        human = service.add_human(record.key, body.id)
        return {"world_id": record.id, "id": human.id, "kind": "human"}

    # -- messages -------------------------------------------------------------------------------

    @app.post("/v1/worlds/{world}/messages", status_code=201, tags=["messages"], summary="Post a message")
    async def post_message(world: str, body: schemas.MessageIn, who: Caller) -> JSONResponse:
        if who.agent is not None:
            who.require_agent(body.sender)
        request = PostRequest(
            body.sender,
            body.content,
            body.chat_id,
            body.channel,
            body.parent_id,
            body.created_at,
            body.idempotency_key,
            body.metadata,
        )
        posted_message = await state.writer.post(lambda: world_of(world, who).key, request)
        return JSONResponse(posted(*posted_message), status_code=201)

    @app.get("/v1/worlds/{world}/messages", tags=["messages"], summary="A chat's messages, oldest first")
    def list_messages(
        world: str,
        who: Caller,
        chat_id: Annotated[str | None, Query(max_length=64)] = None,
        after: Annotated[int, Query(ge=0, le=2**62, description="cursor: only ids above this")] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        all_chats: Annotated[bool, Query(description="every chat of the world, not one")] = False,
        detail: Annotated[
            bool, Query(description="add `delivered_to` and `would_respond` (the agents it addresses)")
        ] = False,
    ) -> dict[str, Any]:
        record = world_of(world, who)
        messages = service.messages(record.key, chat_id, after, limit, all_chats)
        return {
            "messages": [_detailed(record.key, m) if detail else m.to_dict() for m in messages],
            "next_after": messages[-1].id if len(messages) == limit else None,
        }

    def _detailed(world_key: str, message: Message) -> dict[str, Any]:
        delivered = service.recipients(world_key, message)
        responders = [agent for agent in delivered if would_respond(agent, message)]
        return {**message.to_dict(), "delivered_to": list(delivered), "would_respond": responders}

    @app.get("/v1/worlds/{world}/agents/{agent}/deliveries", tags=["agents"], summary="What the agent was sent")
    def deliveries(
        world: str,
        agent: str,
        who: Caller,
        unread_only: bool = False,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> dict[str, Any]:
        """Messages delivered to the agent, oldest first, each with whether it is read. Unlike the
        inbox check this only reads: nothing is marked read."""
        world_id, agent_id = agent_of(world, agent, who)
        entries = service.inbox(world_id, agent_id, unread_only, limit)
        return {"messages": [{**m.to_dict(), "read": read} for m, read in entries]}

    # -- an agent's inbox, context and replies --------------------------------------------------

    @app.get("/v1/worlds/{world}/agents/{agent}/inbox", tags=["agents"], summary="Check for new messages")
    async def check_inbox(
        request: Request,
        world: str,
        agent: str,
        who: Caller,
        wait: Annotated[bool, Query(description="long-poll until a message arrives or timeout")] = False,
        timeout: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS)] = 30,
        mark_read: bool = False,
        include_context: bool = False,
        context_limit: Annotated[int | None, Query(ge=1, le=100)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 10,
        session: Annotated[str, Query(min_length=1, max_length=200)] = "default",
        chat_id: Annotated[str | None, Query(max_length=64)] = None,
        refresh: Annotated[bool, Query(description="send the whole context again")] = False,
    ) -> JSONResponse:
        world_id, agent_id = await to_thread.run_sync(agent_of, world, agent, who)

        def check(only_with_mentions: bool) -> CheckResult:
            return service.check(
                world_id,
                agent_id,
                limit=limit,
                mark_read=False,  # below, once the answer is built
                include_context=include_context,
                context_limit=context_limit,
                session=session,
                chat_id=chat_id,
                refresh=refresh,
                context_only_with_mentions=only_with_mentions,
            )

        if not wait:
            result: CheckResult | None = await to_thread.run_sync(check, False)
        else:
            state.metrics.observe_waiting_check()
            result = await wait_for_mentions(
                state.notifier, world_id, agent_id, lambda: check(True), timeout, _disconnected(request)
            )
        result = result or CheckResult(chat_id=chat_id)
        state.metrics.observe_check(result)
        # Rendered before the mentions are marked read: a message leaves the unread set only
        # together with an answer that carries it (at-least-once delivery, spec §6).
        response = JSONResponse(result.to_dict())
        if mark_read and result.new_mentions:
            service.ack(world_id, agent_id, [m.id for m in result.new_mentions])
        return response

    @app.post("/v1/worlds/{world}/agents/{agent}/inbox/ack", tags=["agents"], summary="Mark messages read")
    def ack(world: str, agent: str, body: schemas.AckIn, who: Caller) -> dict[str, int]:
        world_id, agent_id = agent_of(world, agent, who)
        return {"acknowledged": service.ack(world_id, agent_id, body.ids)}

    @app.post("/v1/worlds/{world}/agents/{agent}/send", status_code=201, tags=["agents"], summary="Post as the agent")
    async def send(world: str, agent: str, body: schemas.SendIn, who: Caller) -> dict[str, Any]:
        world_id, agent_id = await to_thread.run_sync(agent_of, world, agent, who)
        request = PostRequest(
            agent_id, body.content, body.chat_id, None, body.parent_id, None, body.idempotency_key, body.metadata
        )
        message, world_key, delivered = await state.writer.post(world_id, request)
        out = posted(message, world_key, delivered)
        return {
            "message_id": message.id,
            "timestamp": message.created_at.isoformat(),
            "mentions": list(message.mentions),
            "thread_id": message.metadata.get("thread_id", message.id),
            "chat_id": message.chat_id,
            "delivered_to": out["delivered_to"],
        }

    @app.post("/v1/worlds/{world}/agents/{agent}/decide", tags=["agents"], summary="Would the agent answer now?")
    def decide(world: str, agent: str, body: schemas.DecideIn, who: Caller) -> dict[str, Any]:
        """The live decision for one message, turn limit included (spec §2): a human or world
        message resets the agent's turn counter. When the limit stops the agent, `notice` is
        the text it posts instead of answering."""
        world_id, agent_id = agent_of(world, agent, who)
        decision = service.decide(world_id, agent_id, body.message_id)
        return {
            "respond": decision.respond,
            "turn_count": decision.turn_count,
            "turn_limit": service.turn_limit(service.get_world(world_id)),
            "notice": decision.notice,
            "reason": decision.reason,
        }

    @app.post("/v1/worlds/{world}/agents/{agent}/llm-calls", tags=["agents"], summary="Count one LLM call")
    def llm_call(world: str, agent: str, who: Caller) -> dict[str, Any]:
        """Count one model call of the agent against its turn limit; the new count."""
        world_id, agent_id = agent_of(world, agent, who)
        return {"turn_count": service.record_llm_call(world_id, agent_id)}

    @app.post("/v1/worlds/{world}/agents/{agent}/context", tags=["agents"], summary="Build the agent's context")
    def context(world: str, agent: str, body: schemas.ContextIn, who: Caller) -> dict[str, Any]:
        world_id, agent_id = agent_of(world, agent, who)
        ctx = service.build_context(
            world_id,
            agent_id,
            body.chat_id,
            max_tokens=body.max_tokens,
            history_limit=body.history_limit,
            message_id=body.message_id,
            channel=body.channel,
        )
        state.metrics.observe_context(ctx.report)
        report = ctx.report.to_dict()
        if body.format == "anthropic":
            out = ctx.anthropic()
            return {"system": out["system"], "messages": out["messages"], "report": report}
        return {"messages": ctx.openai(), "report": report}

    # -- observations and actions ---------------------------------------------------------------

    @app.post("/v1/worlds/{world}/agents/{agent}/observations", status_code=201, tags=["agents"])
    def observe(world: str, agent: str, body: schemas.ObservationIn, who: Caller) -> dict[str, int]:
        """Store what the agent perceives (simulations); shown in its context in the first person."""
        world_id, agent_id = agent_of(world, agent, who)
        return {"id": service.observe(world_id, agent_id, body.model_dump())}

    @app.post("/v1/worlds/{world}/agents/{agent}/actions", status_code=201, tags=["agents"])
    def act(world: str, agent: str, body: schemas.ActionIn, who: Caller) -> dict[str, int]:
        """Store what the agent did (simulations)."""
        world_id, agent_id = agent_of(world, agent, who)
        return {"id": service.act(world_id, agent_id, body.model_dump())}

    # -- the agent's private key-value memory ---------------------------------------------------

    @app.get("/v1/worlds/{world}/agents/{agent}/memory", tags=["memory"], summary="Everything the agent remembers")
    def list_memory(world: str, agent: str, who: Caller) -> dict[str, Any]:
        world_id, agent_id = agent_of(world, agent, who)
        return {"items": [item.to_dict() for item in service.memories(world_id, agent_id)]}

    @app.put("/v1/worlds/{world}/agents/{agent}/memory/{key}", tags=["memory"], summary="Remember a value")
    def remember(world: str, agent: str, key: str, body: schemas.MemoryIn, who: Caller) -> dict[str, Any]:
        world_id, agent_id = agent_of(world, agent, who)
        return service.remember(world_id, agent_id, key, body.value, body.ttl).to_dict()

    @app.get("/v1/worlds/{world}/agents/{agent}/memory/{key}", tags=["memory"], summary="Recall a value")
    def recall_value(world: str, agent: str, key: str, who: Caller) -> dict[str, Any]:
        world_id, agent_id = agent_of(world, agent, who)
        return service.recall_memory(world_id, agent_id, key).to_dict()

    @app.delete("/v1/worlds/{world}/agents/{agent}/memory/{key}", tags=["memory"], summary="Forget a value")
    def forget(world: str, agent: str, key: str, who: Caller) -> dict[str, bool]:
        world_id, agent_id = agent_of(world, agent, who)
        return {"forgotten": service.forget(world_id, agent_id, key)}

    add_long_term_routes(app, service, gate, agent_of)
    add_ui_routes(app)
    add_docs_routes(app)
    return app


def _world_json(record: WorldRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "name": record.name,
        "turn_limit": record.turn_limit,
        "created_at": record.created_at.isoformat(),
    }


async def _disconnected(request: Request) -> None:
    """Completes when the client closes the connection."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


@asynccontextmanager
async def _posts_from_other_replicas(state: ServerState) -> AsyncIterator[None]:
    """With a store that announces posts (PostgreSQL), wake this server's long polls for posts
    made through other servers: the listener thread reads each announced message and hands it to
    the notifier on the event loop."""
    listen = getattr(state.service.store, "listen", None)
    if listen is None:
        yield
        return
    loop = asyncio.get_running_loop()
    stop = threading.Event()

    def on_post(world_id: str, message_ids: list[int] | None) -> None:
        if message_ids is None:
            loop.call_soon_threadsafe(state.notifier.notify, world_id, None)
            return
        for message_id in message_ids:
            message = state.service.store.get_message(world_id, message_id)
            if message is not None:
                loop.call_soon_threadsafe(state.notifier.notify, world_id, message)

    thread = listen(on_post, stop)
    try:
        yield
    finally:
        stop.set()
        await asyncio.to_thread(thread.join, 5)


@asynccontextmanager
async def _mounted_lifespans(app: FastAPI) -> AsyncIterator[None]:
    """Run the lifespans of sub-apps registered in `app.state.lifespans` (e.g. MCP)."""
    hooks: list[Callable[[], Any]] = getattr(app.state, "lifespans", [])
    async with AsyncExitStack() as stack:
        for hook in hooks:
            await stack.enter_async_context(hook())
        yield
