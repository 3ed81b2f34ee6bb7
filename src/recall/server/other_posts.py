"""Posts made by other processes (another replica on PostgreSQL; a script or the CLI on SQLite)
wake this server's waiting checks, as its own posts do.

The store tells what was posted elsewhere (`Store.announcer`), from a thread of its own; a
message the server already woke its checks with (a post of its own that SQLite's look found
among others) is not announced twice, and nothing is read for a world where nobody waits.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recall.server.deps import ServerState


@asynccontextmanager
async def posts_from_other_processes(state: ServerState) -> AsyncIterator[None]:
    """While the block runs, wake this server's long polls for posts other processes store: the
    listening thread reads each announced message and hands it to the notifier on the event
    loop. The thread ends with the block."""
    loop = asyncio.get_running_loop()
    stop = threading.Event()
    notifier = state.notifier

    def on_post(world_id: str, message_ids: list[int] | None) -> None:
        # Nobody waits there: a check that begins later reads the store, post included.
        if not notifier.has_waiters(world_id):
            return
        if message_ids is None:
            loop.call_soon_threadsafe(notifier.notify, world_id, None)
            return
        for message_id in message_ids:
            if message_id in notifier.recent:
                continue  # this server's own post: its checks were woken already
            message = state.service.posting.find_message(world_id, message_id)
            if message is not None:
                loop.call_soon_threadsafe(notifier.notify, world_id, message)

    thread = state.service.listen_for_posts(on_post, stop)
    try:
        yield
    finally:
        stop.set()
        if thread is not None:
            await asyncio.to_thread(thread.join, 5)
