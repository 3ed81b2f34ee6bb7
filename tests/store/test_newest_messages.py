"""`newest_messages` from a chat's end, passing over the ids it is told to (an adapter's hidden
items) in the database, on both stores; and an OpenAI Agents session popping many in a row."""

from __future__ import annotations

import asyncio

from recall import Recall, Settings
from recall.integrations.openai_agents import RecallSession


def test_newest_messages_pass_over_the_excluded(store_location: str) -> None:
    with Recall(store_location, settings=Settings(embeddings="none")) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        ids = [world.post("maria", f"m{n}", chat="c").id for n in range(10)]
        store = mem.service.store
        newest = store.newest_messages(world.key, "c", before=2**63 - 1, limit=3, excluding=ids[-4:])
        assert [m.id for m in newest] == ids[-5:-8:-1]
        assert [m.id for m in store.newest_messages(world.key, "c", before=ids[3], limit=10)] == ids[2::-1]


def test_pops_in_a_row_leave_the_right_items(mem: Recall) -> None:
    world = mem.world("w", create=True)
    session = RecallSession(mem, session_id="s1", world=world, agent="helper", human="maria", create=True)
    asyncio.run(session.add_items([{"role": "user", "content": f"item {n}"} for n in range(40)]))
    popped = [asyncio.run(session.pop_item()) for _ in range(30)]
    assert [p["content"] for p in popped if p is not None] == [f"item {n}" for n in range(39, 9, -1)]
    left = asyncio.run(session.get_items(limit=5))
    assert [i["content"] for i in left] == [f"item {n}" for n in range(5, 10)]  # type: ignore[index]
