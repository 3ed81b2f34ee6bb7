"""The index's work left to do: messages not copied yet, items without a vector; counted and
done for the whole store or for one space (a world: `recall search` embeds its world alone),
with progress told as it goes (`recall index --once` shows it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from recall.search.base import MESSAGE_BATCH
from recall.search.embed_now import embed_rows

if TYPE_CHECKING:
    from recall.search.index_items import IndexItems

#: Told how far a piece of work is: (what is done to them, what they are, how many, of how many),
#: e.g. ("embedded", "items", 1200, 5882).
Progress = Callable[[str, str, int, int], None]


class Space(NamedTuple):
    """One space of one tenant (a world's id, or `user:ID`): what a search searches."""

    tenant: str
    id: str


def _where(index: IndexItems, space: Space | None) -> tuple[str, tuple[str, ...]]:
    """The condition on `search_items` of items without a vector (in `space`), and its values."""
    condition = index._backend.not_embedded
    if space is None:
        return condition, ()
    return f"{condition} AND tenant = ? AND space = ?", (space.tenant, space.id)


def unembedded(index: IndexItems, space: Space | None = None) -> int:
    """Items without a vector (in `space`); 0 for a keyword-only index."""
    if index.embedder is None:
        return 0
    condition, values = _where(index, space)
    return int(index._read(f"SELECT COUNT(*) FROM search_items WHERE {condition}", values)[0][0])


def uncopied(index: IndexItems) -> int:
    """Messages not copied into the index yet (of every world: they are copied in id order)."""
    row = index._read(
        "SELECT COUNT(*) FROM messages WHERE id > COALESCE((SELECT value FROM search_state WHERE name = ?), 0)",
        ("messages",),
    )
    return int(row[0][0])


def embed_pending(
    index: IndexItems, batch: int = 64, space: Space | None = None, should_stop: Callable[[], bool] | None = None
) -> int:
    """Embed up to `batch` items without a vector (in `space`), oldest first (fewer where long
    texts' passages reach `embed_now.EMBED_MAX_TEXTS`: `embed_rows`); how many were stored."""
    if index.embedder is None or batch < 1:
        return 0
    condition, values = _where(index, space)
    found = index._read(
        f"SELECT id, text, kind, sender FROM search_items WHERE {condition} ORDER BY id LIMIT ?",
        (*values, int(batch)),
    )
    return embed_rows(index, found, should_stop)[1]


def copy_messages(index: IndexItems, progress: Progress | None = None) -> int:
    """Copy every message not in the index yet into it (by its words; vectors come later),
    telling `progress` after each batch; how many."""
    total = uncopied(index) if progress is not None else 0
    if progress is not None and total:
        progress("copied", "messages", 0, total)
    copied = 0
    while done := index.index_messages(MESSAGE_BATCH):
        copied += done
        if progress is not None:
            progress("copied", "messages", copied, max(total, copied))
    return copied


def embed_all(
    index: IndexItems,
    batch: int = 64,
    space: Space | None = None,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Embed every item without a vector (in `space`), telling `progress` after each batch,
    until none is left (or `should_stop()` says so); how many."""
    total = unembedded(index, space) if progress is not None else 0
    if progress is not None and total:
        progress("embedded", "items", 0, total)
    embedded = 0
    while should_stop is None or not should_stop():
        done = embed_pending(index, batch, space)
        if done == 0:
            break
        embedded += done
        if progress is not None:
            progress("embedded", "items", embedded, max(total, embedded))
    return embedded
