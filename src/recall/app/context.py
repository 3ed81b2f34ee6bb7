"""The context an agent's next model call receives (spec §3), and the blocks gathered for it:
the facts block, relevant long-term memories, the recalled past, observations."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

from recall import telemetry
from recall.app.agent_state import AgentState
from recall.app.context_telemetry import record_report, scan_attributes, search_attributes
from recall.app.posting import Posting
from recall.app.recalled_search import RecalledSearch, search_text
from recall.app.validation import (
    MAX_CONTEXT_TOKENS,
    MAX_HISTORY_LIMIT,
    MAX_MESSAGE_ID,
    check_channel,
    check_chat,
    check_int,
    check_recalled_setting,
)
from recall.app.worlds import Worlds
from recall.core import observations as obs
from recall.core.calls import version
from recall.core.context import build_context, scan_memory
from recall.core.context_parts import ContextBlock
from recall.core.context_records import BuildParams, Context, ContextRequest, Summarizer
from recall.core.escaping import escape
from recall.core.facts import MemoryBlock, rank_facts, recent_conversation, render_memory_block
from recall.core.inbox import RecalledPast
from recall.core.models import AgentProfile, Message, SenderType
from recall.core.prompt import build_system_prompt
from recall.core.recalled import SECTION as RECALLED
from recall.core.recalled import RecallSettings
from recall.core.tokens import TokenCounter, context_window, encoding_for_model
from recall.core.window import WindowSettings
from recall.errors import BudgetExceededError
from recall.limits import MAX_MODEL_NAME, check_text
from recall.settings import Settings
from recall.store.base import Store
from recall.store.records import Memory, WorldRecord
from recall.telemetry.instruments import CONTEXT, CONTEXT_PACKING, CONTEXT_SCAN, CONTEXT_SEARCH

if TYPE_CHECKING:
    from recall.app.memories import Memories
    from recall.search.index import SearchIndex

LONG_TERM_HEADER = "Relevant context from past interactions:"
#: Messages read back at most to find the recent conversation (3 human turns).
RECENT_SCAN = 60


def _day(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d")


def _traced_phase(phase: str) -> AbstractContextManager[telemetry.Span]:
    """A phase of the core's build as a span, `recall.context.<phase>`."""
    return telemetry.span(f"{CONTEXT}.{phase}")


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
    #: Long-term memories: a world's expired ones are purged before a context reads its memories.
    memories: Memories | None = None

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
        recalled_max_tokens: int | None = None,
        model: str | None = None,
    ) -> Context:
        """The context the agent's next model call receives in a chat, with its report. `model` (the
        tokenizer, the default budget) and `recalled_max_tokens` override the agent's for this call."""
        ids = {"recall.world.id": world_id, "recall.agent.id": agent_id, "recall.chat.id": chat_id}
        with telemetry.timed(CONTEXT, "recall.context.duration", ids) as span:
            built = self._build_context(
                world_id,
                agent_id,
                chat_id,
                max_tokens=max_tokens,
                history_limit=history_limit,
                message_id=message_id,
                channel=channel,
                observation=observation,
                blocks=blocks,
                summarizer=summarizer,
                recalled_max_tokens=recalled_max_tokens,
                model=model,
            )
            record_report(span, built.report)
        return built

    def _build_context(
        self,
        world_id: str,
        agent_id: str,
        chat_id: str | None,
        *,
        max_tokens: int | None,
        history_limit: int | None,
        message_id: int | None,
        channel: str | None,
        observation: obs.Observation | Mapping[str, Any] | None,
        blocks: Sequence[ContextBlock],
        summarizer: Summarizer | None,
        recalled_max_tokens: int | None,
        model: str | None,
    ) -> Context:
        world = self.worlds.get_world(world_id)
        agent = self.worlds.get_agent(world.key, agent_id)
        chat = check_chat(chat_id)
        check_channel(channel)
        model_name = check_text("model", model, MAX_MODEL_NAME) if model else agent.model or self.settings.model
        budget = max_tokens if max_tokens is not None else agent.max_tokens
        if budget is None:
            budget = context_window(model_name) - self.settings.reply_reserve
        check_int("max_tokens", budget, 1, MAX_CONTEXT_TOKENS)
        depth = history_limit if history_limit is not None else agent.history_limit
        depth = check_int(
            "history_limit", self.settings.history_limit if depth is None else depth, 0, MAX_HISTORY_LIMIT
        )
        if message_id is not None:
            check_int("message_id", message_id, 1, MAX_MESSAGE_ID)
            self.posting.get_message(world.key, message_id)

        counter = TokenCounter(encoding_for_model(model_name))
        with telemetry.span(CONTEXT_SCAN) as span:
            counts = self.store.heard_counts(world.key, agent.id)
            recent = list(islice(self.store.iter_heard(world.key, agent.id, chat), RECENT_SCAN))
            upto = recent
            if message_id is not None and recent and recent[0].id > message_id:
                # The facts and memories are chosen for the conversation up to the message the call
                # answers, not for what came after it: the same call gets the same context later.
                upto = list(
                    islice(self.store.iter_heard(world.key, agent.id, chat, before=message_id + 1), RECENT_SCAN)
                )
            request = ContextRequest(
                agent=agent,
                chat_id=chat,
                system_prompt=build_system_prompt(agent, channel),
                memory=self._memory(world.key, agent.id, chat, recent),
                history_limit=depth,
                incoming_limit=max(self.settings.incoming_limit, 1),
                max_tokens=budget,
                counter=counter,
                chat_memory_total=counts.get(chat, 0),
                other_chat_total=sum(n for c, n in counts.items() if c != chat),
                trigger_id=message_id,
                summarizer=summarizer if summarizer is not None else self.summarizer,
                compress_above=self.settings.compress_above,
                compress_keep_recent=self.settings.compress_keep_recent,
                window=self.window_settings(),
                phase=_traced_phase,
            )
            scan = scan_memory(request)  # reads no block: the blocks are gathered next
            span.set(scan_attributes(scan))
        with telemetry.span(CONTEXT_SEARCH) as span:
            gathered = self.gathered_blocks(world, agent.id, upto, counter)
            observed = self.agent_state.observations_block(world.key, agent.id, observation)
            request = replace(request, blocks=[*gathered, *blocks, observed])
            settings = self.recall_settings(agent, recalled_max_tokens)
            recalled = None
            if self.index is not None:
                search = RecalledSearch(self.store, self.settings, self.index)
                recalled = search.request(world, agent, chat, scan, recent, settings, budget, sum(counts.values()))
            span.set(search_attributes(gathered, recalled))
        with telemetry.span(CONTEXT_PACKING, {"recall.context.budget": budget}):
            built = build_context(replace(request, recalled=recalled), scan)
        explicit = {
            name: value
            for name, value in (
                ("max_tokens", max_tokens),
                ("history_limit", history_limit),
                ("channel", channel),
                ("recalled_max_tokens", recalled_max_tokens),
                ("model", model),
            )
            if value is not None
        }
        shaped = {
            "budget": budget,
            "history_limit": depth,
            "context_filter": agent.context_filter.value,
            "channel": channel,
            "system_prompt": version(request.system_prompt),
            "incoming_limit": request.incoming_limit,
            "max_injection_tokens": self.settings.max_injection_tokens,
            "long_term_limit": self.settings.long_term_limit,
            "long_term_min_importance": self.settings.long_term_min_importance,
            "summarizer": request.summarizer is not None,
            "caller_blocks": [block.section for block in blocks],
            "observation": observation is not None,
            **{f"recalled_{name}": value for name, value in vars(settings).items()},  # flat: no deep copy
            **{f"window_{name}": value for name, value in vars(request.window).items()},
        }
        params = BuildParams(world.key, world.tenant, message_id, model_name, explicit, shaped)
        return replace(built, params=params)

    def _memory(self, world_key: str, agent_id: str, chat: str | None, recent: list[Message]) -> Iterator[Message]:
        """What the agent heard in the chat, newest first: the recent messages already read,
        then the rest, read on only as far as the scan goes."""
        yield from recent
        if len(recent) == RECENT_SCAN:
            yield from self.store.iter_heard(world_key, agent_id, chat, before=recent[-1].id)

    def recalled_past(
        self,
        world_id: str,
        agent_id: str,
        chat_id: str | None,
        message_id: int | None,
        history_limit: int,
        on_built: Callable[[Context], None] | None = None,
    ) -> RecalledPast:
        """The recalled past of the agent's context for `message_id` (else its newest incoming),
        built by the one builder with `history_limit` turns of history: what a check sends
        beside the recent conversation (none when the agent's budget does not hold its prompt
        and the message). `on_built` is given the whole context (a check records it)."""
        try:
            built = self.build_context(world_id, agent_id, chat_id, history_limit=history_limit, message_id=message_id)
        except BudgetExceededError:
            return RecalledPast(None, 0)
        if on_built is not None:
            on_built(built)
        block = next((m for m in built.messages if m.section == RECALLED), None)
        passages = tuple(i for i in built.report.items if i.section == RECALLED and i.included)
        return RecalledPast(block.content if block else None, block.tokens if block else 0, passages)

    def window_settings(self) -> WindowSettings:
        """The recent window and the weight of recency (spec §3's budget)."""
        d = self.settings
        return WindowSettings(d.recent_window_messages, d.recent_window_share, d.recency_weight, d.recency_half_life)

    def recall_settings(self, agent: AgentProfile, max_tokens: int | None = None) -> RecallSettings:
        """The agent's recalled-past settings: its own, else the defaults; `max_tokens` for one call."""
        d = self.settings

        def pick(name: str, default: Any) -> Any:
            value = getattr(agent, name)
            return default if value is None else value

        cap = pick("recalled_max_tokens", d.recalled_max_tokens)
        if max_tokens is not None:
            cap = check_recalled_setting("recalled_max_tokens", max_tokens)
        return RecallSettings(
            max_tokens=int(cap),
            cutoff=float(pick("recalled_cutoff", d.recalled_cutoff)),
            limit=int(pick("recalled_limit", d.recalled_limit)),
            min_similarity=float(pick("recalled_min_similarity", d.recalled_min_similarity)),
            excerpt_tokens=d.recalled_excerpt_tokens,
            neighbour_tokens=d.recalled_neighbour_tokens,
        )

    def gathered_blocks(
        self, world: WorldRecord, agent_id: str, recent: Sequence[Message], counter: TokenCounter
    ) -> list[ContextBlock]:
        """The facts block and relevant long-term memories for an agent's context, from the
        chat's recent messages (newest first)."""
        conversation = recent_conversation(recent)
        return [
            self._facts_block(world, agent_id, recent, conversation, counter),
            self._memories_block(world, agent_id, conversation),
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
        # No expired memory goes in: the world's are purged, and any past its time since is left out.
        now = self.memories.purge_world(world.key) if self.memories is not None else datetime.now(UTC)
        # The most important, for when nothing matches; none at all: nothing to search for (a
        # search of a long conversation's words costs more than the rest of this block).
        important = self.store.list_memories(world.key, owners, minimum, limit, now=now)
        if not important:
            return ContextBlock("long_term", "")
        notes: list[Memory] = []
        if conversation.strip() and self.index is not None:
            hits = self.index.search(
                search_text(conversation),
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
                if note is not None and not note.expired(now):
                    notes.append(note)
        if not notes:  # nothing to match against, or nothing matched: the most important
            notes = important
        lines = [LONG_TERM_HEADER, *(f"- [{_day(n.created_at)}] {escape(_one_line(n.content))}" for n in notes)]
        items = tuple(
            {"kind": "memory", "id": n.id, "importance": n.importance, "version": version(line)}
            for n, line in zip(notes, lines[1:], strict=True)
        )
        return ContextBlock("long_term", "\n".join(lines), items)
