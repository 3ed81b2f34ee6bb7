"""The store protocol on SQLite and PostgreSQL (real databases): schema, durability, deliveries,
inbox, counters. Tests of SQLite's own files and migrations are marked `sqlite_only`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from recall.app.posting import PostRequest
from recall.app.service import RecallService
from recall.core.models import SenderType
from recall.errors import InvalidInputError, RecallError, StoreVersionError
from recall.store import open_store
from recall.store.base import Store
from recall.store.records import NewMessage, ParticipantRecord, WorldRecord
from recall.store.rows import MEMORY_PAGE
from recall.store.sqlite import SQLiteStore
from recall.store.sqlite import sqlite3 as store_sqlite3
from recall.store.sqlite_schema import LATEST_VERSION, MIGRATIONS

T0 = datetime(2025, 5, 8, 13, 56, tzinfo=UTC)
AGENTS = ("agent-a", "agent-b", "agent-c")


# -- helpers ------------------------------------------------------------------------------


def rows(path: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read the database with a separate connection, not through the store.

    For SQLite it uses the store's own SQLite library: two SQLite copies in one process do not
    share POSIX locks, and closing one can checkpoint the other's WAL away.
    """
    if isinstance(path, str) and path.startswith("postgresql://"):
        with psycopg.connect(path) as conn:
            return [tuple(r) for r in conn.execute(sql.replace("?", "%s"), params).fetchall()]
    with closing(store_sqlite3.connect(str(path))) as db:
        return db.execute(sql, params).fetchall()


#: Deliveries with the agent's id and the message's chat spelled out, for readable checks.
DELIVERIES = (
    "(SELECT p.id AS agent_id, m.chat_id AS chat_id, d.message_id, d.own, d.read_at FROM deliveries d"
    " JOIN participants p ON p.key = d.agent_key JOIN messages m ON m.id = d.message_id)"
)


def count(path: Path | str, table: str) -> int:
    return int(rows(path, f"SELECT COUNT(*) FROM {table}")[0][0])


def human(content: str, chat: str | None = None, **kw: Any) -> NewMessage:
    """A message by maria, delivered to every agent, resetting their turns."""
    return NewMessage(
        sender="maria",
        sender_type=SenderType.HUMAN,
        content=content,
        created_at=kw.pop("created_at", T0),
        chat_id=chat,
        recipients=kw.pop("recipients", AGENTS),
        reset_turns=True,
        **kw,
    )


def by_agent(agent: str, content: str, chat: str | None = None, **kw: Any) -> NewMessage:
    """A message by an agent: its own memory row, delivered to the other agents."""
    return NewMessage(
        sender=agent,
        sender_type=SenderType.AGENT,
        content=content,
        created_at=kw.pop("created_at", T0),
        chat_id=chat,
        recipients=tuple(a for a in AGENTS if a != agent),
        author_agent=agent,
        **kw,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest) -> str:
    """The store the test runs on (tests of SQLite's own behaviour restrict it to sqlite)."""
    return str(request.param)


#: What each database raises when a write breaks a constraint.
INTEGRITY_ERRORS = (store_sqlite3.IntegrityError, psycopg.IntegrityError)

#: Restricts a test to the SQLite store (WAL, files, its migrations).
sqlite_only = pytest.mark.parametrize("location", ["sqlite"], indirect=True)


