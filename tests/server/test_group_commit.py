"""Group commit: what arrives together runs in one worker-thread call, each item learns its own
outcome, and the checks one post wakes (and their acknowledgements) run together."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

from recall import Recall, Settings
from recall.server.inbox import CheckAnswer, CheckRequest, InboxChecks, InboxQuery
from recall.server.writer import GroupCommit


class Doubler(GroupCommit[int, int]):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[int]] = []
        self.threads: set[int] = set()

    def run_batch(self, items: list[int]) -> list[int | Exception]:
        self.calls.append(items)
        self.threads.add(threading.get_ident())
        return [ValueError(f"odd {i}") if i % 2 else i * 2 for i in items]


def test_items_submitted_together_run_in_one_worker_call_and_fail_alone() -> None:
    doubler = Doubler()

    async def main() -> list[int | BaseException]:
        return await asyncio.gather(*(doubler.submit(i) for i in range(6)), return_exceptions=True)

    results = asyncio.run(main())
    assert doubler.calls == [[0, 1, 2, 3, 4, 5]] and doubler.batches == 1
    assert threading.get_ident() not in doubler.threads  # never on the event loop's thread
    assert [r for r in results if not isinstance(r, BaseException)] == [0, 4, 8]
    assert [str(r) for r in results if isinstance(r, BaseException)] == ["odd 1", "odd 3", "odd 5"]


def test_items_arriving_during_a_batch_form_the_next_one() -> None:
    doubler = Doubler()

    async def main() -> None:
        first = asyncio.ensure_future(doubler.submit(2))
        await asyncio.sleep(0)  # the flush has started with [2]
        assert await asyncio.gather(doubler.submit(4), doubler.submit(6)) == [8, 12]
        assert await first == 4

    asyncio.run(main())
    assert doubler.calls == [[2], [4, 6]]


def test_woken_checks_run_in_one_call_and_mark_what_they_answer_read(tmp_path: Path) -> None:
    with Recall(tmp_path / "checks.db", Settings(index_interval=0, embeddings="none")) as mem:
        world = mem.world("w", create=True)
        for name in ("a", "b", "c"):
            world.add_agent(name)
        world.add_human("maria")
        asked = {name: world.post("maria", f"@{name} lunch?").id for name in ("a", "b", "c")}
        checks = InboxChecks(mem.service)
        acked = InboxQuery(mark_read=True)

        async def main() -> list[CheckAnswer | BaseException]:
            return await asyncio.gather(
                checks.submit(CheckRequest(world.key, "a", acked)),
                checks.submit(CheckRequest(world.key, "b", InboxQuery())),  # not acknowledged
                checks.submit(CheckRequest(world.key, "c", InboxQuery(include_context=True, mark_read=True))),
                checks.submit(CheckRequest(world.key, "nobody", acked)),
                return_exceptions=True,
            )

        a, b, c, nobody = asyncio.run(main())
        assert checks.batches == 1
        assert isinstance(a, CheckAnswer) and isinstance(b, CheckAnswer) and isinstance(c, CheckAnswer)
        for name, answer in zip("abc", (a, b, c), strict=True):
            assert [m["id"] for m in answer.answer["new_mentions"]] == [asked[name]]
        assert "context_metadata" in c.answer
        assert isinstance(nobody, LookupError)  # alone: the others were answered
        assert world.agent("a").inbox() == [] and world.agent("c").inbox() == []
        assert [m.id for m in world.agent("b").inbox()] == [asked["b"]]


def test_a_woken_check_answers_the_posts_that_woke_it_without_reading_the_store(tmp_path: Path) -> None:
    """A waiting check found nothing to answer; the posts announced with their recipients since
    are all it has (oldest first, spec §6), so it is answered at once, reading nothing, and what
    it carried is marked read before any later check of the agent reads. More than its limit,
    and it reads the store (the oldest first; the rest stay unread)."""
    with Recall(tmp_path / "heard.db", Settings(index_interval=0, embeddings="none")) as mem:
        world = mem.world("w", create=True)
        world.add_agent("a")
        world.add_human("maria")
        world.post("maria", "@nobody in particular")  # not addressed to a: unread
        first, second = (world.post("maria", f"@a question {i}") for i in range(2))
        store = mem.service.store
        reads: list[int] = []
        unread_inboxes = store.unread_inboxes

        def counted(*args: object, **kwargs: object) -> object:
            reads.append(1)
            return unread_inboxes(*args, **kwargs)  # type: ignore[arg-type]

        store.unread_inboxes = counted  # type: ignore[method-assign]
        checks = InboxChecks(mem.service)
        acked = InboxQuery(mark_read=True)

        async def known_then_read() -> tuple[CheckAnswer, CheckAnswer]:
            known = await checks.check(CheckRequest(world.key, "a", acked, heard=(second, first)))
            assert reads == [] and checks.batches == 0  # answered on the spot
            return known, await checks.check(CheckRequest(world.key, "a", InboxQuery()))

        known, after = asyncio.run(known_then_read())
        assert [m["id"] for m in known.answer["new_mentions"]] == [first.id, second.id]
        assert after.answer["new_mentions"] == [] and reads == [1]  # the acknowledgement came first
        assert world.agent("a").inbox() == []  # the later check passed what a was not addressed in

        third, fourth = (world.post("maria", f"@a again {i}") for i in range(2))
        over = asyncio.run(checks.check(CheckRequest(world.key, "a", InboxQuery(limit=1), heard=(third, fourth))))
        assert [m["id"] for m in over.answer["new_mentions"]] == [third.id]
        assert reads == [1, 1]


def test_the_crowd_one_post_wakes_shares_one_rendered_answer(tmp_path: Path) -> None:
    with Recall(tmp_path / "crowd.db", Settings(index_interval=0, embeddings="none")) as mem:
        world = mem.world("w", create=True)
        for name in ("a", "b"):
            world.add_agent(name)
        world.add_human("maria")
        hello = world.post("maria", "hello all")
        checks = InboxChecks(mem.service)

        async def woken(agent: str) -> CheckAnswer:
            return await checks.check(CheckRequest(world.key, agent, InboxQuery(), heard=(hello,)))

        a, b = asyncio.run(woken("a")), asyncio.run(woken("b"))
        assert a is b and a.body() is b.body()
        assert json.loads(a.body())["new_mentions"][0]["content"] == "hello all"
        other = asyncio.run(checks.check(CheckRequest(world.key, "a", InboxQuery(chat_id="elsewhere"), heard=(hello,))))
        assert other is not a and json.loads(other.body())["context_metadata"]["chat_id"] == "elsewhere"
