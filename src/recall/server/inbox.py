"""Long-poll: a waiting check sleeps on a future that a post wakes, never in a polling loop.

Waiters are futures in the server's event loop, keyed by world and agent, so a thousand of
them cost a thousand small objects. A post wakes only the waiting agents that would respond
to it (the pure routing rule, no store read), so a message to one agent among a thousand
waiting wakes one check. A waiting check found nothing to answer in the store, so what it has
to answer once woken is what woke it: the posts this server announced with their recipients
(`Waiter.heard`) are its answer, read from no store. Anything else (a post announced without
its recipients, by another replica, or a change of unknown content) makes the woken check read
the store again, in a worker thread, so a slow read never holds the loop. `notify` may be
called from any thread: off the loop it hands the wake-up to the loop, which alone touches the
waiters.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from recall import telemetry
from recall.app.deliveries import PlainCheck
from recall.core.inbox import CheckResult
from recall.core.models import Message
from recall.core.routing import responders
from recall.server import views
from recall.server.json_body import json_bytes
from recall.server.recent_posts import RecentPosts
from recall.server.writer import GroupCommit
from recall.telemetry.instruments import INBOX_WAIT, INBOX_WAKE

if TYPE_CHECKING:
    from recall.app.service import RecallService
    from recall.server.metrics import Metrics

logger = logging.getLogger("recall.server")

#: The longest a waiting check waits, in seconds.
MAX_WAIT_SECONDS = 300


@dataclass(eq=False)
class Waiter:
    """One waiting check: the future a post resolves, and what woke it."""

    future: asyncio.Future[None]
    #: The messages for this agent announced since it began waiting, in order; None once
    #: something else woke it (its check must read the store).
    heard: list[Message] | None = field(default_factory=list)
    #: Checked and found nothing: asleep until a post (not still reading the store).
    asleep: bool = False


class Notifier:
    def __init__(self, on_wake: Callable[[int], None] | None = None) -> None:
        self._waiters: dict[str, dict[str, set[Waiter]]] = defaultdict(lambda: defaultdict(set))
        #: The loop the waiters live in (set by the first subscriber).
        self._loop: asyncio.AbstractEventLoop | None = None
        self.wakeups = 0
        #: Told how many checks each notification woke (the server's `CrowdHold`).
        self._on_wake = on_wake
        #: The messages checks were woken with, so another process's look does not repeat them.
        self.recent = RecentPosts()

    def subscribe(self, world_id: str, agent_id: str) -> Waiter:
        self._loop = asyncio.get_running_loop()
        waiter = Waiter(self._loop.create_future())
        self._waiters[world_id.lower()][agent_id.lower()].add(waiter)
        return waiter

    def unsubscribe(self, world_id: str, agent_id: str, waiter: Waiter) -> None:
        world = self._waiters.get(world_id.lower())
        if world is None:
            return
        agent = world.get(agent_id.lower())
        if agent is not None:
            agent.discard(waiter)
            if not agent:
                del world[agent_id.lower()]
        if not world:
            del self._waiters[world_id.lower()]

    def notify(
        self, world_id: str, message: Message | None = None, delivered_to: Collection[str] | None = None
    ) -> None:
        """Wake the world's waiters that would respond to `message`; all of them when None
        (a change made elsewhere, e.g. by another process). With `delivered_to` (the agents the
        message was delivered to) it is what the woken checks answer. Safe from any
        thread."""
        loop = self._loop
        if loop is None:
            return  # nobody has ever waited
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            self._wake(world_id, message, delivered_to)
            return
        # Futures are not thread-safe: only their loop may resolve them.
        with suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(self._wake, world_id, message, delivered_to)

    def has_waiters(self, world_id: str) -> bool:
        """Whether a check waits in the world (safe from any thread: a lookup)."""
        return world_id.lower() in self._waiters

    def _wake(self, world_id: str, message: Message | None, delivered_to: Collection[str] | None) -> None:
        if message is not None:
            self.recent.add(message.id)
        world = self._waiters.get(world_id.lower())
        if not world:
            return
        with telemetry.span(INBOX_WAKE, {"recall.world.id": world_id}) as span:
            # The agents the message was delivered to, when known: then it is what they answer.
            recipients = None if message is None or delivered_to is None else {a.lower() for a in delivered_to}
            woken = 0
            # The waiting agents the message is for: a post to one of a thousand looks up the one.
            agents = list(world) if message is None else responders(world.keys(), message)
            for agent in agents:
                if recipients is not None and agent not in recipients:
                    continue  # not one of its deliveries (it joined the world later)
                for waiter in world[agent]:
                    if waiter.heard is not None:
                        if message is not None and recipients is not None:
                            waiter.heard.append(message)
                        else:
                            waiter.heard = None
                    if not waiter.future.done():
                        waiter.future.set_result(None)
                        woken += 1
            span.set({"recall.inbox.woken": woken})
        self.wakeups += woken
        if woken and self._on_wake is not None:
            self._on_wake(woken)

    def waiting(self) -> int:
        """Checks asleep until a message arrives (subscribed and past their read of the store)."""
        return sum(w.asleep for world in self._waiters.values() for waiters in world.values() for w in waiters)


async def wait_for_mentions(
    notifier: Notifier,
    world_id: str,
    agent_id: str,
    check: Callable[[Sequence[Message] | None], Awaitable[CheckAnswer]],
    timeout: float,
    disconnected: Awaitable[None] | None = None,
) -> CheckAnswer | None:
    """Run `check` until it finds new mentions or `timeout` passes (then None). `check` is given
    the messages that woke it when they are all it has to answer (see `Waiter.heard`), else None:
    it reads the store.

    Subscribes before each check, so a post between the check and the sleep still wakes it.
    Returns None early too when `disconnected` completes (the client went away).
    """
    ids: dict[str, telemetry.Value] = {"recall.world.id": world_id, "recall.agent.id": agent_id}
    with telemetry.timed(INBOX_WAIT, "recall.inbox.wait.duration", {**ids, "recall.inbox.timeout": timeout}) as span:
        ended, wakes = "error", 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        gone = asyncio.ensure_future(disconnected) if disconnected is not None else None
        heard: Sequence[Message] | None = None
        try:
            while True:
                waiter = notifier.subscribe(world_id, agent_id)
                try:
                    checked = await check(heard)
                    if checked.result.new_mentions:
                        ended = "mentions"
                        return checked
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        ended = "timeout"
                        return None
                    waits = {waiter.future} if gone is None else {waiter.future, gone}
                    waiter.asleep = True
                    done, _ = await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
                    waiter.asleep = False
                    if gone is not None and gone in done:
                        ended = "disconnected"
                        return None
                    wakes += waiter.future in done
                    heard = waiter.heard or None
                finally:
                    notifier.unsubscribe(world_id, agent_id, waiter)
        finally:
            if gone is not None:
                gone.cancel()
            # Labels of the duration too: a woken wait and one that timed out are apart.
            span.label("recall.inbox.ended", ended)
            span.label("recall.inbox.woken", wakes > 0)


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


@dataclass(frozen=True)
class CheckRequest:
    """One agent's inbox check, as `InboxChecks` takes it."""

    world_id: str
    agent_id: str
    query: InboxQuery
    #: A waiting check: context only once there are mentions to answer.
    only_with_mentions: bool = False
    #: A woken check's new mentions when they are known: the posts that woke it (see
    #: `Waiter.heard`). None: read from the store.
    heard: tuple[Message, ...] | None = None
    #: The request's trace context (`telemetry.current`): a context built for it is the request's child.
    trace: Any = field(default=None, compare=False)


