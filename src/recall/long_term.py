"""Long-term memory use cases: facts and their sections, notes (long-term memories), search,
and the context blocks built from them (spec §3 context messages, spec §4).

`RecallService` owns one `LongTermMemory` and delegates to it, so every interface reaches
these through the same functions. Scopes are checked against the caller's tenant: a world or
agent scope must name a world of that tenant, so one tenant never reads another's facts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

from recall import limits
from recall.core.context import ContextBlock
from recall.core.escaping import escape
from recall.core.extraction import MAX_MESSAGES as EXTRACTION_MESSAGES
from recall.core.extraction import FactChanges
from recall.core.facts import (
    Fact,
    MemoryBlock,
    NewFact,
    parse_scope,
    rank_facts,
    recent_conversation,
    render_memory_block,
    validate_new_fact,
    validate_sections,
)
from recall.core.models import Message, SenderType
from recall.core.tokens import TokenCounter
from recall.errors import (
    NUL_MESSAGE,
    InvalidInputError,
    PermissionDeniedError,
    UnknownFactError,
    UnknownNoteError,
    UnknownWorldError,
)
from recall.extraction import ExtractionQueue, ExtractionRun
from recall.llm.base import ChatModel
from recall.llm.factory import chat_model_from_settings
from recall.settings import Settings
from recall.store.base import NewNote, Note, Store, WorldRecord

if TYPE_CHECKING:
    from recall.retrieval.indexer import BackgroundIndexer
    from recall.store.sqlite_search import SearchHit, SQLiteSearchIndex

EXPORT_FORMAT = "recall.facts/1"
NOTE_TYPE = re.compile(r"[a-z][a-z0-9_-]{0,39}")
MAX_NOTE_CHARS = limits.MAX_NOTE_CHARS
SEARCH_KINDS = ("message", "memory", "fact")
SEARCH_METHODS = ("hybrid", "bm25", "vector")
LONG_TERM_HEADER = "Relevant context from past interactions:"
SIMILAR_HEADER = "Similar past interactions that may be relevant:"
#: Messages read back at most to find the recent conversation (3 human turns).
RECENT_SCAN = 60


@dataclass(frozen=True)
class SearchResult:
    """One search hit, with the id of what it came from."""

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
        }


def _result(hit: SearchHit) -> SearchResult:
    return SearchResult(
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
    )


def _day(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d")


class LongTermMemory:
    def __init__(
        self,
        store: Store,
        settings: Settings,
        get_world: Callable[[str], WorldRecord],
        resolve_world: Callable[[str, str | None], WorldRecord],
        check_agent: Callable[[str, str], str],
        index: SQLiteSearchIndex | None = None,
        indexer: BackgroundIndexer | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        #: A world by its key (what the methods below take), and by its id in a tenant (scopes).
        self._get_world = get_world
        self._resolve_world = resolve_world
        self._check_agent = check_agent
        self.index = index
        self.indexer = indexer
        #: The configured chat model (extraction and history summaries), or None.
        self.model = chat_model_from_settings(settings)
        #: Debounced fact extraction; None when no chat model is configured (extraction off).
        self.extraction = None if self.model is None else self._extraction_queue(self.model)

    def _extraction_queue(self, model: ChatModel) -> ExtractionQueue:
        return ExtractionQueue(
            model,
            lambda tenant, scope: (self.store.list_facts(tenant, scope), self.store.get_sections(tenant, scope)),
            self._apply_extraction,
            debounce=self.settings.extraction_debounce,
            min_confidence=self.settings.extraction_min_confidence,
            max_facts=self.settings.max_facts,
        )

    def close(self) -> None:
        """Stop background work (the extraction queue, the indexer) and wait for both threads to
        end, however long their current step takes (a model call is bounded by its timeout, an
        indexing step by its batch): the store closes next, and a thread left running would
        fail against it. Calling it again does nothing more."""
        if self.extraction is not None:
            self.extraction.close()
        if self.indexer is not None:
            self.indexer.stop()

    def written(self) -> None:
        """Messages were stored: the background indexer picks them up soon. Cheap."""
        if self.indexer is not None:
            self.indexer.notify()

    def refresh_index(self) -> int:
        """Bring the search index fully up to date now (copy and embed everything pending);
        the work done. The background indexer does this on its own; the CLI and benchmarks
        call it to search a store they just wrote."""
        return 0 if self.index is None else self.index.catch_up(self.settings.embed_batch)

    # -- scopes ---------------------------------------------------------------------------

    def scope(self, scope: object, tenant: str = "") -> str:
        """The canonical scope, after checking a world or agent scope names a world (and agent)
        of `tenant`; another tenant's world is reported as unknown, never as forbidden."""
        canonical = parse_scope(scope)
        kind, _, rest = canonical.partition(":")
        if kind == "user":
            return canonical
        world_id, _, agent_id = rest.partition("/")
        world = self._resolve_world(world_id, tenant)
        if kind == "world":
            return f"world:{world.id.lower()}"
        return f"agent:{world.id.lower()}/{self._check_agent(world.key, agent_id).lower()}"

    def _space(self, scope: str) -> tuple[str, str]:
        """(space, owner) of a fact scope in the search index: a world's space is its id in
        its tenant, as for its messages and notes."""
        kind, _, rest = scope.partition(":")
        if kind == "user":
            return scope, ""
        world_id, _, agent_id = rest.partition("/")
        return world_id, agent_id

    # -- facts ----------------------------------------------------------------------------

    def list_facts(self, scope: str, tenant: str = "") -> list[Fact]:
        return self.store.list_facts(tenant, self.scope(scope, tenant))

    def get_fact(self, scope: str, fact_id: int, tenant: str = "") -> Fact:
        canonical = self.scope(scope, tenant)
        fact = self.store.get_fact(tenant, canonical, fact_id) if isinstance(fact_id, int) else None
        if fact is None:
            raise UnknownFactError(canonical, fact_id)
        return fact

    def add_facts(self, scope: str, facts: Sequence[NewFact | Mapping[str, Any]], tenant: str = "") -> list[Fact]:
        canonical = self.scope(scope, tenant)
        checked = [validate_new_fact(f) for f in facts]
        written = self.store.change_facts(tenant, canonical, datetime.now(UTC), add=checked)
        self._index_facts(tenant, written.added)
        return list(written.added)

    def update_fact(self, scope: str, fact_id: int, changes: Mapping[str, Any], tenant: str = "") -> Fact:
        current = self.get_fact(scope, fact_id, tenant)
        merged = {
            "content": current.content,
            "category": current.category,
            "confidence": current.confidence,
            "source": current.source,
            "avoid": current.avoid,
            **changes,
        }
        new = validate_new_fact(merged)
        written = self.store.change_facts(tenant, current.scope, datetime.now(UTC), update={current.id: new})
        if not written.updated:  # deleted meanwhile
            raise UnknownFactError(current.scope, fact_id)
        self._index_facts(tenant, written.updated)
        return written.updated[0]

    def delete_fact(self, scope: str, fact_id: int, tenant: str = "") -> None:
        current = self.get_fact(scope, fact_id, tenant)
        written = self.store.change_facts(tenant, current.scope, datetime.now(UTC), remove_ids=[current.id])
        self._unindex_facts(written.removed)

    def clear_facts(self, scope: str, tenant: str = "") -> int:
        canonical = self.scope(scope, tenant)
        written = self.store.change_facts(tenant, canonical, datetime.now(UTC), clear=True)
        self._unindex_facts(written.removed)
        return len(written.removed)

    def sections(self, scope: str, tenant: str = "") -> dict[str, str]:
        return self.store.get_sections(tenant, self.scope(scope, tenant))

    def set_sections(self, scope: str, sections: Mapping[str, Any], tenant: str = "") -> dict[str, str]:
        """Replace the named sections; an empty text removes one."""
        canonical = self.scope(scope, tenant)
        if not isinstance(sections, Mapping):
            raise InvalidInputError("sections", "must be an object of section name to text")
        checked = validate_sections(sections)
        self.store.change_facts(tenant, canonical, datetime.now(UTC), sections=checked)
        return self.store.get_sections(tenant, canonical)

    def export_facts(self, scope: str, tenant: str = "") -> dict[str, Any]:
        canonical = self.scope(scope, tenant)
        return {
            "format": EXPORT_FORMAT,
            "scope": canonical,
            "exported_at": datetime.now(UTC).isoformat(),
            "sections": self.store.get_sections(tenant, canonical),
            "facts": [
                {k: v for k, v in f.to_dict().items() if k not in ("id", "scope")}
                for f in self.store.list_facts(tenant, canonical)
            ],
        }

    def import_facts(
        self, scope: str, data: Mapping[str, Any], replace: bool = False, tenant: str = ""
    ) -> dict[str, int]:
        """Add the facts of an export (skipping case-insensitive duplicates of facts already
        there) and its sections; `replace` clears the scope first. All or nothing."""
        canonical = self.scope(scope, tenant)
        if not isinstance(data, Mapping) or not isinstance(data.get("facts", []), list):
            raise InvalidInputError("facts", "an import is an object with a list of facts (as `export` writes)")
        checked = []
        for i, raw in enumerate(data.get("facts", [])):
            if not isinstance(raw, Mapping):
                raise InvalidInputError(f"facts[{i}]", "must be an object")
            fields = {k: raw[k] for k in ("content", "category", "confidence", "source", "avoid") if k in raw}
            try:
                checked.append(validate_new_fact(fields))
            except InvalidInputError as e:
                raise InvalidInputError(f"facts[{i}].{e.field}", e.problem) from None
        sections = data.get("sections") or {}
        if not isinstance(sections, Mapping):
            raise InvalidInputError("sections", "must be an object of section name to text")
        checked_sections = validate_sections(sections)
        seen = set() if replace else {_same(f.content) for f in self.store.list_facts(tenant, canonical)}
        fresh = []
        for fact in checked:
            if _same(fact.content) not in seen:
                seen.add(_same(fact.content))
                fresh.append(fact)
        written = self.store.change_facts(
            tenant, canonical, datetime.now(UTC), add=fresh, sections=checked_sections, clear=replace
        )
        self._unindex_facts(written.removed)
        self._index_facts(tenant, written.added)
        return {"added": len(written.added), "skipped": len(checked) - len(fresh), "removed": len(written.removed)}

    def fact_scopes(self, tenant: str = "") -> list[tuple[str, int]]:
        return self.store.list_fact_scopes(tenant)

    def _index_facts(self, tenant: str, facts: Iterable[Fact]) -> None:
        if self.index is None:
            return
        from recall.store.sqlite_search import IndexItem

        items = []
        for fact in facts:
            space, owner = self._space(fact.scope)
            items.append(
                IndexItem(
                    tenant=tenant,
                    space=space,
                    kind="fact",
                    source_id=fact.id,
                    owner=owner,
                    text=fact.content,
                    created_at=fact.updated_at,
                )
            )
        if items:
            self.index.add(items)

    def _unindex_facts(self, ids: Sequence[int]) -> None:
        if self.index is not None and ids:
            self.index.remove("fact", ids)

    # -- extraction (spec §4) -------------------------------------------------------------

    def extract(
        self, world_id: str, agent_id: str, chat_id: str | None = None, scope: str | None = None, tenant: str = ""
    ) -> dict[str, Any]:
        """Queue fact extraction from the agent's conversation in a chat (call it after an
        agent run). The facts go to `scope`, by default the newest human's `user:ID`. Returns
        at once; the model runs after the debounce, or on `flush_extraction`."""
        world = self._get_world(world_id)
        if world.tenant != tenant:
            raise UnknownWorldError(world.id)
        agent = self._check_agent(world.key, agent_id)
        if chat_id is not None and not isinstance(chat_id, str):
            raise InvalidInputError("chat_id", "must be text")
        newest_first = list(islice(self.store.iter_memory(world.key, agent, chat_id or None), 2 * EXTRACTION_MESSAGES))
        if scope is None:
            human = next((m.sender for m in newest_first if m.sender_type is SenderType.HUMAN), None)
            if human is None:
                return {"queued": False, "reason": "no human message in this chat to learn about"}
            scope = f"user:{human.lower()}"
        canonical = self.scope(scope, tenant)
        if self.extraction is None:
            return {"queued": False, "scope": canonical, "reason": "no chat model configured (settings.llm_model)"}
        thread = f"{world.id}/{agent}/{chat_id or ''}"
        self.extraction.submit(tenant, canonical, thread, newest_first[::-1])
        return {"queued": True, "scope": canonical, "thread": thread, "messages": len(newest_first)}

    def flush_extraction(self, tenant: str | None = None, scope: str | None = None) -> int:
        """Run queued extractions now (all, one tenant's, or one scope's); the model calls made."""
        return 0 if self.extraction is None else self.extraction.flush(tenant, scope)

    def run_extraction(self, tenant: str | None = None, scope: str | None = None) -> list[ExtractionRun]:
        """`flush_extraction`, returning each run with its failure, if any."""
        return [] if self.extraction is None else self.extraction.run_now(tenant, scope)

    def _apply_extraction(self, tenant: str, scope: str, changes: FactChanges) -> None:
        written = self.store.change_facts(
            tenant,
            scope,
            datetime.now(UTC),
            add=changes.add,
            remove_ids=changes.remove_ids,
            sections=changes.sections or None,
        )
        self._unindex_facts(written.removed)
        self._index_facts(tenant, written.added)

    # -- notes: long-term memories --------------------------------------------------------

    def add_note(
        self,
        world_id: str,
        content: str,
        *,
        type: str = "note",
        importance: int = 5,
        agent: str | None = None,
        chat_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> Note:
        """A long-term memory in a world: shared, or private to `agent`."""
        world = self._get_world(world_id)
        owner = self._check_agent(world.key, agent) if agent is not None else ""
        if not isinstance(content, str) or not content.strip():
            raise InvalidInputError("content", "must be non-empty text")
        if "\x00" in content:
            raise InvalidInputError("content", NUL_MESSAGE)
        if len(content) > MAX_NOTE_CHARS:
            raise InvalidInputError("content", f"at most {MAX_NOTE_CHARS:,} characters, got {len(content):,}")
        if not isinstance(type, str) or not NOTE_TYPE.fullmatch(type):
            raise InvalidInputError(
                "type", f"a lowercase word of at most 40 characters (e.g. note, episode), got {type!r}"
            )
        if isinstance(importance, bool) or not isinstance(importance, int) or not 1 <= importance <= 10:
            raise InvalidInputError("importance", f"must be a whole number from 1 to 10, got {importance!r}")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInputError("metadata", "must be an object")
        limits.check_json("metadata", dict(metadata or {}), limits.MAX_METADATA_CHARS)
        if chat_id is not None:
            limits.check_text("chat_id", chat_id, limits.MAX_ID)
        note = self.store.add_note(
            world.key,
            NewNote(
                owner=owner,
                type=type,
                content=content.strip(),
                importance=importance,
                created_at=created_at or datetime.now(UTC),
                chat_id=chat_id,
                metadata=dict(metadata or {}),
            ),
        )
        if self.index is not None:
            from recall.store.sqlite_search import IndexItem

            self.index.add(
                [
                    IndexItem(
                        tenant=world.tenant,
                        space=world.id,
                        kind="memory",
                        source_id=note.id,
                        owner=owner,
                        text=note.content,
                        created_at=note.created_at,
                        chat_id=chat_id,
                        importance=importance,
                    )
                ]
            )
        return note

    def list_notes(
        self, world_id: str, agent: str | None = None, min_importance: int = 1, limit: int = 100
    ) -> list[Note]:
        """Shared notes, plus `agent`'s own when named; most important first."""
        world = self._get_world(world_id)
        owners = [""] if agent is None else ["", self._check_agent(world.key, agent)]
        return self.store.list_notes(world.key, owners, min_importance, limit)

    def delete_note(self, world_id: str, note_id: int, agent: str | None = None) -> None:
        """Delete a shared note, or (with `agent`) one of the agent's own: an agent may not
        delete what the world's agents share (PermissionDeniedError)."""
        world = self._get_world(world_id)
        note = self.store.get_note(world.key, note_id) if isinstance(note_id, int) else None
        owner = "" if agent is None else self._check_agent(world.key, agent)
        if note is None or note.owner.lower() not in ("", owner.lower()):
            raise UnknownNoteError(world.id, note_id)
        if owner and not note.owner:
            raise PermissionDeniedError(
                f"memory {note.id} is shared by every agent of world {world.id!r}: an agent deletes only its "
                "own memories (a tenant key deletes shared ones: DELETE /v1/worlds/{world}/memories/{id})"
            )
        self.store.delete_note(world.key, note.id)
        if self.index is not None:
            self.index.remove("memory", [note.id])

    # -- search ---------------------------------------------------------------------------

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
    ) -> list[SearchResult]:
        """Search a world (by its key: messages, memories, facts) or a user scope (`user:ID`,
        its facts) of `tenant`.

        With `agent`, only what that agent may see: shared items and its own private ones."""
        if not isinstance(query, str):
            raise InvalidInputError("query", "must be text")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidInputError("k", f"must be a whole number from 1 to 1000, got {k!r}")
        if method not in SEARCH_METHODS:
            raise InvalidInputError("method", f"must be one of {', '.join(SEARCH_METHODS)}, got {method!r}")
        bad = [kind for kind in kinds if kind not in SEARCH_KINDS]
        if bad or not kinds:
            raise InvalidInputError("kinds", f"each must be one of {', '.join(SEARCH_KINDS)}, got {list(kinds)!r}")
        owners: list[str] | None = None
        if isinstance(space, str) and space.startswith("user:"):
            resolved = self.scope(space, tenant)
        else:
            world = self._get_world(space)
            if world.tenant != tenant:
                raise UnknownWorldError(world.id)
            resolved = world.id
            if agent is not None:
                owners = ["", self._check_agent(world.key, agent)]
        if self.index is None or not query.strip():
            return []
        # Messages reach the index in the background; copying the newest ones is cheap, so a
        # keyword search always sees everything posted (vectors may still be on their way).
        while self.index.index_messages():
            pass
        hits = self.index.search(
            query,
            tenant=tenant,
            space=resolved,
            kinds=kinds,
            k=k,
            method=method,  # type: ignore[arg-type]  # checked against SEARCH_METHODS above
            owners=owners,
            chat_id=chat_id,
            sender=sender,
            since=since,
            until=until,
            min_importance=min_importance,
        )
        return [_result(h) for h in hits]

    # -- context blocks -------------------------------------------------------------------

    def context_blocks(
        self, world: WorldRecord, agent_id: str, recent: Sequence[Message], counter: TokenCounter
    ) -> list[ContextBlock]:
        """The memory block, relevant long-term memories and similar past interactions for an
        agent's context, from the chat's recent messages (newest first)."""
        conversation = recent_conversation(recent)
        blocks = [self._memory_block(world, agent_id, recent, conversation, counter)]
        blocks.append(self._long_term_block(world, agent_id, conversation))
        blocks.append(self._similar_block(world, agent_id, recent, conversation))
        return blocks

    def _memory_block(
        self, world: WorldRecord, agent_id: str, recent: Sequence[Message], conversation: str, counter: TokenCounter
    ) -> ContextBlock:
        humans: list[str] = []
        for message in recent:
            if message.sender_type is SenderType.HUMAN and f"user:{message.sender.lower()}" not in humans:
                humans.append(f"user:{message.sender.lower()}")
        world_scope = f"world:{world.id.lower()}"
        agent_scope = f"agent:{world.id.lower()}/{agent_id.lower()}"
        scopes = [*humans, agent_scope, world_scope]
        facts = self.store.list_facts_in(world.tenant, scopes)
        # Sections: the newest human's first, then the agent's, then the world's, per section.
        sections: dict[str, str] = {}
        for scope in reversed([*humans[:1], agent_scope, world_scope]):
            sections.update(self.store.get_sections(world.tenant, scope))
        if not facts and not sections:
            return ContextBlock("memory", "")
        ranked = rank_facts(
            facts, conversation, self.settings.fact_similarity_weight, self.settings.fact_confidence_weight
        )
        block: MemoryBlock = render_memory_block(sections, ranked, counter, self.settings.max_injection_tokens)
        return ContextBlock("memory", block.text, tuple(block.report_items()))

    def _long_term_block(self, world: WorldRecord, agent_id: str, conversation: str) -> ContextBlock:
        limit = self.settings.long_term_limit
        if limit <= 0:
            return ContextBlock("long_term", "")
        owners = ["", agent_id]
        minimum = self.settings.long_term_min_importance
        notes: list[Note] = []
        if conversation.strip() and self.index is not None:
            hits = self.index.search(
                conversation,
                tenant=world.tenant,
                space=world.id,
                kinds=("memory",),
                k=limit,
                method="hybrid",
                owners=owners,
                min_importance=minimum,
            )
            for hit in hits:
                note = self.store.get_note(world.key, hit.source_id)
                if note is not None:
                    notes.append(note)
        if not notes:  # nothing to match against, or nothing matched: the most important
            notes = self.store.list_notes(world.key, owners, minimum, limit)
        if not notes:
            return ContextBlock("long_term", "")
        lines = [LONG_TERM_HEADER, *(f"- [{_day(n.created_at)}] {escape(_one_line(n.content))}" for n in notes)]
        items = tuple({"kind": "memory", "id": n.id, "importance": n.importance} for n in notes)
        return ContextBlock("long_term", "\n".join(lines), items)

    def _similar_block(
        self, world: WorldRecord, agent_id: str, recent: Sequence[Message], conversation: str
    ) -> ContextBlock:
        limit = self.settings.similar_limit
        # Similarity needs vectors: without an embedder there is nothing to measure it by.
        if limit <= 0 or self.index is None or not self.index.has_vectors or not conversation.strip():
            return ContextBlock("similar", "")
        seen = {m.id for m in recent}
        hits = self.index.search(
            conversation,
            tenant=world.tenant,
            space=world.id,
            kinds=("message",),
            k=limit + len(seen),
            method="vector",
            owners=["", agent_id],
        )
        picked = [
            h
            for h in hits
            if h.source_id not in seen and h.similarity is not None and h.similarity >= self.settings.similar_min_score
        ][:limit]
        if not picked:
            return ContextBlock("similar", "")
        lines = [SIMILAR_HEADER, *(f"- [{_day(h.created_at)}] {escape(_one_line(h.text))}" for h in picked)]
        items = tuple({"kind": "message", "id": h.source_id, "similarity": round(h.similarity or 0, 4)} for h in picked)
        return ContextBlock("similar", "\n".join(lines), items)


def _same(text: str) -> str:
    return " ".join(text.lower().split())


def _one_line(text: str) -> str:
    return " ".join(text.split())
