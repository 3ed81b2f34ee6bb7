"""Filtered vector search returns the same hits on SQLite and PostgreSQL: the `k` nearest items
that pass the filters, in similarity order, however few items pass them and however far they
lie from the query (a graph walk must not filter only the candidates it found)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from recall.search.base import IndexItem
from recall.search.index import SearchIndex
from recall.search.sqlite import SQLiteSearch
from recall.store import open_store
from recall.store.base import Store
from recall.store.sqlite import SQLiteStore
from tests.pg import new_database

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
RARE_AT = T0 + timedelta(days=1)


@dataclass(frozen=True)
class CircleEmbedder:
    """A text "deg:A" is the unit vector at angle A degrees in one plane, so its cosine
    similarity to the query "deg:0" falls as A grows and the test knows every item's rank.
    (The real model would make each store take seconds to embed the 1,300 items.)"""

    name: str = "test-circle"
    dim: int = 4

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            angle = math.radians(float(text.removeprefix("deg:")))
            vectors[row, 0], vectors[row, 1] = math.cos(angle), math.sin(angle)
        return vectors


#: Items near the query: (source id, angle); the first 250 by maria, the rest by ann.
FILLER = [(i, 10 + 0.06 * (i - 1)) for i in range(1, 1301)]
MARIA = 250
#: Five facts far from the query, each of them rare in every field a search filters on.
RARE = [(2000 + j, 150.0 + 5 * j) for j in range(1, 6)]
#: Five items alone in a small space of the same tenant.
SMALL = [(3000 + j, 115.0 + 5 * j) for j in range(1, 6)]


def _items() -> list[IndexItem]:
    filler = [
        IndexItem(
            "", "w", "memory", source_id, "", f"deg:{angle}", T0 + timedelta(seconds=source_id),
            chat_id="main", sender="maria" if source_id <= MARIA else "ann", importance=1,
        )
        for source_id, angle in FILLER
    ]  # fmt: skip
    rare = [
        IndexItem(
            "", "w", "fact", source_id, "bob", f"deg:{angle}", RARE_AT + timedelta(seconds=source_id),
            chat_id="side", sender="bob", importance=9,
        )
        for source_id, angle in RARE
    ]  # fmt: skip
    small = [IndexItem("", "small", "memory", i, "", f"deg:{angle}", T0) for i, angle in SMALL]
    return filler + rare + small


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def index(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SearchIndex]:
    """The search index of a fresh store of each kind, holding `_items()`, all embedded (built
    once: the tests only search)."""
    if request.param == "sqlite":
        store: Store = open_store(str(tmp_path_factory.mktemp("vector") / "store.db"))
        assert isinstance(store, SQLiteStore)
        search = SearchIndex(SQLiteSearch(store), CircleEmbedder())
    else:
        search = _postgres_index(new_database(request.getfixturevalue("postgres_server")))
    search.add(_items())
    search.catch_up(batch=500)
    assert search.pending() == 0
    yield search
    search._store.close()


def _postgres_index(url: str) -> SearchIndex:
    from recall.search.postgres import PostgresSearch
    from recall.store.postgres import PostgresStore

    store = open_store(url)
    assert isinstance(store, PostgresStore)
    return SearchIndex(PostgresSearch(store), CircleEmbedder())


def _nearest(items: list[tuple[int, float]], k: int) -> list[int]:
    return [source_id for source_id, _ in sorted(items, key=lambda item: item[1])[:k]]


def _vector_search(index: SearchIndex, k: int, **filters: Any) -> list[int]:
    hits = index.search("deg:0", tenant="", method="vector", k=k, **{"space": "w", **filters})
    similarities = [h.similarity for h in hits]
    assert similarities == sorted(similarities, reverse=True), filters  # best first
    return [h.source_id for h in hits]


RARE_FILTERS: list[dict[str, Any]] = [
    {"chat_id": "side"},
    {"sender": "bob"},
    {"since": RARE_AT},
    {"kinds": ["fact"]},
    {"owners": ["bob"]},
    {"min_importance": 5},
]


@pytest.mark.parametrize("filters", RARE_FILTERS, ids=[next(iter(f)) for f in RARE_FILTERS])
def test_a_selective_filter_finds_every_match_however_far(index: SearchIndex, filters: dict[str, Any]) -> None:
    """Only five items pass the filter, and 1,300 others lie nearer the query than any of them."""
    assert _vector_search(index, 3, **filters) == _nearest(RARE, 3)
    assert _vector_search(index, 5, **filters) == _nearest(RARE, 5)
    assert _vector_search(index, 50, **filters) == _nearest(RARE, 5)  # all there are


def test_a_small_space_finds_its_own_items(index: SearchIndex) -> None:
    """A space holding five items, in a table whose other space holds 1,305 nearer ones."""
    assert _vector_search(index, 5, space="small") == _nearest(SMALL, 5)
    assert _vector_search(index, 10, space="SMALL") == _nearest(SMALL, 5)  # space ids ignore case


def test_a_filter_matching_many_items_beyond_the_nearest_finds_the_nearest_of_them(index: SearchIndex) -> None:
    """Ann's 1,050 items all lie beyond maria's 250 nearest ones."""
    ann = [(i, angle) for i, angle in FILLER if i > MARIA]
    assert _vector_search(index, 10, sender="ann") == _nearest(ann, 10)
    assert _vector_search(index, 400, sender="ann") == _nearest(ann, 400)


def test_k_above_the_graph_search_width_returns_k_hits(index: SearchIndex) -> None:
    assert _vector_search(index, 300) == _nearest(FILLER + RARE, 300)
    assert _vector_search(index, 1000, sender="maria") == _nearest(FILLER[:MARIA], MARIA)
