"""Group commit: posts that arrive together are stored in one transaction.

A transaction's cost is mostly its commit, and a message to many agents touches a page of the
delivery index per agent; posts committed together share both. Each post is validated on its
own first (so a bad one fails alone), then waits for the next flush, which runs as soon as
the requests already in the event loop have had their turn.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from recall.core.models import Message
from recall.service import PostRequest, RecallService
from recall.store.base import NewMessage


class PostWriter:
    def __init__(self, service: RecallService) -> None:
        self.service = service
        self._pending: dict[str, list[tuple[NewMessage, asyncio.Future[Message]]]] = defaultdict(list)
        self._flush_scheduled = False
        self.transactions = 0

    async def post(self, world_id: str, request: PostRequest) -> Message:
        world, batch = self.service.prepare_posts(world_id, [request])
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Message] = loop.create_future()
        self._pending[world].append((batch[0], future))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush)
        return await future

    def _flush(self) -> None:
        self._flush_scheduled = False
        pending, self._pending = self._pending, defaultdict(list)
        for world, items in pending.items():
            self.transactions += 1
            try:
                stored = self.service.append_messages(world, [new for new, _ in items])
            except Exception as exc:  # noqa: BLE001 - every waiting post learns why its batch failed
                for _, future in items:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), message in zip(items, stored, strict=True):
                if not future.done():
                    future.set_result(message)
