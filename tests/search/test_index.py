"""The search index on each store (a SQLite file, a PostgreSQL database) with the real
embedding model: BM25, vectors, hybrid fusion, every filter, incremental indexing and the
background indexer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from recall import Recall, Settings
from recall.app.posting import PostRequest
from recall.core.models import Message, SenderType
from recall.errors import InvalidInputError
from recall.search.base import IndexItem, Method, RowStore, message_text, query_terms
from recall.search.embeddings import Embedder, default_embedder
from recall.search.index import SearchIndex
from recall.search.indexer import BackgroundIndexer
from recall.search.open import search_index
from recall.store.sqlite import SQLiteStore

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
#: These tests drive the index themselves: no background indexer of the store's own.
MANUAL = Settings(index_interval=0)

#: (sender, chat, minutes after T0, content)
CONVERSATION = [
    ("maria", None, 0, "Hello team, my invoice for February is wrong: I was charged twice."),
    ("agent-a", None, 1, "Sorry about the double charge, Maria. I will open a refund request."),
    ("maria", "ticket-7", 2, "My laptop screen cracked after I dropped it on the floor."),
    ("agent-b", "ticket-7", 3, "The warranty covers accidental damage; we can send a courier."),
    ("maria", None, 4, "Also, can you update my shipping address to Lisbon?"),
    ("agent-a", None, 5, "Done: your deliveries now go to the new address in Portugal."),
    ("bob", None, 6, "Is the office closed on the public holiday next Monday?"),
    ("agent-b", "ticket-7", 7, "The courier picks the laptop up tomorrow morning."),
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The real all-MiniLM-L6-v2, loaded once for the module."""
    return default_embedder()


@dataclass
class ModelAs:
    """The real model under `name`, showing each batch of texts to `seen` before embedding it."""

    inner: Embedder
    name: str
    seen: Callable[[Sequence[str]], object] = lambda texts: None

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.seen(texts)
        return self.inner.embed(texts)


@dataclass
class Setup:
    mem: Recall
    store: RowStore
    index: SearchIndex
    messages: list[Message]


def _store(mem: Recall) -> RowStore:
    store: RowStore = mem.service.store  # type: ignore[assignment]  # both stores have _read and _write
    return store


def _index(store: RowStore, embedder: Embedder | None = None) -> SearchIndex:
    index = search_index(store, embedder)  # type: ignore[arg-type]
    assert index is not None
    return index


def _on_sqlite(store: RowStore) -> bool:
    return isinstance(store, SQLiteStore)


#: How many items are embedded, on either database (`embedded` is 0/1 on SQLite, a boolean on
#: PostgreSQL).
EMBEDDED = "COUNT(CASE WHEN embedded THEN 1 END)"


def _post_conversation(mem: Recall) -> list[Message]:
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_human("bob")
    world.add_agent("agent-a")
    world.add_agent("agent-b")
    return [
        world.post(sender, content, chat=chat, at=T0 + timedelta(minutes=minutes))
        for sender, chat, minutes, content in CONVERSATION
    ]


@pytest.fixture
def setup(store_location: str, embedder: Embedder) -> Iterator[Setup]:
    """World `w` with the conversation above, indexed and embedded."""
    mem = Recall(store_location, settings=MANUAL)
    messages = _post_conversation(mem)
    index = _index(_store(mem), embedder)
    index.catch_up()
    yield Setup(mem, _store(mem), index, messages)
    mem.close()


def _ids(hits: Sequence[Any]) -> list[int]:
    return [h.source_id for h in hits]


def _search(s: Setup, query: str, **kwargs: Any) -> list[Any]:
    return s.index.search(query, tenant="", space="w", **kwargs)


def _note(source_id: int, text: str, *, owner: str = "", importance: int = 5, space: str = "w") -> IndexItem:
    return IndexItem("", space, "memory", source_id, owner, text, T0, importance=importance)


# -- the three methods ---------------------------------------------------------------------


