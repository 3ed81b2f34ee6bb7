"""World ids are unique per tenant (spec §8), on SQLite and PostgreSQL: a world has its
tenant's id and a key unique in the store, which every per-world row refers to. Stores made
before (SQLite schema 5, PostgreSQL schema 3) migrate and keep their worlds and messages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from recall.core.models import SenderType
from recall.errors import ConflictError
from recall.store import open_store
from recall.store.base import Store
from recall.store.migrate import migrate
from recall.store.records import NewMessage, ParticipantRecord
from recall.store.rows import new_world_key, world_id_of
from tests.old_stores import store_before

T0 = datetime(2025, 5, 8, 13, 56, tzinfo=UTC)
#: The schema versions before world ids became per tenant.
SQLITE_BEFORE = 5
POSTGRES_BEFORE = 3


@pytest.fixture
def store(store_location: str) -> Iterator[Store]:
    s = open_store(store_location)
    yield s
    s.close()


def hello(sender: str, content: str, recipients: tuple[str, ...] = ("bot",)) -> NewMessage:
    return NewMessage(sender, SenderType.HUMAN, content, T0, recipients=recipients, reset_turns=True)


def populate(store: Store, key: str) -> None:
    store.add_participant(ParticipantRecord(key, "maria", "human", T0))
    store.add_participant(ParticipantRecord(key, "bot", "agent", T0))


# -- keys -----------------------------------------------------------------------------------


def test_a_new_worlds_key_is_its_id_unless_taken_and_always_ends_with_it() -> None:
    assert new_world_key("alpha", "acme", lambda k: False) == "alpha"
    taken = {"alpha", "acme/alpha", "ACME/alpha"}
    assert new_world_key("alpha", "acme", lambda k: k in taken) == "acme/2/alpha"
    assert new_world_key("alpha", "a/b", lambda k: k == "alpha") == "a/b/alpha"
    for key in ("alpha", "acme/alpha", "a/b/alpha", "acme/2/alpha"):
        assert world_id_of(key) == "alpha"


def test_two_tenants_each_have_a_world_of_one_id(store: Store) -> None:
    acme = store.create_world("alpha", "Acme alpha", None, T0, "acme")
    globex = store.create_world("alpha", "Globex alpha", 3, T0, "globex")
    assert (acme.id, acme.key, acme.tenant) == ("alpha", "alpha", "acme")
    assert (globex.id, globex.tenant, globex.turn_limit) == ("alpha", "globex", 3)
    assert globex.key != acme.key and world_id_of(globex.key) == "alpha"

    assert store.get_world(globex.key) == globex
    assert store.find_worlds("ALPHA", "globex") == [globex]
    assert store.find_worlds("alpha", "initech") == []
    assert store.find_worlds("alpha") == [acme, globex]
    assert store.list_worlds("globex") == [globex]

    # Each world's rows are its own, and what the store returns carries the tenant's id.
    for world in (acme, globex):
        populate(store, world.key)
        assert [p.world_id for p in store.list_participants(world.key)] == ["alpha", "alpha"]
        stored = store.append_messages(world.key, [hello("maria", f"@bot {world.tenant}")])
        assert stored[0].world_id == "alpha"
    for world in (acme, globex):
        assert [m.content for m in store.list_messages(world.key)] == [f"@bot {world.tenant}"]
        assert [(m.content, m.world_id) for m, _ in store.inbox(world.key, "bot")] == [
            (f"@bot {world.tenant}", "alpha")
        ]


def test_a_tenant_cannot_have_two_worlds_of_one_id(store: Store) -> None:
    store.create_world("alpha", "A", None, T0, "acme")
    with pytest.raises(ConflictError, match="world 'ALPHA' already exists"):
        store.create_world("ALPHA", "again", None, T0, "acme")
    assert [w.name for w in store.find_worlds("alpha")] == ["A"]


# -- migrating stores made before ------------------------------------------------------------


#: What a store of before held: world `old` of tenant acme, its agent, a delivered message.
OLD_ROWS = (
    "INSERT INTO worlds (id, name, turn_limit, created_at, tenant) VALUES ('old', 'Old', 5, 0.0, 'acme')",
    "INSERT INTO participants (key, world_id, id, kind, created_at) VALUES (1, 'old', 'bot', 'agent', 0.0)",
    "INSERT INTO messages (id, world_id, chat_id, sender, sender_type, content, created_at)"
    " VALUES (1, 'old', '', 'maria', 'human', '@bot hello from before', 0.0)",
    "INSERT INTO deliveries (agent_key, message_id) VALUES (1, 1)",
    "INSERT INTO chats (world_id, id, created_at) VALUES ('old', '', 0.0)",
)


def test_a_store_from_before_migrates_and_keeps_its_worlds_and_messages(empty_store_location: str) -> None:
    # The rows name their ids: the sequences continue after them, as recall's would.
    store_before(
        empty_store_location, SQLITE_BEFORE, POSTGRES_BEFORE, OLD_ROWS, {"messages_id_seq": 2, "participants.key": 2}
    )
    store = open_store(empty_store_location)
    try:
        old = store.get_world("old")
        assert old is not None
        assert (old.id, old.key, old.name, old.turn_limit, old.tenant) == ("old", "old", "Old", 5, "acme")
        assert store.find_worlds("old", "acme") == [old]
        assert [(m.content, m.world_id) for m in store.list_messages("old")] == [("@bot hello from before", "old")]
        assert [m.content for m, _ in store.inbox("old", "bot")] == ["@bot hello from before"]

        # Another tenant's `old` is a world of its own; the per-world rows' references to the
        # worlds' keys survived the migration (a new participant and post check them).
        mine = store.create_world("old", "Mine", None, T0, "globex")
        assert mine.key != "old"
        populate(store, mine.key)
        store.append_messages(mine.key, [hello("maria", "@bot new")])
        assert [m.content for m in store.list_messages(mine.key)] == ["@bot new"]
        assert [m.content for m in store.list_messages("old")] == ["@bot hello from before"]
        with pytest.raises(ConflictError):
            store.create_world("OLD", "again", None, T0, "acme")
    finally:
        store.close()


def test_migrate_copies_each_tenants_world_to_postgres(tmp_path: Path, postgres_url: str) -> None:
    source = str(tmp_path / "source.db")
    with closing(open_store(source)) as store:
        for tenant in ("acme", "globex"):
            world = store.create_world("alpha", tenant, None, T0, tenant)
            populate(store, world.key)
            store.append_messages(world.key, [hello("maria", f"@bot {tenant}")])
    migrate(source, postgres_url)
    with closing(open_store(postgres_url)) as copied:
        for tenant in ("acme", "globex"):
            [world] = copied.find_worlds("alpha", tenant)
            assert [m.content for m in copied.list_messages(world.key)] == [f"@bot {tenant}"]
        # The copy goes on assigning keys that do not collide.
        third = copied.create_world("alpha", "third", None, T0, "initech")
        assert third.key not in {w.key for w in copied.find_worlds("alpha") if w.tenant != "initech"}
