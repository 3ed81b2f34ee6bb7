"""Group commit: posts that arrive together are stored in one transaction (and the inbox checks
one post wakes run together too: `server/inbox.py`'s `InboxChecks`).

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
from typing import Generic, TypeVar

from anyio import to_thread

from recall import telemetry
from recall.app.posting import PostRequest
from recall.app.service import RecallService
from recall.core.models import Message
from recall.store.records import NewMessage
from recall.telemetry.instruments import POST

#: A stored message, its world's key and the agents it was delivered to.
Posted = tuple[Message, str, tuple[str, ...]]
Item = TypeVar("Item")
Result = TypeVar("Result")


class GroupCommit(Generic[Item, Result]):
    """Items that arrive together are handled in one worker-thread call (`run_batch`), never on
    the event loop; while a call runs, the items that arrive form the next batch. A woken crowd
    (a post wakes a hundred long polls) then costs one thread hop, not a hundred."""

    def __init__(self) -> None:
        self._pending: list[tuple[Item, asyncio.Future[Result]]] = []
        #: The task flushing batches, while there are any (the reference keeps it alive).
        self._flushing: asyncio.Task[None] | None = None
        #: Worker-thread calls made so far (one per batch).
        self.batches = 0

    async def submit(self, item: Item) -> Result:
        return await self.enqueue(item)

    def enqueue(self, item: Item) -> asyncio.Future[Result]:
        """`submit` without waiting: the future of the item's outcome. Items are handled in the
        order they are queued."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        self._pending.append((item, future))
        if self._flushing is None:
            # Started on the loop's next turn, so the items already in it join the first batch.
            self._flushing = loop.create_task(self._flush())
        return future

    async def _flush(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                self.batches += 1
                results = await to_thread.run_sync(self.run_batch, [item for item, _ in batch])
                for (_, future), result in zip(batch, results, strict=True):
                    if future.done():
                        continue
                    if isinstance(result, Exception):
                        future.set_exception(result)
                    else:
                        future.set_result(result)
        finally:
            self._flushing = None

    def run_batch(self, items: list[Item]) -> list[Result | Exception]:
        """In a worker thread: each item's outcome, its result or why it failed."""
        raise NotImplementedError


class PostWriter(GroupCommit[tuple[str | Callable[[], str], PostRequest], Posted]):
    def __init__(self, service: RecallService) -> None:
        super().__init__()
        self.service = service
        self.transactions = 0

    async def post(self, world: str | Callable[[], str], request: PostRequest) -> Posted:
        """Store one post with whatever others arrive with it; the stored message, its world's
        key and its recipients. `world` is the world's key, or the caller's access check that
        returns it (it may read the store, so it runs in the worker thread)."""
        with telemetry.timed(POST, "recall.post.duration") as span:
            posted = await self.submit((world, request))
            span.set(
                {"recall.world.key": posted[1], "recall.post.messages": 1, "recall.post.recipients": len(posted[2])}
            )
        return posted

    def run_batch(self, items: list[tuple[str | Callable[[], str], PostRequest]]) -> list[Posted | Exception]:
        results: list[Posted | Exception] = [RuntimeError("not stored")] * len(items)
        by_world: dict[str, list[tuple[int, NewMessage]]] = defaultdict(list)
        for index, (world_or_check, request) in enumerate(items):
            try:
                key = world_or_check if isinstance(world_or_check, str) else world_or_check()
                world, routed = self.service.posting.prepare_posts(key, [request])
            except Exception as exc:  # noqa: BLE001 - the post learns why it was refused
                results[index] = exc
                continue
            by_world[world].append((index, routed[0]))
        for world, routed_posts in by_world.items():
            self.transactions += 1
            try:
                stored = self.service.posting.append_messages(world, [new for _, new in routed_posts])
                for (index, _), message in zip(routed_posts, stored, strict=True):
                    results[index] = (message, world, self.service.worlds.recipients(world, message))
            except Exception as exc:  # noqa: BLE001 - every post of the batch learns why it failed
                for index, _ in routed_posts:
                    results[index] = exc
        return results
