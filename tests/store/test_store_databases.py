"""The tests' pool of PostgreSQL databases (tests/pg.py): a database handed out again is as a
first open leaves it, and one still in use or changed in shape is never handed out again."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import sql

from recall import Recall, Settings
from tests.pg import StoreDatabases

QUICK = Settings(embeddings="none", index_interval=0)


def snapshot(url: str) -> dict[str, Any]:
    """Every table's rows (`schema_migrations` without its times) and every sequence's state."""
    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        found: dict[str, Any] = {}
        for table in tables:
            rows = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table))).fetchall()
            found[table] = sorted(map(repr, [r[:1] if table == "schema_migrations" else r for r in rows]))
        for name, last, called in conn.execute(
            "SELECT sequencename, last_value, last_value IS NOT NULL FROM pg_sequences WHERE schemaname = 'public'"
        ):
            found[f"sequence {name}"] = (last, called)
        return found


def use(url: str) -> None:
    with Recall(url, QUICK) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("bot")
        world.post("maria", "@bot my parcel is late")
        mem.scope("user:maria").add("Prefers e-mail")


@pytest.fixture
def pool(postgres_server: str) -> StoreDatabases:
    return StoreDatabases(postgres_server)


def test_a_database_given_back_is_handed_out_as_a_first_open_leaves_it(pool: StoreDatabases) -> None:
    url = pool.take()
    fresh = snapshot(url)
    assert fresh["schema_migrations"] and not fresh["messages"]
    use(url)
    assert snapshot(url) != fresh
    pool.give_back(url)
    again = pool.take()
    assert again == url
    assert snapshot(again) == fresh
    use(again)  # ids start where a new store's do
    with psycopg.connect(again) as conn:
        assert conn.execute("SELECT min(id) FROM messages").fetchone() == (1,)


def test_a_database_still_connected_to_is_not_handed_out_again(pool: StoreDatabases) -> None:
    url = pool.take()
    with psycopg.connect(url):
        pool.give_back(url)
    assert pool.take() != url


def test_a_database_whose_schema_a_test_changed_is_not_handed_out_again(pool: StoreDatabases) -> None:
    url = pool.take()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE messages ADD COLUMN extra TEXT")
    pool.give_back(url)
    other = pool.take()
    assert other != url
    with psycopg.connect(other) as conn:
        columns = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'messages'")
        assert "extra" not in [row[0] for row in columns]
