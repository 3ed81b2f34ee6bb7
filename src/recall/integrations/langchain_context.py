"""recall's context for a LangChain chain's current input: `RecallContext`, a runnable.

```python
chain = RunnableWithMessageHistory(
    RunnablePassthrough.assign(context=RecallContext(mem, world="support", agent="helper", human="maria"))
    | ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("context"), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    | model,
    lambda session_id: RecallChatMessageHistory(mem, world="support", agent="helper", human="maria",
                                                chat=session_id, recalled=False),
    input_messages_key="input",
    history_messages_key="history",
)
```

A chain's history is read before its input is added (`RunnableWithMessageHistory`), so what a
history can recall is one turn behind. `RecallContext` runs inside the chain, with the input:
it posts the input into the chat (the session's: `config["configurable"]["session_id"]`, or
`chat=`), builds the agent's recall context for it and returns what the chain's own history
does not carry, as `SystemMessage`s: the agent's system prompt (when it has one), the facts
about the human, its relevant long-term memories and the recalled past. A
`RecallChatMessageHistory` of the same chat does not post the input again when the chain ends.
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recall.extras import require

require("langchain")  # before the framework loads: one line naming the extra

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig

from recall.api import Recall, World
from recall.core.models import Message
from recall.errors import InvalidInputError
from recall.integrations._common import bind
from recall.integrations._context import ContextHook
from recall.integrations.langchain import RecallChatMessageHistory


class ChatContextHook(ContextHook):
    """What the LangChain-message hooks (`RecallContext`, LangGraph's `RecallContextNode`)
    share: the world, agent and human they post as (`bind`), the chat (None: the call's), the
    turn posted through a chat history, and the context returned as `SystemMessage`s."""

    def __init__(
        self,
        mem: Recall,
        *,
        world: str | World,
        agent: str,
        human: str,
        chat: str | None,
        max_tokens: int | None,
        record: bool,
        create: bool,
    ) -> None:
        super().__init__(max_tokens=max_tokens, record=record)
        self.mem = mem
        self.world, self.agent, self.human = bind(mem, world, agent, human, create)
        self.chat = chat

    def __repr__(self) -> str:
        return f"{type(self).__name__}(world={self.world.id!r}, agent={self.agent.id!r}, chat={self.chat!r})"

    def _history(self, chat: str | None) -> RecallChatMessageHistory:
        """The chat's history the turn is posted through (no recalled past and nothing recorded
        there: the context built for the turn is)."""
        return RecallChatMessageHistory(
            self.mem,
            world=self.world,
            agent=self.agent.id,
            human=self.human,
            chat=chat,
            recalled=False,
            record=False,
        )

    def _context(self, chat: str | None, message: Message | None, shown: int | None) -> list[SystemMessage]:
        """`_parts`, as system messages."""
        return [SystemMessage(part.content) for part in self._parts(self.agent, chat, message, shown)]


class RecallContext(ChatContextHook, Runnable[Any, list[SystemMessage]]):
    """The agent's recall context for the chain's current input, as system messages.

    `world`, `agent`, `human`, `create`: as `RecallChatMessageHistory`'s. `chat`: the chat to
    post in; None: the session id of the call's config (`configurable.session_id`, as
    `RunnableWithMessageHistory` passes it), else the world's default chat. The input is a dict
    holding the human's text under `input_key` (and, under `history_key`, the messages the chain
    shows: the recalled past repeats none of them), a string, or messages (the newest human one
    is the input). `max_tokens`: the context's token budget (default: the agent's). `record`:
    record each context as the agent's model call (`Agent.calls`, source `langchain`).
    """

    _call_source = "langchain"

    def __init__(
        self,
        mem: Recall,
        *,
        world: str | World,
        agent: str,
        human: str = "human",
        chat: str | None = None,
        input_key: str = "input",
        history_key: str = "history",
        max_tokens: int | None = None,
        record: bool = True,
        create: bool = False,
    ) -> None:
        super().__init__(
            mem, world=world, agent=agent, human=human, chat=chat, max_tokens=max_tokens, record=record, create=create
        )
        self.input_key = input_key
        self.history_key = history_key

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> list[SystemMessage]:
        """Post the input, and return the agent's context for it (see the class)."""
        text, shown = self._input(input)
        configurable = (config or {}).get("configurable") or {}
        chat = self.chat if self.chat is not None else configurable.get("session_id")
        history = self._history(chat if isinstance(chat, str) else None)
        return self._context(history.chat, history.post_turn(HumanMessage(text)), shown)

    def _input(self, input: Any) -> tuple[str, int | None]:
        """The human's text, and how many messages the chain shows beside it (None: unknown)."""
        shown: int | None = None
        value = input
        if isinstance(input, Mapping):
            if self.input_key not in input:
                raise InvalidInputError(
                    "input", f"RecallContext reads the human's text from key {self.input_key!r} (input_key=)"
                )
            value = input[self.input_key]
            history = input.get(self.history_key)
            shown = len(history) if isinstance(history, list) else None
        if isinstance(value, BaseMessage):
            value = [value]
        if isinstance(value, list):
            shown = len(value) - 1 if shown is None else shown  # the conversation, the input last
            humans = [m for m in value if isinstance(m, HumanMessage)]
            value = str(humans[-1].text) if humans else ""
        if not isinstance(value, str) or not value.strip():
            raise InvalidInputError("input", "RecallContext needs the human's text (a non-empty string)")
        return value, shown
