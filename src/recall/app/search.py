"""Search a world's messages, memories and facts, or a user's facts, through the search index."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from recall import telemetry
from recall.app.facts import Facts
from recall.app.people_facts import fact_scope, people_scopes, with_people_facts
from recall.app.worlds import Worlds
from recall.errors import InvalidInputError, UnknownWorldError
from recall.search.metadata import parse as parse_metadata
from recall.settings import Settings
from recall.telemetry.instruments import SEARCH

if TYPE_CHECKING:
    from recall.app.memories import Memories
    from recall.search.base import SearchHit
    from recall.search.index import SearchIndex

SEARCH_KINDS = ("message", "memory", "fact")
SEARCH_METHODS = ("hybrid", "bm25", "vector")
#: An agent's search leaves out the messages it did not hear; while they crowd out the hits it
#: asked for, the index is asked for a list this many times deeper, up to MAX_HEARD_POOL hits.
HEARD_POOL_GROWTH = 4
MAX_HEARD_POOL = 4000


@dataclass(frozen=True)
class SearchResult:
    """One search hit, with the id of what it came from and why it ranks where it does:
    `method` is what ran (a vector or hybrid search without embeddings runs as bm25);
    `keyword_rank` and `vector_rank` are its 1-based places in the keyword and vector
    candidate lists (None when that method did not find it); `similarity` is its cosine
    similarity to the query (0..1, when the vector search found it); `score` is its relevance,
    0..1, what the hits are ordered by (`SearchIndex.relevances`: for hybrid, the ranking
    model's probability that it answers the query, as if answers were as common as not; for
    vector, the similarity; for bm25, how much of the query's words it holds, about 1 when it
    holds each of them). A memory's or fact's score is the higher of that and what its
    similarity says (`search/calibration.py`: a question sharing no word with it scores as a
    match). Scores of one method compare across queries: `min_score` keeps the hits at or
    above one."""

    kind: str
    source_id: int
    score: float
    text: str
    space: str
    chat_id: str | None
    sender: str | None
    created_at: datetime
    importance: int | None = None
    similarity: float | None = None
    method: str = "hybrid"
    keyword_rank: int | None = None
    vector_rank: int | None = None
    #: Whose fact a fact is: 'user:ID', 'agent:WORLD/AGENT' or 'world:ID' (None for the rest).
    scope: str | None = None

    @classmethod
    def of(cls, hit: SearchHit) -> SearchResult:
        return cls(
            hit.kind,
            hit.source_id,
            hit.score,
            hit.text,
            hit.space,
            hit.chat_id,
            hit.sender,
            hit.created_at,
            hit.importance,
            hit.similarity,
            hit.method,
            hit.bm25_rank,
            hit.vector_rank,
            fact_scope(hit.space, hit.owner) if hit.kind == "fact" else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "source_id": self.source_id,
            "score": round(self.score, 6),
            "text": self.text,
            "space": self.space,
            "chat_id": self.chat_id,
            "sender": self.sender,
            "created_at": self.created_at.isoformat(),
            "importance": self.importance,
            "similarity": None if self.similarity is None else round(self.similarity, 6),
            "method": self.method,
            "keyword_rank": self.keyword_rank,
            "vector_rank": self.vector_rank,
            "scope": self.scope,
        }


def check_min_score(min_score: object) -> None:
    """A search's `min_score`: None, or a number from 0 to 1 (a hit's score is its relevance)."""
    if min_score is not None and (
        isinstance(min_score, bool) or not isinstance(min_score, int | float) or not 0.0 <= min_score <= 1.0
    ):
        raise InvalidInputError("min_score", f"must be a number from 0 to 1 (a hit's score), got {min_score!r}")


def _check_options(query: object, kinds: Sequence[str], k: object, method: str, min_score: object) -> None:
    if not isinstance(query, str):
        raise InvalidInputError("query", "must be text")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
        raise InvalidInputError("k", f"must be a whole number from 1 to 1000, got {k!r}")
    check_min_score(min_score)
    if method not in SEARCH_METHODS:
        raise InvalidInputError("method", f"must be one of {', '.join(SEARCH_METHODS)}, got {method!r}")
    bad = [kind for kind in kinds if kind not in SEARCH_KINDS]
    if bad or not kinds:
        raise InvalidInputError("kinds", f"each must be one of {', '.join(SEARCH_KINDS)}, got {list(kinds)!r}")


@dataclass(frozen=True, eq=False)
class Searcher:
    """Searches, and brings the index up to date on demand."""

    settings: Settings
    worlds: Worlds
    facts: Facts
    index: SearchIndex | None = None
    #: Long-term memories: a world's expired ones are purged before its memories are searched.
    memories: Memories | None = None

    def copy_new_messages(self) -> int:
        """Copy every message not yet in the search index into it, by its words (its vector is
        the indexer's work, later); how many."""
        copied = 0
        while self.index is not None and (batch := self.index.index_messages()):
            copied += batch
        return copied

    def search(
        self,
        space: str,
        query: str,
        *,
        tenant: str = "",
        kinds: Sequence[str] = SEARCH_KINDS,
        k: int = 10,
        method: str = "hybrid",
        agent: str | None = None,
        chat_id: str | None = None,
        sender: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        min_importance: int | None = None,
        min_score: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> list[SearchResult]:
        """Search a world (by its key: messages, memories, the facts of the world, its agents and
        its humans) or a user scope (`user:ID`,
        its facts) of `tenant`: the `k` best hits, those scoring under `min_score` left out.

        With `agent`, only what that agent may see: shared items and its own private ones. With
        `metadata`, only messages and memories whose metadata passes it (`search/metadata.py`:
        `{"channel": "sms", "priority": {"$gte": 2}}`), before the `k` best are picked."""
        # The query's text is never an attribute: its length is.
        ids = {"recall.world.id": space if isinstance(space, str) else None, "recall.agent.id": agent}
        with telemetry.timed(
            SEARCH,
            "recall.search.duration",
            ids,
            {"recall.search.method": method if method in SEARCH_METHODS else "invalid"},
        ) as span:
            results = self._search(
                space,
                query,
                tenant=tenant,
                kinds=kinds,
                k=k,
                method=method,
                agent=agent,
                chat_id=chat_id,
                sender=sender,
                since=since,
                until=until,
                min_importance=min_importance,
                min_score=min_score,
                metadata=metadata,
                now=now,
            )
            span.set(
                {
                    "recall.search.k": k if isinstance(k, int) else None,
                    "recall.search.kinds": ",".join(str(kind) for kind in kinds),
                    "recall.search.query_chars": len(query) if isinstance(query, str) else None,
                    "recall.search.results": len(results),
                }
            )
        return results

    def _search(
        self,
        space: str,
        query: str,
        *,
        tenant: str,
        kinds: Sequence[str],
        k: int,
        method: str,
        agent: str | None,
        chat_id: str | None,
        sender: str | None,
        since: datetime | None,
        until: datetime | None,
        min_importance: int | None,
        min_score: float | None,
        metadata: Mapping[str, Any] | None,
        now: datetime | None,
    ) -> list[SearchResult]:
        _check_options(query, kinds, k, method, min_score)
        parse_metadata(metadata)  # refused whether or not there is anything to search
        owners: list[str] | None = None
        resolved_key = ""
        if isinstance(space, str) and space.startswith("user:"):
            resolved = self.facts.scope(space, tenant)
        else:
            world = self.worlds.get_world(space)
            if world.tenant != tenant:
                raise UnknownWorldError(world.id)
            resolved = world.id
            resolved_key = world.key
            if agent is not None:
                agent = self.worlds.get_agent(world.key, agent).id
                owners = ["", agent]
            if self.memories is not None and "memory" in kinds and query.strip():
                self.memories.purge_world(world.key)  # an expired memory is never found
        if self.index is None or not query.strip():
            return []
        # Messages reach the index in the background; copying the newest ones is cheap, so a
        # keyword search always sees everything posted (vectors may still be on their way).
        if "message" in kinds:
            self.copy_new_messages()
        index = self.index

        def best(depth: int, space: str = resolved, kinds: Sequence[str] = kinds) -> list[SearchHit]:
            return index.search(
                query,
                tenant=tenant,
                space=space,
                kinds=kinds,
                k=depth,
                method=method,  # type: ignore[arg-type]  # checked against SEARCH_METHODS above
                owners=owners,
                chat_id=chat_id,
                sender=sender,
                since=since,
                until=until,
                min_importance=min_importance,
                metadata=metadata,
                now=now,
            )

        # Memories' and facts' scores are calibrated (`search/calibration.py`), which may reorder
        # the hits: a few more are asked for, then the `k` best kept.
        from recall.search.calibration import calibrate, pool

        depth = pool(k, kinds, method)
        found = calibrate(
            best(depth) if agent is None or "message" not in kinds else self._heard(resolved_key, agent, best, depth)
        )
        # A world's search finds its humans' facts too (they live in the tenant's user spaces),
        # unless a filter only messages and memories pass is set.
        if resolved_key and "fact" in kinds and (chat_id, sender, min_importance, metadata) == (None,) * 4:
            people = people_scopes(self.worlds, self.worlds.get_world(resolved_key), query)
            found = with_people_facts(found, lambda scope: calibrate(best(depth, scope, ("fact",))), people, k)
        hits = found[:k]
        return [SearchResult.of(h) for h in hits if min_score is None or h.score >= min_score]

    def _heard(self, world_key: str, agent: str, best: Callable[[int], list[SearchHit]], k: int) -> list[SearchHit]:
        """The `k` best hits once the messages the agent did not hear (or write) are left out,
        as its recalled past leaves them out: when they crowd out `k`, a deeper list is asked
        for (HEARD_POOL_GROWTH times as deep each time, at most MAX_HEARD_POOL hits)."""
        depth = k
        while True:
            hits = best(depth)
            heard = self.worlds.store.heard_ids(world_key, agent, [h.source_id for h in hits if h.kind == "message"])
            kept = [h for h in hits if h.kind != "message" or h.source_id in heard]
            if len(kept) >= k or len(hits) < depth or depth >= MAX_HEARD_POOL:
                return kept[:k]
            depth = min(depth * HEARD_POOL_GROWTH, MAX_HEARD_POOL)

    def refresh_index(self, *, graphs: bool = True) -> int:
        """Bring the search index fully up to date now (copy and embed everything pending, then,
        with `graphs`, build the vector graphs of large spaces as the background indexer does
        next); the work done. The background indexer does this on its own; the CLI and
        benchmarks call it to search a store they just wrote."""
        if self.index is None:
            return 0
        done = self.index.catch_up(self.settings.embed_batch)
        while graphs and (added := self.index.maintain()) > 0:
            done += added
        return done
