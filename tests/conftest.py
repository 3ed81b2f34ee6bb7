"""Shared fixtures: a `Recall` on a real SQLite file, and a small world to post in."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from recall import Recall, Settings, World

#: The PostgreSQL fixtures (`postgres_url`: a fresh database on a throwaway server) for any test.
pytest_plugins = ["tests.pg"]

AGENT_A_PROMPT = "You are agent A. You answer questions."
AGENT_B_PROMPT = "You are agent B. You review answers."


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store on each backend: a SQLite file, then a PostgreSQL database (by URL)."""
    if request.param == "sqlite":
        return str(tmp_path / "recall.db")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def open_on_store(store_location: str) -> Iterator[Callable[[Settings], Recall]]:
    """Opens a `Recall` on `store_location` (both backends) with the settings given; each is
    closed after the test."""
    opened: list[Recall] = []

    def open_(settings: Settings) -> Recall:
        opened.append(Recall(store_location, settings))
        return opened[-1]

    yield open_
    for recall in opened:
        recall.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the `mem` fixture keeps its SQLite file."""
    return tmp_path / "recall.db"


@pytest.fixture
def mem(db_path: Path) -> Iterator[Recall]:
    """A `Recall` on a fresh SQLite file, with default settings (not the environment's)."""
    recall = Recall(db_path, settings=Settings())
    yield recall
    recall.close()


@pytest.fixture
def world(mem: Recall) -> World:
    """World `w`: human `maria`, agents `agent-a` and `agent-b`."""
    w = mem.world("w", create=True)
    w.add_human("maria")
    w.add_agent("agent-a", system_prompt=AGENT_A_PROMPT)
    w.add_agent("agent-b", system_prompt=AGENT_B_PROMPT)
    return w
