"""The context an agent's next model call receives (spec §3), and the blocks gathered for it:
the facts block, relevant long-term memories, similar past interactions, observations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

from recall.app.agent_state import AgentState
from recall.app.posting import Posting
from recall.app.validation import MAX_HISTORY_LIMIT, MAX_MESSAGE_ID, check_channel, check_chat, check_int
from recall.app.worlds import Worlds
from recall.core import observations as obs
from recall.core.context import build_context
from recall.core.context_records import Context, ContextBlock, ContextRequest, Summarizer
from recall.core.escaping import escape
from recall.core.facts import MemoryBlock, rank_facts, recent_conversation, render_memory_block
from recall.core.models import Message, SenderType
from recall.core.prompt import build_system_prompt
from recall.core.tokens import TokenCounter, context_window, encoding_for_model
from recall.settings import Settings
from recall.store.base import Memory, Store, WorldRecord

if TYPE_CHECKING:
    from recall.search.index import SearchIndex

LONG_TERM_HEADER = "Relevant context from past interactions:"
SIMILAR_HEADER = "Similar past interactions that may be relevant:"
#: Messages read back at most to find the recent conversation (3 human turns).
RECENT_SCAN = 60


def _day(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d")


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True, eq=False)
class Contexts:
    """Builds contexts from an agent's memory of a chat and what recall knows beyond it."""

    store: Store
    settings: Settings
    worlds: Worlds
    posting: Posting
    agent_state: AgentState
    index: SearchIndex | None = None
    #: Summaries of older history (spec §3) with the configured chat model; None without one.
    summarizer: Summarizer | None = None

    def build_context(
        self,
        world_id: str,
        agent_id: str,
        chat_id: str | None = None,
        *,
        max_tokens: int | None = None,
        history_limit: int | None = None,
        message_id: int | None = None,
        channel: str | None = None,
        observation: obs.Observation | Mapping[str, Any] | None = None,
        blocks: Sequence[ContextBlock] = (),
        summarizer: Summarizer | None = None,
    ) -> Context:
        """The context the agent's next model call receives in a chat, with its report."""
        world = self.worlds.get_world(world_id)
        agent = self.worlds.get_agent(world.key, agent_id)
        chat = check_chat(chat_id)
        check_channel(channel)
        model = agent.model or self.settings.model
        budget = max_tokens if max_tokens is not None else agent.max_tokens
        if budget is None:
            budget = context_window(model) - self.settings.reply_reserve
        check_int("max_tokens", budget, 1)
        depth = history_limit if history_limit is not None else agent.history_limit
        depth = check_int(
            "history_limit", self.settings.history_limit if depth is None else depth, 0, MAX_HISTORY_LIMIT
        )
        if message_id is not None:
            check_int("message_id", message_id, 1, MAX_MESSAGE_ID)
            self.posting.get_message(world.key, message_id)

        counts = self.store.heard_counts(world.key, agent.id)
        counter = TokenCounter(encoding_for_model(model))
        recent = list(islice(self.store.iter_heard(world.key, agent.id, chat), RECENT_SCAN))
        gathered = self.gathered_blocks(world, agent.id, recent, counter)
        observed = self.agent_state.observations_block(world.key, agent.id, observation)
        request = ContextRequest(
            agent=agent,
            chat_id=chat,
            system_prompt=build_system_prompt(agent, channel),
            memory=self.store.iter_heard(world.key, agent.id, chat),
            history_limit=depth,
            incoming_limit=max(self.settings.incoming_limit, 1),
            max_tokens=budget,
            counter=counter,
            chat_memory_total=counts.get(chat, 0),
            other_chat_total=sum(n for c, n in counts.items() if c != chat),
            blocks=[*gathered, *blocks, observed],
            trigger_id=message_id,
            summarizer=summarizer if summarizer is not None else self.summarizer,
            compress_above=self.settings.compress_above,
            compress_keep_recent=self.settings.compress_keep_recent,
        )
        return build_context(request)

    def gathered_blocks(
        self, world: WorldRecord, agent_id: str, recent: Sequence[Message], counter: TokenCounter
    ) -> list[ContextBlock]:
        """The facts block, relevant long-term memories and similar past interactions for an
        agent's context, from the chat's recent messages (newest first)."""
        conversation = recent_conversation(recent)
        return [
            self._facts_block(world, agent_id, recent, conversation, counter),
            self._memories_block(world, agent_id, conversation),
            self._similar_block(world, agent_id, recent, conversation),
        ]

    def _facts_block(
        self, world: WorldRecord, agent_id: str, recent: Sequence[Message], conversation: str, counter: TokenCounter
    ) -> ContextBlock:
        humans: list[str] = []
        for message in recent:
            if message.sender_type is SenderType.HUMAN and f"user:{message.sender.lower()}" not in humans:
                humans.append(f"user:{message.sender.lower()}")
        world_scope = f"world:{world.id.lower()}"
        agent_scope = f"agent:{world.id.lower()}/{agent_id.lower()}"
        facts = self.store.list_facts_in(world.tenant, [*humans, agent_scope, world_scope])
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

    def _memories_block(self, world: WorldRecord, agent_id: str, conversation: str) -> ContextBlock:
        limit = self.settings.long_term_limit
        if limit <= 0:
            return ContextBlock("long_term", "")
        owners = ["", agent_id]
        minimum = self.settings.long_term_min_importance
        notes: list[Memory] = []
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
                note = self.store.get_memory(world.key, hit.source_id)
                if note is not None:
                    notes.append(note)
        if not notes:  # nothing to match against, or nothing matched: the most important
            notes = self.store.list_memories(world.key, owners, minimum, limit)
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
