"""What the search index keeps: its items (`search_items`), written once over a database's
primitives (`backend.SearchBackend`), and the record of which embedding model made their vectors.

Everything searchable is copied into `search_items` with the fields searches filter on; the
backend indexes its text for full-text search and, once embedded, stores its vector. Messages
reach the index in batches (`index_messages`, from a watermark): progress lives in the database
(the watermark in `search_state`, an `embedded` flag per item), so a restarted process, or
another one, carries on where the last stopped. `index.SearchIndex` adds embedding and search.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from recall.core.routing import private_owner
from recall.errors import InvalidInputError
from recall.search.backend import SearchBackend
from recall.search.base import MAX_PARAMS, MESSAGE_BATCH, IndexItem, ItemRow, indexed_text, marks
from recall.search.checks import check_id, check_kinds, item_row
from recall.search.metadata import indexed
from recall.store.rows import load_json

if TYPE_CHECKING:
    from recall.search.embeddings import Embedder

#: Largest embedding dimension accepted (backends write it into their DDL, so it is checked).
MAX_DIM = 8192

_STATE_MESSAGES = "messages"
#: Messages as the index copies them (then a condition on `m.id`).
_MESSAGE_ROWS = (
    "SELECT m.id, m.world_id, w.tenant, m.chat_id, m.sender, m.content, m.metadata, m.created_at, w.id"
    " FROM messages m JOIN worlds w ON w.key = m.world_id"
)
_STATE_MODEL = "vector_model"
#: Left by the migration that gave items their `metadata`: the id of the last item given it since.
_STATE_METADATA = "metadata_backfill"
#: Items given their metadata per transaction by `_backfill_metadata`.
_BACKFILL_PAGE = 2000
_SET_STATE = (
    "INSERT INTO search_state (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)


def model_key(name: str, dim: int) -> int:
    """A stable 63-bit number for the embedding model (search_state holds integers)."""
    return int.from_bytes(hashlib.sha256(f"{name}\n{dim}".encode()).digest()[:8], "big") >> 1


class _Before(NamedTuple):
    """The message before another in its chat: its id, indexed text, and whether it is for one
    agent alone."""

    id: int
    text: str
    private: bool


class IndexItems:
    """The items of one store's search index, on a backend's primitives, and the record of
    which embedding model made their vectors (`embedder` None: a keyword-only index)."""

    def __init__(self, backend: SearchBackend, embedder: Embedder | None = None) -> None:
        self._backend = backend
        self._store = backend.store
        self.embedder = embedder
        #: Whether the embedding model's key is recorded (written with the first vectors).
        self._model_recorded = False
        if embedder is not None:
            dim = embedder.dim
            if isinstance(dim, bool) or not isinstance(dim, int) or not 0 < dim <= MAX_DIM:
                raise InvalidInputError("embedder.dim", f"must be a whole number 1-{MAX_DIM}, got {dim!r}")
            backend.copy.hold_vectors(dim)
            self._check_model(model_key(embedder.name, dim))
        self._backfill_metadata()

    @property
    def has_vectors(self) -> bool:
        """Whether vector search is available (an embedder is configured)."""
        return self.embedder is not None

    def _sql(self, statement: str) -> str:
        return self._backend.sql(statement)

    def _read(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._store._read(self._sql(statement), params)

    # -- the embedding model and the vector storage -------------------------------------

    def _check_model(self, key: int) -> None:
        """Vectors of another model (or dimension) are meaningless to this one: if the stored
        vectors were made by a different embedder, drop them all and embed everything again."""
        rows = self._read("SELECT value FROM search_state WHERE name = ?", (_STATE_MODEL,))
        stored = int(rows[0][0]) if rows else None
        if stored == key:
            self._model_recorded = True
            return
        if stored is None and not self._backend.vectors_exist():
            return  # nothing embedded yet; the key is written with the first vectors
        with self._store._write() as db:
            self._backend.lock_indexing(db)
            self._backend.drop_vectors(db)
            db.execute(self._sql("DELETE FROM search_state WHERE name = ?"), (_STATE_MODEL,))

    def _record_model(self, db: Any) -> None:
        """Record which model made the vectors (in the caller's transaction), with the first."""
        if self._model_recorded:
            return
        assert self.embedder is not None
        db.execute(self._sql(_SET_STATE), (_STATE_MODEL, model_key(self.embedder.name, int(self.embedder.dim))))
        self._model_recorded = True

    def _backfill_metadata(self) -> None:
        """Give the items indexed before `search_items` had `metadata` their message's or
        memory's metadata (`metadata.indexed`), a page a transaction, before this process
        searches. The migration that added the column left a marker (`_STATE_METADATA`) when
        there were items; whoever opens the index first does the work, and a process stopped
        half-way leaves the rest to the next."""
        while self._read("SELECT 1 FROM search_state WHERE name = ?", (_STATE_METADATA,)):
            with self._store._write() as db:
                self._backend.lock_indexing(db)  # one process at a time (PostgreSQL replicas)
                mark = db.execute(
                    self._sql("SELECT value FROM search_state WHERE name = ?"), (_STATE_METADATA,)
                ).fetchone()
                if mark is None:
                    return  # another process finished it meanwhile
                items = db.execute(
                    self._sql(
                        "SELECT s.id, COALESCE(m.metadata, n.metadata) FROM search_items s"
                        " LEFT JOIN messages m ON s.kind = 'message' AND m.id = s.source_id"
                        " LEFT JOIN notes n ON s.kind = 'memory' AND n.id = s.source_id"
                        " WHERE s.id > ? AND s.kind <> 'fact' ORDER BY s.id LIMIT ?"
                    ),
                    (int(mark[0]), _BACKFILL_PAGE),
                ).fetchall()
                kept = [(indexed(load_json(text)), item) for item, text in items if text and text != "{}"]
                if updates := [(metadata, item) for metadata, item in kept if metadata is not None]:
                    db.executemany(
                        self._sql(f"UPDATE search_items SET metadata = {self._backend.json_param} WHERE id = ?"),
                        updates,
                    )
                if len(items) < _BACKFILL_PAGE:
                    db.execute(self._sql("DELETE FROM search_state WHERE name = ?"), (_STATE_METADATA,))
                else:
                    db.execute(
                        self._sql("UPDATE search_state SET value = ? WHERE name = ?"),
                        (int(items[-1][0]), _STATE_METADATA),
                    )

    # -- writing ----------------------------------------------------------------------------

    def add(self, items: Sequence[IndexItem]) -> None:
        """Add items, or replace the item of the same kind and source id, in one transaction.
        A replaced item gets a new row (and so is embedded again)."""
        rows = [item_row(item) for item in items]
        if not rows:
            return
        with self._store._write_pipelined() as db:  # `_add_rows` reads no result
            self._add_rows(db, rows)

    def add_in(self, db: Any, items: Sequence[IndexItem]) -> None:
        """`add` in the caller's write transaction (a memory changed in place: `store.AlsoWrite`),
        so that a crash leaves both or neither."""
        self._add_rows(db, [item_row(item) for item in items])

    def _add_rows(self, db: Any, rows: Sequence[ItemRow]) -> None:
        """Replace the items of the rows' kinds and source ids: one deletion per kind, then one
        insert (of a source written twice, the last row stands). Nothing here reads a result,
        so in a pipelined transaction (`_write_pipelined`) they all go in one round trip.
        Like every write of items, it takes the indexing lock first."""
        self._backend.lock_indexing(db)
        latest = {(row.kind, row.source_id): row for row in rows}
        by_kind: dict[str, list[int]] = {}
        for kind, source_id in latest:
            by_kind.setdefault(kind, []).append(source_id)
        for kind, ids in by_kind.items():
            for start in range(0, len(ids), MAX_PARAMS):
                self._backend.delete_items(db, kind, ids[start : start + MAX_PARAMS])
        self._backend.insert_items(db, list(latest.values()))

    def remove(self, kind: str, source_ids: Sequence[int]) -> int:
        """Remove the items of `kind` with these source ids; how many were there."""
        check_kinds([kind])
        ids = [check_id(i) for i in source_ids]
        removed = 0
        with self._store._write() as db:
            self._backend.lock_indexing(db)
            for start in range(0, len(ids), MAX_PARAMS):
                removed += self._backend.delete_items(db, kind, ids[start : start + MAX_PARAMS])
        return removed

    def index_messages(self, limit: int = MESSAGE_BATCH) -> int:
        """Copy messages above the watermark into the index, in one transaction; how many.

        Message ids are assigned in commit order under the store's write lock, so every message
        below the watermark is already indexed and none is copied twice. System and world
        messages are indexed like the rest: they are part of what was said in a world (an
        announcement is worth finding), and the `sender` filter can leave them out. Each
        message's `context` is the indexed text of the message before it in its chat.
        """
        if self._messages_indexed():
            return 0  # a read, so searches do not queue behind writers when nothing is new
        with self._store._write() as db:
            self._backend.lock_indexing(db)
            mark = self._watermark(db)
            messages = db.execute(
                self._sql(f"{_MESSAGE_ROWS} WHERE m.id > ? ORDER BY m.id LIMIT ?"), (mark, limit)
            ).fetchall()
            if not messages:
                return 0
            self._backend.insert_items(db, self._message_items(db, messages, {}))
            db.execute(self._sql(_SET_STATE), (_STATE_MESSAGES, messages[-1][0]))
        return len(messages)

    def _watermark(self, db: Any) -> int:
        row = db.execute(self._sql("SELECT value FROM search_state WHERE name = ?"), (_STATE_MESSAGES,)).fetchone()
        return int(row[0]) if row else 0

    def _message_items(
        self, db: Any, messages: Sequence[Sequence[Any]], previous: dict[tuple[str, str], _Before]
    ) -> list[ItemRow]:
        """The items of messages (rows of _MESSAGE_ROWS, in id order); `previous` holds the
        latest message seen per chat, so far.

        A message's words count with those of the turn before it (its `context`) only where
        everyone who heard it heard that turn too: not after a message for one agent alone,
        nor when an agent first heard the chat between the two (it joined since). Else an agent
        could rank what it heard by the words of what it never heard, and so test guesses."""
        rows: list[ItemRow] = []
        joined: dict[tuple[str, str], list[int]] = {}
        for m in messages:
            metadata = load_json(m[6]) if m[6] != "{}" else {}
            text = indexed_text(m[4], m[5], metadata)
            # World keys are unique regardless of case on both databases.
            chat = (str(m[1]).lower(), m[3])
            if chat not in previous:
                previous[chat] = self._previous(db, m[0], m[1], m[3])
            before = previous[chat]
            if chat not in joined:
                joined[chat] = self._first_heard(db, m[1], m[3], after=before.id)
            firsts, joiner = joined[chat], bisect_right(joined[chat], before.id)
            late = joiner < len(firsts) and firsts[joiner] <= m[0]  # someone first heard the chat since
            context = "" if before.private or late else before.text
            # The space is the world's id in its tenant, as for its notes and facts.
            rows.append(
                ItemRow(
                    m[2], m[8], "message", m[0], "", m[3] or None, m[4], None, m[7], text, context,
                    indexed(metadata),
                )
            )  # fmt: skip
            previous[chat] = _Before(m[0], text, private_owner(metadata) is not None)
        return rows

    def _first_heard(self, db: Any, world_id: str, chat_id: str, after: int) -> list[int]:
        """The first message each agent of the world heard (or wrote) in the chat, where above
        `after`, in order (`memory_counts.first_id`)."""
        found = db.execute(
            self._sql(
                "SELECT c.first_id FROM participants p JOIN memory_counts c ON c.agent_key = p.key"
                " WHERE p.world_id = ? AND p.kind = 'agent' AND c.chat_id = ? AND c.first_id > ?"
            ),
            (world_id, chat_id, after),
        ).fetchall()
        return sorted(int(r[0]) for r in found)

    def index_message_ids(self, message_ids: Sequence[int]) -> int:
        """Copy these messages into the index now, wherever the watermark is (an imported world
        keeps its message ids, which may lie below it); one already there stays as it is. How
        many were copied. Each message's context is the one before it among these, in its chat:
        name every message of a chat from some message on (as an import does)."""
        ids = sorted({check_id(i) for i in message_ids})
        copied = 0
        with self._store._write() as db:
            self._backend.lock_indexing(db)
            previous: dict[tuple[str, str], _Before] = {}
            for start in range(0, len(ids), MAX_PARAMS):
                chunk = ids[start : start + MAX_PARAMS]
                messages = db.execute(
                    self._sql(f"{_MESSAGE_ROWS} WHERE m.id IN ({marks(chunk)}) ORDER BY m.id"), chunk
                ).fetchall()
                self._backend.insert_items(db, self._message_items(db, messages, previous))
                copied += len(messages)
        return copied

    def forget(self, items: Mapping[str, Sequence[int]], successors: Sequence[int] = ()) -> int:
        """Remove items of several kinds (kind → source ids) with their vectors, in one
        transaction; how many were there. `successors` are messages that followed a removed
        one in its chat: their items are made again, with the context of the message now before
        them. It waits for an indexer copying messages meanwhile (the indexing lock), so no
        copy of a removed message stays behind; on SQLite each process's copy in memory drops
        the items at its next catch-up (`search_deleted`)."""
        with self._store._write() as db:
            return self.forget_in(db, items, successors)

    def forget_in(self, db: Any, items: Mapping[str, Sequence[int]], successors: Sequence[int] = ()) -> int:
        """`forget` in the caller's write transaction (a store's deletion: `store.AlsoRemove`),
        so that a crash leaves both or neither."""
        checked = {kind: [check_id(i) for i in ids] for kind, ids in items.items() if ids}
        check_kinds(list(checked) or ["message"])
        removed = 0
        self._backend.lock_indexing(db)
        for kind, ids in checked.items():
            for start in range(0, len(ids), MAX_PARAMS):
                removed += self._backend.delete_items(db, kind, ids[start : start + MAX_PARAMS])
        mark = self._watermark(db)
        # Above the watermark the indexer copies them later, with their context as it is then.
        # One at a time, oldest first: a successor's context may be another successor's text.
        for message_id in sorted({check_id(i) for i in successors if i <= mark}):
            self._backend.delete_items(db, "message", [message_id])
            message = db.execute(self._sql(f"{_MESSAGE_ROWS} WHERE m.id = ?"), (message_id,)).fetchall()
            self._backend.insert_items(db, self._message_items(db, message, {}))
        return removed

    def _previous(self, db: Any, message_id: int, world_id: str, chat_id: str) -> _Before:
        """The message before `message_id` in its chat, with its indexed text (none: id 0)."""
        row = db.execute(
            self._sql(
                "SELECT m.id, m.metadata, s.text FROM messages m"
                " LEFT JOIN search_items s ON s.kind = 'message' AND s.source_id = m.id"
                " WHERE m.id = (SELECT MAX(id) FROM messages WHERE world_id = ? AND chat_id = ? AND id < ?)"
            ),
            (world_id, chat_id, message_id),
        ).fetchone()
        if row is None:
            return _Before(0, "", False)
        metadata = load_json(row[1]) if row[1] != "{}" else {}
        return _Before(int(row[0]), str(row[2] or ""), private_owner(metadata) is not None)

    def _messages_indexed(self) -> bool:
        """Whether every message is already copied into the index."""
        row = self._read(
            "SELECT COALESCE((SELECT value FROM search_state WHERE name = ?), 0) >= COALESCE(MAX(id), 0) FROM messages",
            (_STATE_MESSAGES,),
        )
        return bool(row[0][0])

    def pending(self) -> int:
        """Work left: messages not copied yet, plus items not embedded (with an embedder)."""
        row = self._read(
            "SELECT (SELECT COUNT(*) FROM messages WHERE id > COALESCE("
            " (SELECT value FROM search_state WHERE name = ?), 0)),"
            f" (SELECT COUNT(*) FROM search_items WHERE {self._backend.not_embedded})",
            (_STATE_MESSAGES,),
        )[0]
        return int(row[0]) + (int(row[1]) if self.embedder is not None else 0)