def test_bm25_finds_exact_words(setup: Setup) -> None:
    hits = _search(setup, "invoice charged", method="bm25")
    assert hits[0].source_id == setup.messages[0].id
    top = hits[0]
    assert (top.kind, top.sender, top.chat_id, top.space, top.owner) == ("message", "maria", None, "w", "")
    assert top.created_at == T0
    assert (top.method, top.bm25_rank, top.vector_rank, top.similarity) == ("bm25", 1, None, None)
    assert top.text == f"maria: {CONVERSATION[0][3]}"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # Porter stemming: "charges" matches "charged" and "charge".
    assert setup.messages[1].id in _ids(_search(setup, "charges", method="bm25"))


def test_vector_finds_a_paraphrase_that_bm25_misses(setup: Setup) -> None:
    query = "computer display smashed"  # no word in common with the laptop message
    assert _search(setup, query, method="bm25") == []
    hits = _search(setup, query, method="vector", k=3)
    assert hits[0].source_id == setup.messages[2].id
    assert hits[0].method == "vector" and hits[0].vector_rank == 1 and hits[0].bm25_rank is None
    assert hits[0].similarity is not None and 0.3 < hits[0].similarity <= 1.0
    assert hits[0].score == hits[0].similarity
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_hybrid_fuses_both_rankings(setup: Setup) -> None:
    hits = _search(setup, "refund for the double charge on my invoice", k=5)
    assert {h.method for h in hits} == {"hybrid"}
    # The two billing messages are found by both methods and lead the fused list.
    assert set(_ids(hits[:2])) == {setup.messages[0].id, setup.messages[1].id}
    assert all(h.bm25_rank is not None and h.vector_rank is not None for h in hits[:2])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(0 < h.score < 1 for h in hits)  # the ranking model's probability
    # A paraphrase only the vectors find still comes back in a hybrid search.
    assert _search(setup, "computer display smashed", k=1)[0].source_id == setup.messages[2].id


def test_items_not_embedded_yet_are_found_by_bm25(setup: Setup) -> None:
    world = setup.mem.world("w")
    fresh = world.post("bob", "The quarterly kangaroo census starts soon.")
    setup.index.index_messages()
    assert setup.index.pending() == 1
    assert _ids(_search(setup, "kangaroo", method="bm25")) == [fresh.id]
    # Hybrid fuses in the (weak) vector neighbours of the rest; the keyword hit leads.
    assert _ids(_search(setup, "kangaroo", method="hybrid"))[0] == fresh.id
    assert fresh.id not in _ids(_search(setup, "kangaroo", method="vector"))
    setup.index.catch_up()
    assert _search(setup, "kangaroo", method="vector", k=1)[0].source_id == fresh.id


# -- filters -------------------------------------------------------------------------------

METHODS = ("bm25", "vector", "hybrid")
#: Words every message of the conversation contains none or some of; with the vector
#: method every item is a candidate, so the filters alone decide what comes back.
BROAD = "laptop invoice address courier holiday charge warranty"


@pytest.mark.parametrize("method", METHODS)
def test_chat_sender_and_time_filters(setup: Setup, method: str) -> None:
    ids = [m.id for m in setup.messages]
    in_ticket = _ids(_search(setup, BROAD, method=method, k=50, chat_id="ticket-7"))
    assert sorted(in_ticket) == [ids[2], ids[3], ids[7]]
    default_chat = _ids(_search(setup, BROAD, method=method, k=50, chat_id=""))
    assert sorted(default_chat) == [ids[0], ids[1], ids[4], ids[5], ids[6]]
    by_agent_b = _ids(_search(setup, BROAD, method=method, k=50, sender="agent-b"))
    assert sorted(by_agent_b) == [ids[3], ids[7]]
    window = _ids(
        _search(setup, BROAD, method=method, k=50, since=T0 + timedelta(minutes=2), until=T0 + timedelta(minutes=5))
    )
    assert sorted(window) == [ids[2], ids[3], ids[4]]  # since inclusive, until exclusive
    naive = _ids(_search(setup, BROAD, method=method, k=50, since=datetime(2025, 3, 1, 9, 6)))
    assert sorted(naive) == [ids[6], ids[7]]  # a naive datetime is UTC


