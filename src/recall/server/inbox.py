"""Long-poll: a waiting check sleeps on a future that a post wakes, never in a polling loop.

Waiters are futures in the server's event loop, keyed by world and agent, so a thousand of
them cost a thousand small objects. A post wakes only the waiting agents that would respond
to it (the pure routing rule, no store read), so a message to one agent among a thousand
waiting wakes one check; each woken check reads the store again, in a worker thread, so a
slow read never holds the loop. `notify` may be called from any thread: off the loop it
hands the wake-up to the loop, which alone touches the waiters.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anyio import to_thread

from recall.core.inbox import CheckResult
from recall.core.models import Message
from recall.core.routing import would_respond
from recall.server import views

if TYPE_CHECKING:
    from recall.app.service import RecallService
    from recall.server.metrics import Metrics
    from recall.server.writer import BatchedCalls

#: The longest a waiting check waits, in seconds.
MAX_WAIT_SECONDS = 300


class Notifier:
    def __init__(self) -> None:
        self._waiters: dict[str, dict[str, set[asyncio.Future[None]]]] = defaultdict(lambda: defaultdict(set))
        #: The loop the waiters live in (set by the first subscriber).
        self._loop: asyncio.AbstractEventLoop | None = None
        self.wakeups = 0

    def subscribe(self, world_id: str, agent_id: str) -> asyncio.Future[None]:
        self._loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = self._loop.create_future()
        self._waiters[world_id.lower()][agent_id.lower()].add(future)
        return future

    def unsubscribe(self, world_id: str, agent_id: str, future: asyncio.Future[None]) -> None:
        world = self._waiters.get(world_id.lower())
        if world is None:
            return
        agent = world.get(agent_id.lower())
        if agent is not None:
            agent.discard(future)
            if not agent:
                del world[agent_id.lower()]
        if not world:
            del self._waiters[world_id.lower()]

    def notify(self, world_id: str, message: Message | None = None) -> None:
        """Wake the world's waiters that would respond to `message`; all of them when None
        (a change made elsewhere, e.g. by another process). Safe from any thread."""
        loop = self._loop
        if loop is None:
            return  # nobody has ever waited
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            self._wake(world_id, message)
            return
        # Futures are not thread-safe: only their loop may resolve them.
        with suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(self._wake, world_id, message)

    def _wake(self, world_id: str, message: Message | None) -> None:
        world = self._waiters.get(world_id.lower())
        if not world:
            return
        for agent, futures in world.items():
            if message is not None and not would_respond(agent, message):
                continue
            for future in futures:
                if not future.done():
                    future.set_result(None)
                    self.wakeups += 1

    def waiting(self) -> int:
        return sum(len(f) for world in self._waiters.values() for f in world.values())


async def wait_for_mentions(
    notifier: Notifier,
    world_id: str,
    agent_id: str,
    check: Callable[[], CheckResult],
    timeout: float,
    disconnected: Awaitable[None] | None = None,
    calls: BatchedCalls | None = None,
) -> CheckResult | None:
    """Run `check` until it finds new mentions or `timeout` passes (then None).

    `check` reads the store, so it runs in a worker thread (with `calls`, in one call with the
    other checks woken together). Subscribes before each check, so a
    post between the check and the sleep still wakes it. Returns None early too when
    `disconnected` completes (the client went away).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    gone = asyncio.ensure_future(disconnected) if disconnected is not None else None
    try:
        while True:
            future = notifier.subscribe(world_id, agent_id)
            try:
                result = await (to_thread.run_sync(check) if calls is None else calls.call(check))
                if result.new_mentions:
                    return result
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return None
                waits: set[asyncio.Future[None]] = {future} if gone is None else {future, gone}
                done, _ = await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
                if gone is not None and gone in done:
                    return None
            finally:
                notifier.unsubscribe(world_id, agent_id, future)
    finally:
        if gone is not None:
            gone.cancel()


@dataclass(frozen=True)
class InboxQuery:
    """What a check asks for, as REST's query and MCP's arguments name it."""

    limit: int = 10
    include_context: bool = False
    context_limit: int | None = None
    session: str = "default"
    chat_id: str | None = None
    refresh: bool = False
    mark_read: bool = False
    wait: bool = False
    timeout: float = 30
    #: With context: record the context it was built from as a model call.
    record: bool = True


async def run_check(
    service: RecallService,
    notifier: Notifier,
    world_id: str,
    agent_id: str,
    query: InboxQuery,
    calls: BatchedCalls,
    *,
    disconnected: Awaitable[None] | None = None,
    poll_interval: float | None = None,
    metrics: Metrics | None = None,
) -> dict[str, Any]:
    """One inbox check, for REST and MCP: at once, or (`query.wait`) once a message for the agent
    arrives or the timeout passes. With `poll_interval` a waiting check also looks again every
    that many seconds, for posts that reach the store without passing `notifier`."""

    def check(only_with_mentions: bool) -> CheckResult:
        return service.deliveries.check(
            world_id,
            agent_id,
            limit=query.limit,
            mark_read=False,  # below, once the answer is built
            include_context=query.include_context,
            context_limit=query.context_limit,
            session=query.session,
            chat_id=query.chat_id,
            refresh=query.refresh,
            context_only_with_mentions=only_with_mentions,
            record=query.record,
        )

    if not query.wait:
        result: CheckResult | None = await calls.call(lambda: check(False))
    else:
        if metrics is not None:
            metrics.observe_waiting_check()
        # A cancelled call (client gone) cancels this await, which unsubscribes the waiter.
        with _ticking(notifier, world_id, poll_interval):
            result = await wait_for_mentions(
                notifier, world_id, agent_id, lambda: check(True), query.timeout, disconnected, calls
            )
    result = result or CheckResult(chat_id=query.chat_id)
    if metrics is not None:
        metrics.observe_check(result)
    # Rendered before the mentions are marked read: a message leaves the unread set only
    # together with an answer that carries it (at-least-once delivery, spec §6).
    answer = views.check(result)
    if query.mark_read and result.new_mentions:
        read = [m.id for m in result.new_mentions]
        await calls.call(lambda: service.deliveries.ack(world_id, agent_id, read))
    return answer


@contextmanager
def _ticking(notifier: Notifier, world_id: str, interval: float | None) -> Iterator[None]:
    """Wake the world's waiters every `interval` seconds while the block runs (None: never)."""
    if interval is None:
        yield
        return

    async def tick() -> None:
        while True:
            await asyncio.sleep(interval)
            notifier.notify(world_id)

    task = asyncio.create_task(tick())
    try:
        yield
    finally:
        task.cancel()
