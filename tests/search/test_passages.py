"""Long messages indexed by their passages: every part of a long reply is findable by meaning,
and it is shown by the part that matched (issue 42, point 2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from recall import Recall, Settings
from recall.core.excerpts import excerpt
from recall.core.passages import MAX_PASSAGES, PASSAGE_CHARS, passage_span, passage_spans
from recall.core.tokens import TokenCounter
from recall.search.base import Filters
from recall.search.embed_now import EMBED_MAX_TEXTS
from recall.search.local import LocalIndex
from recall.search.local_partition import LocalRow
from recall.search.local_words import words
from recall.search.open import search_index
from recall.search.passage_vectors import STOP_CHECK_TEXTS, penalty_for

COUNTER = TokenCounter("o200k_base")
DIM = 16
ALL = Filters("t", "w", ("message", "memory", "fact"), None, None, None, None, None, None)

FILLER = [
    "Start by testing the soil so you know its acidity before planting anything.",
    "Tomatoes want at least six hours of direct sunlight every day.",
    "Mulch keeps moisture in and suppresses weeds through the summer.",
    "Water deeply but infrequently so roots grow downward.",
    "Compost adds nutrients and improves drainage in clay-heavy beds.",
    "Rotate crops each year to keep soil-borne diseases from building up.",
    "Prune suckers from indeterminate varieties to focus energy on fruit.",
    "Raised beds warm faster in spring and drain better after heavy rain.",
    "Companion planting basil near peppers may deter some insects.",
    "Harvest in the morning when vegetables are crisp and full of water.",
]
#: Shares no word with QUESTION: only its meaning can find it.
NEEDLE = "Your sister's tabby, Pistachio, shelters beneath our porch whenever thunder rolls in."
QUESTION = "where does the cat go to hide during storms?"
#: A gardening reply of ~2,000 characters with the needle two-thirds in, past what the model
#: reads of the whole text (its first 256 word pieces).
LONG_REPLY = " ".join([*FILLER, *FILLER, NEEDLE, *FILLER])


def test_a_long_text_is_covered_by_bounded_passages_at_sentence_ends() -> None:
    assert passage_spans("Short. " * 10) == []
    spans = passage_spans(LONG_REPLY)
    assert spans[0][0] == 0 and spans[-1][1] == len(LONG_REPLY)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))  # contiguous
    assert all(LONG_REPLY[end - 2] == "." for _, end in spans[:-1])  # cut after a sentence
    assert all(end - start <= 2 * PASSAGE_CHARS for start, end in spans)
    assert passage_span(LONG_REPLY, 0) is None and passage_span(LONG_REPLY, len(spans) + 1) is None
    assert passage_span(LONG_REPLY, 2) == spans[1]
    # However long, at most MAX_PASSAGES, still covering all of it (with no sentence ends too).
    huge = "word " * 200_000
    spans = passage_spans(huge)
    assert len(spans) == MAX_PASSAGES and spans[-1][1] == len(huge)


def test_an_excerpt_is_taken_around_the_passage_that_matched() -> None:
    terms = frozenset(words(QUESTION))  # stop words kept, as a context's are: "the" matches
    plain = excerpt(LONG_REPLY, terms, words, COUNTER, 160)
    assert plain.cut and NEEDLE not in plain.text  # by words alone: the first "the"
    at = LONG_REPLY.index(NEEDLE)
    span = next(s for s in passage_spans(LONG_REPLY) if s[0] <= at < s[1])
    focused = excerpt(LONG_REPLY, terms, words, COUNTER, 160, span)
    assert focused.cut and NEEDLE in focused.text and focused.text.startswith("…")
    assert COUNTER.count(focused.text) <= 160


def _unit(rng: np.random.Generator, n: int) -> NDArray[np.float32]:
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _row(item: int, vector: NDArray[np.float32], chat: str | None = None) -> LocalRow:
    return LocalRow(item, "t", "w", "message", "", chat, "s", None, float(item), f"item {item}", "", vector)


def test_the_index_scores_an_item_by_its_best_passage_less_the_penalty() -> None:
    rng = np.random.default_rng(7)
    rows = []
    for item in range(1, 201):
        passages = int(rng.integers(0, 4))
        vectors = _unit(rng, 1 + passages)
        rows.append(_row(item, vectors if passages else vectors[0], chat=f"c{item % 3}"))
    index = LocalIndex(DIM)
    index.apply([(r.item_id, r) for r in rows], synced=1)

    def expected(query: NDArray[np.float32], chat: str | None) -> list[tuple[int, float, int]]:
        out = []
        for r in rows:
            if chat is not None and r.chat_id != chat:
                continue
            v = np.atleast_2d(r.vector)
            scores = v @ query
            scores[1:] -= penalty_for(len(scores) - 1)
            part = int(np.argmax(scores))
            out.append((r.item_id, float(scores[part]), part))
        return sorted(out, key=lambda t: (-t[1], t[0]))

    for _ in range(20):
        query = _unit(rng, 1)[0]
        for chat in (None, "c1"):
            filters = ALL if chat is None else replace(ALL, chat_id=chat)
            found = index.nearest_candidates(query, filters, 10)
            want = expected(query, chat)[:10]
            assert [c.id for c in found] == [w[0] for w in want]
            assert [c.part for c in found] == [w[2] for w in want]
            np.testing.assert_allclose([1 - c.score for c in found], [w[1] for w in want], atol=1e-5)

    # A passage aimed at exactly: found by it; then the item's vectors replaced, then deleted.
    target = rows[10]
    aimed = np.atleast_2d(target.vector)
    if len(aimed) == 1:
        aimed = np.vstack([aimed, _unit(rng, 1)])
        index.apply([(target.item_id, _row(target.item_id, aimed))], synced=2)
    found = index.nearest_candidates(aimed[-1], ALL, 1)[0]
    assert (found.id, found.part) == (target.item_id, len(aimed) - 1)
    index.apply([(target.item_id, _row(target.item_id, aimed[0]))], synced=3)  # passages gone
    assert all(c.part == 0 for c in index.nearest_candidates(aimed[-1], ALL, 200) if c.id == target.item_id)
    index.apply([(target.item_id, None)], synced=4)
    assert target.item_id not in [c.id for c in index.nearest_candidates(aimed[0], ALL, 200)]


def test_a_deep_passage_of_a_long_reply_is_recalled_on_both_stores(store_location: str) -> None:
    start = datetime(2025, 3, 1, tzinfo=UTC)
    with Recall(store_location, Settings(index_interval=0)) as mem:
        world = mem.world("garden", create=True)
        world.add_human("maria")
        world.add_agent("desk")
        world.post("maria", "@desk any tips for my vegetable garden?", at=start)
        reply = world.post("desk", LONG_REPLY, at=start + timedelta(minutes=1))
        for i in range(30):
            sender = "maria" if i % 2 else "desk"
            world.post(sender, f"note {i} about invoices and parcels", at=start + timedelta(days=1, minutes=i))
        mem.refresh_index()
    # Reopened: the passages' vectors are read back from the store, not kept from the writing.
    with Recall(store_location, Settings(index_interval=0)) as mem:
        world = mem.world("garden")
        asked = world.post("maria", f"@desk {QUESTION}", at=start + timedelta(days=5))
        ctx = world.agent("desk").context(max_tokens=600, message=asked.id)
        recalled = "\n".join(m.content for m in ctx.messages if m.section == "recalled")
        assert NEEDLE in recalled and "desk (excerpt): …" in recalled
        item = next(i for i in ctx.report.items if i.id == reply.id)
        assert item.included and item.section == "recalled" and item.score is not None
        assert item.score["excerpt"] is True
        # The report says which passage matched: the one holding the needle.
        at = LONG_REPLY.index(NEEDLE)
        start, end = passage_span(LONG_REPLY, item.score["part"]) or (0, 0)
        assert start <= at < end


def test_long_messages_are_embedded_in_bounded_rounds(tmp_path: Path) -> None:
    """A round of embedding takes at most EMBED_MAX_TEXTS texts, passages included: a batch of
    long replies does not keep the model (and a worker waiting to stop) busy for a minute."""
    batches: list[int] = []

    class Counting:
        """Counts the texts of each run; its vectors need no meaning here (rounds are counted)."""

        name, dim = "counting", 384

        def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
            batches.append(len(texts))
            return np.full((len(texts), self.dim), 1 / np.sqrt(self.dim), dtype=np.float32)

    with Recall(tmp_path / "r.db", Settings(index_interval=0, embeddings="none")) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("desk")
        per_message = 1 + len(passage_spans(LONG_REPLY))
        count = EMBED_MAX_TEXTS // per_message + 3  # more than one round's worth
        for i in range(count):
            world.post("desk", f"{i}. {LONG_REPLY}")
        store = mem.service.store
        index = search_index(store, Counting())  # type: ignore[arg-type]
        assert index is not None
        index.index_messages(1000)
        done = [index.embed_pending() for _ in range(3)]
        assert done[0] == EMBED_MAX_TEXTS // per_message and sum(done) == count and done[2] == 0
        # Each run of the model is shorter still: a stopping indexer waits for one run at most.
        assert batches and max(batches) <= STOP_CHECK_TEXTS
        assert sum(batches) == count * per_message


def test_a_pgvector_value_holds_as_many_passages_as_fit() -> None:
    from recall.search.postgres import PGVECTOR_MAX_DIMS, _vector_text

    def floats(text: str) -> list[float]:
        return [float(x) for x in text.strip("[]").split(",")]

    assert floats(_vector_text(np.array([0.5, -1.0], dtype=np.float32))) == [0.5, -1.0]
    long_text = np.arange(41 * 384, dtype=np.float32).reshape(41, 384)  # MiniLM's most: all fit
    assert floats(_vector_text(long_text)) == long_text.ravel().tolist()
    wide = np.ones((50, 1024), dtype=np.float32)  # a wider model: whole vectors, as many as fit
    assert len(floats(_vector_text(wide))) == (PGVECTOR_MAX_DIMS // 1024) * 1024