@pytest.mark.parametrize("method", METHODS)
def test_kinds_owners_and_importance(setup: Setup, method: str) -> None:
    setup.index.add(
        [
            _note(1, "Maria prefers refunds to store credit.", importance=8),
            _note(2, "Agent A thinks Maria's laptop refund is risky.", owner="agent-a", importance=3),
            _note(3, "Agent B keeps the courier schedule for laptop repairs.", owner="Agent-B", importance=9),
            IndexItem("", "w", "fact", 1, "", "Maria lives in Lisbon and owns a laptop.", T0),
        ]
    )
    setup.index.catch_up()

    def found(**kwargs: Any) -> list[tuple[str, int]]:
        hits = _search(setup, "laptop refund courier Maria", method=method, k=50, **kwargs)
        return sorted((h.kind, h.source_id) for h in hits)

    assert found(kinds=["memory"]) == [("memory", 1), ("memory", 2), ("memory", 3)]
    assert found(kinds=["fact"]) == [("fact", 1)]
    assert found(kinds=["memory"], owners=[""]) == [("memory", 1)]
    # Owners match case-insensitively, like participant ids.
    assert found(kinds=["memory"], owners=["", "agent-b"]) == [("memory", 1), ("memory", 3)]
    assert found(kinds=["memory", "fact"], owners=["AGENT-A"]) == [("memory", 2)]
    assert found(owners=[]) == []
    # Only memories have an importance: a threshold leaves messages and facts out.
    assert found(min_importance=5) == [("memory", 1), ("memory", 3)]
    assert found(min_importance=9) == [("memory", 3)]


@pytest.mark.parametrize("method", METHODS)
def test_other_tenants_and_spaces_never_appear(setup: Setup, method: str) -> None:
    # The same user space in two tenants, and another world of the same tenant.
    setup.index.add(
        [
            IndexItem("acme", "user:bob", "fact", 10, "", "Bob's laptop is a ThinkPad.", T0),
            IndexItem("globex", "user:bob", "fact", 11, "", "Bob's laptop is a MacBook.", T0),
        ]
    )
    other = setup.mem.world("w2", create=True)
    other.add_human("maria")
    other.post("maria", "My laptop screen cracked yesterday, in another world.")
    setup.mem.service.worlds.create_world("w3", tenant="acme")
    setup.mem.world("w3").add_human("eve")
    setup.mem.world("w3").post("eve", "Eve's laptop screen cracked too.")
    setup.index.catch_up()

    def facts(tenant: str, space: str) -> list[int]:
        return _ids(setup.index.search("laptop", tenant=tenant, space=space, method=method, k=50))  # type: ignore[arg-type]

    assert facts("acme", "user:bob") == [10]
    assert facts("globex", "USER:BOB") == [11]  # spaces are case-insensitive
    assert facts("initech", "user:bob") == []
    spaces = {h.space for h in _search(setup, "laptop screen cracked", method=method, k=50)}
    assert spaces == {"w"}
    # w3 belongs to tenant acme: asking as tenant '' finds nothing there.
    assert setup.index.search("laptop", tenant="", space="w3", method=method) == []  # type: ignore[arg-type]
    assert len(setup.index.search("laptop", tenant="acme", space="W3", method=method)) == 1  # type: ignore[arg-type]


# -- writing the index -----------------------------------------------------------------------


def test_index_messages_is_incremental_and_survives_reopening(store_location: str, embedder: Embedder) -> None:
    path = store_location
    mem = Recall(path, settings=MANUAL)
    messages = _post_conversation(mem)
    index = _index(_store(mem), embedder)
    assert index.pending() == len(messages)
    assert index.index_messages(limit=3) == 3
    assert index.index_messages(limit=100) == len(messages) - 3
    assert index.index_messages() == 0
    assert index.pending() == len(messages)  # copied, not embedded yet
    assert index.embed_pending(batch=5) == 5
    mem.world("w").post("bob", "One more message before the restart.")
    mem.close()

    mem = Recall(path, settings=MANUAL)
    store = _store(mem)
    index = _index(store, embedder)
    assert index.pending() == 1 + len(messages) - 5
    assert index.catch_up() == 1 + (len(messages) - 5 + 1)  # one copied, the rest embedded
    assert index.pending() == 0
    counts = store._read(f"SELECT COUNT(*), COUNT(DISTINCT source_id), {EMBEDDED} FROM search_items")[0]
    assert tuple(counts) == (len(messages) + 1,) * 3
    assert store._read("SELECT COUNT(embedding) FROM search_items")[0][0] == len(messages) + 1
    assert _ids(index.search("restart", tenant="", space="w", method="vector", k=1)) == [len(messages) + 1]
    mem.close()


