"""Embedding search items and storing their vectors: the indexer's rounds (`SearchIndex.embed_pending`,
the oldest items not embedded yet) and the items one explicit write made (`embed_now`), before
that write returns.

A memory or fact is searched for by its meaning at once: a question sharing no word with it
("what beverage do I like?" for "I only drink green tea") finds no keyword candidate, so until
its vector is stored nothing finds it. mem0's `add` and LangGraph's `put` embed before they
return; so do recall's writes of memories and facts (one item: one run of the model). Posted
messages are not embedded here: posting stays off the model's path (the indexer embeds them,
and a search embeds the fresh posts its keywords find).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from recall.search.base import MAX_PARAMS, marks
from recall.search.passage_vectors import embed_with_passages, passage_texts, speaker_prefix

if TYPE_CHECKING:
    from recall.search.index_items import IndexItems

logger = logging.getLogger("recall.indexer")

#: Texts one round of `embed_pending` embeds at most, passages included (the round takes at
#: least one item): a batch of long replies would otherwise run the model for a minute, and the
#: index worker checks whether to stop only between rounds.
EMBED_MAX_TEXTS = 256


def embed_rows(
    index: IndexItems, found: Sequence[Sequence[Any]], should_stop: Callable[[], bool] | None = None
) -> tuple[int, int]:
    """Embed the first of `found` (rows of `search_items`: id, text, kind, sender), as many as
    hold EMBED_MAX_TEXTS texts with their passages (one at least), and store their vectors;
    (rows taken, vectors stored). The model runs outside the store's lock (it takes tens of
    milliseconds; posts must not wait for it). An item deleted or replaced meanwhile is
    skipped: its row is gone, or its text is no longer the text that was embedded."""
    embedder = index.embedder
    if embedder is None or not found:
        return 0, 0
    items: list[list[str]] = []
    total = 0
    for r in found:  # long texts embed their passages too: at most EMBED_MAX_TEXTS a round
        texts = passage_texts(str(r[1]), speaker_prefix(str(r[2]), r[3]))
        total += len(texts)
        if items and total > EMBED_MAX_TEXTS:
            break
        items.append(texts)
    rows = [(r[0], r[1]) for r in found[: len(items)]]
    vectors = embed_with_passages(embedder, items, should_stop)
    if vectors is None:
        return 0, 0  # stopped between runs of the model: the items stay pending
    backend = index._backend
    with index._store._write() as db:
        # Storing vectors counts a change (the counter's row) before it updates the items;
        # a deletion of items updates them before it counts. Without the lock every writer
        # of items takes first, one of each could wait for the other (PostgreSQL found the
        # deadlock: a world deleted while its messages were embedded).
        backend.lock_indexing(db)
        index._record_model(db)
        return len(items), backend.store_vectors(db, rows, vectors)


def embed_now(index: IndexItems | None, kind: str, source_ids: Sequence[int]) -> int:
    """Embed the items of `kind` with these source ids that have no vector yet, and store their
    vectors, now; how many were stored. The search copy in memory picks them up at the next
    search (they count as a change of items). The write itself is already committed: if the
    model fails, the failure is logged and the items stay pending for the background indexer
    (raising would tell the caller a stored memory was not stored, and a retry would store it
    twice)."""
    if index is None or index.embedder is None or not source_ids:
        return 0
    stored = 0
    try:
        for start in range(0, len(source_ids), MAX_PARAMS):
            ids = list(source_ids[start : start + MAX_PARAMS])
            rows = index._read(
                f"SELECT id, text, kind, sender FROM search_items WHERE kind = ? AND source_id IN ({marks(ids)})"
                f" AND {index._backend.not_embedded} ORDER BY id",
                (kind, *ids),
            )
            while rows:
                taken, done = embed_rows(index, rows)
                stored += done
                rows = rows[taken:]
    except Exception:
        logger.warning(
            "embedding the %s(s) just written failed; the background indexer embeds them", kind, exc_info=True
        )
    return stored
