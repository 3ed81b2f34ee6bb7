"""Each HTTP request as an OpenTelemetry server span (docs/opentelemetry.md), the child of the
caller's trace when its `traceparent` header names one: the spans recall makes while answering
(a context build, a post, an inbox wait) are its children. A no-op without the `otel` extra.

A plain ASGI middleware: it runs the request in its own task, so the span is current in the
handlers and, through the context FastAPI's worker threads copy, in the service below them.
The span names the method and the route's template (`POST /v1/worlds/{world_id}/messages`),
never the path's values or the query string (a search's query is text).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from recall import telemetry


class TraceRequests:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not telemetry.active():
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        method = str(scope["method"])
        with telemetry.incoming_request(method, headers) as span:

            async def sending(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    span.set({"http.response.status_code": status})
                    if status >= 500:  # the server's failure (a 4xx is the caller's: not an error here)
                        span.fail(str(status))
                await send(message)

            try:
                await self.app(scope, receive, sending)
            finally:
                route = getattr(scope.get("route"), "path", None)  # set by the router that matched
                if isinstance(route, str):
                    span.set({"http.route": route})
                    span.rename(f"{method} {route}")
