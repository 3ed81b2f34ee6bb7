"""HTTP/1.1 connections that must send each request's head in time (spec §8, issue 23), and
send each whole response in one write.

uvicorn times out a connection that idles between requests (`timeout_keep_alive`), but a client
that trickles the bytes of a request's head, one every few seconds, holds its connection (and a
file descriptor) for ever: a few hundred such clients and the server cannot accept `/healthz`.
Here every request's head (request line and headers) must be complete within `header_timeout`
seconds of the connection opening, or of the previous response ending; bytes that arrive do not
restart the clock. A connection that misses it is closed.

When the server is at its connection limit (`limit_concurrency`, what `recall serve` sets below
the descriptor limit), a new connection makes room: the connections waiting longest for a
request's head (a trickling client's, or an idle kept-alive one) are closed, never one that is
in the middle of a request (a long poll). A client that reconnects every socket it loses so
holds no more than the others let it: whoever sends a head in time is served (uvicorn answered
503 to every new request while the limit was reached).

Built on uvicorn's httptools protocol (what `uvicorn[standard]` serves with): the parser says
when a head is complete (`on_headers_complete`).

uvicorn writes a response's head and its body to the socket apart: two send calls, and the
client woken twice. A response of known length is written once instead (`_WholeResponse`):
when a broadcast wakes a thousand long polls, those writes are a quarter of the server's time.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


def timed_http(header_timeout: float) -> type[HttpToolsProtocol]:
    """uvicorn's HTTP protocol with a deadline on each request's head (`uvicorn.run(http=...)`)."""

    class TimedHttpProtocol(HttpToolsProtocol):
        _head_deadline: asyncio.TimerHandle | None = None
        _waiting_for_head = False
        #: When it began waiting for the head it is waiting for (the loop's clock).
        _waiting_since = 0.0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()
            self._make_room()

        def _make_room(self) -> None:
            """At the connection limit, close the connections waiting longest for a head until
            this one is below it (uvicorn answers 503 to a request that arrives at the limit)."""
            limit = self.limit_concurrency
            if limit is None or len(self.connections) < limit:
                return
            # A closed connection leaves the set only when the loop reports it lost, which may
            # come after this one's head: it leaves here, as uvicorn's count would still hold it.
            for closing in [c for c in self.connections if c.transport.is_closing()]:
                self.connections.discard(closing)
            waiting = sorted(
                (
                    c
                    for c in self.connections
                    if c is not self and isinstance(c, TimedHttpProtocol) and c._waiting_for_head
                ),
                key=lambda c: c._waiting_since,
            )
            for connection in waiting[: len(self.connections) - limit + 1]:
                connection.transport.close()
                self.connections.discard(connection)

        def on_headers_complete(self) -> None:
            self._waiting_for_head = False
            self._disarm()
            before = self.cycle
            super().on_headers_complete()
            if self.cycle is not before:  # a request (an upgrade has no cycle of its own)
                self.cycle.transport = cast(asyncio.Transport, _WholeResponse(self.cycle))

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and not self.pipeline:
                self._arm()  # the next request's head starts its own clock

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._waiting_for_head = True
            self._waiting_since = self.loop.time()
            self._head_deadline = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None

        def _too_slow(self) -> None:
            self._head_deadline = None
            if self._waiting_for_head and not self.transport.is_closing():
                self.transport.close()

    return TimedHttpProtocol


class _WholeResponse:
    """The transport of one request's response cycle: holds the head of a response whose length
    is known (`Content-Length`) until its body, and writes the two at once. A streamed (chunked)
    response's head goes out at once: its first chunk may be long in coming."""

    def __init__(self, cycle: Any) -> None:
        self._cycle = cycle
        self._transport = cycle.transport
        self._head: bytes | None = None
        self._head_written = False

    def write(self, data: bytes) -> None:
        if self._head is not None:
            data, self._head = self._head + data, None
        elif self._cycle.response_started and not self._head_written:
            # The head (what came before it was `100 Continue`).
            self._head_written = True
            if self._cycle.chunked_encoding is False and self._cycle.expected_content_length > 0:
                self._head = data
                return
        self._transport.write(data)

    def close(self) -> None:
        self._head = None  # an unfinished response is not sent
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
