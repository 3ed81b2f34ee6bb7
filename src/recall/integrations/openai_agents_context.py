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
that matters for the input). The SDK saves the input into the session before it calls the model,
so the context is built for the input itself; run without the session, the instructions post the
input into the session's chat first.
"""

from __future__ import annotations

import asyncio
from itertools import islice
from typing import Any

from agents import Agent, FunctionTool, RunContextWrapper, function_tool

from recall.core.models import Message
from recall.integrations._common import newest_first
from recall.integrations._context import context_for, found, render
from recall.integrations.openai_agents import META, RecallSession, _text

#: Items of the session read back, at most, for the turn's input (a turn's tool calls come after it).
_TURN_SCAN = 200
#: Search hits a memory search gives the model.
_HITS = 5


class RecallInstructions:
    """Dynamic instructions (`Agent(instructions=...)`): `instructions`, then the agent's recall
    context for the newest user input of the run, as one text. `session`: the `RecallSession`
    the agent runs with (its world, agent, human and chat). `max_tokens`: the context's budget
    (default: the agent's). `record`: record each context as the agent's model call
    (`Agent.calls`)."""

    def __init__(
        self, session: RecallSession, instructions: str = "", *, max_tokens: int | None = None, record: bool = True
    ) -> None:
        self.session = session
        self.instructions = instructions
        self.max_tokens = max_tokens
        self.record = record

    def __repr__(self) -> str:
        return f"RecallInstructions({self.session!r})"

    async def __call__(self, context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        turn_input = list(getattr(context, "turn_input", None) or [])
        users = [item for item in turn_input if isinstance(item, dict) and item.get("role") == "user"]
        text = _text(users[-1].get("content")) if users else ""
        return await asyncio.to_thread(self._build, text, len(turn_input))

    def _build(self, text: str, items: int) -> str:
        session = self.session
        message = self._turn(text) if text.strip() else None
        parts = context_for(
            session.agent,
            session.chat,
            message,
            shown=max(0, items - 1) if items else None,
            max_tokens=self.max_tokens,
            record=self.record,
        )
        return render(parts, self.instructions)

    def _turn(self, text: str) -> Message:
        """The session's message of the user input `text`: the newest user item, when it is that
        text and no assistant message answered it yet (the SDK saved it), else posted now."""
        session = self.session
        session._check_open()
        for message in islice(newest_first(session.world, session.chat), _TURN_SCAN):
            data = message.metadata.get(META)
            item = data.get("item") if isinstance(data, dict) and data.get("session") == session.session_id else None
            if not isinstance(item, dict) or item.get("type", "message") != "message":
                continue
            if item.get("role") == "assistant":
                break
            if item.get("role") == "user":
                if message.content == text:
                    return message
                break
        return session._post([session._request({"role": "user", "content": text})])[0]


def recall_tools(session: RecallSession) -> list[FunctionTool]:
    """Function tools over the session's agent's memory: `search_memory` (recall's search over
    what the agent may see: messages of every chat it heard, memories, facts) and `remember` (a
    long-term memory of the agent, which its recall context shows when relevant)."""
    agent = session.agent

    @function_tool
    async def search_memory(query: str) -> str:
        """Search your memory (past conversations in every chat, long-term memories, facts) for
        what matters to a question.

        Args:
            query: what to look for, in a few words or a question.
        """
        session._check_open()
        return found(await agent.asearch(query, k=_HITS))

    @function_tool
    async def remember(memory: str) -> str:
        """Keep something for later conversations (a preference, a decision, a detail to reuse):
        it comes back in your context when it matters.

        Args:
            memory: what to remember, as one self-contained sentence.
        """
        session._check_open()
        added = await agent.aadd_memory(memory)
        return f"Remembered (memory {added.id})."

    return [search_memory, remember]
