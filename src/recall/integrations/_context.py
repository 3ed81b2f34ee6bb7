"""recall's context for a framework's current input, shared by the adapters' context hooks
(`langchain_context`, `langgraph_context`, `openai_agents_context`).

A framework keeps the conversation itself (its history, its graph state, its session) and asks
recall for the rest: the agent's system prompt, the facts about the human (`<memory>`), its
relevant long-term memories and the **recalled past** (what it heard in other chats, or before
what the framework shows, that matters for the input). recall builds contexts from what is
stored, so the input is posted first (the turn), and the context is built for that message:
the recalled past is the one for the current input, not for the turn before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recall.api import Agent
from recall.app.validation import MAX_HISTORY_LIMIT
from recall.core.context_parts import ContextMessage
from recall.core.models import Message

#: Sections of a recall context that the framework's own conversation carries.
CONVERSATION = frozenset({"history", "incoming", "summary"})
#: What a context hook's calls are recorded as (`Agent.calls`): one of recall's call sources.
SOURCE = "python"


class ContextHook:
    """What every adapter's context hook shares: the context's token budget (`max_tokens`; None:
    the agent's) and whether each context is recorded as the agent's model call (`record`, as
    `_call_source`), and the building of the parts for a turn (`_parts`)."""

    #: What the hook's contexts are recorded as (`Agent.calls`).
    _call_source = SOURCE

    def __init__(self, *, max_tokens: int | None, record: bool) -> None:
        self.max_tokens = max_tokens
        self.record = record

    def _parts(
        self, agent: Agent, chat: str | None, message: Message | None, shown: int | None
    ) -> list[ContextMessage]:
        """The parts of `agent`'s context for `message` (just posted in `chat`; None: the chat's
        newest incoming message) that the framework does not carry: its system prompt (when it
        has one) and the context blocks (facts, long-term memories, recalled past, ...), in
        recall's order. `shown`: how many messages of the chat the framework itself shows the
        model (the recalled past repeats none of them); None: the agent's history depth."""
        history = None if shown is None else max(0, min(shown, MAX_HISTORY_LIMIT))
        built = agent.context(chat, message=message, history_limit=history, max_tokens=self.max_tokens)
        if self.record:
            built = agent.service.calls.record(built, self._call_source)
        return [m for m in built.messages if m.section not in CONVERSATION and m.content.strip()]


def render(parts: Sequence[ContextMessage], base: str = "") -> str:
    """The parts as one system text, after `base` (the framework's own instructions)."""
    texts = [base.strip()] if base.strip() else []
    texts.extend(part.content for part in parts)
    return "\n\n".join(texts)


#: The memory tools every framework's adapter gives a model (`recall_tools`): their descriptions.
SEARCH_MEMORY = (
    "Search your memory (past conversations in every chat, long-term memories, facts) for what "
    "matters to a question. `query`: what to look for, in a few words or a question."
)
REMEMBER = (
    "Keep something for later conversations (a preference, a decision, a detail to reuse): it "
    "comes back in your context when it matters. `memory`: what to remember, as one "
    "self-contained sentence."
)
#: Search hits a memory search gives the model.
HITS = 5


def search_memory(agent: Agent, query: str) -> str:
    """The `search_memory` tool: recall's search over what `agent` may see, as lines."""
    return found(agent.search(query, k=HITS))


def remember(agent: Agent, memory: str) -> str:
    """The `remember` tool: a long-term memory of `agent` (importance 5: its contexts show it)."""
    added = agent.add_memory(memory)
    return f"Remembered (memory {added.id})."


def found(hits: Sequence[Any]) -> str:
    """Search hits as lines a model reads: kind, date, text (a message's names its sender)."""
    if not hits:
        return "Nothing found."
    return "\n".join(f"- [{hit.kind}, {hit.created_at:%Y-%m-%d}] {' '.join(hit.text.split())}" for hit in hits)
