"""The search index in memory: exact answers (checked against brute force), every filter, `k`
hits whenever `k` pass the filters (with the HNSW graph too), BM25 over postings, changes, and a
SQLite store's copy kept in step with what another process writes and deletes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from recall import Recall, Settings
from recall.search import local as local_module
from recall.search import local_partition
from recall.search.base import Filters, IndexItem
from recall.search.embeddings import Embedder, default_embedder
from recall.search.local import LocalIndex
from recall.search.local_partition import LocalRow
from recall.search.open import search_index
from recall.store.sqlite import SQLiteStore

DIM = 16
ALL = Filters("t", "w", ("message", "memory", "fact"), None, None, None, None, None, None)


def _unit(rng: np.random.Generator, n: int) -> NDArray[np.float32]:
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _rows(rng: np.random.Generator, n: int, start: int = 1) -> list[LocalRow]:
    """n rows of one partition, with the filter fields varied by the item id."""
    vectors = _unit(rng, n)
    return [
        LocalRow(
            item_id=i,
            tenant="t",
            space="W" if i % 2 else "w",  # spaces compare without case
            kind=("message", "memory", "fact")[i % 3],
            owner=("", "Ann", "bob")[i % 3],
            chat_id=None if i % 5 == 0 else f"chat-{i % 5}",
            sender=f"s{i % 7}",
            importance=None if i % 3 != 1 else i % 10 + 1,
            created_at=float(i),
            text=f"item {i} about " + ("parcels" if i % 4 == 0 else "invoices"),
            context="",
            vector=vectors[i - start],
        )
        for i in range(start, start + n)
    ]


def _brute_force(rows: Sequence[LocalRow], query: NDArray[np.float32], f: Filters, k: int) -> list[int]:
    def passes(r: LocalRow) -> bool:
        return (
            r.kind in f.kinds
            and (f.owners is None or r.owner.lower() in f.owners)
            and (f.chat_id is None or (r.chat_id or "") == f.chat_id)
            and (f.sender is None or r.sender == f.sender)
            and (f.since is None or r.created_at >= f.since)
            and (f.until is None or r.created_at < f.until)
            and (f.min_importance is None or (r.importance is not None and r.importance >= f.min_importance))
        )

    kept = [r for r in rows if passes(r)]
    kept.sort(key=lambda r: -float(r.vector @ query))
    return [r.item_id for r in kept[:k]]


FILTERS = [
    ALL,
    replace(ALL, kinds=("memory",)),
    replace(ALL, owners=("", "ann")),
    replace(ALL, owners=("nobody",)),
    replace(ALL, chat_id=""),
    replace(ALL, chat_id="chat-3"),
    replace(ALL, sender="s4"),
    replace(ALL, since=100.0, until=300.0),
    replace(ALL, min_importance=6),
    replace(ALL, kinds=("fact",), chat_id="chat-1", sender="s2"),
]


@pytest.fixture(params=["exact", "graph"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Exact scans only, or an HNSW graph for every partition of 100 rows or more (and the
    exact path only when at most 20 rows pass)."""
    if request.param == "graph":
        monkeypatch.setattr(local_module, "GRAPH_MIN_ROWS", 100)
        monkeypatch.setattr(local_partition, "EXACT_MAX_ROWS", 20)
    yield request.param


@pytest.mark.parametrize("f", FILTERS, ids=lambda f: ",".join(f"{k}={v}" for k, v in vars(f).items() if v))
def test_nearest_is_the_brute_force_answer_under_every_filter(mode: str, f: Filters) -> None:
    rng = np.random.default_rng(7)
    rows = _rows(rng, 3000)
    index = LocalIndex(DIM)
    index.apply([(r.item_id, r) for r in rows], synced=1)
    if mode == "graph":
        assert index.build_graphs() == 3000
    by_id = {r.item_id: r for r in rows}
    for query in _unit(rng, 10):
        passing = set(_brute_force(rows, query, f, len(rows)))
        for k in (1, 10, 50):
            found = index.nearest(query, f, k)
            expected = _brute_force(rows, query, f, k)
            # Every hit passes the filters and its distance is exact; as many as exist up to k.
            assert len(found) == len(expected)
            ids = [item_id for item_id, _ in found]
            np.testing.assert_allclose(
                [d for _, d in found], [1 - float(by_id[i].vector @ query) for i in ids], atol=1e-5
            )
            assert set(ids) <= passing
            if mode == "exact":
                assert ids == expected
            else:  # approximate: the graph may miss a neighbour, never returns a wrong one
                assert len(set(ids) & set(expected)) >= 0.8 * len(expected)


