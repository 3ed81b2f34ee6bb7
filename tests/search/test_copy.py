"""The search index's copy in memory (`search/copy.py`) on both stores: what another connection
(another process, another replica) writes and deletes is searched at once, and on PostgreSQL
the transactions that change items commit in the order of their counts."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from recall import Recall, Settings
from recall.search.base import IndexItem
from recall.search.index import SearchIndex


def _memory(text: str, source_id: int) -> IndexItem:
    return IndexItem("", "w", "memory", source_id, "", text, datetime(2025, 1, 1, tzinfo=UTC), importance=5)


def _index(mem: Recall) -> SearchIndex:
    index = mem.service.index
    assert index is not None
    return index


def _found(index: SearchIndex, query: str) -> list[int]:
    return [h.source_id for h in index.search(query, tenant="", space="w", method="bm25", k=5)]


def test_words_written_and_deleted_by_another_connection_are_searched_at_once(store_location: str) -> None:
    settings = Settings(index_interval=0, embeddings="none")
    with (
        Recall(store_location, settings=settings) as writer_mem,
        Recall(store_location, settings=settings) as reader_mem,
    ):
        writer, reader = _index(writer_mem), _index(reader_mem)
        assert _found(reader, "keys") == []  # the reader's copy is made, empty
        writer.add([_memory("The spare keys are under the blue flower pot.", 1)])
        assert _found(reader, "keys") == [1]
        writer.add([_memory("Spare keys for the van are in the drawer.", 2), _memory("A parcel came.", 3)])
        assert sorted(_found(reader, "spare keys")) == [1, 2]
        writer.remove("memory", [1])
        assert _found(reader, "spare keys") == [2]
        writer.add([_memory("The keys went back under the pot.", 1)])  # the same item, written again
        assert sorted(_found(reader, "keys")) == [1, 2]
        assert _found(reader, "parcel") == [3]


def test_items_stored_before_any_change_was_counted_are_copied(store_location: str) -> None:
    # Rows a migration copies (or an older version wrote) carry no count (changed = 0).
    with Recall(store_location, settings=Settings(index_interval=0, embeddings="none")) as mem:
        store = mem.service.store
        with store._write() as db:
            db.execute(
                mem.service.index._backend.sql(  # type: ignore[union-attr]
                    "INSERT INTO search_items (tenant, space, kind, source_id, owner, importance, created_at, text)"
                    " VALUES ('', 'w', 'memory', 7, '', 5, 0, 'an old note about lighthouses')"
                )
            )
        assert _found(_index(mem), "lighthouses") == [7]


def test_a_transaction_that_counts_a_change_holds_the_count_until_it_commits(postgres_url: str) -> None:
    """So counts commit in order: a copy that has read count n has every change up to n."""
    with Recall(postgres_url, settings=Settings(index_interval=0, embeddings="none")) as mem:
        _index(mem).add([_memory("first", 1)])  # the counter row exists
    bump = (
        "INSERT INTO search_state (name, value) VALUES ('search_changed', 1)"
        " ON CONFLICT (name) DO UPDATE SET value = search_state.value + 1 RETURNING value"
    )
    with psycopg.connect(postgres_url) as first, psycopg.connect(postgres_url) as second:
        (counted,) = first.execute(bump).fetchone()  # type: ignore[misc]  # its transaction stays open
        second.execute("SET lock_timeout = '50ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            second.execute(bump)
        second.rollback()
        first.commit()
        (after,) = second.execute(bump).fetchone()  # type: ignore[misc]
        assert after == counted + 1


def test_which_items_have_a_vector_follows_the_indexer_of_another_connection(store_location: str) -> None:
    settings = Settings(index_interval=0)
    with (
        Recall(store_location, settings=settings) as writer_mem,
        Recall(store_location, settings=settings) as reader_mem,
    ):
        writer, reader = _index(writer_mem), _index(reader_mem)
        writer.add([_memory("The spare keys are under the blue flower pot.", 1)])
        (item,) = [r.id for r in reader.ranked("keys", tenant="", space="w", method="bm25")]
        assert reader._backend.copy.in_step().unembedded([item]) == [item]
        # Not embedded yet: a hybrid search scores it by its meaning all the same.
        assert [h.source_id for h in reader.search("where did I leave my keys?", tenant="", space="w")] == [1]
        assert writer.catch_up() > 0
        assert reader._backend.copy.in_step().unembedded([item]) == []
        assert [h.source_id for h in reader.search("where did I leave my keys?", tenant="", space="w")] == [1]


def test_vectors_stored_before_version_12_are_kept_and_searched_from_the_copy(postgres_url: str) -> None:
    """Up to version 11 a PostgreSQL store searched its vectors in pgvector (a column typed with
    the model's length, an HNSW index); since 12 the copy in memory reads them from the column.
    The migration drops the index and keeps every vector."""
    settings = Settings(index_interval=0)
    with Recall(postgres_url, settings=settings) as mem:
        index = _index(mem)
        index.add([_memory("The spare keys are under the blue flower pot.", 1), _memory("A parcel came.", 2)])
        assert index.catch_up() > 0
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # the store as version 11 left it
        conn.execute("ALTER TABLE search_items ALTER COLUMN embedding TYPE vector(384)")
        conn.execute("CREATE INDEX search_items_embedding ON search_items USING hnsw (embedding vector_cosine_ops)")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 12")  # 13 runs again: it may
    with Recall(postgres_url, settings=settings) as mem:
        index = _index(mem)
        assert index.pending() == 0  # nothing to embed again
        hits = index.search("where did I leave my keys?", tenant="", space="w", method="vector", k=2)
        assert [h.source_id for h in hits] == [1, 2]
        assert hits[0].score > hits[1].score
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT to_regclass('search_items_embedding')").fetchone() == (None,)
        assert conn.execute("SELECT COUNT(embedding) FROM search_items").fetchone() == (2,)
