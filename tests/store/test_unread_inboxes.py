"""Many agents' inboxes read at once and marked read in one write (the checks one post wakes),
on both stores: the same answers as one agent at a time."""

from __future__ import annotations

from datetime import UTC, datetime

from recall import Recall, Settings
from recall.app.deliveries import PlainCheck


def test_unread_inboxes_match_each_agents_inbox(store_location: str) -> None:
    with Recall(store_location, settings=Settings(embeddings="none")) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        for name in ("a", "b", "c"):
            world.add_agent(name)
        first = world.post("maria", "@a @b first")
        second = world.post("maria", "@b second")
        third = world.post("maria", "everyone, third")
        store = mem.service.store
        store.mark_read(world.key, "b", [first.id], datetime.now(UTC))

        inboxes = store.unread_inboxes(world.key, ["a", "b", "c", "nobody"], limit=2)
        assert {agent: [m.id for m in messages] for agent, messages in inboxes.items()} == {
            "a": [first.id, second.id],
            "b": [second.id, third.id],
            "c": [first.id, second.id],
        }
        for agent in ("a", "b", "c"):
            one = [m.id for m, _ in store.inbox(world.key, agent, True, 2)]
            assert one == [m.id for m in inboxes[agent]]
        assert inboxes["a"][0] == store.inbox(world.key, "a", True, 1)[0][0]  # the same message, whole


def test_mark_read_many_marks_each_agents_own(store_location: str) -> None:
    with Recall(store_location, settings=Settings(embeddings="none")) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("a")
        world.add_agent("b")
        one = world.post("maria", "@a @b one")
        two = world.post("maria", "@a @b two")
        store = mem.service.store
        marked = store.mark_read_many(
            world.key, {"a": [one.id, two.id], "b": [two.id], "nobody": [one.id]}, datetime.now(UTC)
        )
        assert marked == 3
        assert store.unread_inboxes(world.key, ["a", "b"], 10) == {"a": [], "b": [one]}
        # Each agent's low-water mark rose, in one statement for all: a's past its last
        # delivery (all read), b's to its first unread.
        keys = {agent: store._agent_key(world.key, agent) for agent in ("a", "b")}
        marks = dict(store._read("SELECT agent_key, low FROM inbox_marks"))
        assert {agent: marks[key] for agent, key in keys.items()} == {"a": two.id + 1, "b": one.id}
        assert store.mark_read_many(world.key, {"a": [one.id]}, datetime.now(UTC)) == 0  # read already


def test_check_many_answers_as_check_does(store_location: str) -> None:
    with Recall(store_location, settings=Settings(embeddings="none")) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        for name in ("a", "b"):
            world.add_agent(name)
        world.post("maria", "@b only for b")  # a hears it, with nothing to answer: passed
        mention = world.post("maria", "@a @b both of you", chat="side")
        deliveries = mem.service.deliveries
        results = deliveries.check_many(
            world.key,
            [
                PlainCheck("a"),
                PlainCheck("B", limit=1),
                PlainCheck("nobody"),
                PlainCheck("a", limit=0),
                PlainCheck("a", session="\x00"),
            ],
        )
        a, b, unknown, bad_limit, bad_session = results
        assert not isinstance(a, Exception) and not isinstance(b, Exception)
        assert [m.id for m in a.new_mentions] == [mention.id] and a.passed == 1 and a.chat_id == "side"
        assert len(b.new_mentions) == 1 and b.passed == 0 and b.chat_id is None  # b's first mention
        assert isinstance(unknown, LookupError)
        assert isinstance(bad_limit, ValueError) and "limit" in str(bad_limit)
        assert isinstance(bad_session, ValueError) and "session" in str(bad_session)
        # What a passed is read; what they were asked is not, until acknowledged.
        assert [m.id for m in world.agent("a").inbox()] == [mention.id]
        assert deliveries.ack_many(world.key, {"a": [mention.id], "b": [m.id for m in b.new_mentions]}) == 2
        assert world.agent("a").inbox() == []