@pytest.fixture
def path(location: str, request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """The SQLite file, or the PostgreSQL URL, of the test's store."""
    if location == "sqlite":
        return tmp_path / "store.db"
    return str(request.getfixturevalue("postgres_url"))


def _populate(store: Store) -> None:
    store.create_world("w", "W", None, T0)
    store.add_participant(ParticipantRecord("w", "maria", "human", T0))
    for agent in AGENTS:
        store.add_participant(ParticipantRecord("w", agent, "agent", T0, {"system_prompt": f"I am {agent}."}))


@pytest.fixture
def store(path: Path | str) -> Iterator[Store]:
    """A store with world `w`: human maria and agents agent-a, agent-b, agent-c."""
    s = open_store(str(path))
    _populate(s)
    yield s
    s.close()


@pytest.fixture
def service(store: Store) -> Iterator[RecallService]:
    service = RecallService(store)
    yield service
    service.stop_background()  # stops its background indexer before the store closes


# -- schema and files ---------------------------------------------------------------------


@sqlite_only
def test_wal_mode_is_on(store: SQLiteStore, path: Path) -> None:
    assert rows(path, "PRAGMA journal_mode") == [("wal",)]


@sqlite_only
def test_fresh_file_has_every_migration_in_order(store: SQLiteStore, path: Path) -> None:
    assert [r[0] for r in rows(path, "SELECT version FROM schema_migrations")] == [v for v, _ in MIGRATIONS]
    assert store.schema_version() == LATEST_VERSION


@sqlite_only
def test_an_older_file_is_upgraded_and_keeps_its_data(path: Path) -> None:
    with closing(store_sqlite3.connect(str(path))) as db:
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
        for statement in MIGRATIONS[0][1].split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute("INSERT INTO schema_migrations VALUES (1, 0.0)")
        db.execute("INSERT INTO worlds (id, name, turn_limit, created_at) VALUES ('old', 'Old', NULL, 0.0)")
        db.commit()
    store = SQLiteStore(path)
    try:
        assert store.schema_version() == LATEST_VERSION
        assert store.get_world("old") == WorldRecord("old", "Old", datetime.fromtimestamp(0, UTC), None, "")
    finally:
        store.close()


@sqlite_only
def test_a_version_4_search_index_gains_the_previous_turn_as_context(path: Path) -> None:
    """Migration 5 fills `context` for messages indexed before it and rebuilds the FTS table."""
    turns = [("", "maria: Where did you go on holiday?"), ("", "bob: Lisbon, in May."), ("x", "ann: hi")]
    with closing(store_sqlite3.connect(str(path))) as db:
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
        for version, sql in MIGRATIONS[:4]:
            for statement in sql.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute("INSERT INTO schema_migrations VALUES (?, 0.0)", (version,))
        db.execute("INSERT INTO worlds (id, name, turn_limit, created_at) VALUES ('w', 'W', NULL, 0.0)")
        for number, (chat, text) in enumerate(turns, start=1):
            sender, content = text.split(": ")
            db.execute(
                "INSERT INTO messages (id, world_id, chat_id, sender, sender_type, content, created_at)"
                " VALUES (?, 'w', ?, ?, 'human', ?, 0.0)",
                (number, chat, sender, content),
            )
            # What version 4's indexer wrote: the item and its FTS row, one text column.
            db.execute(
                "INSERT INTO search_items (id, tenant, space, kind, source_id, owner, chat_id, created_at, text)"
                " VALUES (?, '', 'w', 'message', ?, '', ?, 0.0, ?)",
                (number, number, chat or None, text),
            )
            db.execute("INSERT INTO search_fts (rowid, text) VALUES (?, ?)", (number, text))
        db.commit()
    store = SQLiteStore(path)
    try:
        assert store.schema_version() == LATEST_VERSION
        contexts = store._read("SELECT source_id, context FROM search_items ORDER BY id")
        assert [tuple(r) for r in contexts] == [(1, ""), (2, turns[0][1]), (3, "")]
        # Since version 7 the words are searched in memory, from the items themselves.
        assert not store._read("SELECT 1 FROM sqlite_master WHERE name = 'search_fts'")
    finally:
        store.close()


@sqlite_only
def test_reopening_does_not_rerun_migrations(store: SQLiteStore, path: Path) -> None:
    store.append_messages("w", [human("hello")])
    before = rows(path, "SELECT version, applied_at FROM schema_migrations")
    store.close()
    for _ in range(2):
        reopened = SQLiteStore(path)
        assert reopened.schema_version() == LATEST_VERSION
        reopened.close()
    assert rows(path, "SELECT version, applied_at FROM schema_migrations") == before
    assert count(path, "messages") == 1


@sqlite_only
def test_newer_schema_version_is_refused_with_a_clear_message(store: SQLiteStore, path: Path) -> None:
    store.close()
    with closing(store_sqlite3.connect(str(path))) as db:
        db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (LATEST_VERSION + 1, 0.0))
        db.commit()
    with pytest.raises(StoreVersionError) as info:
        SQLiteStore(path)
    message = str(info.value)
    assert isinstance(info.value, RecallError)
    assert str(path) in message
    assert f"schema version {LATEST_VERSION + 1}" in message
    assert "upgrade recall" in message
    # Refusing changed nothing.
    assert [r[0] for r in rows(path, "SELECT version FROM schema_migrations ORDER BY version")] == [
        *(v for v, _ in MIGRATIONS),
        LATEST_VERSION + 1,
    ]