def test_rows_added_after_the_graph_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "GRAPH_MIN_ROWS", 100)
    monkeypatch.setattr(local_partition, "EXACT_MAX_ROWS", 10)
    rng = np.random.default_rng(1)
    index = LocalIndex(DIM)
    first = _rows(rng, 500)
    index.apply([(r.item_id, r) for r in first], synced=1)
    assert index.build_graphs() == 500
    late = _rows(rng, 3, start=1000)
    index.apply([(r.item_id, r) for r in late], synced=2)
    for row in late:
        assert index.nearest(row.vector, ALL, 1)[0][0] == row.item_id
    assert index.build_graphs() == 3  # the graph is extended, not rebuilt
    assert index.build_graphs() == 0


def _built(seed: int, n: int, synced: int) -> tuple[np.random.Generator, list[LocalRow], LocalIndex]:
    """n rows in an index, with a graph where the `mode` fixture asks for one."""
    rng = np.random.default_rng(seed)
    rows = _rows(rng, n)
    index = LocalIndex(DIM)
    index.apply([(r.item_id, r) for r in rows], synced=synced)
    index.build_graphs()
    return rng, rows, index


def test_deleted_and_replaced_items(mode: str) -> None:
    _, rows, index = _built(3, 400, synced=5)
    target = rows[10]
    assert index.nearest(target.vector, ALL, 1)[0][0] == target.item_id
    index.apply([(target.item_id, None)], synced=6)  # a tombstone
    assert target.item_id not in [i for i, _ in index.nearest(target.vector, ALL, 400)]
    moved = replace(rows[20], vector=target.vector)  # the same item with a new vector
    index.apply([(moved.item_id, moved)], synced=7)
    assert index.nearest(target.vector, ALL, 1)[0][0] == moved.item_id
    assert [i for i, _ in index.nearest(target.vector, ALL, 400)].count(moved.item_id) == 1
    assert len(index) == 399 and index.synced == 7
    assert index.nearest(target.vector, replace(ALL, tenant="other"), 5) == []
    assert index.nearest(target.vector, replace(ALL, space="elsewhere"), 5) == []


def test_filters_kept_between_searches_follow_rows_added_and_removed(mode: str) -> None:
    # A partition keeps the rows recent filters passed; a row added or removed must count at once.
    rng, rows, index = _built(5, 300, synced=1)
    ann = replace(ALL, owners=("ann",), kinds=("memory",))
    query = _unit(rng, 1)[0]
    before = {i for i, _ in index.nearest(query, ann, 300)}
    assert before == set(_brute_force(rows, query, ann, 300))
    late = replace(_rows(rng, 1, start=1000)[0], owner="Ann", kind="memory", vector=query, text="a parcel")
    index.apply([(late.item_id, late)], synced=2)
    assert index.nearest(query, ann, 1)[0][0] == late.item_id
    assert late.item_id in [i for i, _ in index.keyword(["parcel"], ann, 300)]
    index.apply([(late.item_id, None)], synced=3)
    assert {i for i, _ in index.nearest(query, ann, 300)} == before
    assert late.item_id not in [i for i, _ in index.keyword(["parcel"], ann, 300)]


def test_unembedded_are_the_rows_held_without_a_vector() -> None:
    rows = _rows(np.random.default_rng(2), 4)
    rows[1] = replace(rows[1], vector=None)
    index = LocalIndex(DIM)
    index.apply([(r.item_id, r) for r in rows], synced=1)
    assert index.unembedded([4, 2, 1, 99]) == [2]  # in order; an id not held is left out
    index.apply([(2, replace(rows[1], vector=rows[0].vector))], synced=2)
    assert index.unembedded([4, 2, 1]) == []


