"""Rate limits: a token bucket per agent, in this process or shared by the replicas (PostgreSQL)."""

from __future__ import annotations

import math
import threading
import time
from typing import Protocol

from recall.errors import RateLimitedError


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