def _contexts(store: RowStore) -> dict[int, str]:
    return dict(store._read("SELECT source_id, context FROM search_items WHERE kind = 'message'"))


@pytest.mark.parametrize("batch", [1, 3, 1000])
def test_a_message_is_indexed_with_the_turn_before_it_in_its_chat(store_location: str, batch: int) -> None:
    mem = Recall(store_location, settings=MANUAL)
    messages = _post_conversation(mem)
    store = _store(mem)
    index = _index(store)
    while index.index_messages(limit=batch):
        pass  # batches of 1 and 3 look the previous turn up in the index, not in the batch
    text = {m.id: message_text(m) for m in messages}
    m = [message.id for message in messages]
    # The default chat and ticket-7 interleave; each message's context is its own chat's turn.
    assert _contexts(store) == {
        m[0]: "", m[1]: text[m[0]], m[2]: "", m[3]: text[m[2]],
        m[4]: text[m[1]], m[5]: text[m[4]], m[6]: text[m[5]], m[7]: text[m[3]],
    }  # fmt: skip
    mem.close()


def test_a_reply_is_found_by_the_words_of_the_turn_it_answers(setup: Setup) -> None:
    # "warranty" is only in message 3; message 7 follows it in ticket-7 and comes second, below
    # the message that has the word itself. Message 4 follows it by id but in another chat.
    hits = _search(setup, "warranty", method="bm25")
    assert _ids(hits) == [setup.messages[3].id, setup.messages[7].id]
    assert hits[1].text == message_text(setup.messages[7])  # the hit shows its own text


def test_stop_words_are_left_out_of_keyword_queries() -> None:
    assert query_terms("What did she say about the laptop?") == ["say", "laptop"]
    # A query of nothing but stop words still searches for them.
    assert query_terms("to be or not to be") == ["to", "be", "or", "not"]


def test_add_replaces_an_item_and_remove_deletes_it(setup: Setup) -> None:
    index = setup.index
    index.add([_note(7, "The spare keys are under the blue flowerpot.")])
    index.catch_up()
    assert _ids(_search(setup, "flowerpot", kinds=["memory"])) == [7]
    index.add([_note(7, "The spare keys are with the neighbour now.", importance=9)])
    assert _search(setup, "flowerpot", kinds=["memory"]) == []
    assert _search(setup, "neighbour", kinds=["memory"], method="bm25")[0].importance == 9
    index.catch_up()
    vector_hits = _search(setup, "where are the spare keys", kinds=["memory"], method="vector")
    assert [(h.source_id, h.text) for h in vector_hits] == [(7, "The spare keys are with the neighbour now.")]
    assert setup.store._read("SELECT COUNT(*) FROM search_items WHERE kind = 'memory'")[0][0] == 1

    assert index.remove("memory", [7, 12345]) == 1
    assert index.remove("memory", [7]) == 0
    for method in METHODS:
        assert _search(setup, "spare keys neighbour", kinds=["memory"], method=method) == []
    if _on_sqlite(setup.store):  # on PostgreSQL the vector and the words are columns of the item's row
        # A deleted item leaves only its id, for other processes' copies to forget it.
        assert setup.store._read("SELECT COUNT(*) FROM search_deleted")[0][0] >= 1


