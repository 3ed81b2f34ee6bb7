"""recall's context for a LangGraph graph: `RecallContextNode`, a node that posts the turn into
recall and returns the agent's recall context into the graph's state.

```python
recall_node = RecallContextNode(mem, world="support", agent="helper", human="maria")


def call_model(state: RecallState) -> dict:
    return {"messages": [model.invoke([*state["recall_context"], *state["messages"]])]}


graph = (
    StateGraph(RecallState)
    .add_node("recall", recall_node).add_node("model", call_model).add_node("save", recall_node.save)
    .add_edge(START, "recall").add_edge("recall", "model").add_edge("model", "save").add_edge("save", END)
    .compile(checkpointer=InMemorySaver())
)
graph.invoke({"messages": [("user", "what was my parcel number again?")]},
             {"configurable": {"thread_id": "ticket-9"}})
```

The graph keeps its conversation in its state (`messages`, LangGraph's `add_messages`
reducer); recall keeps a copy in the thread's chat (`configurable.thread_id`, or `chat=`), so it
can be searched and recalled from other threads. The node posts the state's messages recall does
not have yet (the new input; the model's reply of the turn before, unless `save` posted it),
builds the agent's context for the newest human message, and returns, under `recall_context`,
what the state's messages do not carry, as `SystemMessage`s: the agent's system prompt (when it
has one), the facts about the human, its relevant long-term memories, the recalled past. `save`
only posts (after the model node). Which messages recall has is read from the chat's end (each
posted message keeps its LangChain form and id), so a graph with a checkpointer, or one given
only the new message each time, posts each message once.
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any, Optional

from recall.extras import require

require("langgraph")  # before the framework loads: one line naming the extra

from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.graph import MessagesState

from recall.api import Recall, World
from recall.core.models import Message
from recall.errors import InvalidInputError
from recall.integrations._common import newest_first
from recall.integrations.langchain import META, RecallChatMessageHistory
from recall.integrations.langchain_context import ChatContextHook

#: Messages of the chat read back, beyond the state's own, to find what recall already has.
_SCAN_SLACK = 100


class RecallState(MessagesState, total=False):
    """LangGraph's `MessagesState` with the key `RecallContextNode` writes."""

    recall_context: list[AnyMessage]


class RecallContextNode(ChatContextHook):
    """A LangGraph node: posts the state's new messages into recall, returns the agent's recall
    context for the newest human message (see the module's notes).

    `world`, `agent`, `human`, `create`: as `RecallChatMessageHistory`'s. `chat`: the chat to
    post in; None: the call's `configurable.thread_id`, else the world's default chat.
    `messages_key`: the state's messages; `context_key`: where the context goes (a key of the
    graph's state, as in `RecallState`). `max_tokens`: the context's budget (default: the
    agent's). `record`: record each context as the agent's model call (`Agent.calls`).
    """

    def __init__(
        self,
        mem: Recall,
        *,
        world: str | World,
        agent: str,
        human: str = "human",
        chat: str | None = None,
        messages_key: str = "messages",
        context_key: str = "recall_context",
        max_tokens: int | None = None,
        record: bool = True,
        create: bool = False,
    ) -> None:
        super().__init__(
            mem, world=world, agent=agent, human=human, chat=chat, max_tokens=max_tokens, record=record, create=create
        )
        self.messages_key = messages_key
        self.context_key = context_key

    # `Optional[...]` as LangGraph spells it: a node is given the config only when its annotation
    # is one LangGraph compares equal (as text, under postponed annotations).
    def __call__(self, state: Mapping[str, Any], config: Optional[RunnableConfig] = None) -> dict[str, Any]:  # noqa: UP045
        """Post the new messages, and return `{context_key: [SystemMessage, ...]}`."""
        history, messages, posted = self._post(state, config)
        humans = [m for m in posted if m.sender.lower() == history.human.lower()]
        context = self._context(history.chat, humans[-1] if humans else None, max(0, len(messages) - 1))
        return {self.context_key: context}

    def save(self, state: Mapping[str, Any], config: Optional[RunnableConfig] = None) -> dict[str, Any]:  # noqa: UP045
        """Post the state's new messages (the model's reply) into recall; changes no state."""
        self._post(state, config)
        return {}

    def _post(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> tuple[RecallChatMessageHistory, list[BaseMessage], list[Message]]:
        raw = state.get(self.messages_key) if isinstance(state, Mapping) else None
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise InvalidInputError(self.messages_key, "the graph's state needs its messages (a list) under this key")
        messages = [m for m in convert_to_messages(raw) if not isinstance(m, SystemMessage)]
        configurable = (config or {}).get("configurable") or {}
        chat = self.chat if self.chat is not None else configurable.get("thread_id")
        history = self._history(str(chat) if chat not in (None, "") else None)
        return history, messages, history.post_messages(self._new(history, messages))

    def _new(self, history: RecallChatMessageHistory, messages: list[BaseMessage]) -> list[BaseMessage]:
        """The messages after the newest one recall already has (by LangChain id, else by kind
        and text): the chat is read from its end up to the first of them, so a turn costs about
        the messages it adds, however long the thread."""
        places = {_key(m.id, m.type, m.text): i for i, m in enumerate(messages)}  # the newest place wins
        for stored in islice(newest_first(history.world, history.chat), len(messages) + _SCAN_SLACK):
            form = stored.metadata.get(META)
            data = form.get("data") if isinstance(form, dict) else None
            if isinstance(form, dict) and isinstance(data, dict):
                place = places.get(_key(data.get("id"), str(form.get("type")), stored.content))
                if place is not None:
                    return messages[place + 1 :]
        return messages


def _key(message_id: object, kind: str, text: str) -> tuple[str, ...]:
    return ("id", message_id) if isinstance(message_id, str) and message_id else ("text", kind, text)
