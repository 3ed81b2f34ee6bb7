"""`recall serve` / `make run`: the demo world appears in an empty store, and only there."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from recall.api import Recall
from recall.server.config import ServerConfig
from recall.server.main import build_app

#: A keyless server answers only loopback host names (not TestClient's default `testserver`).
LOOPBACK = "http://127.0.0.1"


def test_demo_world_is_created_only_in_an_empty_store(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    with TestClient(build_app(ServerConfig(db=str(db), demo=True)), base_url=LOOPBACK) as client:
        world = client.get("/v1/worlds/support").json()
        assert world["agents"] == ["billing", "tech", "triage"]
        assert len(client.get("/v1/worlds/support/messages").json()["messages"]) == 7

    other = tmp_path / "mine.db"
    with Recall(other) as mem:
        mem.world("mine", create=True)
    with TestClient(build_app(ServerConfig(db=str(other), demo=True)), base_url=LOOPBACK) as client:
        assert [w["id"] for w in client.get("/v1/worlds").json()["worlds"]] == ["mine"]