def test_store_creates_missing_parent_directories(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b" / "recall.db"
    s = SQLiteStore(nested)
    s.close()
    assert nested.is_file()


@sqlite_only
def test_data_survives_close_and_reopen(store: SQLiteStore, path: Path) -> None:
    stored = store.append_messages("w", [human("one", chat="c1"), by_agent("agent-a", "two", chat="c1")])
    store.mark_read("w", "agent-b", [stored[0].id], T0)
    store.set_turn_count("w", "agent-a", 3)
    store.add_observation("w", "agent-a", "observation", 1.0, {"time": 1.0}, T0)
    store.close()

    reopened = SQLiteStore(path)
    try:
        assert reopened.get_world("w") is not None
        assert [p.id for p in reopened.list_participants("w")] == ["agent-a", "agent-b", "agent-c", "maria"]
        assert reopened.get_participant("w", "agent-a").profile == {"system_prompt": "I am agent-a."}  # type: ignore[union-attr]
        assert [reopened.get_message("w", m.id) for m in stored] == stored
        assert [(m.id, read) for m, read in reopened.inbox("w", "agent-b", unread_only=False)] == [
            (stored[0].id, True),
            (stored[1].id, False),
        ]
        assert reopened.turn_count("w", "agent-a") == 3
        assert reopened.recent_observations("w", "agent-a", "observation", 5) == [{"time": 1.0}]
        assert reopened.heard_counts("w", "agent-a") == {"c1": 2}
    finally:
        reopened.close()


# -- messages -----------------------------------------------------------------------------


def test_message_ids_are_strictly_increasing(store: SQLiteStore, path: Path) -> None:
    ids = [m.id for m in store.append_messages("w", [human(f"m{i}") for i in range(5)])]
    ids += [store.append_messages("w", [human("single")])[0].id]
    store.close()
    reopened = open_store(str(path))
    try:
        ids += [reopened.append_messages("w", [human("after reopen")])[0].id]
    finally:
        reopened.close()
    assert all(a < b for a, b in zip(ids, ids[1:], strict=False))
    assert ids[0] >= 1


def test_message_fields_round_trip(store: SQLiteStore) -> None:
    parent = store.append_messages("w", [human("first", chat="c1")])[0]
    new = NewMessage(
        sender="agent-a",
        sender_type=SenderType.AGENT,
        content="@agent-b look at this, cc @maria",
        created_at=T0 + timedelta(seconds=1),
        chat_id="c1",
        channel="sms",
        parent_id=parent.id,
        mentions=("agent-b", "maria"),
        addressed=("agent-b",),
        metadata={"source": "import", "n": [1, 2]},
        recipients=("agent-b", "agent-c"),
        author_agent="agent-a",
    )
    returned = store.append_messages("w", [new])[0]
    read = store.get_message("w", returned.id)
    assert read == returned
    assert (read.sender, read.sender_type, read.chat_id, read.channel, read.parent_id) == (  # type: ignore[union-attr]
        "agent-a",
        SenderType.AGENT,
        "c1",
        "sms",
        parent.id,
    )
    assert read.mentions == ("agent-b", "maria")  # type: ignore[union-attr]
    assert read.addressed == ("agent-b",)  # type: ignore[union-attr]
    assert read.metadata == {"source": "import", "n": [1, 2]}  # type: ignore[union-attr]
    assert store.get_message("w", 999) is None


def test_default_chat_is_none_not_empty_string(store: SQLiteStore) -> None:
    m = store.append_messages("w", [human("hi")])[0]
    assert m.chat_id is None
    assert store.get_message("w", m.id).chat_id is None  # type: ignore[union-attr]
    assert store.list_chats("w") == [(None, 1)]


@pytest.fixture
def non_utc_timezone() -> Iterator[None]:
    """Run with a local time zone far from UTC, so a naive time read as local would show."""
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is not available on this platform")
    mp = pytest.MonkeyPatch()
    mp.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    mp.undo()
    time.tzset()


@pytest.mark.usefixtures("non_utc_timezone")
@pytest.mark.parametrize(
    "given",
    [
        pytest.param(datetime(2025, 5, 8, 13, 56, 0, 123456, tzinfo=UTC), id="aware-datetime"),
        pytest.param(datetime(2025, 5, 8, 15, 56, 0, 123456, tzinfo=timezone(timedelta(hours=2))), id="offset"),
        pytest.param("2025-05-08T13:56:00.123456Z", id="iso-z"),
        pytest.param(T0.timestamp() + 0.123456, id="epoch-float"),
        pytest.param(datetime(2025, 5, 8, 13, 56, 0, 123456), id="naive-is-utc"),
    ],
)
def test_caller_supplied_timestamps_are_kept(service: RecallService, path: Path, given: object) -> None:
    expected = datetime(2025, 5, 8, 13, 56, 0, 123456, tzinfo=UTC)
    posted = service.posting.post("w", PostRequest("maria", "imported", created_at=given))  # type: ignore[arg-type]
    assert posted.created_at == expected
    assert posted.created_at.utcoffset() == timedelta(0)
    stored = service.posting.get_message("w", posted.id)
    assert stored.created_at == expected
    assert stored.created_at.tzinfo is not None
    assert rows(path, "SELECT created_at FROM messages WHERE id = ?", (posted.id,))[0][0] == pytest.approx(
        expected.timestamp(), abs=1e-6
    )


def test_bad_timestamp_text_is_rejected(service: RecallService, path: Path) -> None:
    with pytest.raises(InvalidInputError) as info:
        service.posting.post("w", PostRequest("maria", "imported", created_at="yesterday"))
    assert info.value.field == "created_at"
    assert count(path, "messages") == 0


def test_message_is_stored_once_and_delivered_to_every_agent_but_its_author(service: RecallService, path: Path) -> None:
    m = service.posting.post("w", PostRequest("agent-a", "@agent-b over to you"))
    assert count(path, "messages") == 1
    assert rows(
        path, f"SELECT agent_id, own, read_at FROM {DELIVERIES} WHERE message_id = ? ORDER BY agent_id", (m.id,)
    ) == [
        ("agent-a", 1, None),
        ("agent-b", 0, None),
        ("agent-c", 0, None),
    ]
    # The author remembers it but does not get it in its inbox.
    assert service.deliveries.inbox("w", "agent-a") == []
    assert [x.id for x, _ in service.deliveries.inbox("w", "agent-b")] == [m.id]
    assert [x.id for x in service.store.iter_heard("w", "agent-a", None)] == [m.id]

    h = service.posting.post("w", PostRequest("maria", "hello all"))
    assert rows(path, f"SELECT agent_id, own FROM {DELIVERIES} WHERE message_id = ? ORDER BY agent_id", (h.id,)) == [
        ("agent-a", 0),
        ("agent-b", 0),
        ("agent-c", 0),
    ]
    assert count(path, "messages") == 2


# -- inbox --------------------------------------------------------------------------------


def test_inbox_is_fifo_and_unread_until_marked(store: SQLiteStore) -> None:
    stored = store.append_messages("w", [human("one"), human("two", chat="c1"), by_agent("agent-c", "three")])
    ids = [m.id for m in stored]

    assert [m.id for m, _ in store.inbox("w", "agent-a")] == ids
    assert all(read is False for _, read in store.inbox("w", "agent-a"))
    assert [m.id for m, _ in store.inbox("w", "agent-a", limit=2)] == ids[:2]
    # agent-c wrote the third one: not in its inbox.
    assert [m.id for m, _ in store.inbox("w", "agent-c")] == ids[:2]

    assert store.mark_read("w", "agent-a", [ids[1]], T0) == 1
    assert store.mark_read("w", "agent-a", [ids[1]], T0) == 0  # already read
    assert [m.id for m, _ in store.inbox("w", "agent-a")] == [ids[0], ids[2]]
    assert [(m.id, read) for m, read in store.inbox("w", "agent-a", unread_only=False)] == [
        (ids[0], False),
        (ids[1], True),
        (ids[2], False),
    ]
    # Reading is per agent.
    assert [m.id for m, _ in store.inbox("w", "agent-b")] == ids


def test_mark_read_ignores_own_and_unknown_messages(store: SQLiteStore) -> None:
    own = store.append_messages("w", [by_agent("agent-a", "mine")])[0]
    assert store.mark_read("w", "agent-a", [own.id, 12345], T0) == 0
    assert store.inbox("w", "agent-a", unread_only=False) == []


# -- idempotency and atomicity -------------------------------------------------------------


def test_idempotency_key_stores_one_message(service: RecallService, path: Path) -> None:
    first = service.posting.post("w", PostRequest("maria", "hello", idempotency_key="k-1"))
    again = service.posting.post("w", PostRequest("maria", "hello (retry)", idempotency_key="k-1"))
    assert again.id == first.id
    assert again.content == "hello"
    assert again == first
    assert count(path, "messages") == 1
    assert count(path, "deliveries") == 3
    assert service.store.heard_counts("w", "agent-a") == {None: 1}
    other = service.posting.post("w", PostRequest("maria", "hello", idempotency_key="k-2"))
    assert other.id > first.id
    assert count(path, "messages") == 2


def test_idempotency_key_repeated_inside_one_batch(service: RecallService, path: Path) -> None:
    out = service.posting.post_many(
        "w", [PostRequest("maria", "a", idempotency_key="k"), PostRequest("maria", "b", idempotency_key="k")]
    )
    assert out[0].id == out[1].id
    assert out[1].content == "a"
    assert count(path, "messages") == 1
    assert count(path, "deliveries") == 3


def test_a_retried_batch_of_more_keys_than_one_list_holds_stores_each_once(service: RecallService, path: Path) -> None:
    # 600 keys: on SQLite more than one `IN (?, ...)` list takes, so they go as one JSON array.
    batch = [PostRequest("maria", f"note {i}", idempotency_key=f"K-{i}") for i in range(600)]
    first = service.posting.post_many("w", batch)
    again = service.posting.post_many("w", [*batch, PostRequest("maria", "new", idempotency_key="K-600")])
    assert [m.id for m in again[:600]] == [m.id for m in first]
    assert count(path, "messages") == 601


def _table_counts(path: Path) -> dict[str, int]:
    return {t: count(path, t) for t in ("messages", "deliveries", "chats", "memory_counts")}


def test_post_many_with_one_invalid_message_stores_nothing(service: RecallService, path: Path) -> None:
    service.posting.post("w", PostRequest("maria", "before"))
    before = _table_counts(path)
    batch = [
        PostRequest("maria", "ok 1", chat_id="c1"),
        PostRequest("stranger", "who am I?", chat_id="c1"),
        PostRequest("maria", "ok 2", chat_id="c1"),
    ]
    with pytest.raises(InvalidInputError) as info:
        service.posting.post_many("w", batch)
    assert info.value.field == "sender"
    assert _table_counts(path) == before


@pytest.mark.parametrize("bad_at", [1, 2], ids=["second", "last"])
def test_append_messages_is_atomic_when_the_database_rejects_one(store: SQLiteStore, path: Path, bad_at: int) -> None:
    store.append_messages("w", [human("before")])
    before = _table_counts(path)
    batch = [human("good 1", chat="c1"), human("good 2", chat="c1")]
    # A duplicate recipient violates the deliveries PRIMARY KEY inside the transaction.
    batch.insert(bad_at, human("bad", chat="c1", recipients=("agent-a", "agent-a")))
    with pytest.raises(INTEGRITY_ERRORS):
        store.append_messages("w", batch)
    assert _table_counts(path) == before
    assert rows(path, "SELECT content FROM messages ORDER BY id") == [("before",)]
    assert store.list_chats("w") == [(None, 1)]
    assert store.heard_counts("w", "agent-a") == {None: 1}
    # The store is still usable: no transaction was left open.
    after = store.append_messages("w", [human("after")])[0]
    assert store.get_message("w", after.id) is not None


def test_append_messages_rolls_back_turn_resets_too(store: SQLiteStore) -> None:
    store.set_turn_count("w", "agent-a", 4)
    with pytest.raises(INTEGRITY_ERRORS):
        store.append_messages("w", [human("resets"), human("bad", recipients=("agent-b", "agent-b"))])
    assert store.turn_count("w", "agent-a") == 4


# -- memory -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [MEMORY_PAGE * 2 + 7, MEMORY_PAGE * 2], ids=["partial-last-page", "exact-pages"])
def test_iter_memory_is_newest_first_across_pages_and_only_that_chat(store: SQLiteStore, n: int) -> None:
    batch: list[NewMessage] = []
    for i in range(n):
        batch.append(human(f"main {i}"))
        if i % 3 == 0:
            batch.append(human(f"side {i}", chat="side"))
    stored = store.append_messages("w", batch)
    main_ids = [m.id for m in stored if m.chat_id is None]
    side_ids = [m.id for m in stored if m.chat_id == "side"]

    memory = list(store.iter_heard("w", "agent-a", None))
    assert len(memory) == n
    assert [m.id for m in memory] == sorted(main_ids, reverse=True)
    assert {m.chat_id for m in memory} == {None}
    assert [m.id for m in store.iter_heard("w", "agent-a", "side")] == sorted(side_ids, reverse=True)
    # `before` starts the scan below a message id.
    cut = main_ids[100]
    assert [m.id for m in store.iter_heard("w", "agent-a", None, before=cut)] == sorted(main_ids[:100], reverse=True)
    assert list(store.iter_heard("w", "agent-a", "nowhere")) == []


def test_iter_memory_holds_own_messages_and_deliveries_only(store: SQLiteStore) -> None:
    a = store.append_messages("w", [by_agent("agent-a", "from a")])[0]
    h = store.append_messages("w", [human("to a and c only", recipients=("agent-a", "agent-c"))])[0]
    assert [m.id for m in store.iter_heard("w", "agent-a", None)] == [h.id, a.id]
    assert [m.id for m in store.iter_heard("w", "agent-b", None)] == [a.id]


def test_agent_added_later_remembers_only_what_came_after(store: SQLiteStore) -> None:
    early = store.append_messages("w", [human(f"early {i}") for i in range(MEMORY_PAGE + 3)])
    store.add_participant(ParticipantRecord("w", "agent-d", "agent", T0))
    late = store.append_messages("w", [human("late", recipients=(*AGENTS, "agent-d"))])
    assert [m.id for m in store.iter_heard("w", "agent-d", None)] == [late[0].id]
    assert [m.id for m in store.iter_heard("w", "agent-a", None)][-1] == early[0].id
    assert store.heard_counts("w", "agent-d") == {None: 1}


def test_delivery_to_a_non_agent_stores_nothing(store: SQLiteStore, path: Path) -> None:
    with pytest.raises(RecallError, match="'maria'"):
        store.append_messages("w", [human("ok"), human("to a human", recipients=("maria",))])
    assert count(path, "messages") == 0


def test_memory_counts_per_chat_are_exact(store: SQLiteStore, path: Path) -> None:
    store.append_messages(
        "w",
        [human("1"), human("2", chat="c1"), by_agent("agent-a", "3", chat="c1"), by_agent("agent-b", "4", chat="c2")],
    )
    store.append_messages("w", [human("5", chat="c2", recipients=("agent-b",))])
    assert store.heard_counts("w", "agent-a") == {None: 1, "c1": 2, "c2": 1}
    assert store.heard_counts("w", "agent-b") == {None: 1, "c1": 2, "c2": 2}
    assert store.heard_counts("w", "agent-c") == {None: 1, "c1": 2, "c2": 1}
    assert store.heard_counts("w", "maria") == {}
    # They agree with the deliveries themselves.
    for agent in AGENTS:
        actual = dict(
            rows(path, f"SELECT chat_id, COUNT(*) FROM {DELIVERIES} WHERE agent_id = ? GROUP BY chat_id", (agent,))
        )
        assert {k or None: v for k, v in actual.items()} == store.heard_counts("w", agent)


# -- turn counters ------------------------------------------------------------------------


def test_turn_counters_increment_and_set(store: SQLiteStore) -> None:
    assert store.turn_count("w", "agent-a") == 0
    assert store.increment_turns("w", "agent-a") == 1
    assert store.increment_turns("w", "agent-a") == 2
    assert store.turn_count("w", "agent-a") == 2
    store.set_turn_count("w", "agent-a", 7)
    assert store.turn_count("w", "agent-a") == 7
    assert store.increment_turns("w", "agent-a") == 8
    assert store.turn_count("w", "agent-b") == 0


def test_a_reset_gives_turns_back_to_its_recipients_only(store: Store) -> None:
    """Counters above zero among the recipients go to 0, whatever the case the recipient list
    spells them in; other agents' counters, and the counters already at 0, stay as they are."""
    store.set_turn_count("w", "agent-a", 3)
    store.set_turn_count("w", "agent-b", 2)
    store.set_turn_count("w", "agent-c", 0)
    store.append_messages("w", [human("only a and c", recipients=("AGENT-A", "agent-c"))])
    assert [store.turn_count("w", a) for a in AGENTS] == [0, 2, 0]
    store.append_messages("w", [human("nobody running among them", recipients=("agent-a",))])
    assert [store.turn_count("w", a) for a in AGENTS] == [0, 2, 0]
    store.append_messages("w", [human("everyone")])
    assert [store.turn_count("w", a) for a in AGENTS] == [0, 0, 0]


def test_human_message_resets_recipients_turns_agent_message_does_not(service: RecallService) -> None:
    store = service.store
    for agent in AGENTS:
        store.set_turn_count("w", agent, 3)
    service.posting.post("w", PostRequest("agent-a", "@agent-b your turn"))
    assert [store.turn_count("w", a) for a in AGENTS] == [3, 3, 3]
    service.posting.post("w", PostRequest("maria", "@agent-b stop, please"))
    assert [store.turn_count("w", a) for a in AGENTS] == [0, 0, 0]
    store.set_turn_count("w", "agent-c", 2)
    service.posting.post("w", PostRequest("world", "the sun sets"))
    assert store.turn_count("w", "agent-c") == 0
    store.set_turn_count("w", "agent-c", 2)
    service.posting.post("w", PostRequest("system", "maintenance at noon"))
    assert store.turn_count("w", "agent-c") == 2


# -- observations -------------------------------------------------------------------------


def test_observations_and_actions_round_trip(store: SQLiteStore) -> None:
    ids = [
        store.add_observation("w", "agent-a", "observation", float(t), {"time": float(t), "position": [t, 0.5]}, T0)
        for t in range(1, 5)
    ]
    assert ids == sorted(ids) and len(set(ids)) == 4
    store.add_observation("w", "agent-a", "action", 2.5, {"time": 2.5, "kind": "move", "position": [2.0, 1.0]}, T0)
    store.add_observation("w", "agent-b", "observation", 9.0, {"time": 9.0}, T0)

    assert store.recent_observations("w", "agent-a", "observation", 2) == [
        {"time": 3.0, "position": [3, 0.5]},
        {"time": 4.0, "position": [4, 0.5]},
    ]
    assert len(store.recent_observations("w", "agent-a", "observation", 50)) == 4
    assert store.recent_observations("w", "agent-a", "action", 50) == [
        {"time": 2.5, "kind": "move", "position": [2.0, 1.0]}
    ]
    assert store.recent_observations("w", "agent-b", "observation", 50) == [{"time": 9.0}]
    assert store.recent_observations("w", "agent-c", "observation", 50) == []


# -- crashes ------------------------------------------------------------------------------

CRASHING_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from recall import Recall, Settings
    from recall.core.models import SenderType
    from recall.store.base import NewMessage

    path, n, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    mem = Recall(path, settings=Settings())
    w = mem.world("w", create=True)
    w.add_human("maria")
    w.add_agent("agent-a")
    w.add_agent("agent-b")
    for i in range(n):
        w.post("maria", f"message {i}")

    def die():
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(1)

    if how == "mid-write":
        # Die inside the next write transaction, after its first INSERT.
        def batch():
            yield NewMessage("maria", SenderType.HUMAN, "never committed", w.messages()[0].created_at,
                             recipients=("agent-a", "agent-b"))
            die()
        mem.service.store.append_messages("w", batch())
    die()
    """
)


@pytest.mark.parametrize("how", ["exit", "kill", "mid-write"])
def test_crash_loses_nothing_committed(tmp_path: Path, how: str) -> None:
    if how == "kill" and sys.platform == "win32":
        pytest.skip("no SIGKILL on Windows")
    path = tmp_path / "crash.db"
    n = 25
    result = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, str(path), str(n), how],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    # The writer never closed the file: the committed data is still in the WAL.
    assert Path(f"{path}-wal").exists()

    store = SQLiteStore(path)
    try:
        messages = store.list_messages("w", None, limit=1000)
        assert [m.content for m in messages] == [f"message {i}" for i in range(n)]
        for agent in ("agent-a", "agent-b"):
            inbox = store.inbox("w", agent, limit=1000)
            assert [m.id for m, _ in inbox] == [m.id for m in messages]
            assert all(read is False for _, read in inbox)
            assert store.heard_counts("w", agent) == {None: n}
        assert count(path, "deliveries") == 2 * n
    finally:
        store.close()


def test_unread_inbox_stays_exact_whatever_the_order_of_acks(store: SQLiteStore) -> None:
    """The inbox starts its scan at a low-water mark; acks in any order never hide an unread one."""
    import random

    rng = random.Random(3)
    ids = [m.id for m in store.append_messages("w", [human(f"m{i}") for i in range(150)])]
    own = store.append_messages("w", [by_agent("agent-a", "mine")])[0].id
    unread = set(ids)
    stuck = ids[7]  # never acknowledged
    for _ in range(40):
        chosen = rng.sample(sorted(unread - {stuck}), k=min(len(unread) - 1, rng.randint(1, 9)))
        store.mark_read("w", "agent-a", chosen, T0)
        unread -= set(chosen)
        assert [m.id for m, _ in store.inbox("w", "agent-a", limit=1000)] == sorted(unread)
        assert [m.id for m, _ in store.inbox("w", "agent-a", limit=3, after=stuck)] == sorted(
            u for u in unread if u > stuck
        )[:3]
    later = store.append_messages("w", [human("later")])[0].id
    assert [m.id for m, _ in store.inbox("w", "agent-a", limit=1000)] == [*sorted(unread), later]
    assert own not in {m.id for m, _ in store.inbox("w", "agent-a", unread_only=False, limit=1000)}


def test_both_stores_keep_the_inbox_low_water_mark(store: Store, path: Path | str) -> None:
    """Every delivery below an agent's mark is read, so the unread scan starts there instead of
    passing over everything the agent ever read: the mark rises, as acks allow, to the first
    unread delivery, or one past the agent's last delivery once all are read."""

    def mark(agent: str) -> int | None:
        found = rows(
            path,
            "SELECT i.low FROM inbox_marks i JOIN participants p ON p.key = i.agent_key WHERE p.id = ?",
            (agent,),
        )
        return int(found[0][0]) if found else None

    ids = [m.id for m in store.append_messages("w", [human(f"m{i}") for i in range(12)])]
    own = store.append_messages("w", [by_agent("agent-a", "mine")])[0].id
    assert mark("agent-a") is None
    assert store.mark_read("w", "agent-a", ids[3:6], T0) == 3
    assert mark("agent-a") == ids[0]  # ids[0] is still unread
    assert store.mark_read("w", "agent-a", ids[:3], T0) == 3
    assert mark("agent-a") == ids[6]
    assert [m.id for m, _ in store.inbox("w", "agent-a")] == ids[6:]
    assert store.mark_read("w", "agent-a", ids[6:], T0) == 6
    assert mark("agent-a") == own + 1  # its own message is not in its inbox, but is its last delivery
    assert store.mark_read("w", "agent-a", ids, T0) == 0
    assert mark("agent-a") == own + 1
    later = store.append_messages("w", [human("later")])[0].id
    assert [m.id for m, _ in store.inbox("w", "agent-a")] == [later]
    assert [(m.id, read) for m, read in store.inbox("w", "agent-a", unread_only=False, limit=3, after=ids[-2])] == [
        (ids[-1], True),
        (later, False),
    ]
    assert mark("agent-b") is None  # only the agent that acknowledged has a mark
    assert [m.id for m, _ in store.inbox("w", "agent-b", limit=1000)] == [*ids, own, later]