def test_embedding_runs_outside_the_lock_and_skips_items_changed_meanwhile(setup: Setup, embedder: Embedder) -> None:
    """While the model runs, another thread replaces one pending item and posts a message:
    neither waits for the model, and the stale vector is not stored."""
    index = setup.index
    index.add([_note(20, "The boiler makes a knocking sound.")])
    posted: list[Message] = []

    def write_meanwhile(texts: Sequence[str]) -> None:
        """A concurrent write in the middle of the model's call."""

        def write() -> None:
            index.add([_note(20, "The boiler was repaired on Tuesday.")])
            posted.append(setup.mem.world("w").post("bob", "Posted while the model was running."))

        writer = threading.Thread(target=write)
        writer.start()
        writer.join(timeout=10)
        assert not writer.is_alive(), "a write waited for the embedding model"

    racing = _index(setup.store, ModelAs(embedder, embedder.name, write_meanwhile))
    assert racing.embed_pending(batch=10) == 0  # the only pending item was replaced
    assert posted
    # The new message copied (1), then it and the new note embedded (2).
    assert index.catch_up() == 3
    hit = _search(setup, "boiler", kinds=["memory"], method="vector")[0]
    assert hit.text == "The boiler was repaired on Tuesday."


def test_hostile_queries_do_not_raise(setup: Setup) -> None:
    for query in [
        '"',
        '"unbalanced',
        "NEAR(laptop courier)",
        "lap*",
        "-laptop",
        "text:laptop",
        "AND OR NOT",
        "^",
        "()",
        "🙂",
    ]:
        for method in METHODS:
            _search(setup, query, method=method)
    assert _ids(_search(setup, 'laptop" OR "x', method="bm25"))  # still finds the words
    assert query_terms('x "b" NEAR(c) y*') == ["x", "b", "near", "c", "y"]  # words only, no syntax
    assert _search(setup, "   ") == [] and _search(setup, "") == []


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"k": 0}, "k"),
        ({"k": 1001}, "k"),
        ({"k": True}, "k"),
        ({"method": "semantic"}, "method"),
        ({"kinds": []}, "kinds"),
        ({"kinds": ["message", "email"]}, "kinds"),
        ({"kinds": "message"}, "kinds"),
        ({"owners": "agent-a"}, "owners"),
        ({"min_importance": "5"}, "min_importance"),
        ({"since": "yesterday"}, "since"),
        ({"space": ""}, "space"),
    ],
)
def test_invalid_searches_are_refused(setup: Setup, kwargs: dict[str, Any], field: str) -> None:
    arguments: dict[str, Any] = {"tenant": "", "space": "w", **kwargs}
    with pytest.raises(InvalidInputError) as caught:
        setup.index.search("laptop", **arguments)
    assert caught.value.field == field


def test_message_text_includes_an_image_caption() -> None:
    base = Message(1, "w", "maria", SenderType.HUMAN, "look at this", T0)
    assert message_text(base) == "maria: look at this"
    with_caption = Message(1, "w", "maria", SenderType.HUMAN, "look", T0, metadata={"blip_caption": "a dog on a beach"})
    assert message_text(with_caption) == "maria: look [shares an image: a dog on a beach]"


def test_an_image_caption_is_searchable(setup: Setup) -> None:
    world = setup.mem.world("w")
    message = world.post("maria", "Guess where I am!", metadata={"image_caption": "a surfer riding a wave"})
    setup.index.catch_up()
    assert _ids(_search(setup, "surfer", method="bm25")) == [message.id]


# -- without an embedder, and a changed model ---------------------------------------------------


def test_without_an_embedder_searches_fall_back_to_bm25(store_location: str) -> None:
    with Recall(store_location, settings=MANUAL) as mem:
        messages = _post_conversation(mem)
        index = _index(_store(mem), None)
        assert not index.has_vectors
        assert index.pending() == len(messages)
        assert index.catch_up() == len(messages)
        assert index.pending() == 0  # nothing will ever be embedded, so nothing is pending
        for method in METHODS:
            hits = index.search("invoice", tenant="", space="w", method=method)  # type: ignore[arg-type]
            # The invoice message, then the reply to it (found through its context).
            assert _ids(hits) == [messages[0].id, messages[1].id]
            assert hits[0].method == "bm25"
        store = _store(mem)
        assert store._read("SELECT COUNT(embedding) FROM search_items")[0][0] == 0


def _with_fresh_post(
    setup: Setup, embedder: Embedder, content: str, chat: str
) -> tuple[SearchIndex, list[list[str]], Any, Message]:
    """An index whose model shows each batch of texts it embeds to the list returned, and a post
    found by its words only (no vector yet)."""
    calls: list[list[str]] = []
    index = _index(setup.store, ModelAs(embedder, embedder.name, lambda texts: calls.append(list(texts))))
    world = setup.mem.world("w")
    fresh = world.post("maria", content, chat=chat)
    index.index_messages()  # by its words: no vector yet
    return index, calls, world, fresh


