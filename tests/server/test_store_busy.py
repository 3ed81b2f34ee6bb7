"""Issue 23, point 10: while another process writes the SQLite store (an import, a CLI command),
a post used to wait 5 s and answer a bare 500 ("database is locked"). It now waits the
configured `busy_timeout` and answers 503 with Retry-After, having written nothing."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from recall import Recall, Settings, StoreBusyError
from recall.server.config import ServerConfig
from recall.store.sqlite import sqlite3
from tests.server.conftest import post, start_server, stop_server


def test_a_post_while_another_process_writes_is_503_and_stores_nothing(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    server = start_server(db, ServerConfig(rate_limit=0), Settings(busy_timeout=0.2, index_interval=0))
    try:
        with server.client() as c:
            c.post("/v1/worlds", json={"id": "w"}).raise_for_status()
            c.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
            with closing(sqlite3.connect(db, isolation_level=None)) as other:
                other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
                response = c.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "hello"})
                assert response.status_code == 503, response.text
                assert response.headers["retry-after"] == "1"
                assert response.json()["error"]["type"] == "store_busy"
                other.execute("ROLLBACK")
            assert c.get("/v1/worlds/w/messages").json()["messages"] == []
            assert post(c, "maria", "hello again")["content"] == "hello again"
    finally:
        stop_server(server)


def test_the_python_api_raises_store_busy_after_the_setting(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    with Recall(db, Settings(busy_timeout=0.1, index_interval=0)) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        with closing(sqlite3.connect(db, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreBusyError, match=r"waited 0\.1 s") as raised:
                world.post("maria", "hello")
            other.execute("ROLLBACK")
        assert raised.value.retry_after == 1
        assert world.messages() == []
        assert world.post("maria", "hello").content == "hello"
