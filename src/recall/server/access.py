"""Who is calling: API keys to a `Principal` (what it may do is `app/gate.py`), rate limits."""

from __future__ import annotations

import hmac
import math
import threading
import time
from typing import Annotated, Protocol

from fastapi import Depends, Header, Request

from recall.app.gate import Principal
from recall.errors import AuthenticationError as AuthError
from recall.errors import RateLimitedError
from recall.server.config import ApiKey


class KeyRing:
    def __init__(self, keys: tuple[ApiKey, ...]) -> None:
        self._keys = keys

    @property
    def enabled(self) -> bool:
        return bool(self._keys)

    def principal(self, authorization: str | None) -> Principal:
        if not self._keys:
            return Principal()
        if not authorization or not authorization.lower().startswith("bearer "):
            raise AuthError("missing API key: send the header 'Authorization: Bearer <key>'")
        given = authorization[7:].strip().encode()
        for key in self._keys:
            # Constant-time comparison: a key cannot be guessed a character at a time.
            if hmac.compare_digest(key.key.encode(), given):
                return Principal(key.tenant, key.agent, open=False, admin=key.admin)
        raise AuthError("unknown API key")


class SharedBuckets(Protocol):
    """A store that keeps the buckets for every server process (PostgreSQL)."""

    def rate_hit(self, world_id: str, agent_id: str, per_minute: int, now: float) -> float | None: ...


class RateLimiter:
    """A token bucket per agent: `per_minute` requests, refilled continuously. In this process,
    or, given a store that shares them (`shared`), in the database for every replica."""

    def __init__(self, per_minute: int, shared: SharedBuckets | None = None) -> None:
        self.per_minute = per_minute
        self.shared = shared
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}
        self.rejected = 0
        # Requests are handled in worker threads: a bucket's read-and-update must not interleave.
        self._lock = threading.Lock()

    def hit(self, world_id: str, agent_id: str, now: float | None = None) -> None:
        if self.per_minute <= 0:
            return
        if self.shared is not None:
            wait = self.shared.rate_hit(world_id, agent_id, self.per_minute, time.time() if now is None else now)
            if wait is not None:
                with self._lock:
                    self.rejected += 1
                raise RateLimitedError(max(1, math.ceil(wait)))
            return
        rate = self.per_minute / 60.0
        key = (world_id.lower(), agent_id.lower())
        with self._lock:
            now = time.monotonic() if now is None else now
            tokens, last = self._buckets.get(key, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - last) * rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                self.rejected += 1
                raise RateLimitedError(max(1, math.ceil((1.0 - tokens) / rate)))
            self._buckets[key] = (tokens - 1.0, now)


def _principal(request: Request, authorization: Annotated[str | None, Header()] = None) -> Principal:
    keys: KeyRing = request.app.state.recall.keys
    return keys.principal(authorization)


#: The caller of a route, from its `Authorization: Bearer` header.
Caller = Annotated[Principal, Depends(_principal)]