@dataclass(eq=False)
class CheckAnswer:
    """What a check found, and the answer rendered from it (its mentions are marked read, with
    `mark_read`, only once this answer exists)."""

    result: CheckResult
    answer: dict[str, Any]
    _body: bytes | None = None

    def body(self) -> bytes:
        """The answer as the HTTP API sends it, encoded once however many checks share it."""
        if self._body is None:
            self._body = json_bytes(self.answer)
        return self._body


@dataclass(frozen=True)
class Acknowledgement:
    """The mentions an answer carried, to mark read once it is rendered (`mark_read`)."""

    world_id: str
    agent_id: str
    message_ids: tuple[int, ...]

    @classmethod
    def of(cls, item: CheckRequest, result: CheckResult) -> Acknowledgement | None:
        """What a check's answer makes read: its mentions, with `mark_read` (None: nothing)."""
        if not item.query.mark_read or not result.new_mentions:
            return None
        return cls(item.world_id, item.agent_id, tuple(m.id for m in result.new_mentions))


class InboxChecks(GroupCommit[CheckRequest | Acknowledgement, CheckAnswer | int]):
    """Checks that arrive together (the crowd one post wakes) run in one worker-thread call:
    the plain ones of a world read all their inboxes at once (`Deliveries.check_many`), and
    the mentions their answers carry are marked read in one write per world. A thousand woken
    long polls then cost a few statements, not a few thousand.

    A woken check whose mentions are known (`CheckRequest.heard`) is answered on the event loop
    at once (`answer_known`): it reads nothing, and its acknowledgement is queued here, before
    any check the agent makes after reading the answer."""

    def __init__(self, service: RecallService) -> None:
        super().__init__()
        self.service = service
        #: The last answer `answer_known` gave: the crowd one post wakes share it.
        self._known: CheckAnswer | None = None

    async def check(self, item: CheckRequest) -> CheckAnswer:
        """One check's answer: at once when its mentions are known, else from the store."""
        known = self.answer_known(item)
        if known is not None:
            return known
        checked = await self.submit(replace(item, trace=telemetry.current()))  # for the batch's thread
        assert isinstance(checked, CheckAnswer)
        return checked

    def answer_known(self, item: CheckRequest) -> CheckAnswer | None:
        """The answer of a plain check whose mentions are known (no more than its limit), its
        acknowledgement queued (`mark_read`); None for any other check."""
        if item.heard is None or item.query.include_context or len(item.heard) > item.query.limit:
            return None
        result = self.service.deliveries.answer_known(_plain(item), item.heard)
        checked = self._known
        if checked is None or checked.result != result:
            checked = self._known = CheckAnswer(result, views.check(result))
        acknowledgement = Acknowledgement.of(item, result)
        if acknowledgement is not None:
            self.enqueue(acknowledgement).add_done_callback(_acknowledged)
        return checked

    def run_batch(self, items: list[CheckRequest | Acknowledgement]) -> list[CheckAnswer | int | Exception]:
        outcomes: list[CheckAnswer | int | Exception] = [RuntimeError("not checked")] * len(items)
        # Acknowledgements first: they were queued before the checks of this batch were made.
        acks = {index: item for index, item in enumerate(items) if isinstance(item, Acknowledgement)}
        for index, outcome in self._acknowledge(acks).items():
            outcomes[index] = outcome
        checks = {index: item for index, item in enumerate(items) if not isinstance(item, Acknowledgement)}
        for index, answer in zip(checks, self._check(list(checks.values())), strict=True):
            outcomes[index] = answer
        return outcomes

    def _check(self, items: list[CheckRequest]) -> list[CheckAnswer | Exception]:
        found: list[CheckResult | Exception] = [RuntimeError("not checked")] * len(items)
        plain: dict[str, list[int]] = defaultdict(list)
        deliveries = self.service.deliveries
        for index, item in enumerate(items):
            if item.query.include_context:
                found[index] = self._with_context(item)
            else:
                plain[item.world_id].append(index)
        for world_id, indexes in plain.items():
            wanted = [_plain(items[i]) for i in indexes]
            try:
                for index, result in zip(indexes, deliveries.check_many(world_id, wanted), strict=True):
                    found[index] = result
            except Exception as exc:  # noqa: BLE001 - every check of the world learns why
                for index in indexes:
                    found[index] = exc
        answers: list[CheckAnswer | Exception] = []
        acking: dict[int, Acknowledgement] = {}
        for index, (item, result) in enumerate(zip(items, found, strict=True)):
            if isinstance(result, Exception):
                answers.append(result)
                continue
            # Rendered before the mentions are marked read: a message leaves the unread set only
            # together with an answer that carries it (at-least-once delivery, spec §6).
            answers.append(CheckAnswer(result, views.check(result)))
            acknowledgement = Acknowledgement.of(item, result)
            if acknowledgement is not None:
                acking[index] = acknowledgement
        for index, outcome in self._acknowledge(acking).items():
            if isinstance(outcome, Exception):  # its mentions stay unread: the check learns why
                answers[index] = outcome
        return answers

    def _acknowledge(self, acks: Mapping[int, Acknowledgement]) -> dict[int, int | Exception]:
        """Mark the acknowledgements' mentions read, one write per world; by key, that world's
        count of messages that were unread, or why its write failed."""
        by_world: dict[str, dict[int, Acknowledgement]] = defaultdict(dict)
        for key, ack in acks.items():
            by_world[ack.world_id][key] = ack
        outcomes: dict[int, int | Exception] = {}
        for world_id, acked in by_world.items():
            marks: dict[str, list[int]] = defaultdict(list)
            for ack in acked.values():
                marks[ack.agent_id].extend(ack.message_ids)
            try:
                outcome: int | Exception = self.service.deliveries.ack_many(world_id, marks)
            except Exception as exc:  # noqa: BLE001 - each acknowledgement of the world learns why
                outcome = exc
            outcomes.update(dict.fromkeys(acked, outcome))
        return outcomes

    def _with_context(self, item: CheckRequest) -> CheckResult | Exception:
        query = item.query
        try:
            with telemetry.within(item.trace):
                return self.service.deliveries.check(
                    item.world_id,
                    item.agent_id,
                    limit=query.limit,
                    mark_read=False,  # with the others, once the answer is rendered
                    include_context=True,
                    context_limit=query.context_limit,
                    session=query.session,
                    chat_id=query.chat_id,
                    refresh=query.refresh,
                    context_only_with_mentions=item.only_with_mentions,
                    record=query.record,
                )
        except Exception as exc:  # noqa: BLE001 - that check learns why
            return exc


