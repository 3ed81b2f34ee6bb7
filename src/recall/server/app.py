"""The REST API under `/v1` (spec §6), on the same service as the Python API and the CLI.

`create_app` builds the server's state, includes one router per resource (`routes/`), turns
recall's errors into JSON errors and runs the lifespans. Handlers are thin: the caller, world
and agent come resolved from `deps.py` (by the gate), the handler calls the service and
answers with a shape from `views.py`. Nothing that reads the store or calls a model runs on
the event loop: handlers and dependencies that do not wait are plain functions, which FastAPI
runs in its worker threads, and the few that wait (posts, which join a group commit, and inbox
checks, which long-poll) are async and send each store call to a worker thread. Waiting checks
sleep on futures that posts wake (see `inbox.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from recall.app.service import RecallService
from recall.errors import (
    AuthenticationError,
    BudgetExceededError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    RecallError,
    StoreBusyError,
)
from recall.server import docs, ui
from recall.server.answers import ERRORS
from recall.server.config import ServerConfig
from recall.server.deps import ServerState
from recall.server.guard import BodyLimits, RequestGuard
from recall.server.inbox import MAX_WAIT_SECONDS
from recall.server.json_body import JsonBody
from recall.server.other_posts import posts_from_other_processes
from recall.server.routes import ROUTERS
from recall.server.schemas import pattern_in_words
from recall.server.tracing import TraceRequests
from recall.server.views import error
from recall.version import __version__

__all__ = ["MAX_WAIT_SECONDS", "ServerState", "create_app"]

#: Status and error type of recall's errors that need nothing but their message.
_PLAIN_ERRORS: tuple[tuple[type[RecallError], int, str], ...] = (
    (NotFoundError, 404, "not_found"),
    (PermissionDeniedError, 403, "forbidden"),
    (ConflictError, 409, "conflict"),
    (RecallError, 400, "bad_request"),
)


def create_app(service: RecallService, config: ServerConfig | None = None) -> FastAPI:
    config = config or ServerConfig()
    state = ServerState.build(service, config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with _mounted_lifespans(app), posts_from_other_processes(state):
            yield

    app = FastAPI(
        title="recall",
        version=__version__,
        description="Memory and context for LLM agents: worlds, messages, long-poll inboxes, contexts.",
        lifespan=lifespan,
        # Served from the package by `docs.router`: the defaults load Swagger UI from a CDN.
        docs_url=None,
        redoc_url=None,
        default_response_class=JsonBody,
    )
    app.state.recall = state
    # Keyless, only loopback Host names (no DNS rebinding); never a non-finite number in a body.
    # The key and the size of a body are checked before it is read.
    app.add_middleware(
        RequestGuard,
        loopback_only=not state.keys.enabled and not config.allow_unauthenticated_remote,
        keys=state.keys,
        limits=BodyLimits(config.max_body_bytes, config.max_import_bytes, config.header_timeout),
    )
    # Outermost: a request the guard refuses is traced too.
    app.add_middleware(TraceRequests)
    _install_error_handlers(app)
    for router in (*ROUTERS, ui.router, docs.router):
        app.include_router(router, responses=ERRORS)
    return app


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(InvalidInputError)
    async def invalid(_: Request, exc: InvalidInputError) -> JSONResponse:
        return error(422, "invalid_input", exc.problem, exc.field)

    @app.exception_handler(BudgetExceededError)
    async def budget(_: Request, exc: BudgetExceededError) -> JSONResponse:
        return error(422, "budget_exceeded", str(exc), "max_tokens")

    for kind, status, name in _PLAIN_ERRORS:
        app.add_exception_handler(kind, _plain(status, name))

    @app.exception_handler(AuthenticationError)
    async def unauthorized(_: Request, exc: AuthenticationError) -> JSONResponse:
        return error(401, "unauthorized", str(exc), headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(StoreBusyError)
    async def busy(_: Request, exc: StoreBusyError) -> JSONResponse:
        return error(503, "store_busy", str(exc), headers={"Retry-After": str(exc.retry_after)})

    @app.exception_handler(RateLimitedError)
    async def limited(_: Request, exc: RateLimitedError) -> JSONResponse:
        return error(429, "rate_limited", str(exc), headers={"Retry-After": str(exc.retry_after)})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Unknown routes, wrong methods: the same error shape as everything else.
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error(exc.status_code, kind, str(exc.detail), headers=dict(exc.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_problem(e) for e in exc.errors()]
        first = problems[0] if problems else {"field": "body", "message": "invalid request"}
        return error(422, "invalid_input", first["message"], first["field"], problems=problems)


def _problem(e: Mapping[str, Any]) -> dict[str, str]:
    """One of FastAPI's validation errors (of a path or query parameter or a body field) as
    `{field, message}`. A pattern is said in words (pydantic would quote the regex)."""
    field = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
    message = str(e.get("msg", ""))
    if e.get("type") == "string_pattern_mismatch":
        message = pattern_in_words(str((e.get("ctx") or {}).get("pattern", "")), e.get("input"))
    return {"field": field, "message": message}


def _plain(status: int, kind: str) -> Callable[[Request, Exception], Any]:
    async def handle(_: Request, exc: Exception) -> JSONResponse:
        return error(status, kind, str(exc))

    return handle


@asynccontextmanager
async def _mounted_lifespans(app: FastAPI) -> AsyncIterator[None]:
    """Run the lifespans of sub-apps registered in `app.state.lifespans` (e.g. MCP)."""
    hooks: list[Callable[[], Any]] = getattr(app.state, "lifespans", [])
    async with AsyncExitStack() as stack:
        for hook in hooks:
            await stack.enter_async_context(hook())
        yield
