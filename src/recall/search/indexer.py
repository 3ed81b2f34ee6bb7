"""The background indexer: keeps the search index up to date off the request path.

A post only stores its message; this thread then copies new messages into the index and
embeds them in batches, woken by `notify()` after a post or by a timer. Its progress lives in
the database (a watermark and per-item `embedded` flags), so after a restart it simply
continues where the last process stopped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from recall import telemetry
from recall.telemetry.instruments import INDEX_BATCH

logger = logging.getLogger("recall.indexer")

#: Seconds between rounds when nobody calls `notify()` (posts from another process, say).
DEFAULT_INTERVAL = 2.0
#: Longest wait after repeated failures; the delay doubles from `interval` up to this.
MAX_BACKOFF = 60.0


class Indexable(Protocol):
    """What the indexer drives: a `SearchIndex` (or anything with the same calls)."""

    def step(self, batch: int = ..., should_stop: Callable[[], bool] | None = ...) -> int: ...

    def maintain(self) -> int: ...

    def pending(self) -> int: ...


@dataclass
class _Chore:
    """Other background work the thread does between rounds (`BackgroundIndexer.add_chore`)."""

    work: Callable[[], object]
    every: float
    due: float = 0.0


class BackgroundIndexer:
    """A daemon thread running `index.step(batch)` until nothing is left, then `index.maintain()`,
    whenever notified or every `interval` seconds. Errors are logged and retried later (with
    back-off); they never end the thread. Call `stop()` before closing the store."""

    def __init__(
        self, index: Indexable, *, batch: int = 64, interval: float = DEFAULT_INTERVAL, indexing: bool = True
    ) -> None:
        """`indexing` False: only `maintain` the index (a server whose index worker process does
        the copying and embedding keeps its own copy in memory up to date this way)."""
        if batch < 1:
            raise ValueError("batch must be at least 1")
        if not interval > 0:
            raise ValueError("interval must be positive")
        self.index = index
        self.batch = batch
        self.interval = interval
        self.indexing = indexing
        self._wake = threading.Event()
        self._stopping = threading.Event()
        # Signalled after every round, so `wait_idle` re-checks as soon as work was done.
        self._round = threading.Condition()
        self._thread: threading.Thread | None = None
        self._failures = 0
        self._chores: list[_Chore] = []

    def add_chore(self, work: Callable[[], object], every: float) -> None:
        """Also run `work` from the thread after a round, at most every `every` seconds (the
        service's sweep of expired memories). A failure is logged and tried again after
        `every` seconds; it never ends the thread or delays indexing."""
        self._chores.append(_Chore(work, every))

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> BackgroundIndexer:
        """Start the thread (a no-op when it runs); it catches up at once."""
        if self.running:
            return self
        self._stopping.clear()
        self._wake.set()
        self._thread = threading.Thread(target=self._run, name="recall-indexer", daemon=True)
        self._thread.start()
        return self

    def notify(self) -> None:
        """Something was posted or written: index it soon. Cheap; call it after every write."""
        self._wake.set()

    def stop(self, timeout: float | None = None) -> bool:
        """Ask the thread to stop after its current batch and wait for it (by default as long as
        that batch takes: whoever closes the store next must not pull it from under the thread);
        whether it ended."""
        thread = self._thread
        if thread is None:
            return True
        self._stopping.set()
        self._wake.set()
        thread.join(timeout)
        if thread.is_alive():
            return False
        self._thread = None
        return True

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing is pending in the index; False if `timeout` seconds pass first
        (or the thread is not running and work is left). For tests, benchmarks and the CLI."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.index.pending() == 0:
                return True
            if not self.running:
                return False
            self.notify()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            with self._round:
                # Bounded wait: a round may end between the check above and this wait.
                self._round.wait(0.05 if left is None else min(left, 0.05))

    # -- the thread -------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            if self._failures:
                # Back off: while indexing fails, posts (notify) do not trigger a retry each.
                self._stopping.wait(self._delay())
            else:
                self._wake.wait(self.interval)
            self._wake.clear()
            if self._stopping.is_set():
                break
            self._round_of_work()

    def _delay(self) -> float:
        """Seconds to wait after the latest failure: `interval`, doubling up to MAX_BACKOFF."""
        return float(min(MAX_BACKOFF, self.interval * 2 ** min(self._failures - 1, 16)))

    def _round_of_work(self) -> None:
        try:
            while self.indexing and not self._stopping.is_set() and self._step() > 0:
                self._signal()
            # The copy in memory and its graphs follow what was indexed, here or elsewhere.
            while not self._stopping.is_set() and self.index.maintain() > 0:
                self._signal()
            self._failures = 0
        except Exception:
            self._failures += 1
            logger.exception("search indexing failed (attempt %d); retrying in %.0f s", self._failures, self._delay())
        finally:
            self._signal()
        self._run_chores()

    def _step(self) -> int:
        """One batch of indexing: how many items it indexed (traced when there were any)."""
        started, clock = time.time_ns(), time.perf_counter()
        done = self.index.step(self.batch, self._stopping.is_set)
        if done > 0:
            seconds = time.perf_counter() - clock
            telemetry.finished(INDEX_BATCH, started, {"recall.index.batch": self.batch, "recall.index.items": done})
            telemetry.record("recall.index.batch.duration", seconds, {"recall.outcome": "ok"})
            telemetry.record("recall.index.batch.size", done)
        return done

    def _run_chores(self) -> None:
        for chore in list(self._chores):
            now = time.monotonic()
            if self._stopping.is_set() or now < chore.due:
                continue
            chore.due = now + chore.every
            try:
                chore.work()
            except Exception:
                logger.exception("background work %r failed; it runs again in %.0f s", chore.work, chore.every)

    def _signal(self) -> None:
        with self._round:
            self._round.notify_all()
