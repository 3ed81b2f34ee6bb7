"""Group commit: what arrives together runs in one worker-thread call, each item learns its own
outcome, and the checks one post wakes (and their acknowledgements) run together."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from recall import Recall, Settings
from recall.server.writer import BatchedCalls, GroupCommit


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


def test_acks_of_several_agents_go_in_one_call_and_an_unknown_agent_fails_alone(tmp_path: Path) -> None:
    with Recall(tmp_path / "acks.db", Settings(index_interval=0, embeddings="none")) as mem:
        world = mem.world("w", create=True)
        world.add_agent("a")
        world.add_agent("b")
        world.add_human("maria")
        message = world.post("maria", "@a @b lunch?")
        calls = BatchedCalls()
        deliveries = mem.service.deliveries

        async def main() -> list[int | BaseException]:
            return await asyncio.gather(
                calls.call(lambda: deliveries.ack("w", "a", [message.id])),
                calls.call(lambda: deliveries.ack("w", "b", [message.id])),
                calls.call(lambda: deliveries.ack("w", "nobody", [message.id])),
                return_exceptions=True,
            )

        results = asyncio.run(main())
        assert results[:2] == [1, 1] and isinstance(results[2], LookupError)
        assert calls.batches == 1
        assert world.agent("a").inbox() == [] and world.agent("b").inbox() == []
