"""Shared fixtures: a `Recall` on a real SQLite file, and a small world to post in."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from recall import Recall, Settings, World

#: The PostgreSQL fixtures (`postgres_url`: a fresh database on a throwaway server) for any test.
pytest_plugins = ["tests.pg"]

AGENT_A_PROMPT = "You are agent A. You answer questions."
AGENT_B_PROMPT = "You are agent B. You review answers."


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests (marked `starts_first`) go first. pytest-xdist hands tests out in this
    order: a long test collected late kept one worker busy after the other had finished."""
    items.sort(key=lambda item: item.get_closest_marker("starts_first") is None)


#: Texts whose vectors a test process keeps (`_each_text_embedded_once`): 1.5 KB each.
EMBEDDED_KEPT = 50_000
_embedded: OrderedDict[str, NDArray[np.float32]] = OrderedDict()


@pytest.fixture(autouse=True)
def _each_text_embedded_once(request: pytest.FixtureRequest) -> Iterator[None]:
    """The bundled model embeds each text once per test process: the tests of both stores post the
    same texts, and a 256-word-piece passage costs the model about 0.2 s on one of CI's cores
    (a long reply has dozens). The vectors are the model's own, computed the first time. Tests
    of the model itself (marked `model_itself`) run it every time."""
    if request.node.get_closest_marker("model_itself"):
        yield
        return
    from recall.search.embeddings import MiniLMEmbedder

    real = MiniLMEmbedder.embed

    def embed(self: MiniLMEmbedder, texts: Sequence[str]) -> NDArray[np.float32]:
        missing = [text for text in dict.fromkeys(map(str, texts)) if text not in _embedded]
        if missing:
            _embedded.update(zip(missing, real(self, missing), strict=True))
            while len(_embedded) > EMBEDDED_KEPT:
                _embedded.popitem(last=False)
        found = [_embedded.get(str(text)) for text in texts]
        if not found or any(vector is None for vector in found):  # none, or pushed out meanwhile
            return real(self, texts)
        return np.stack(found)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MiniLMEmbedder, "embed", embed)
        yield


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store on each backend: a SQLite file, then a PostgreSQL database (by URL) with
    recall's schema, as a first open leaves it."""
    if request.param == "sqlite":
        return str(tmp_path / "recall.db")
    return str(request.getfixturevalue("postgres_store_url"))


@pytest.fixture(params=["sqlite", "postgres"])
def empty_store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where nothing is yet, on each backend: a SQLite path, then an empty PostgreSQL database
    (for the tests that build a store as an older recall left it)."""
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
