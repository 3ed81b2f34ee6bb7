"""recall as a LangChain chat history: `RecallChatMessageHistory`, a
`langchain_core.chat_history.BaseChatMessageHistory`.

```python
from recall import Recall
from recall.integrations.langchain import RecallChatMessageHistory

history = RecallChatMessageHistory(Recall("recall.db"), world="support", agent="helper", human="maria")
history.add_messages([HumanMessage("hi"), AIMessage("hello!")])
history.messages   # what `helper` would see of the conversation
```

`messages` is the agent's view of one chat, built by recall's context builder (`Agent.context`):
its history and the new messages it would answer, under the routing rule (a message addressed to
another agent is left out), the agent's history depth and token budget; before them, as a
`SystemMessage`, the recalled past (what the agent heard earlier, in any chat, that matters for
the newest message), unless this history was cleared. Messages that
`add_messages` wrote come back exactly as given (their LangChain form is kept in the message's
metadata); messages posted by anyone else come back as `HumanMessage(name=sender)`, the agent's
own as `AIMessage` (tool calls included) and tool results as `ToolMessage`.

`add_messages` posts into the world's chat, in one transaction: a `HumanMessage` as the human,
an `AIMessage` as the agent (its tool calls in recall's `tool_calls` metadata, so the agent's
recall contexts show them), a `ToolMessage` as the agent's tool result. Other kinds are refused:
the agent's system prompt is its recall profile. What was posted is marked read in the agent's
inbox (LangChain is answering it), so a recall runner of the same agent does not answer it again.

`clear()` hides the chat's messages so far from this history: the other participants heard
them too, so they stay in the store, in search, and in the agents' recall contexts
(`World.delete_message` deletes one for everyone). Where the history starts is a note in the agent's key-value memory, so every handle
on the same agent and chat sees the cleared history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from recall.api import Recall, World
from recall.app.posting import PostRequest
from recall.core.context_records import ContextMessage
from recall.integrations._common import (
    HiddenMessages,
    chat_id_for,
    chat_messages,
    ensure_agent,
    ensure_human,
    note_key,
    resolve_world,
)

#: The metadata field holding a message's LangChain form.
META = "langchain"
#: The context sections that are the conversation.
_CONVERSATION = ("recalled", "summary", "history", "incoming")


def _tool_calls(message: AIMessage) -> list[dict[str, Any]]:
    """An AI message's tool calls in OpenAI's form (what recall's contexts show)."""
    return [
        {
            "id": call.get("id") or "",
            "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call.get("args", {}), ensure_ascii=False)},
        }
        for call in message.tool_calls
    ]


def _langchain_calls(calls: object) -> list[ToolCall]:
    """OpenAI-form tool calls (a context message's `tool_calls`) as LangChain's."""
    out: list[ToolCall] = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        try:
            args = json.loads(function.get("arguments") or "{}")
        except (TypeError, ValueError):
            args = {}
        out.append(
            ToolCall(name=str(function.get("name", "")), args=args if isinstance(args, dict) else {}, id=call.get("id"))
        )
    return out


class RecallChatMessageHistory(BaseChatMessageHistory):
    """One agent's view of one chat of a recall world, as a LangChain chat history.

    `world`: a `World`, or a world id (created when missing). `agent`: whose view (registered
    when missing); `human`: who the `HumanMessage`s are from (`human`, or a human of the world,
    registered when missing). `chat`: the chat (any string, e.g. LangChain's session id; None is
    the world's default chat). `history_limit` and `max_tokens`: the view's depth and token
    budget (default: the agent's own settings).
    """

    def __init__(
        self,
        mem: Recall,
        *,
        world: str | World,
        agent: str,
        human: str = "human",
        chat: str | None = None,
        history_limit: int | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.mem = mem
        self.world = resolve_world(mem, world)
        self.agent = ensure_agent(self.world, agent)
        self.human = ensure_human(self.world, human)
        self.chat = None if chat is None or chat == "" else chat_id_for(chat)
        self.history_limit = history_limit
        self.max_tokens = max_tokens
        self._hidden = HiddenMessages(self.agent, note_key("langchain", self.chat or "(default chat)"))

    def __repr__(self) -> str:
        return f"RecallChatMessageHistory(world={self.world.id!r}, agent={self.agent.id!r}, chat={self.chat!r})"

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # read from recall on every access
        """The agent's view of the chat, oldest first (see the module's notes)."""
        context = self.agent.context(self.chat, history_limit=self.history_limit, max_tokens=self.max_tokens)
        through, hidden = self._hidden.load()
        out: list[BaseMessage] = []
        for message in context.messages:
            if message.section not in _CONVERSATION:
                continue
            if message.section in ("recalled", "summary"):
                # The recalled past and a summary may quote what this history cleared: left out then.
                if not through:
                    out.append(SystemMessage(message.content))
                continue
            if message.source_id is not None and (message.source_id <= through or message.source_id in hidden):
                continue
            out.append(self._to_langchain(message))
        return out

    def _to_langchain(self, message: ContextMessage) -> BaseMessage:
        stored = None
        if message.source_id is not None:
            stored = self.mem.service.posting.find_message(self.world.key, message.source_id)
        if stored is not None and isinstance(stored.metadata.get(META), dict):
            try:
                return messages_from_dict([stored.metadata[META]])[0]
            except (KeyError, TypeError, ValueError):
                pass  # not a LangChain message after all: rebuilt from the context below
        if message.role == "assistant":
            return AIMessage(message.content, tool_calls=_langchain_calls(message.extra.get("tool_calls")))
        if message.role == "tool":
            return ToolMessage(message.content, tool_call_id=str(message.extra.get("tool_call_id", "")))
        return HumanMessage(message.content, name=message.name)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Post the messages into the chat, all or none (see the module's notes)."""
        requests = [self._request(message) for message in messages]
        if not requests:
            return
        posted = self.world.post_many(requests)
        answered = [m for m in posted if m.sender.lower() != self.agent.id.lower()]
        if answered:
            self.agent.ack(answered)

    def _request(self, message: BaseMessage) -> PostRequest:
        text = str(message.text)
        # Kept as plain JSON: a value JSON cannot hold (a datetime in response_metadata) as text.
        metadata: dict[str, Any] = {META: json.loads(json.dumps(message_to_dict(message), default=str))}
        if isinstance(message, HumanMessage):
            if not text.strip():
                raise ValueError("a HumanMessage needs text to be posted to recall")
            return PostRequest(self.human, text, self.chat, metadata=metadata)
        if isinstance(message, AIMessage):
            calls = _tool_calls(message)
            if calls:
                metadata["tool_calls"] = calls
            elif not text.strip():
                raise ValueError("an AIMessage needs text or tool calls to be posted to recall")
            return PostRequest(self.agent.id, text, self.chat, metadata=metadata)
        if isinstance(message, ToolMessage):
            metadata.update(tool_result_for=self.agent.id, tool_call_id=message.tool_call_id)
            return PostRequest("system", text if text.strip() else "(no output)", self.chat, metadata=metadata)
        raise ValueError(
            f"RecallChatMessageHistory stores human, AI and tool messages, not {message.type!r} ones "
            "(the agent's system prompt is its recall profile: world.add_agent(id, system_prompt=...))"
        )

    def clear(self) -> None:
        """Hide the chat's messages so far from this history (they stay in recall)."""
        through, _ = self._hidden.load()
        newest = through
        for message in chat_messages(self.world, self.chat, after=through):
            newest = message.id
        self._hidden.hide_through(newest)