def test_refresh_index_builds_the_graphs_unless_told_not_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "GRAPH_MIN_ROWS", 3)
    with Recall(tmp_path / "g.db", settings=Settings(index_interval=0)) as mem:
        index = mem.service.index
        assert index is not None
        index.add([_memory(text, i) for i, text in enumerate(["keys", "flight", "parcel", "invoice"], 1)])
        assert mem.refresh_index(graphs=False) == 4  # embedded, no graph
        assert [h.source_id for h in index.search("keys", tenant="", space="w", method="vector", k=1)] == [1]
        partition = next(iter(index._backend.copy._local._partitions.values()))  # type: ignore[attr-defined]
        assert partition.graph is None
        assert mem.refresh_index() == 4  # nothing left to embed: a graph over the four vectors
        assert partition.graph is not None and len(partition.graph) == 4
        assert mem.refresh_index() == 0


# -- a SQLite store's copy, in step with other processes ------------------------------------------


def _open(path: Path, embedder: Embedder) -> tuple[Recall, object]:
    mem = Recall(path, settings=Settings(index_interval=0))
    index = search_index(mem.service.store, embedder)  # type: ignore[arg-type]
    assert index is not None
    return mem, index


def _memory(text: str, source_id: int) -> IndexItem:
    return IndexItem("", "w", "memory", source_id, "", text, datetime(2025, 1, 1, tzinfo=UTC), importance=5)


def test_a_store_copy_follows_vectors_written_and_deleted_by_another_process(tmp_path: Path) -> None:
    embedder = default_embedder()
    path = tmp_path / "shared.db"
    writer_mem, writer = _open(path, embedder)
    reader_mem, reader = _open(path, embedder)  # another connection, as another process has
    try:
        writer.add([_memory("The spare keys are under the blue flower pot.", 1)])  # type: ignore[attr-defined]
        writer.catch_up()  # type: ignore[attr-defined]

        def found(query: str) -> list[int]:
            hits = reader.search(query, tenant="", space="w", method="vector", k=5)  # type: ignore[attr-defined]
            return [h.source_id for h in hits]

        assert found("where are the keys?") == [1]
        writer.add([_memory("Our flight to Lisbon leaves at seven in the morning.", 2)])  # type: ignore[attr-defined]
        writer.catch_up()  # type: ignore[attr-defined]
        assert found("when is the plane?")[0] == 2
        writer.remove("memory", [1])  # type: ignore[attr-defined]
        assert found("where are the keys?") == [2]
        # Nothing of the deleted item's vector is left in the store.
        store = writer_mem.service.store
        assert store._read("SELECT COUNT(embedding) FROM search_items")[0][0] == 1  # type: ignore[attr-defined]
    finally:
        reader_mem.close()
        writer_mem.close()


def test_a_store_with_the_old_sqlite_vec_table_re_embeds_once(tmp_path: Path) -> None:
    """A store whose vectors were made by the numpy model (sqlite-vec's `search_vec`) drops
    them and embeds everything again with the current model, once."""
    from recall.search.index_items import model_key
    from recall.search.sqlite import load_vector_extension

    path = tmp_path / "old.db"
    with Recall(path, settings=Settings(index_interval=0)) as mem:
        store = mem.service.store
        assert isinstance(store, SQLiteStore)
        index = search_index(store, None)
        assert index is not None
        index.add([_memory("The spare keys are under the blue flower pot.", 1)])
        with store._write() as db:
            load_vector_extension(db)
            db.execute("CREATE VIRTUAL TABLE search_vec USING vec0(id INTEGER PRIMARY KEY, embedding float[384])")
            db.execute("INSERT INTO search_vec (id, embedding) VALUES (1, ?)", (np.ones(384, np.float32).tobytes(),))
            db.execute("UPDATE search_items SET embedded = 1")
            db.execute(
                "INSERT INTO search_state (name, value) VALUES ('vector_model', ?)",
                (model_key("all-MiniLM-L6-v2", 384),),
            )
    with Recall(path, settings=Settings(index_interval=0)) as mem:
        store = mem.service.store
        index = search_index(store, default_embedder())  # type: ignore[arg-type]
        assert index is not None
        assert store._read("SELECT COUNT(*) FROM sqlite_master WHERE name = 'search_vec'")[0][0] == 0  # type: ignore[attr-defined]
        assert index.pending() == 1
        assert index.catch_up() == 1
        hits = index.search("where are the keys?", tenant="", space="w", method="vector", k=1)
        assert [h.source_id for h in hits] == [1]
        again = search_index(store, default_embedder())  # type: ignore[arg-type]
        assert again is not None and again.pending() == 0  # once


