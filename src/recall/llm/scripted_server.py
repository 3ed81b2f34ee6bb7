"""A real chat-model server on loopback with scripted replies: the stand-in for a hosted model
in tests and in `recall demo --live` when no model is configured.

A stdlib `ThreadingHTTPServer` on a free 127.0.0.1 port that speaks enough of two APIs for the
official SDKs to accept its answers:

- OpenAI `POST /v1/chat/completions` → a full `chat.completion` object;
- Anthropic `POST /v1/messages` → a full `message` object.

What the next requests get is queued with `server.script(...)`: a string is a reply with that
text, a `ScriptedReply` a reply with tool calls, an int an HTTP error with that status, a
`(status, message)` pair an error with that message. When the queue is empty the `responder`
(a function of the request path and body) answers, if one is set; otherwise the server answers
500 ("no scripted reply left"), so a test that makes more calls than it planned fails loudly.
`GET /v1/models` (both APIs) lists `server.model_list`, or answers that HTTP status when it is an
int: model checks (`check()`) use it. Every request is recorded (`server.requests`) so callers
can check what the adapters sent.
Errors carry `retry-after-ms: 1` so the SDKs' retry backoff stays short.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ScriptedReply:
    """A reply with tool calls: (name, arguments) pairs, and optional text beside them."""

    text: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()


Reply = str | int | tuple[int, str] | ScriptedReply
#: Answers a request (path, JSON body) when nothing is scripted.
Responder = Callable[[str, dict[str, Any]], Reply]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ModelServer:
    """Handle on a running scripted server."""

    url: str
    requests: list[RecordedRequest] = field(default_factory=list)
    responder: Responder | None = None
    #: What `GET /v1/models` lists, or the HTTP status it answers with.
    model_list: tuple[str, ...] | int = ("test-model",)
    _replies: deque[Reply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def openai_url(self) -> str:
        """`base_url` for the OpenAI SDK."""
        return f"{self.url}/v1"

    @property
    def anthropic_url(self) -> str:
        """`base_url` for the Anthropic SDK (it appends /v1/messages itself)."""
        return self.url

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def left(self) -> int:
        with self._lock:
            return len(self._replies)

    def bodies(self, path: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if path is None or r.path == path]

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} requests, got {len(self.requests)}")
            time.sleep(0.005)

    def _models(self, request: RecordedRequest) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(request)
            listed = self.model_list
        if isinstance(listed, int):
            return listed, _error_body(request.path, listed, f"scripted HTTP {listed}")
        return 200, _model_list(listed)

    def _next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._replies:
                return self._replies.popleft()
            responder = self.responder
        if responder is not None:
            return responder(request.path, request.body)
        return (500, "scripted model server: no scripted reply left")

    def close(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


_ids = itertools.count(1)


def _openai_reply(body: dict[str, Any], reply: ScriptedReply) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if reply.text or not reply.tool_calls else None,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{next(_ids)}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for name, args in reply.tool_calls
        ]
    return {
        "id": f"chatcmpl-test{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "test-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _anthropic_reply(body: dict[str, Any], reply: ScriptedReply) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text or not reply.tool_calls else []
    content += [
        {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name, "input": args}
        for name, args in reply.tool_calls
    ]
    return {
        "id": f"msg_test{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "content": content,
        "model": body.get("model", "test-model"),
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _model_list(ids: tuple[str, ...]) -> dict[str, Any]:
    """A models list both SDKs accept (each ignores the other's fields)."""
    models = [
        {"id": i, "object": "model", "created": 0, "owned_by": "recall", "type": "model", "display_name": i,
         "created_at": "2025-01-01T00:00:00Z"}
        for i in ids
    ]  # fmt: skip
    first, last = (ids[0], ids[-1]) if ids else (None, None)
    return {"object": "list", "data": models, "has_more": False, "first_id": first, "last_id": last}


def _error_body(path: str, status: int, message: str) -> dict[str, Any]:
    if path.endswith("/messages"):
        return {"type": "error", "error": {"type": "api_error", "message": message}}
    return {"error": {"message": message, "type": "server_error", "param": None, "code": str(status)}}


def _make_handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path != "/v1/models":
                self._send(404, _error_body(path, 404, f"scripted model server: no route {path}"))
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            self._send(*server._models(RecordedRequest("GET", path, headers, {})))

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            path = self.path.split("?", 1)[0]
            if path not in ("/v1/chat/completions", "/v1/messages"):
                self._send(404, _error_body(path, 404, f"scripted model server: no route {path}"))
                return
            reply = server._next(RecordedRequest("POST", path, {k.lower(): v for k, v in self.headers.items()}, body))
            if isinstance(reply, str):
                reply = ScriptedReply(reply)
            if isinstance(reply, ScriptedReply):
                make = _anthropic_reply if path == "/v1/messages" else _openai_reply
                self._send(200, make(body, reply))
            else:
                status, message = reply if isinstance(reply, tuple) else (reply, f"scripted HTTP {reply}")
                self._send(status, _error_body(path, status, message))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            if status >= 400:
                self.send_header("retry-after-ms", "1")
            self.end_headers()
            self.wfile.write(data)

    return Handler


def start_model_server(responder: Responder | None = None) -> ModelServer:
    """Start a server on a free loopback port; `close()` it when done."""
    server = ModelServer(url="", responder=responder)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(server))
    httpd.daemon_threads = True
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    server._httpd = httpd
    server._thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="model-server", daemon=True
    )
    server._thread.start()
    return server
