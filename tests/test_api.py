"""The Python API as a user sees it: `Recall` → `World` → `Agent`, its errors and contexts."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

from recall import (
    BudgetExceededError,
    ConflictError,
    Context,
    InvalidInputError,
    Message,
    PostRequest,
    Recall,
    SenderType,
    Settings,
    UnknownParticipantError,
    UnknownWorldError,
    World,
)
from recall.store.sqlite import sqlite3 as store_sqlite3
from tests.conftest import AGENT_B_PROMPT

# -- helpers ------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def db_path(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the store lives: every test of the Python API runs on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "recall.db")
    return str(request.getfixturevalue("postgres_url"))


COUNTED = ("messages", "deliveries", "chats", "memory_counts", "turn_counters", "observations")


def table_counts(location: str | Path) -> dict[str, int]:
    """Row counts read straight from the database, not through recall."""
    db_path = str(location)
    if db_path.startswith("postgresql://"):
        with psycopg.connect(db_path) as conn:
            return {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in COUNTED}  # type: ignore[index]
    with closing(store_sqlite3.connect(db_path)) as db:
        return {t: int(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in COUNTED}


def contents(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages]


# -- opening, worlds, participants --------------------------------------------------------


def test_recall_opens_a_file_and_keeps_data(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECALL_HISTORY_LIMIT", raising=False)
    with Recall(db_path) as mem:
        w = mem.world("team", create=True, name="The team")
        w.add_human("maria")
        w.post("maria", "hello")
    assert db_path.startswith("postgresql://") or Path(db_path).is_file()
    with Recall(str(db_path)) as mem:
        w = mem.world("team")
        assert w.name == "The team"
        assert [m.content for m in w.messages()] == ["hello"]
        assert [x.id for x in mem.worlds()] == ["team"]


def test_world_create_is_idempotent(mem: Recall) -> None:
    first = mem.world("x", create=True)
    first.add_human("maria")
    again = mem.world("x", create=True)
    assert again.id == first.id == "x"
    assert [p.id for p in again.participants()] == ["maria"]
    assert [w.id for w in mem.worlds()] == ["x"]
    # Case-insensitive: the existing world, under its stored id.
    assert mem.world("X", create=True).id == "x"


def test_world_without_create_must_exist(mem: Recall) -> None:
    with pytest.raises(UnknownWorldError) as info:
        mem.world("nope")
    assert "nope" in str(info.value)
    assert "create=True" in str(info.value)


def test_create_world_twice_is_a_conflict(mem: Recall) -> None:
    mem.create_world("x", turn_limit=3)
    with pytest.raises(ConflictError, match="already exists"):
        mem.create_world("x")
    with pytest.raises(ConflictError):
        mem.create_world("X")
    assert [w.id for w in mem.worlds()] == ["x"]


@pytest.mark.parametrize("bad", ["", "two words", "a" * 65, "agënt", "-lead", "trail-", "a.b", "a/b"])
def test_create_world_rejects_bad_ids(mem: Recall, bad: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        mem.create_world(bad)
    assert info.value.field == "world_id"
    assert mem.worlds() == []


@pytest.mark.parametrize("kind", ["agent", "human"])
@pytest.mark.parametrize("existing", ["agent-a", "maria"])
def test_duplicate_participant_ids_conflict_case_insensitively(world: World, kind: str, existing: str) -> None:
    add: Callable[[str], object] = world.add_agent if kind == "agent" else world.add_human
    with pytest.raises(ConflictError, match="already exists"):
        add(existing.upper())
    with pytest.raises(ConflictError):
        add(existing)
    assert sorted(p.id for p in world.participants()) == ["agent-a", "agent-b", "maria"]


@pytest.mark.parametrize("reserved", ["user", "system", "USER", "System", "human", "you", "world"])
@pytest.mark.parametrize("kind", ["agent", "human"])
def test_reserved_ids_cannot_be_registered(world: World, reserved: str, kind: str) -> None:
    add: Callable[[str], object] = world.add_agent if kind == "agent" else world.add_human
    with pytest.raises(InvalidInputError) as info:
        add(reserved)
    assert info.value.field == f"{kind}_id"
    assert "reserved" in str(info.value)


@pytest.mark.parametrize("bad", ["", "agent a", " agent", "a" * 65, "agënt", "bot!", "@bot"])
@pytest.mark.parametrize("kind", ["agent", "human"])
def test_bad_participant_ids_name_the_field(world: World, bad: str, kind: str) -> None:
    add: Callable[[str], object] = world.add_agent if kind == "agent" else world.add_human
    with pytest.raises(InvalidInputError) as info:
        add(bad)
    assert info.value.field == f"{kind}_id"
    assert str(info.value).startswith(f"{kind}_id: ")
    assert len(world.participants()) == 3


def test_longest_valid_id_is_accepted(world: World) -> None:
    long_id = "a" * 64
    assert world.add_agent(long_id).id == long_id


def test_unknown_agent_setting_is_rejected(world: World) -> None:
    with pytest.raises(InvalidInputError) as info:
        world.add_agent("agent-c", temperature=0.2)
    assert info.value.field == "temperature"


def test_world_agent_handle(world: World) -> None:
    assert world.agent("AGENT-A").id == "agent-a"
    with pytest.raises(UnknownParticipantError):
        world.agent("maria")  # a human, not an agent
    with pytest.raises(UnknownParticipantError, match="register it"):
        world.agent("nobody")


# -- posting ------------------------------------------------------------------------------


def test_post_returns_the_stored_message(world: World) -> None:
    m = world.post("maria", "hello", chat="c1", channel="sms", metadata={"k": "v"})
    assert isinstance(m, Message)
    assert (m.world_id, m.sender, m.sender_type, m.chat_id, m.channel, m.metadata) == (
        "w",
        "maria",
        SenderType.HUMAN,
        "c1",
        "sms",
        {"k": "v"},
    )
    assert world.messages(chat="c1") == [m]
    reply = world.post("agent-a", "hi maria", chat="c1", parent=m.id)
    assert reply.parent_id == m.id
    assert reply.sender_type is SenderType.AGENT


def test_post_to_unknown_world_says_how_to_create_it(mem: Recall, db_path: str) -> None:
    with pytest.raises(UnknownWorldError) as info:
        mem.service.posting.post("nowhere", PostRequest("human", "hello?"))
    assert "nowhere" in str(info.value)
    assert "create=True" in str(info.value)
    assert table_counts(db_path)["messages"] == 0


def test_unknown_sender_is_named_with_how_to_register_it(world: World, db_path: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        world.post("bob", "hi all")
    assert info.value.field == "sender"
    message = str(info.value)
    assert "'bob'" in message
    assert "add_human('bob')" in message
    assert "recall human add w bob" in message
    assert table_counts(db_path)["messages"] == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        pytest.param({"sender": "", "content": "hi"}, "sender", id="empty-sender"),
        pytest.param({"sender": "   ", "content": "hi"}, "sender", id="whitespace-sender"),
        pytest.param({"sender": "bob", "content": "hi"}, "sender", id="unknown-sender"),
        pytest.param({"sender": "maria", "content": ""}, "content", id="empty-content"),
        pytest.param({"sender": "maria", "content": " \n\t"}, "content", id="blank-content"),
        pytest.param({"sender": "maria", "content": "x" * 101}, "content", id="oversized-content"),
        pytest.param({"sender": "maria", "content": "hi", "channel": "fax"}, "channel", id="invalid-channel"),
        pytest.param({"sender": "maria", "content": "hi", "parent": 999}, "parent_id", id="unknown-parent"),
        pytest.param({"sender": "maria", "content": "hi", "parent": 0}, "parent_id", id="zero-parent"),
        pytest.param({"sender": "maria", "content": "hi", "chat": "bad chat"}, "chat_id", id="invalid-chat"),
        pytest.param({"sender": "maria", "content": "hi", "at": "last tuesday"}, "created_at", id="invalid-time"),
    ],
)
def test_invalid_posts_are_rejected_and_change_nothing(tmp_path: Path, kwargs: dict[str, Any], field: str) -> None:
    db_path = tmp_path / "small.db"
    with Recall(db_path, settings=Settings(max_message_chars=100)) as mem:
        w = mem.world("w", create=True)
        w.add_human("maria")
        w.add_agent("agent-a")
        w.add_agent("agent-b")
        first = w.post("maria", "already here")
        mem.service.store.increment_turns("w", "agent-a")
        before = table_counts(db_path)

        sender, content = kwargs.pop("sender"), kwargs.pop("content")
        with pytest.raises(InvalidInputError) as info:
            w.post(sender, content, **kwargs)
        assert info.value.field == field
        assert table_counts(db_path) == before
        assert w.messages() == [first]
        assert mem.service.agent_state.turn_count("w", "agent-a") == 1


def test_content_at_the_limit_is_accepted(tmp_path: Path) -> None:
    with Recall(tmp_path / "small.db", settings=Settings(max_message_chars=100)) as mem:
        w = mem.world("w", create=True)
        w.add_human("maria")
        assert len(w.post("maria", "x" * 100).content) == 100
        with pytest.raises(InvalidInputError, match="limit is 100"):
            w.post("maria", "x" * 101)


def test_post_many_is_all_or_nothing(world: World, db_path: str) -> None:
    world.post("maria", "before")
    before = table_counts(db_path)
    with pytest.raises(InvalidInputError):
        world.post_many([PostRequest("maria", "one"), PostRequest("agent-a", "two"), PostRequest("ghost", "three")])
    assert table_counts(db_path) == before
    stored = world.post_many([PostRequest("maria", "one"), PostRequest("agent-a", "two")])
    assert [m.content for m in stored] == ["one", "two"]
    assert table_counts(db_path)["messages"] == before["messages"] + 2


def test_import_messages_validates_all_then_stores_in_batches(world: World, db_path: str) -> None:
    requests = [PostRequest("maria", f"line {i}", created_at=1_700_000_000 + i) for i in range(5)]
    before = table_counts(db_path)
    with pytest.raises(InvalidInputError):
        world.import_messages([*requests, PostRequest("ghost", "boo")], batch_size=2)
    assert table_counts(db_path) == before

    batches: list[int] = []
    stored = world.import_messages(requests, batch_size=2, progress=batches.append)
    assert batches == [2, 2, 1]
    assert [m.content for m in stored] == [f"line {i}" for i in range(5)]
    assert [m.created_at.timestamp() for m in world.messages()] == [1_700_000_000 + i for i in range(5)]
    # History arrives read: in the agent's memory, in nobody's unread inbox.
    assert world.agent("agent-a").inbox() == []
    assert len(world.agent("agent-a").inbox(unread_only=False)) == 5


@pytest.mark.parametrize(
    ("sender", "stored_as", "kind"),
    [
        ("human", "human", SenderType.HUMAN),
        ("user", "user", SenderType.HUMAN),
        ("you", "you", SenderType.HUMAN),
        ("User", "user", SenderType.HUMAN),
        ("system", "system", SenderType.SYSTEM),
        ("world", "world", SenderType.WORLD),
        ("WORLD", "world", SenderType.WORLD),
    ],
)
def test_reserved_senders_post_without_registering(world: World, sender: str, stored_as: str, kind: SenderType) -> None:
    m = world.post(sender, "an announcement")
    assert (m.sender, m.sender_type) == (stored_as, kind)
    stored = world.messages()[-1]
    assert (stored.id, stored.sender, stored.sender_type) == (m.id, stored_as, kind)
    # Delivered to both agents, none of which wrote it.
    assert [x.id for x in world.agent("agent-a").inbox()] == [m.id]
    assert [x.id for x in world.agent("agent-b").inbox()] == [m.id]
    assert [p.id for p in world.participants()] == ["agent-a", "agent-b", "maria"]


def test_registered_sender_types(world: World) -> None:
    assert world.post("maria", "hi").sender_type is SenderType.HUMAN
    assert world.post("agent-a", "hi").sender_type is SenderType.AGENT


def test_sender_is_normalised_to_the_registered_id(world: World) -> None:
    m = world.post("MARIA", "hello")
    assert m.sender == "maria"
    assert world.messages()[-1].sender == "maria"
    a = world.post(" Agent-A ", "hi")
    assert (a.sender, a.sender_type) == ("agent-a", SenderType.AGENT)
    # Written by agent-a: in its memory as its own, not in its inbox.
    assert world.agent("agent-a").inbox() == [m]


def test_mixed_case_ids_keep_their_registered_spelling(world: World) -> None:
    world.add_human("Lena")
    world.add_agent("Agent-C", system_prompt="You are C.")
    m = world.post("lena", "@agent-c hi")
    assert m.sender == "Lena"
    agent = world.agent("agent-c")
    assert agent.id == "Agent-C"
    assert agent.inbox() == [m]
    reply = world.post("AGENT-C", "@lena hello")
    assert reply.sender == "Agent-C"
    assert agent.inbox() == [m]  # its own reply is not in its inbox
    assert agent.context().openai()[1:] == [
        {"role": "user", "content": "@agent-c hi", "name": "Lena"},
        {"role": "assistant", "content": "@lena hello"},
    ]


def test_mentions_are_parsed_and_stored(world: World) -> None:
    m = world.post("maria", "@Agent-B please help, cc @agent-a\n  @maria_2 too\nmail me at maria@example.com")
    assert m.mentions == ("agent-b", "agent-a", "maria_2", "example")
    assert m.addressed == ("agent-b", "maria_2")
    stored = world.messages()[-1]
    assert (stored.mentions, stored.addressed) == (m.mentions, m.addressed)
    first_token = world.post("maria", "@agent-a @agent-b hi")
    assert first_token.addressed == ("agent-a",)
    assert first_token.mentions == ("agent-a", "agent-b")
    public = world.post("maria", "no mentions here")
    assert (public.mentions, public.addressed) == ((), ())


def test_caller_supplied_time_and_idempotency_key(world: World, db_path: str) -> None:
    m = world.post("maria", "imported", at="2025-05-08T13:56:00Z", idempotency_key="import-1")
    assert m.created_at.isoformat() == "2025-05-08T13:56:00+00:00"
    again = world.post("maria", "imported", at="2025-05-08T13:56:00Z", idempotency_key="import-1")
    assert again.id == m.id
    assert table_counts(db_path)["messages"] == 1


def test_chats_are_listed_with_counts(world: World) -> None:
    world.post("maria", "a")
    world.post("maria", "b", chat="c1")
    world.post("maria", "c", chat="c1")
    assert world.chats() == [(None, 1), ("c1", 2)]
    assert [m.content for m in world.messages(chat="c1")] == ["b", "c"]
    assert [m.content for m in world.messages(all_chats=True)] == ["a", "b", "c"]


# -- contexts -----------------------------------------------------------------------------


def seed_000(world: World) -> None:
    world.post("maria", "hi")
    world.post("agent-a", "how can I help you?")
    world.post("maria", "@agent-b please help")


def test_seed_000_example_end_to_end(world: World) -> None:
    seed_000(world)
    ctx = world.agent("agent-b").context()
    assert ctx.openai() == [
        {"role": "system", "content": AGENT_B_PROMPT},
        {"role": "user", "content": "hi", "name": "maria"},
        {"role": "user", "content": "@agent-b please help", "name": "maria"},
    ]
    assert ctx.anthropic() == {
        "system": AGENT_B_PROMPT,
        "messages": [{"role": "user", "content": "maria: hi\n\nmaria: @agent-b please help"}],
    }
    assert ctx.report.incoming_count == 2
    assert ctx.report.excluded == {"not-addressed": 1}
    assert "how can I help you?" not in json.dumps(ctx.to_dict()["messages"])


def test_seed_000_author_sees_its_own_reply_as_assistant(world: World) -> None:
    seed_000(world)
    ctx = world.agent("agent-a").context()
    # agent-a answered "hi"; the later message addresses agent-b only.
    assert [(m["role"], m["content"]) for m in ctx.openai()[1:]] == [
        ("user", "hi"),
        ("assistant", "how can I help you?"),
    ]
    assert ctx.report.incoming_count == 0


def test_context_for_unknown_agent(world: World) -> None:
    with pytest.raises(UnknownParticipantError) as info:
        world.agent("ghost")
    assert "ghost" in str(info.value)
    with pytest.raises(UnknownParticipantError):
        world.service.contexts.build_context("w", "ghost")
    with pytest.raises(UnknownParticipantError):
        world.service.contexts.build_context("w", "maria")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"max_tokens": "1000"}, "max_tokens"),
        ({"max_tokens": 1000.0}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"history_limit": -1}, "history_limit"),
        ({"history_limit": "10"}, "history_limit"),
        ({"chat": "no such/chat"}, "chat_id"),
        ({"channel": "fax"}, "channel"),
        ({"message": 999}, "message_id"),
    ],
)
def test_invalid_context_arguments(world: World, kwargs: dict[str, Any], field: str) -> None:
    world.post("maria", "hi")
    with pytest.raises(InvalidInputError) as info:
        world.agent("agent-a").context(**kwargs)
    assert info.value.field == field


def test_budget_too_small_for_the_system_prompt_names_the_need(world: World) -> None:
    agent = world.agent("agent-b")
    with pytest.raises(BudgetExceededError) as info:
        agent.context(max_tokens=5)
    needed = info.value.needed
    assert needed > 5
    assert f"at least {needed}" in str(info.value)
    assert "max_tokens=5" in str(info.value)
    # Exactly that many is enough.
    ctx = agent.context(max_tokens=needed)
    assert ctx.report.total_tokens == needed
    with pytest.raises(BudgetExceededError):
        agent.context(max_tokens=needed - 1)


def test_incoming_message_is_never_cut_for_the_budget(world: World) -> None:
    world.post("maria", "@agent-b " + "please read this long request " * 20)
    agent = world.agent("agent-b")
    with pytest.raises(BudgetExceededError, match="incoming"):
        agent.context(max_tokens=40)


def test_chats_are_separate(world: World) -> None:
    world.post("maria", "in chat one", chat="one")
    world.post("maria", "in chat two", chat="two")
    world.post("maria", "in the default chat")
    agent = world.agent("agent-a")
    assert said(agent.context(chat="one")) == ["in chat one"]
    two = agent.context(chat="two")
    assert said(two) == ["in chat two"]
    default = agent.context()
    assert said(default) == ["in the default chat"]
    assert default.report.excluded.get("other-chat") == 2
    # Other chats reach a context only as recalled past, each passage labelled with its chat.
    recalled = [m.content for m in two.messages if m.section == "recalled"]
    assert all("in chat two" not in text for text in recalled)
    assert all("chat one]" in text or "chat (default)]" in text for text in recalled)


def said(ctx: Context) -> list[str]:
    """The conversation part of a context (history and incoming), as text."""
    return [m.content for m in ctx.messages if m.section in ("history", "incoming")]


def conversation(world: World, rounds: int) -> None:
    """maria and agent-a take turns; then maria asks once more."""
    for i in range(rounds):
        world.post("maria", f"question {i}")
        world.post("agent-a", f"answer {i}")
    world.post("maria", "one more question")


def test_history_limit_from_agent_setting_and_per_call(world: World) -> None:
    world.add_agent("agent-c", system_prompt="You are C.", history_limit=2)
    for i in range(3):
        world.post("maria", f"question {i}")
        world.post("agent-c", f"answer {i}")
    world.post("maria", "one more question")

    agent = world.agent("agent-c")
    assert agent.profile.history_limit == 2
    assert said(agent.context()) == ["question 2", "answer 2", "one more question"]
    assert said(agent.context(history_limit=4)) == [
        "question 1",
        "answer 1",
        "question 2",
        "answer 2",
        "one more question",
    ]
    assert said(agent.context(history_limit=0)) == ["one more question"]
    assert agent.context().report.history_limit == 2


def test_history_limit_default_comes_from_settings(tmp_path: Path) -> None:
    with Recall(tmp_path / "s.db", settings=Settings(history_limit=3)) as mem:
        w = mem.world("w", create=True)
        w.add_human("maria")
        w.add_agent("agent-a", system_prompt="You are A.")
        conversation(w, 4)
        ctx = w.agent("agent-a").context()
        assert ctx.report.history_limit == 3
        assert said(ctx) == ["answer 2", "question 3", "answer 3", "one more question"]


def test_message_trigger_ends_the_incoming_part(world: World) -> None:
    q1 = world.post("maria", "q1")
    q2 = world.post("maria", "q2")
    world.post("maria", "q3")
    agent = world.agent("agent-a")
    assert contents(agent.context().openai()[1:]) == ["q1", "q2", "q3"]
    for trigger in (q2, q2.id):
        ctx = agent.context(message=trigger)
        assert contents(ctx.openai()[1:]) == ["q1", "q2"]
        assert ctx.report.incoming_count == 2
    assert contents(agent.context(message=q1).openai()[1:]) == ["q1"]


def test_context_is_deterministic(world: World, db_path: str, mem: Recall) -> None:
    conversation(world, 3)
    world.post("maria", "side note", chat="side")
    world.agent("agent-a").observe({"time": 1, "position": [0, 0]})
    mem.refresh_index()  # the same data: the index caught up, so no vector arrives between builds
    first = json.dumps(world.agent("agent-a").context(max_tokens=2000).to_dict())
    second = json.dumps(world.agent("agent-a").context(max_tokens=2000).to_dict())
    assert first == second
    mem.close()
    with Recall(db_path, settings=Settings()) as reopened:
        third = json.dumps(reopened.world("w").agent("agent-a").context(max_tokens=2000).to_dict())
    assert third == first


def test_system_prompt_is_static_across_calls(world: World) -> None:
    agent = world.agent("agent-b")
    before = agent.context().openai()[0]
    seed_000(world)
    after = agent.context().openai()[0]
    assert before == after == {"role": "system", "content": AGENT_B_PROMPT}


# -- observations -------------------------------------------------------------------------


def test_observations_appear_as_one_system_message(world: World, db_path: str) -> None:
    agent = world.agent("agent-a")
    agent.observe({"time": 1, "position": [0, 0]})
    agent.act({"time": 2, "kind": "move", "position": [2, 1]})
    agent.act({"time": 3, "kind": "text", "target": "Alice", "utterance": "Coins here!"})
    stored = table_counts(db_path)["observations"]

    current = {"time": 4, "position": [2, 1], "collected": 1, "items": {"coin": [[2, 1.6], [2.4, 0.4]]}}
    ctx = agent.context(observation=current)
    messages = ctx.openai()
    observation_messages = [m for m in messages[1:] if m["role"] == "system"]
    assert len(observation_messages) == 1
    text = observation_messages[0]["content"]
    assert (
        "I am at position (2, 1), have collected 1 coin; I see 2 coins at: (2, 1.6), (2.4, 0.4); "
        "I see no other agents" in text
    )
    assert "At time 1s I was at position (0, 0)" in text
    assert "At time 2s I moved to position (2, 1)" in text
    assert 'At time 3s I texted Alice: "Coins here!"' in text
    assert ctx.report.sections["observations"] > 0

    # The current observation was not stored: the next context has no present tense.
    assert table_counts(db_path)["observations"] == stored
    later = agent.context().openai()
    assert len(later) == 2
    assert "I am at position" not in later[1]["content"]
    assert "At time 4s" not in later[1]["content"]
    # Other agents do not see agent-a's observations.
    assert len(world.agent("agent-b").context().openai()) == 1


def test_invalid_observation_is_rejected(world: World, db_path: str) -> None:
    agent = world.agent("agent-a")
    with pytest.raises(InvalidInputError) as info:
        agent.observe({"position": [0, 0]})
    assert info.value.field == "time"
    with pytest.raises(InvalidInputError) as info:
        agent.observe({"time": 1, "position": "north"})
    assert info.value.field == "position"
    with pytest.raises(InvalidInputError) as info:
        agent.act({"time": 1})
    assert info.value.field == "kind"
    assert table_counts(db_path)["observations"] == 0


# -- turn limit, inbox --------------------------------------------------------------------


def test_turn_limit_through_the_api(mem: Recall) -> None:
    w = mem.world("t", create=True, turn_limit=2)
    w.add_human("maria")
    a = w.add_agent("agent-a")
    w.add_agent("agent-b")
    w.post("maria", "hi both")
    assert [a.record_llm_call(), a.record_llm_call()] == [1, 2]

    from_b = w.post("agent-b", "@agent-a what do you think?")
    decision = a.decide(from_b)
    assert decision.respond is False
    assert decision.notice == "@human Turn limit reached (2 LLM calls). Please take control of the conversation."
    assert decision.turn_count == 2

    # The notice itself, once posted, is answered by nobody.
    notice = w.post("agent-a", decision.notice)
    assert w.agent("agent-b").decide(notice).respond is False

    # A human message gives the turns back.
    from_maria = w.post("maria", "@agent-a go on")
    assert mem.service.agent_state.turn_count("t", "agent-a") == 0
    resumed = a.decide(from_maria)
    assert (resumed.respond, resumed.notice) == (True, None)


def test_decide_on_a_human_message_resets_the_counter(mem: Recall) -> None:
    w = mem.world("t", create=True, turn_limit=2)
    w.add_human("maria")
    a = w.add_agent("agent-a")
    question = w.post("maria", "@agent-a hello")
    a.record_llm_call()
    a.record_llm_call()
    decision = a.decide(question.id)
    assert (decision.respond, decision.turn_count) == (True, 0)
    assert mem.service.agent_state.turn_count("t", "agent-a") == 0


def test_decide_follows_the_response_rule(world: World) -> None:
    a, b = world.agent("agent-a"), world.agent("agent-b")
    public = world.post("maria", "hello everyone")
    to_b = world.post("maria", "@agent-b only you")
    own = world.post("agent-a", "@agent-b my own message")
    assert (a.decide(public).respond, b.decide(public).respond) == (True, True)
    assert (a.decide(to_b).respond, b.decide(to_b).respond) == (False, True)
    assert a.decide(own).respond is False
    assert b.decide(own).respond is True


def test_inbox_and_ack_through_the_api(world: World) -> None:
    m1 = world.post("maria", "first")
    m2 = world.post("agent-b", "second", chat="c1")
    m3 = world.post("maria", "third")
    a, b = world.agent("agent-a"), world.agent("agent-b")

    assert a.inbox() == [m1, m2, m3]
    assert b.inbox() == [m1, m3]  # not its own message
    assert a.inbox(limit=1) == [m1]
    assert a.ack([m1, m2.id]) == 2
    assert a.ack([m1]) == 0
    assert a.inbox() == [m3]
    assert a.inbox(unread_only=False) == [m1, m2, m3]
    assert [read for _, read in world.service.deliveries.inbox("w", "agent-a", unread_only=False)] == [
        True,
        True,
        False,
    ]

    assert b.inbox(mark_read=True, limit=1) == [m1]
    assert b.inbox() == [m3]
    assert b.inbox(mark_read=True) == [m3]
    assert b.inbox() == []
    assert b.inbox(unread_only=False) == [m1, m3]
    # Reading is per agent.
    assert a.inbox() == [m3]


def test_inbox_rejects_bad_arguments(world: World) -> None:
    with pytest.raises(InvalidInputError) as info:
        world.agent("agent-a").inbox(limit=0)
    assert info.value.field == "limit"
    with pytest.raises(InvalidInputError):
        world.agent("agent-a").ack([0])


@pytest.mark.parametrize("op", ["inbox", "record_llm_call", "observe"])
def test_service_uses_the_stored_world_id(world: World, op: str) -> None:
    service = world.service
    world.post("maria", "hello")
    if op == "inbox":
        assert len(service.deliveries.inbox("W", "agent-a")) == 1
    elif op == "record_llm_call":
        service.agent_state.record_llm_call("W", "agent-a")
        assert service.agent_state.turn_count("w", "agent-a") == 1
    else:
        service.agent_state.observe("W", "agent-a", {"time": 1, "position": [0, 0]})
        assert service.contexts.build_context("w", "agent-a").report.sections["observations"] > 0


# -- settings -----------------------------------------------------------------------------


def test_settings_from_env() -> None:
    settings = Settings.from_env({"RECALL_HISTORY_LIMIT": "7", "RECALL_MODEL": "gpt-4", "UNRELATED": "x"})
    assert settings.history_limit == 7
    assert settings.model == "gpt-4"
    assert settings.turn_limit == Settings().turn_limit
    assert Settings.from_env({}) == Settings()


def test_settings_from_env_bad_value() -> None:
    with pytest.raises(InvalidInputError) as info:
        Settings.from_env({"RECALL_HISTORY_LIMIT": "seven"})
    assert info.value.field == "RECALL_HISTORY_LIMIT"
    assert "'seven'" in str(info.value)


def test_recall_reads_settings_from_the_environment(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECALL_HISTORY_LIMIT", "7")
    with Recall(db_path) as mem:
        assert mem.service.settings.history_limit == 7
        w = mem.world("w", create=True)
        w.add_agent("agent-a")
        assert w.agent("agent-a").context().report.history_limit == 7


def test_settings_from_env_rejects_negative_numbers() -> None:
    with pytest.raises(InvalidInputError, match="RECALL_HISTORY_LIMIT"):
        Settings.from_env({"RECALL_HISTORY_LIMIT": "-1"})


def test_chats_are_listed_in_order_of_their_first_message(world: World) -> None:
    world.post_many(
        [
            PostRequest("maria", "one", chat_id="c1", created_at=1),
            PostRequest("maria", "two", chat_id="c2", created_at=2),
            PostRequest("maria", "three", chat_id="c1", created_at=3),
        ]
    )
    assert world.chats() == [("c1", 2), ("c2", 1)]


def test_a_participant_added_by_another_process_gets_the_next_posts(db_path: str) -> None:
    """Cached rosters are dropped when another connection writes a participant."""
    with Recall(db_path) as first, Recall(db_path) as second:
        world = first.world("w", create=True)
        world.add_human("maria")
        world.add_agent("agent-a")
        world.post("maria", "before")  # fills first's caches
        second.world("w").add_agent("late")
        message = world.post("maria", "after")
        assert first.service.worlds.recipients(world.key, message) == ("agent-a", "late")
        assert [m.content for m in second.world("w").agent("late").inbox()] == ["after"]


def test_other_writes_of_another_process_keep_the_cached_roster(db_path: str) -> None:
    """Another process's posts, memories and index work (the server's index worker commits
    vectors all the time) leave the cached worlds and rosters as they are: only a write to
    worlds or participants drops them."""
    with Recall(db_path) as first, Recall(db_path) as second:
        world = first.world("w", create=True)
        world.add_human("maria")
        world.add_agent("agent-a")
        world.post("maria", "before")  # fills first's caches
        roster = first.service.worlds.roster(world.key)
        other = second.world("w")
        other.post("maria", "from the other process")
        other.agent("agent-a").add_memory("a note of its own")
        second.refresh_index()
        assert first.service.worlds.roster(world.key) is roster
        other.add_agent("late")
        assert "late" in first.service.worlds.roster(world.key).agents


@pytest.mark.parametrize("huge", [2**63, 2**70])
def test_ids_beyond_64_bits_are_invalid_input_not_a_crash(world: World, huge: int) -> None:
    agent = world.agent("agent-a")
    with pytest.raises(InvalidInputError) as err:
        agent.ack([huge])
    assert err.value.field == "ids"
    with pytest.raises(InvalidInputError):
        world.post("maria", "hi", parent=huge)
    with pytest.raises(InvalidInputError):
        world.messages(after=huge)
    with pytest.raises(InvalidInputError):
        agent.context(message=huge)
