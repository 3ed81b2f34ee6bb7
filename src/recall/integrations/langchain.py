"""recall as a LangChain chat history: `RecallChatMessageHistory`, a
`langchain_core.chat_history.BaseChatMessageHistory`.

```python
from recall import Recall
from recall.integrations.langchain import RecallChatMessageHistory

history = RecallChatMessageHistory(Recall("recall.db"), world="support", agent="helper", human="maria", create=True)
history.add_messages([HumanMessage("hi"), AIMessage("hello!")])
history.messages   # what `helper` heard of the conversation, from its first message
```

`messages` is the agent's view of one chat: every message of the chat it heard, oldest first,
under the routing rule (a message addressed to another agent is left out, as in its recall
contexts), from the chat's first message unless this history was cleared; with `window=N` only
the newest N, starting at a human message. Before them, as a `SystemMessage`, the recalled past
(what the agent heard in other chats, or before the window, that matters for the newest
message), unless this history was cleared or `recalled=False`. Messages that `add_messages` wrote
come back exactly as given (their LangChain form is kept in the message's metadata); messages
posted by anyone else come back as `HumanMessage(name=sender)`, the agent's own as `AIMessage`
(tool calls included) and tool results as `ToolMessage`.

`add_messages` posts into the world's chat, in one transaction: a `HumanMessage` as the human,
an `AIMessage` as the agent (its tool calls in recall's `tool_calls` metadata, so the agent's
recall contexts show them), a `ToolMessage` as the agent's tool result, a `SystemMessage` as a
message of `system` kept for this agent (which no agent's recall context shows: the agent's
system prompt there is its recall profile). What was posted is marked read in the agent's inbox
(LangChain is answering it), so a recall runner of the same agent does not answer it again.

`clear()` hides the chat's messages so far from this history: the other participants heard
them too, so they stay in the store, in search, and in the agents' recall contexts
(`World.delete_message` deletes one for everyone). Where the history starts is a note in the agent's key-value memory, so every handle
on the same agent and chat sees the cleared history.
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from recall.extras import require

require("langchain")  # before the framework loads: one line naming the extra

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
from recall.app.validation import MAX_CONTEXT_TOKENS, MAX_HISTORY_LIMIT
from recall.core.models import AgentProfile, Message, SenderType
from recall.core.recalled import SECTION as RECALLED
from recall.core.routing import LANGCHAIN_SYSTEM_FOR, context_verdict, is_own
from recall.errors import InvalidInputError
from recall.integrations._common import (
    TURN,
    HiddenMessages,
    as_turn,
    bind,
    chat_id_for,
    newest_first,
    note_key,
    post_for,
)

#: The metadata field holding a message's LangChain form.
META = "langchain"
#: The metadata field naming the agent a stored `SystemMessage` is for.
SYSTEM_FOR = LANGCHAIN_SYSTEM_FOR
#: The token budget of the context the recalled past is taken from: no budget, so the history
#: that context holds is the whole view and the recalled past repeats none of it (the largest
#: budget a context takes).
_UNBOUNDED = MAX_CONTEXT_TOKENS


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

    `world`: a `World`, or a world id. `agent`: whose view; `human`: who the `HumanMessage`s are
    from (`human`, the default, needs no registering; else a human of the world). A world id, agent
    or human that does not exist is refused, naming the closest ids there are; `create=True`
    creates what is missing. `chat`: the chat (any string, e.g. LangChain's session id; None is
    the world's default chat). `window`: show only the newest `window` messages, from the first
    human message among them (None, the default: the whole chat). `recalled`: put the recalled
    past first, as a `SystemMessage` (see the module's notes). `record`: record the context that
    recalled past comes from as a model call of the agent (source `langchain`: LangChain reads
    the history to prompt its model), so `agent.calls()` and `agent.replay(...)` show it.
    """

    def __init__(
        self,
        mem: Recall,
        *,
        world: str | World,
        agent: str,
        human: str = "human",
        chat: str | None = None,
        window: int | None = None,
        recalled: bool = True,
        record: bool = True,
        create: bool = False,
    ) -> None:
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
            raise InvalidInputError(
                "window", f"must be a number of messages, 1 or more (None: the whole chat), got {window!r}"
            )
        self.mem = mem
        self.world, self.agent, self.human = bind(mem, world, agent, human, create)
        self.chat = None if chat is None or chat == "" else chat_id_for(chat)
        self.window = window
        self.recalled = recalled
        self.record = record
        self._hidden = HiddenMessages(self.agent, note_key("langchain", self.chat or "(default chat)"))

    def __repr__(self) -> str:
        return f"RecallChatMessageHistory(world={self.world.id!r}, agent={self.agent.id!r}, chat={self.chat!r})"

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # read from recall on every access
        """The agent's view of the chat, oldest first (see the module's notes)."""
        through, hidden = self._hidden.load()
        profile = self.agent.profile
        view: list[Message] = []  # newest first, as the agent's memory is read
        for message in self.mem.service.store.iter_heard(self.world.key, self.agent.id, self.chat):
            if message.id <= through:
                break
            if message.id in hidden or not self._shown(profile, message):
                continue
            view.append(message)
            if self.window is not None and len(view) >= self.window:
                break
        view.reverse()
        out = [self._to_langchain(message) for message in view]
        if self.window is not None:
            # A window never opens on a reply or a tool result without what it answers.
            start = next((i for i, m in enumerate(out) if isinstance(m, HumanMessage)), 0)
            out = out[start:]
        # The recalled past may quote what this history cleared: left out then.
        past = self._recalled_past(len(view)) if self.recalled and not through else None
        return [past, *out] if past is not None else out

    def _shown(self, profile: AgentProfile, message: Message) -> bool:
        """Whether the message is in the agent's view: its own `SystemMessage`s, and what its
        recall contexts would show (the routing rule, or everything with context_filter 'all')."""
        return self._system_for_agent(message) or context_verdict(profile, message).addressed

    def _system_for_agent(self, message: Message) -> bool:
        owner = message.metadata.get(SYSTEM_FOR)
        return (
            message.sender_type is SenderType.SYSTEM
            and isinstance(owner, str)
            and owner.lower() == self.agent.id.lower()
        )

    def _recalled_past(self, shown: int) -> SystemMessage | None:
        """The recalled past of the agent's context for the chat, as a system message: from a
        context whose history holds at least the `shown` messages of the view (and no token
        budget cuts it), so none of them is repeated. None when there is none, or when the view
        is longer than a context's history can be."""
        if shown > MAX_HISTORY_LIMIT:
            return None
        context = self.agent.context(self.chat, history_limit=shown, max_tokens=_UNBOUNDED)
        if self.record:
            context = self.mem.service.calls.record(context, "langchain")
        block = next((m for m in context.messages if m.section == RECALLED), None)
        return SystemMessage(block.content) if block is not None else None

    def _to_langchain(self, message: Message) -> BaseMessage:
        """The message as the agent sees it: the LangChain form it was added in, when that is
        what it is to this agent (another agent's `AIMessage` is a `HumanMessage` here), else
        rebuilt from the stored message."""
        kind: type[BaseMessage]
        if is_own(self.agent.id, message):
            kind = AIMessage
        elif self._system_for_agent(message):
            kind = SystemMessage
        elif message.metadata.get("tool_call_id") and message.metadata.get("tool_result_for"):
            kind = ToolMessage
        else:
            kind = HumanMessage
        stored = message.metadata.get(META)
        if isinstance(stored, dict):
            try:
                restored = messages_from_dict([stored])[0]
            except (KeyError, TypeError, ValueError):
                restored = None  # not a LangChain message after all: rebuilt below
            if isinstance(restored, kind):
                return restored
        if kind is AIMessage:
            return AIMessage(message.content, tool_calls=_langchain_calls(message.metadata.get("tool_calls")))
        if kind is ToolMessage:
            return ToolMessage(message.content, tool_call_id=str(message.metadata.get("tool_call_id", "")))
        if kind is SystemMessage:
            return SystemMessage(message.content)
        return HumanMessage(message.content, name=message.sender)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Post the messages into the chat, all or none (see the module's notes). A leading
        `HumanMessage` that `post_turn` already posted (the chat's newest message, the same
        text from the same human) is not posted again."""
        requests = [self._request(message) for message in messages]
        if requests and isinstance(messages[0], HumanMessage) and self._turn_posted(requests[0]):
            requests = requests[1:]
        self._post(requests)

    def post_messages(self, messages: Sequence[BaseMessage]) -> list[Message]:
        """`add_messages`, returning recall's messages as posted (none skipped)."""
        return self._post([self._request(message) for message in messages])

    def _post(self, requests: list[PostRequest]) -> list[Message]:
        # Its reserved keys: the LangChain form, who a system message or tool result is for.
        return post_for(self.agent, requests) if requests else []

    def post_turn(self, message: HumanMessage) -> Message:
        """Post the human's input of the turn now, before the model is called (so a context can
        be built for it: `RecallContext`); a chain's history adding the same message at the end
        of the turn (`RunnableWithMessageHistory`) does not post it twice."""
        return self._post([as_turn(self._request(message), META)])[0]

    def _turn_posted(self, request: PostRequest) -> bool:
        """Whether the chat's newest message is this human input, posted by `post_turn`."""
        newest = next(newest_first(self.world, self.chat), None)
        if newest is None or newest.sender.lower() != request.sender.lower() or newest.content != request.content:
            return False
        stored = newest.metadata.get(META)
        return isinstance(stored, dict) and stored.get(TURN) is True

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
            text = text if text.strip() else "(no output)"
            return PostRequest("system", text, self.chat, metadata=metadata, private_for=self.agent.id)
        if isinstance(message, SystemMessage):
            if not text.strip():
                raise ValueError("a SystemMessage needs text to be posted to recall")
            # For this agent alone (no other agent hears it); this history shows it.
            metadata[SYSTEM_FOR] = self.agent.id
            return PostRequest("system", text, self.chat, metadata=metadata, private_for=self.agent.id)
        raise ValueError(
            f"RecallChatMessageHistory stores human, AI, tool and system messages, not {message.type!r} ones"
        )

    def clear(self) -> None:
        """Hide the chat's messages so far from this history (they stay in recall)."""
        through, _ = self._hidden.load()
        newest = next(newest_first(self.world, self.chat, after=through), None)  # the chat's newest only
        self._hidden.hide_through(through if newest is None else newest.id)
