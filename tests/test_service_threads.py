"""The service used from several threads at once (as the server's worker threads use it): a read
that raced a write never leaves a stale cache behind."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from recall import Recall, Settings
from recall.store.records import ParticipantRecord


@pytest.fixture(params=["sqlite", "postgres"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Recall]:
    location = str(tmp_path / "r.db") if request.param == "sqlite" else str(request.getfixturevalue("postgres_url"))
    recall = Recall(location, Settings(embeddings="none", index_interval=0))
    try:
        yield recall
    finally:
        recall.close()


def test_a_roster_read_during_an_added_agent_is_not_cached_stale(mem: Recall) -> None:
    world = mem.world("w", create=True)
    world.add_human("maria")
    service = mem.service
    store = service.store
    read_done, go_on = threading.Event(), threading.Event()
    real_list = store.list_participants

    def slow_list(world_id: str) -> list[ParticipantRecord]:
        # The reader has read the participants, but not yet cached them, when the agent is added.
        people = real_list(world_id)
        if threading.current_thread().name == "reader":
            read_done.set()
            go_on.wait(10)
        return people

    store.list_participants = slow_list  # type: ignore[method-assign]
    reader = threading.Thread(target=lambda: service.worlds.roster("w"), name="reader")
    reader.start()
    assert read_done.wait(10)
    world.add_agent("bot")
    go_on.set()
    reader.join(10)
    assert not reader.is_alive()

    assert service.worlds.get_agent("w", "bot").id == "bot"
    assert "bot" in service.worlds.roster("w").agents