# -- keywords -------------------------------------------------------------------------------------


def _bm25(rows: Sequence[LocalRow], terms: Sequence[str], f: Filters) -> dict[int, float]:
    """BM25 written out the slow way, over the live rows of the partition (text 1, context 0.5)."""
    from recall.search.local_words import BM25_B, BM25_K1, words

    def counts(row: LocalRow) -> dict[str, float]:
        out: dict[str, float] = {}
        for w in words(row.text):
            out[w] = out.get(w, 0) + 1
        for w in words(row.context):
            out[w] = out.get(w, 0) + 0.5
        return out

    docs = {r.item_id: counts(r) for r in rows}
    lengths = {i: len(words(r.text)) + 0.5 * len(words(r.context)) for i, r in zip(docs, rows, strict=True)}
    average = sum(lengths.values()) / len(lengths)
    scores: dict[int, float] = {}
    for term in dict.fromkeys(words(" ".join(terms))):
        df = sum(1 for c in docs.values() if term in c)
        idf = np.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        for row in rows:
            tf = docs[row.item_id].get(term, 0.0)
            if tf and row.item_id in set(_brute_force(rows, np.zeros(DIM, np.float32), f, len(rows))):
                norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[row.item_id] / average)
                scores[row.item_id] = scores.get(row.item_id, 0.0) + idf * tf * (BM25_K1 + 1) / (tf + norm)
    return scores


def test_keyword_scores_are_bm25_with_stems_accents_and_the_turn_before() -> None:
    vectors = _unit(np.random.default_rng(5), 5)
    texts = [
        ("maria: My parcels were running late", ""),
        ("bob: the café opened", "maria: where do we meet?"),
        ("ann: I ran to the cafe", ""),
        ("maria: yes", "bob: did the parcel arrive?"),  # a reply found by the words it answers
        ("bob: nothing to see", ""),
    ]
    rows = [
        replace(r, text=text, context=context)
        for r, (text, context) in zip(_rows(np.random.default_rng(5), 5), texts, strict=True)
    ]
    rows = [replace(r, vector=v) for r, v in zip(rows, vectors, strict=True)]
    index = LocalIndex(DIM)
    index.apply([(r.item_id, r) for r in rows], synced=1)
    for query, f in [
        (["parcel"], ALL),
        (["cafe", "running"], ALL),  # "café" without its accent, "running" stemmed
        (["parcel", "cafe"], replace(ALL, sender="s2")),
        (["zebra"], ALL),
    ]:
        found = dict(index.keyword(query, f, 10))
        expected = _bm25(rows, query, f)
        assert found.keys() == expected.keys(), query
        for item, score in expected.items():
            assert found[item] == pytest.approx(score, rel=1e-5)
    assert [i for i, _ in index.keyword(["parcel"], ALL, 10)] == [1, 4]  # its own words count more
    assert index.keyword(["parcel"], ALL, 1) == index.keyword(["parcel"], ALL, 10)[:1]
    index.apply([(1, None)], synced=2)
    assert [i for i, _ in index.keyword(["parcel"], ALL, 10)] == [4]


def test_maintain_builds_graphs_and_a_server_beside_a_worker_keeps_only_its_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    monkeypatch.setattr(local_module, "GRAPH_MIN_ROWS", 3)
    with Recall(tmp_path / "g.db", settings=Settings(index_interval=0)) as mem:
        index = mem.service.index
        assert index is not None
        index.add([_memory(text, i) for i, text in enumerate(["keys", "flight", "parcel", "invoice"], 1)])
        index.catch_up()
        assert index.maintain() == 4  # the copy in memory, then a graph over its four vectors
        assert index.maintain() == 0
        assert [h.source_id for h in index.search("keys", tenant="", space="w", method="vector", k=1)] == [1]
        # `recall serve` beside its index worker: a thread that maintains, never indexes.
        before = set(threading.enumerate())
        mem.service.follow_index_worker()
        keeper = mem.service.indexer
        assert keeper is not None and keeper.running and not keeper.indexing
        started = set(threading.enumerate()) - before
        assert [t.name for t in started] == ["recall-indexer"]
    assert not keeper.running  # stopped with the store
    assert not any(t.is_alive() for t in started)


