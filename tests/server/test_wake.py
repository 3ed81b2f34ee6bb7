"""What wakes a waiting check, and what it is told: a post announced with its recipients wakes
the waiters it is for and is what they answer; anything else makes them read the store."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

from recall.core.inbox import CheckResult
from recall.core.models import Message, SenderType
from recall.server.inbox import CheckAnswer, Notifier, wait_for_mentions


def message(content: str, *addressed: str) -> Message:
    """Maria's post, to everyone or to the agents `addressed` (as its first @mentions)."""
    return Message(
        1, "w", "maria", SenderType.HUMAN, content, datetime.now(UTC), mentions=addressed, addressed=addressed
    )


def test_a_post_announced_with_its_recipients_is_what_its_waiters_answer() -> None:
    async def main() -> None:
        notifier = Notifier()
        bob, ann, late = (notifier.subscribe("w", agent) for agent in ("Bob", "ann", "late"))
        hello = message("hello all")
        notifier.notify("W", hello, ("bob", "Ann"))  # "late" joined after it was delivered
        assert bob.future.done() and ann.future.done() and not late.future.done()
        assert bob.heard == [hello] and ann.heard == [hello] and late.heard == []
        to_ann = message("@ann only you", "ann")
        notifier.notify("w", to_ann, ("bob", "ann", "late"))  # woken already: told all the same
        assert bob.heard == [hello] and ann.heard == [hello, to_ann] and not late.future.done()

    asyncio.run(main())


def test_a_change_of_unknown_content_makes_the_waiters_read_the_store() -> None:
    async def main() -> None:
        notifier = Notifier()
        told, untold = notifier.subscribe("w", "bob"), notifier.subscribe("w", "ann")
        notifier.notify("w", message("@bob hi", "bob"), ("bob", "ann"))
        notifier.notify("w", message("@bob again", "bob"))  # recipients unknown (another replica's post)
        assert told.heard is None and untold.heard == [] and not untold.future.done()
        notifier.notify("w")  # something changed
        assert untold.heard is None and untold.future.done()

    asyncio.run(main())


def test_a_waiting_check_counts_as_waiting_once_asleep_and_is_handed_what_woke_it() -> None:
    async def main() -> None:
        notifier = Notifier()
        reading, done_reading = asyncio.Event(), asyncio.Event()
        given: list[Sequence[Message] | None] = []

        async def check(heard: Sequence[Message] | None) -> CheckAnswer:
            given.append(heard)
            if heard is None:  # the first check reads the store: held here
                reading.set()
                await done_reading.wait()
            result = CheckResult(tuple(heard or ()))
            return CheckAnswer(result, result.to_dict())

        waiting = asyncio.create_task(wait_for_mentions(notifier, "w", "bob", check, timeout=30))
        await reading.wait()
        assert notifier.waiting() == 0  # subscribed, still reading
        done_reading.set()
        for _ in range(100):
            if notifier.waiting():
                break
            await asyncio.sleep(0)
        assert notifier.waiting() == 1
        hello = message("hello all")
        notifier.notify("w", hello, ("bob",))
        answered = await waiting
        assert answered is not None and answered.result.new_mentions == (hello,)
        assert given == [None, [hello]] and notifier.waiting() == 0

    asyncio.run(main())
