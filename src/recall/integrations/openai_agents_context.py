"""recall's context for an OpenAI Agents SDK agent: `RecallInstructions`, dynamic instructions
that carry the agent's recall context for the current input, and `recall_tools`, function tools
to search and add to its memory.

```python
session = RecallSession(mem, session_id="ticket-9", world="support", agent="helper", human="maria")
agent = Agent(
    name="helper",
    instructions=RecallInstructions(session, "You help with parcels."),
    tools=recall_tools(session),
)
await Runner.run(agent, "what was my parcel number again?", session=session)
```

The SDK keeps the conversation in the session; the instructions add what the session does not
carry: the agent's system prompt in recall (when it has one), the facts about the human, its
relevant long-term memories and the recalled past (what it heard in other sessions and chats
that matters for the input). The context is built for the run's input itself: `Runner.run` saves
it into the session before it calls the model; for a streamed run (which saves it after) or a run
without the session, the instructions post it first (`RecallSession.post_turn`), and the session
does not post it again.
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

import asyncio
import json
from itertools import islice
from typing import Any

from recall.extras import require

require("openai-agents")  # before the framework loads: one line naming the extra

from agents import Agent, FunctionTool, RunContextWrapper, function_tool
from agents.items import TResponseInputItem

from recall.core.models import Message
from recall.integrations._common import newest_first
from recall.integrations._context import REMEMBER, SEARCH_MEMORY, ContextHook, remember, render, search_memory
from recall.integrations.openai_agents import META, RecallSession

#: Items of the session read back, at most, for the turn's input (a turn's tool calls come after it).
_TURN_SCAN = 200


class RecallInstructions(ContextHook):
    """Dynamic instructions (`Agent(instructions=...)`): `instructions`, then the agent's recall
    context for the newest user input of the run, as one text. `session`: the `RecallSession`
    the agent runs with (its world, agent, human and chat). `max_tokens`: the context's budget
    (default: the agent's). `record`: record each context as the agent's model call
    (`Agent.calls`)."""

    def __init__(
        self, session: RecallSession, instructions: str = "", *, max_tokens: int | None = None, record: bool = True
    ) -> None:
        super().__init__(max_tokens=max_tokens, record=record)
        self.session = session
        self.instructions = instructions

    def __repr__(self) -> str:
        return f"RecallInstructions({self.session!r})"

    async def __call__(self, context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        turn_input = list(getattr(context, "turn_input", None) or [])
        users: list[Any] = [item for item in turn_input if isinstance(item, dict) and item.get("role") == "user"]
        return await asyncio.to_thread(self._build, users[-1] if users else None, len(turn_input))

    def _build(self, item: TResponseInputItem | None, items: int) -> str:
        session = self.session
        message = self._turn(item) if item is not None else None
        parts = self._parts(session.agent, session.chat, message, max(0, items - 1) if items else None)
        return render(parts, self.instructions)

    def _turn(self, item: TResponseInputItem) -> Message:
        """The session's message of the user input `item`: its newest user item, when that is
        this item (a run saves its input before calling the model; a turn's later model calls,
        after tool calls or a message of the model, find it too), else the input posted now (a
        streamed run saves it later, and the session does not post it twice)."""
        session = self.session
        session._check_open()
        wanted = json.loads(json.dumps(item))
        for message in islice(newest_first(session.world, session.chat), _TURN_SCAN):
            data = message.metadata.get(META)
            stored = data.get("item") if isinstance(data, dict) and data.get("session") == session.session_id else None
            if isinstance(stored, dict) and stored.get("type", "message") == "message" and stored.get("role") == "user":
                if stored == wanted:
                    return message
                break
        return session.post_turn(item)


def recall_tools(session: RecallSession) -> list[FunctionTool]:
    """Function tools over the session's agent's memory: `search_memory` (recall's search over
    what the agent may see: messages of every chat it heard, memories, facts) and `remember` (a
    long-term memory of the agent, which its recall context shows when relevant)."""
    agent = session.agent

    @function_tool(name_override="search_memory", description_override=SEARCH_MEMORY)
    async def search(query: str) -> str:
        session._check_open()
        return await asyncio.to_thread(search_memory, agent, query)

    @function_tool(name_override="remember", description_override=REMEMBER)
    async def keep(memory: str) -> str:
        session._check_open()
        return await asyncio.to_thread(remember, agent, memory)

    return [search, keep]
