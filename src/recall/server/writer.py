"""Group commit: posts that arrive together are stored in one transaction.

A transaction's cost is mostly its commit, and a message to many agents touches a page of the
delivery index per agent; posts committed together share both. The posts waiting when a flush
starts are handled in one worker thread, never on the event loop: each is checked and
validated on its own (so a bad one fails alone), then each world's valid posts are stored in
one transaction. While a flush runs, the posts that arrive form the next batch.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from anyio import to_thread

from recall.app.posting import PostRequest
from recall.app.service import RecallService
from recall.core.models import Message
from recall.store.base import NewMessage

#: A stored message, its world's key and the agents it was delivered to.
Posted = tuple[Message, str, tuple[str, ...]]


@dataclass
class _Waiting:
    #: The world's key, or the caller's access check that finds it (it may read the store).
    world: str | Callable[[], str]
    request: PostRequest
    future: asyncio.Future[Posted]


class PostWriter:
    def __init__(self, service: RecallService) -> None:
        self.service = service
        self._pending: list[_Waiting] = []
        #: The task flushing batches, while there are any (the reference keeps it alive).
        self._flushing: asyncio.Task[None] | None = None
        self.transactions = 0

    async def post(self, world: str | Callable[[], str], request: PostRequest) -> Posted:
        """Store one post with whatever others arrive with it; the stored message, its world's
        key and its recipients. `world` is the world's key, or the caller's access check that
        returns it (it may read the store, so it runs in the worker thread)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Posted] = loop.create_future()
        self._pending.append(_Waiting(world, request, future))
        if self._flushing is None:
            # Started on the loop's next turn, so the posts already in it join the first batch.
            self._flushing = loop.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                results = await to_thread.run_sync(self._store, batch)
                for waiting, result in zip(batch, results, strict=True):
                    if waiting.future.done():
                        continue
                    if isinstance(result, Exception):
                        waiting.future.set_exception(result)
                    else:
                        waiting.future.set_result(result)
        finally:
            self._flushing = None

    def _store(self, batch: list[_Waiting]) -> list[Posted | Exception]:
        """In a worker thread: each post's outcome, the stored message or why it failed."""
        results: list[Posted | Exception] = [RuntimeError("not stored")] * len(batch)
        by_world: dict[str, list[tuple[int, NewMessage]]] = defaultdict(list)
        for index, waiting in enumerate(batch):
            try:
                key = waiting.world if isinstance(waiting.world, str) else waiting.world()
                world, routed = self.service.posting.prepare_posts(key, [waiting.request])
            except Exception as exc:  # noqa: BLE001 - the post learns why it was refused
                results[index] = exc
                continue
            by_world[world].append((index, routed[0]))
        for world, items in by_world.items():
            self.transactions += 1
            try:
                stored = self.service.posting.append_messages(world, [new for _, new in items])
                for (index, _), message in zip(items, stored, strict=True):
                    results[index] = (message, world, self.service.worlds.recipients(world, message))
            except Exception as exc:  # noqa: BLE001 - every post of the batch learns why it failed
                for index, _ in items:
                    results[index] = exc
        return results
