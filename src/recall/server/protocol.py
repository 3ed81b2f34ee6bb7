"""HTTP/1.1 connections that must send each request's head in time (spec §8, issue 23).

uvicorn times out a connection that idles between requests (`timeout_keep_alive`), but a client
that trickles the bytes of a request's head, one every few seconds, holds its connection (and a
file descriptor) for ever: a few hundred such clients and the server cannot accept `/healthz`.
Here every request's head (request line and headers) must be complete within `header_timeout`
seconds of the connection opening, or of the previous response ending; bytes that arrive do not
restart the clock. A connection that misses it is closed.

Built on uvicorn's httptools protocol (what `uvicorn[standard]` serves with): the parser says
when a head is complete (`on_headers_complete`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


def timed_http(header_timeout: float) -> type[HttpToolsProtocol]:
    """uvicorn's HTTP protocol with a deadline on each request's head (`uvicorn.run(http=...)`)."""

    class TimedHttpProtocol(HttpToolsProtocol):
        _head_deadline: asyncio.TimerHandle | None = None
        _waiting_for_head = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_headers_complete(self) -> None:
            self._waiting_for_head = False
            self._disarm()
            super().on_headers_complete()

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