def test_a_hybrid_search_embeds_its_query_once(setup: Setup, embedder: Embedder) -> None:
    """Its vector candidates and a fresh post it found by its words (not embedded yet) are
    scored against one embedding of the query."""
    index, calls, world, fresh = _with_fresh_post(
        setup, embedder, "The courier lost the parcel of spare invoices.", "billing"
    )
    query = "who lost the parcel?"
    hits = index.search(query, tenant="", space=world.key, method="hybrid")
    assert fresh.id in [h.source_id for h in hits if h.kind == "message"]
    assert sum(texts.count(query) for texts in calls) == 1
    assert any("lost the parcel" in text for texts in calls for text in texts)  # the fresh post, embedded now


@pytest.mark.parametrize("method", ["hybrid", "bm25", "vector"])
def test_excluded_messages_are_no_candidates_and_a_fresh_one_is_not_embedded(
    setup: Setup, embedder: Embedder, method: Method
) -> None:
    """A context's incoming message is its query: it is excluded from the search (the other
    candidates are measured as if it were not there), `k` hits are still given, and a fresh one
    is not embedded for nothing."""
    index, calls, world, fresh = _with_fresh_post(
        setup, embedder, "@agent-a who sends the courier for my cracked laptop?", "ticket-7"
    )
    query = "who sends the courier for my cracked laptop?"
    found = index.ranked(query, tenant="", space=world.key, method=method, k=3)
    if method != "vector":  # a vector search cannot see what has no vector yet
        assert fresh.id in [h.source_id for h in found]
    calls.clear()
    kept = index.ranked(query, tenant="", space=world.key, method=method, k=3, exclude={fresh.id})
    assert fresh.id not in [h.source_id for h in kept] and len(kept) == 3
    assert not any("cracked laptop?" in text and text != query for texts in calls for text in texts)


def test_a_fresh_post_is_embedded_once_for_the_searches_that_meet_it(setup: Setup, embedder: Embedder) -> None:
    """Until the indexer stores its vector, every hybrid search that finds a fresh post by its
    words scores it by meaning; the vector made for the first is kept for the next ones."""
    index, calls, world, fresh = _with_fresh_post(
        setup, embedder, "The courier lost the parcel of spare invoices.", "billing"
    )
    for query in ("who lost the parcel?", "where is the lost parcel?"):
        hits = index.search(query, tenant="", space=world.key, method="hybrid")
        assert fresh.id in [h.source_id for h in hits if h.kind == "message"]
    embedded_fresh = [text for texts in calls for text in texts if "spare invoices" in text]
    assert len(embedded_fresh) == 1  # once, for the first search


def test_a_different_embedding_model_re_embeds_everything(setup: Setup, embedder: Embedder) -> None:
    total = len(setup.messages)
    assert _index(setup.store, embedder).pending() == 0  # same model: nothing to redo
    renamed = _index(setup.store, ModelAs(embedder, "all-MiniLM-L6-v2@next"))  # as a new model version would be
    assert renamed.pending() == total
    assert renamed.search("computer display smashed", tenant="", space="w", method="vector") == []
    assert renamed.catch_up() == total
    assert _ids(renamed.search("computer display smashed", tenant="", space="w", method="vector", k=1)) == [
        setup.messages[2].id
    ]


# -- the background indexer ----------------------------------------------------------------------