def _acknowledged(done: asyncio.Future[CheckAnswer | int]) -> None:
    """An acknowledgement that failed leaves its mentions unread: they are sent again (at least
    once), so it is only logged."""
    if not done.cancelled() and done.exception() is not None:
        logger.warning("marking answered mentions read failed: %s", done.exception())


def _plain(item: CheckRequest) -> PlainCheck:
    query = item.query
    return PlainCheck(item.agent_id, query.limit, query.chat_id, query.session, query.context_limit)


async def run_check(
    notifier: Notifier,
    world_id: str,
    agent_id: str,
    query: InboxQuery,
    checks: InboxChecks,
    *,
    disconnected: Awaitable[None] | None = None,
    poll_interval: float | None = None,
    metrics: Metrics | None = None,
) -> CheckAnswer:
    """One inbox check, for REST and MCP: at once, or (`query.wait`) once a message for the agent
    arrives or the timeout passes. With `poll_interval` a waiting check also looks again every
    that many seconds, for posts that reach the store without passing `notifier`."""
    if not query.wait:
        checked: CheckAnswer | None = await checks.check(CheckRequest(world_id, agent_id, query))
    else:
        if metrics is not None:
            metrics.observe_waiting_check()
        waiting = CheckRequest(world_id, agent_id, query, only_with_mentions=True)

        def check(heard: Sequence[Message] | None) -> Awaitable[CheckAnswer]:
            return checks.check(waiting if heard is None else replace(waiting, heard=tuple(heard)))

        # A cancelled call (client gone) cancels this await, which unsubscribes the waiter.
        with _ticking(notifier, world_id, poll_interval):
            checked = await wait_for_mentions(notifier, world_id, agent_id, check, query.timeout, disconnected)
    if checked is None:
        result = CheckResult(chat_id=query.chat_id)
        checked = CheckAnswer(result, views.check(result))
    if metrics is not None:
        metrics.observe_check(checked.result)
    return checked


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
