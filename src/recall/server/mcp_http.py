"""The MCP tools over streamable HTTP at `/mcp` of the REST app: the same keys, the same guard."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from recall.errors import AuthenticationError
from recall.server.config import ServerConfig, is_loopback
from recall.server.deps import KeyRing, ServerState
from recall.server.mcp import build_mcp_server
from recall.server.views import error


class _RequireKey:
    """ASGI wrapper: with API keys configured, /mcp answers 401 before any MCP session starts.

    Clients then learn at connect time that their key is missing or wrong (as with REST);
    each tool still checks the key again for its tenant and agent.
    """

    def __init__(self, app: ASGIApp, keys: KeyRing) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.keys.enabled:
            try:
                self.keys.principal(Headers(scope=scope).get("authorization"))
            except AuthenticationError as exc:
                refused = error(401, "unauthorized", str(exc), headers={"WWW-Authenticate": "Bearer"})
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _transport_security(config: ServerConfig) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection, matching the app's `RequestGuard`: a keyless server
    admits only loopback Host names and browser Origins. With API keys (or a keyless server
    that serves other machines on purpose) any host name is fine: the keys guard /mcp as they
    guard /v1, and a deployment behind a real host name must be reachable by it."""
    if config.keys or config.allow_unauthenticated_remote:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = {"localhost", "127.0.0.1", "[::1]"}
    if is_loopback(config.host):  # e.g. 127.0.0.2, the address the server listens on
        names.add(f"[{config.host}]" if ":" in config.host else config.host)
    hosts = sorted(h for name in names for h in (name, f"{name}:*"))
    origins = [f"{scheme}://{host}" for scheme in ("http", "https") for host in hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def mount_mcp(app: FastAPI) -> MCPServer[Any]:
    """Serve the MCP tools at exactly `/mcp` of an app made by `create_app`, on its service and keys."""
    state: ServerState = app.state.recall
    server = build_mcp_server(state.service, state.notifier, keys=state.keys, limiter=state.limiter)
    asgi = server.streamable_http_app(streamable_http_path="/mcp", transport_security=_transport_security(state.config))
    # A route for the one path rather than a mount at "/": a catch-all mount would answer every
    # unknown path and wrong method of the REST API with its own plain 404.
    app.router.routes.append(Route("/mcp", endpoint=_RequireKey(asgi, state.keys)))
    # Starlette does not run a routed sub-app's lifespan; create_app's lifespan runs these.
    hooks: list[Callable[[], AbstractAsyncContextManager[Any]]] = getattr(app.state, "lifespans", None) or []
    hooks.append(server.session_manager.run)
    app.state.lifespans = hooks
    return server