def test_background_indexer_catches_up_after_notify_and_after_restart(store_location: str, embedder: Embedder) -> None:
    path = store_location
    mem = Recall(path, settings=MANUAL)
    messages = _post_conversation(mem)
    index = _index(_store(mem), embedder)
    indexer = BackgroundIndexer(index, batch=4, interval=30.0).start()
    assert indexer.wait_idle(timeout=20)
    world = mem.world("w")
    new = world.post("bob", "The cafeteria serves paella on Fridays.")
    indexer.notify()
    assert indexer.wait_idle(timeout=20)
    assert _ids(index.search("paella", tenant="", space="w", method="vector", k=1)) == [new.id]
    assert indexer.stop(timeout=10)
    assert not indexer.running

    # Posted while no indexer runs (the process "crashed"); a new one resumes from the watermark.
    world.post_many([PostRequest("bob", f"Backlog message number {i} about gazpacho.") for i in range(10)])
    mem.close()
    mem = Recall(path, settings=MANUAL)
    index = _index(_store(mem), embedder)
    assert index.pending() == 10
    indexer = BackgroundIndexer(index, batch=4, interval=30.0)
    assert not indexer.wait_idle(timeout=0.1)  # not started: nothing happens
    indexer.start()
    assert indexer.wait_idle(timeout=20)
    hits = index.search("gazpacho", tenant="", space="w", method="vector", k=50)
    assert len(hits) == len(messages) + 11  # every embedded message is a neighbour
    assert all("gazpacho" in h.text for h in hits[:10])  # the backlog ranks first
    total = len(messages) + 11
    assert tuple(_store(mem)._read(f"SELECT COUNT(*), {EMBEDDED} FROM search_items")[0]) == (total, total)
    assert indexer.stop(timeout=10)
    mem.close()


class _Failing:
    """An index whose first two rounds fail, as a locked or full disk would make them."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index
        self.failures = 0

    def step(self, batch: int = 64, should_stop: Callable[[], bool] | None = None) -> int:
        if self.failures < 2:
            self.failures += 1
            raise OSError("disk I/O error")
        return self.index.step(batch, should_stop)

    def maintain(self) -> int:
        return self.index.maintain()

    def pending(self) -> int:
        return self.index.pending()


def test_background_indexer_logs_errors_and_retries(setup: Setup, caplog: pytest.LogCaptureFixture) -> None:
    setup.mem.world("w").post("bob", "Written while the disk misbehaves.")
    failing = _Failing(setup.index)
    indexer = BackgroundIndexer(failing, interval=0.05)
    with caplog.at_level("ERROR", logger="recall.indexer"):
        indexer.start()
        assert indexer.wait_idle(timeout=20)
    assert indexer.stop(timeout=10)
    assert failing.failures == 2
    assert len([r for r in caplog.records if r.name == "recall.indexer"]) == 2
    assert "disk I/O error" in caplog.text


def test_every_writer_of_items_waits_for_the_indexing_lock_first(postgres_url: str, embedder: Embedder) -> None:
    """Storing vectors counts a change before it updates the items, a deletion of items the
    other way round: on PostgreSQL a world deleted while its messages were embedded deadlocked.
    So every transaction that writes items (vectors stored, items added or removed) takes the
    indexing lock before anything else: held elsewhere, each of them waits for it."""
    import psycopg

    from recall.search.postgres import _INDEXING_LOCK

    with Recall(postgres_url, settings=MANUAL) as mem:
        _post_conversation(mem)
        index = _index(_store(mem), embedder)
        index.index_messages()
        writers: dict[str, Callable[[], object]] = {
            "vectors": lambda: index.embed_pending(),
            "add": lambda: index.add([_note(9001, "the spare key is under the mat")]),
            "remove": lambda: index.remove("message", [1]),
        }
        for name, write in writers.items():
            with psycopg.connect(postgres_url) as holder:
                holder.execute("SELECT pg_advisory_xact_lock(%s)", (_INDEXING_LOCK,))
                done = threading.Event()
                thread = threading.Thread(target=lambda w=write, d=done: (w(), d.set()))  # type: ignore[misc]
                thread.start()

                def waiting() -> bool:
                    row = holder.execute(
                        "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = %s",
                        (_INDEXING_LOCK,),
                    ).fetchone()
                    return bool(row and row[0])

                deadline = time.monotonic() + 10
                while not waiting():
                    assert time.monotonic() < deadline, f"{name}: never asked for the indexing lock"
                    time.sleep(0.005)
                assert not done.is_set(), f"{name}: wrote while another transaction held the lock"
                holder.commit()
            thread.join(timeout=10)
            assert done.is_set(), f"{name}: did not finish once the lock was free"