def test_keyword_scores_follow_rows_added_after_a_search() -> None:
    # A term's weights are kept between searches: a new row (which moves the average length)
    # must be scored as if nothing had been kept.
    rows = [
        replace(r, text=text, context="")
        for r, text in zip(
            _rows(np.random.default_rng(7), 3),
            ["maria: my parcel", "bob: a parcel came late today", "ann: nothing here"],
            strict=True,
        )
    ]
    index = LocalIndex(DIM)
    index.apply([(r.item_id, r) for r in rows], synced=1)
    first = dict(index.keyword(["parcel"], ALL, 10))
    assert first.keys() == _bm25(rows, ["parcel"], ALL).keys()
    assert dict(index.keyword(["parcel"], ALL, 10)) == first  # kept, the same
    more = replace(rows[2], item_id=9, text="ann: the parcel, the parcel, at last the parcel!")
    index.apply([(9, more)], synced=2)
    found = dict(index.keyword(["parcel"], ALL, 10))
    expected = _bm25([*rows, more], ["parcel"], ALL)
    assert found.keys() == expected.keys() == {1, 2, 9}
    for item, score in expected.items():
        assert found[item] == pytest.approx(score, rel=1e-5)


def test_the_best_scores_are_picked_exactly_with_ties_in_row_order() -> None:
    """The narrowing by a sample never changes which rows are the best: the same as a full
    sort by (score desc, row asc), for many scores and few, distinct and tied."""
    rng = np.random.default_rng(3)
    for trial in range(400):
        n = int(rng.integers(1, 60_000))
        limit = int(rng.integers(1, min(n, 500) + 1))
        scores = (
            rng.integers(0, int(rng.integers(1, 40)), n).astype(np.float32)
            if trial % 2
            else rng.random(n, dtype=np.float32)
        )
        expected = np.sort(np.lexsort((np.arange(n), -scores))[:limit])
        assert np.array_equal(local_partition.best_positions(scores, limit), expected)
    # A sample whose bound lets fewer than `limit` through: the whole selection decides.
    scores = np.zeros(16_000, dtype=np.float32)
    scores[np.arange(15) * 20] = 10.0
    expected = np.sort(np.lexsort((np.arange(16_000), -scores))[:100])
    assert np.array_equal(local_partition.best_positions(scores, 100), expected)


def test_frequent_terms_scored_from_dense_rows_score_exactly_as_their_postings(monkeypatch: pytest.MonkeyPatch) -> None:
    # A term held by many rows is added up as a dense row of weights: the same float32 sums,
    # in the same order, as the scattered add, with rows added and deleted between searches.
    rng = np.random.default_rng(11)
    vocabulary = ["parcel", "invoice", "refund", "courier", "kettle", "lyon", "tea", "order"]
    rows = [
        replace(row, text=" ".join(rng.choice(vocabulary, int(rng.integers(1, 12)))), context="")
        for row in _rows(rng, 600)
    ]
    index = LocalIndex(DIM)
    index.apply([(r.item_id, r) for r in rows[:400]], synced=1)

    def scored(share: int) -> list[list[tuple[int, float]]]:
        monkeypatch.setattr(local_partition, "DENSE_SHARE", share)
        return [index.keyword(list(query), f, 50) for query in (vocabulary[:3], vocabulary) for f in FILTERS[:3]]

    for step in range(3):
        assert scored(10**9) == scored(1)  # every term dense, then none
        index.apply([(r.item_id, r) for r in rows[400 + 100 * step : 500 + 100 * step]], synced=2 + step)
        index.apply([(int(i), None) for i in rng.choice(np.arange(1, 400), 20, replace=False)], synced=2 + step)
