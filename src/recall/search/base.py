"""What every search backend shares: the records, the store access the index needs
(`RowStore`), query terms and the SQL of the filters. The primitives a backend implements
(`SearchBackend`) are in `backend.py`.

The index (`index.SearchIndex`) is written once over these: validation, paging, fusion, the
embedding-model bookkeeping and the catch-up logic. A backend (`sqlite.py`, `postgres.py`)
holds only what genuinely differs: where its words and vectors are searched (a copy in memory,
`copy.py`; pgvector).

A backend's search returns `Candidate`s: what ranking reads of an item and one score (lower is
better: a negated keyword rank, or a cosine distance). The index ranks them (`Ranked`) and reads
the whole rows (`ITEM_COLUMNS`) of only the hits it returns; a caller that needs no text (the
recalled past, which reads the messages themselves) reads none.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

from recall.core.models import Message, with_caption
from recall.search.metadata import Condition, where_sql
from recall.search.stopwords import content_terms

if TYPE_CHECKING:
    pass


Kind = Literal["message", "memory", "fact"]
Method = Literal["hybrid", "bm25", "vector"]
KINDS: tuple[Kind, ...] = ("message", "memory", "fact")
METHODS: tuple[Method, ...] = ("hybrid", "bm25", "vector")

#: Keyword weight of a message's preceding turn (its `context`) against its own text (1).
CONTEXT_WEIGHT = 0.5
#: Largest `k` a search accepts.
MAX_K = 1000
#: Messages copied per `index_messages` call by `step`.
MESSAGE_BATCH = 1000
#: Owners a search may name, and ids one statement deletes (each is one SQL parameter).
MAX_PARAMS = 500
#: Query terms kept: a pasted page as a query should not become a 5,000-term OR.
MAX_QUERY_TERMS = 64
#: Longest query a search accepts (characters); a context's searches read at most this much of
#: the messages they search for.
MAX_QUERY_CHARS = 4_000

#: The columns of `search_items s` every search row starts with.
ITEM_COLUMNS = "s.id, s.kind, s.source_id, s.text, s.space, s.owner, s.chat_id, s.sender, s.created_at, s.importance"

#: The columns of `search_items s` a `Candidate` is made of (its score follows).
CANDIDATE_COLUMNS = "s.id, s.kind, s.source_id, s.sender, s.chat_id, s.created_at, length(s.text)"

#: Words as the keyword engine splits them (the copy in memory, `local_words.words`); everything else (quotes, *, -, :, parens, `&`, `|`) is dropped, so no user
#: text can be read as query syntax.
WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class IndexItem:
    """One thing to make searchable. `owner` '' is visible to everyone in the space."""

    tenant: str
    space: str
    kind: Kind
    source_id: int
    owner: str
    text: str
    created_at: datetime
    chat_id: str | None = None
    sender: str | None = None
    importance: int | None = None
    #: What metadata filters match (`metadata.indexed` keeps its scalar top-level keys); facts have none.
    metadata: Mapping[str, Any] | None = None


class ItemRow(NamedTuple):
    """An item as `search_items` stores it (the parameters of its INSERT, in column order)."""

    tenant: str
    space: str
    kind: str
    source_id: int
    owner: str
    chat_id: str | None
    sender: str | None
    importance: int | None
    created_at: float
    text: str
    #: The indexed text of the turn before a message in its chat ('' for everything else).
    context: str = ""
    #: The metadata filters match, as canonical JSON text (`metadata.indexed`; None: none).
    metadata: str | None = None


class Candidate(NamedTuple):
    """An item a search found, as ranking reads it, with that search's score (lower is better)."""

    id: int
    kind: str
    source_id: int
    sender: str | None
    chat_id: str | None
    created_at: float
    #: Characters of its indexed text.
    chars: int
    score: float
    #: What of it matched: 0 its text as a whole, n its n-th passage (`core.passages`).
    part: int = 0


class Ranked(NamedTuple):
    """An item's place in a search's answer, before its row is read: its score (higher is
    better) and what `SearchHit` reports of how it was found."""

    id: int
    kind: str
    source_id: int
    score: float
    method: Method
    bm25_rank: int | None = None
    vector_rank: int | None = None
    similarity: float | None = None
    keyword_score: float | None = None
    time_score: float | None = None
    #: Who wrote it and in which chat (None: the default chat), as the index holds them.
    sender: str | None = None
    chat_id: str | None = None
    #: What of it the vector search matched: 0 its text as a whole, n its n-th passage.
    part: int = 0


