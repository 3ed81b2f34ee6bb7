"""What every request passes before any route (REST, MCP, the inspector, /docs): spec §8.

- **Host names.** A server without API keys trusts whoever reaches it, which on loopback is
  this machine, unless a web page makes the browser reach it under the page's own host name
  (DNS rebinding). So a keyless server answers only Host headers that name loopback
  (`localhost`, `127.x.x.x`, `[::1]`, any port) and answers others with 421. With keys (or
  `--allow-unauthenticated-remote`, which serves other machines on purpose) any Host is fine.
- **The key before the body.** With API keys, a request that carries a body and no valid key is
  answered 401 before a byte of its body is read: an unknown caller cannot make the server
  buffer and parse hundreds of megabytes.
- **Body size.** A body is at most `max_body_bytes` (`max_import_bytes` for a world import):
  413 as soon as its declared length, or what has arrived, says it is larger; the rest is
  never read.
- **Finite numbers.** Python's JSON parser, and so FastAPI's and the MCP SDK's, reads `NaN`,
  `Infinity` and `1e999` as floats that JSON cannot represent: stored, they would make every
  later answer that holds them fail. A JSON body holding one is answered with 422 naming the
  place (`metadata.score`) before any route sees it. The service refuses them too, for the
  Python API and stdio MCP.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from recall.errors import AuthenticationError
from recall.limits import NON_FINITE_MESSAGE
from recall.server.config import is_loopback
from recall.server.deps import KeyRing
from recall.server.views import error

#: The route that takes a world's export as its body (`max_import_bytes`).
IMPORT_PATH = "/v1/worlds/import"

#: Bytes a body must contain for it to hold a non-finite number; bodies without any of them
#: (nearly all) skip the second parse.
_SUSPECT = re.compile(rb"NaN|Infinity|[eE]\+?[0-9]{3}")
_BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def is_loopback_host(host: str | None) -> bool:
    """Whether a Host header (name and optional port) names this machine's loopback."""
    if not host:
        return False
    name = host.strip().lower()
    if name.startswith("["):  # [::1] or [::1]:8765
        name = name[1 : name.find("]")] if "]" in name else ""
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    return is_loopback(name)


class _NonFinite:
    """What the checking parse puts where a non-finite number stood, to find its place."""


def _non_finite_place(body: bytes) -> str | None:
    """The place of the first non-finite number of a JSON body (`metadata.score`), or None
    when there is none or the body is not JSON (the route then says what is wrong)."""
    if not _SUSPECT.search(body):
        return None
    found = False

    def constant(_: str) -> _NonFinite:
        nonlocal found
        found = True
        return _NonFinite()

    def number(text: str) -> float | _NonFinite:
        value = float(text)
        return value if math.isfinite(value) else constant(text)

    try:
        parsed = json.loads(body, parse_constant=constant, parse_float=number)
    except (ValueError, RecursionError):  # not JSON (or not UTF-8): not ours to judge
        return None
    return _place(parsed, "") if found else None


def _place(value: Any, path: str) -> str | None:
    if isinstance(value, _NonFinite):
        return path or "body"
    if isinstance(value, dict):
        items: Any = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]" if path else f"body[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for where, item in items:
        found = _place(item, where)
        if found is not None:
            return found
    return None


def _is_json(headers: Headers) -> bool:
    # FastAPI reads a body without a content type as JSON too.
    kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return not kind or kind == "application/json" or kind.endswith("+json")


#: Bytes a second a body must average once it has taken longer than its `timeout`.
MIN_BODY_RATE = 1024


@dataclass(frozen=True)
class BodyLimits:
    """The most bytes a request body may hold, and a world import's; `timeout`: the most seconds
    between two pieces of a body, after which it must also average MIN_BODY_RATE."""

    body: int
    world_import: int
    timeout: float = 10.0

    def of(self, path: str) -> int:
        return self.world_import if path == IMPORT_PATH else self.body


class RequestGuard:
    """ASGI middleware: Host names for a keyless server, the key and the size of a body before
    it is read, then non-finite numbers in JSON bodies."""

    def __init__(self, app: ASGIApp, loopback_only: bool, keys: KeyRing, limits: BodyLimits) -> None:
        self.app = app
        self.loopback_only = loopback_only
        self.keys = keys
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self.loopback_only and not is_loopback_host(headers.get("host")):
            await _refuse_host(scope, receive, send)
            return
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        if self.keys.enabled:
            try:
                self.keys.principal(headers.get("authorization"))
            except AuthenticationError as exc:
                await error(401, "unauthorized", str(exc), headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
                return
        cap = self.limits.of(scope["path"])
        try:
            declared = headers.get("content-length", "")
            if declared.isdigit() and int(declared) > cap:
                raise _Refused(_too_large(cap))
            buffered = await _buffer(receive, cap, self.limits.timeout)
        except _Refused as refused:
            await refused.response(scope, receive, send)
            return
        if buffered is None:  # the client left before sending its body: no one to answer
            return
        body, replay = buffered
        place = _non_finite_place(body) if _is_json(headers) else None
        if place is not None:
            failure = {"type": "invalid_input", "message": NON_FINITE_MESSAGE, "field": place}
            await JSONResponse({"error": failure}, status_code=422)(scope, replay, send)
            return
        await self.app(scope, replay, send)


def _too_large(cap: int) -> JSONResponse:
    # The connection closes after the answer: the rest of the body is never read.
    message = f"the request body is larger than this server takes ({cap:,} bytes); see the http-api page of recall's docs (`recall docs http-api`) for the setting"
    return error(413, "payload_too_large", message, headers={"Connection": "close"})


class _Refused(Exception):
    """A body the guard will not read to its end, with the answer it gets instead."""

    def __init__(self, response: JSONResponse) -> None:
        super().__init__(response.status_code)
        self.response = response


def _too_slow() -> JSONResponse:
    message = "the request body came too slowly: send it at once (see the http-api page of recall's docs, `recall docs http-api`: slow clients)"
    return error(408, "request_timeout", message, headers={"Connection": "close"})


async def _buffer(receive: Receive, cap: int, timeout: float) -> tuple[bytes, Receive] | None:
    """Read the whole body, at most `cap` bytes; a `receive` that gives it again, then passes
    on (disconnects). None when the client disconnects first; `_Refused` (413) past the cap,
    and (408) when `timeout` seconds pass without a piece or, after the first `timeout` seconds,
    it averages less than MIN_BODY_RATE (a trickle must not hold the connection)."""
    chunks: list[bytes] = []
    size = 0
    clock = asyncio.get_running_loop().time
    began = clock()
    while True:
        try:
            message = await asyncio.wait_for(receive(), timeout)
        except TimeoutError:
            raise _Refused(_too_slow()) from None
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            raise _Refused(_too_large(cap))
        elapsed = clock() - began
        if elapsed > timeout and size < MIN_BODY_RATE * elapsed and message.get("more_body", False):
            raise _Refused(_too_slow())
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def _refuse_host(scope: Scope, receive: Receive, send: Send) -> None:
    message = (
        "this server has no API keys, so it answers only loopback host names (localhost, 127.0.0.1, [::1]): "
        "reach it by one of those, or configure API keys to serve other names"
    )
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": "host not allowed"})
        return
    body = {"error": {"type": "misdirected_request", "message": message}}
    await JSONResponse(body, status_code=421)(scope, receive, send)