@dataclass(frozen=True)
class SearchHit:
    """One result. `score` is higher-is-better: the ranking model's probability for hybrid (see
    `ranking.py`), the BM25 score for bm25, the cosine similarity for vector. `method` is what
    actually ran (a vector or hybrid search without an embedder runs as bm25). Ranks are 1-based
    within each method's candidate list; `similarity` is 1 - cosine distance (clamped to 0..1)
    when the vector search found the item."""

    kind: Kind
    source_id: int
    score: float
    text: str
    space: str
    owner: str
    chat_id: str | None
    sender: str | None
    created_at: datetime
    importance: int | None
    method: Method
    bm25_rank: int | None = None
    vector_rank: int | None = None
    similarity: float | None = None
    #: Hybrid only: the keyword score over the query's best (0..1, None when the keyword search
    #: did not find it) and how near it was written to a time the query names (0..1, None when
    #: the query names none): two of the features its score was made of (`ranking.py`).
    keyword_score: float | None = None
    time_score: float | None = None


@dataclass(frozen=True)
class Filters:
    """A search's validated filters (see `SearchIndex.search`); owners are lowercased and times
    are POSIX timestamps, as the index stores them."""

    tenant: str
    space: str
    kinds: tuple[str, ...]
    owners: tuple[str, ...] | None
    chat_id: str | None
    sender: str | None
    since: float | None
    until: float | None
    min_importance: int | None
    #: Metadata conditions, every one to hold (`metadata.parse`); none: no metadata filter.
    metadata: tuple[Condition, ...] = ()


class RowStore(Protocol):
    """What the index uses of a store: its reads and its write transactions."""

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def _write(self) -> AbstractContextManager[Any]: ...

    def _write_pipelined(self) -> AbstractContextManager[Any]: ...


def message_text(message: Message) -> str:
    """What a message is indexed as: who said it and what, plus an image's caption, so a
    search for "the photo of the beach" finds the message that shared it."""
    return indexed_text(message.sender, message.content, message.metadata)


def indexed_text(sender: str, content: str, metadata: Mapping[str, Any]) -> str:
    """`message_text` of a message's stored fields."""
    return f"{sender}: {with_caption(content, metadata)}"


def query_terms(query: str) -> list[str]:
    """The words of a free-text query a keyword search looks for: lowercased, once each, stop
    words left out (unless that leaves none), at most MAX_QUERY_TERMS."""
    return content_terms(list(dict.fromkeys(t.lower() for t in WORD.findall(query))))[:MAX_QUERY_TERMS]


def marks(values: Sequence[object]) -> str:
    """`?, ?, ?`: one placeholder per value."""
    return ", ".join("?" * len(values))


def item_column(name: str) -> str:
    """A filter field as a column of `search_items s` (no chat is '' there, as in a filter)."""
    return "COALESCE(s.chat_id, '')" if name == "chat_id" else f"s.{name}"


def where_clause(f: Filters, column: Callable[[str], str] = item_column) -> tuple[str, list[Any]]:
    """The WHERE clause of a search with these filters, and its parameters; `column` names
    the SQL expression of each filter field (by default the columns of `search_items s`)."""
    clauses = [f"{column('tenant')} = ?", f"{column('space')} = ?", f"{column('kind')} IN ({marks(f.kinds)})"]
    params: list[Any] = [f.tenant, f.space, *f.kinds]
    if f.owners is not None:
        clauses.append(f"{column('owner')} IN ({marks(f.owners)})")  # the columns ignore case
        params += f.owners
    optional: list[tuple[str, str, object]] = [
        ("chat_id", "=", f.chat_id),
        ("sender", "=", f.sender),
        ("created_at", ">=", f.since),
        ("created_at", "<", f.until),
        ("importance", ">=", f.min_importance),
    ]
    for name, operator, value in optional:
        if value is not None:
            clauses.append(f"{column(name)} {operator} ?")
            params.append(value)
    if f.metadata:
        conditions, values = where_sql(f.metadata, column("metadata"))
        clauses += conditions
        params += values
    return " AND ".join(clauses), params


def similarity(distance: float) -> float:
    """Cosine similarity from a cosine distance, clamped to 0..1 (float error and opposite
    vectors would leave it)."""
    return min(1.0, max(0.0, 1.0 - float(distance))) if math.isfinite(distance) else 0.0


def hit(row: Sequence[Any], found: Ranked) -> SearchHit:
    """The hit of a ranked item, from its row (`ITEM_COLUMNS`)."""
    return SearchHit(
        kind=row[1],
        source_id=row[2],
        score=float(found.score),
        text=row[3],
        space=row[4],
        owner=row[5],
        chat_id=row[6],
        sender=row[7],
        created_at=datetime.fromtimestamp(row[8], tz=UTC),
        importance=row[9],
        method=found.method,
        bm25_rank=found.bm25_rank,
        vector_rank=found.vector_rank,
        similarity=found.similarity,
        keyword_score=found.keyword_score,
        time_score=found.time_score,
    )
