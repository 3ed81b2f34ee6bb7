"""recall as an OpenAI Agents SDK session: `RecallSession`, which implements the SDK's `Session`
protocol (`agents.memory.Session`).

```python
from agents import Agent, Runner
from recall import Recall
from recall.integrations.openai_agents import RecallSession

session = RecallSession(Recall("recall.db"), session_id="maria-1", world="support", agent="helper", create=True)
await Runner.run(Agent(name="helper", instructions="..."), "hi", session=session)
```

A session is one chat of a recall world (its id is the session id when that is a valid chat id,
else `s-` and a hash of it). Each item is one message of that chat, and the item itself (the
SDK's JSON) is kept in the message's metadata, so `get_items` gives back exactly what
`add_items` was given. Who posts what: a `user` message is posted as the human, an `assistant`
message as the agent, a function call as the agent's tool call (recall's `tool_calls` metadata)
and its output as the agent's tool result, so the agent's recall contexts show the conversation;
`system` and `developer` messages and the items with no text of their own (reasoning, hosted
tool calls, ...) are posted by `system`, which no agent's context shows. The messages a session
posts are marked read in the agent's inbox (the SDK answers them), so a recall runner of the same
agent does not answer them again.

`get_items` returns the items this session added; other messages of the chat are not items.
`pop_item` and `clear_session` hide items from the session: the world's other participants
heard them too, so they stay in the store, in search and in the agents' recall contexts
(`World.delete_message` deletes one for everyone).
What is hidden is a note in the agent's key-value memory, so every handle on the same session
agrees. An item is at most 100,000 characters as JSON (recall's cap of a message's metadata).
`close()` ends the session, as the SDK's `SQLiteSession.close()` (and closes the `Recall` the
session opened, when it was given a path). The agent's recall context for the run's input is
`openai_agents_context.RecallInstructions`.
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recall.extras import require

require("openai-agents")  # before the framework loads: one line naming the extra

from agents.items import TResponseInputItem
from agents.memory import SessionSettings

from recall.api import Recall, World
from recall.app.posting import PostRequest
from recall.core.models import Message
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

#: The metadata field holding the session id and the item.
META = "openai_agents"


def _text(content: object) -> str:
    """The text of a message item's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict):
            for field in ("text", "refusal"):
                if isinstance(part.get(field), str):
                    texts.append(part[field])
    return "\n".join(texts)


class RecallSession:
    """An OpenAI Agents SDK session kept in a recall world.

    `mem`: an open `Recall` (the caller's: `close` leaves it open), or a database path or URL (the
    session opens it, and `close` closes it). `session_id`: the SDK's session id. `world`: a
    `World`, or a world id. `agent`: who the
    assistant is; `human`: who the user is (`human`, the default, needs no registering; else a
    human of the world). A world id, agent or human that does not exist is refused, naming the
    closest ids there are; `create=True` creates what is missing. `session_settings`: the SDK's
    `SessionSettings` (its `limit` is `get_items`'s default).
    """

    def __init__(
        self,
        mem: Recall | str | Path,
        *,
        session_id: str,
        world: str | World,
        agent: str,
        human: str = "human",
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        create: bool = False,
    ) -> None:
        self._owned = not isinstance(mem, Recall)
        self.mem = Recall(mem) if not isinstance(mem, Recall) else mem
        self._closed = False
        try:
            self.session_id = session_id
            self.chat = chat_id_for(session_id)
            self.world, self.agent, self.human = bind(self.mem, world, agent, human, create)
        except BaseException:
            if self._owned:
                self.mem.close()
            raise
        self.session_settings: SessionSettings | None = (
            SessionSettings(**dict(session_settings)) if isinstance(session_settings, Mapping) else session_settings
        )
        self._hidden = HiddenMessages(self.agent, note_key("openai-agents", session_id))
        #: One change of what is hidden at a time (pop_item reads, then writes).
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RecallSession(session_id={self.session_id!r}, world={self.world.id!r}, agent={self.agent.id!r})"

    def close(self) -> None:
        """Close the session, as the SDK's `SQLiteSession.close()`: it refuses any use after
        this (a RuntimeError); the `Recall` it opened from a path is closed, one it was given
        stays open for its owner. Closing twice is harmless."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._owned:
            self.mem.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")

    # -- the Session protocol -------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first; with `limit` (default: `session_settings.limit`)
        the newest `limit` of them."""
        self._check_open()
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and limit == 0:
            return []
        wanted = None if limit is None or limit < 0 else limit
        return [item for _, item in await asyncio.to_thread(self._items, wanted)]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Post the items into the session's chat, all or none. A leading user item that
        `RecallInstructions` already posted (the session's newest, the same item) is not posted
        again: a streamed run saves its input after the model is called."""
        self._check_open()
        if not items:
            return
        requests = [self._request(item) for item in items]
        await asyncio.to_thread(self._add, requests)

    def _add(self, requests: list[PostRequest]) -> None:
        if self._turn_posted(requests[0]):
            requests = requests[1:]
        self._post(requests)

    def post_turn(self, item: TResponseInputItem) -> Message:
        """Post the run's user input now, before the model is called (so a context can be built
        for it: `RecallInstructions`); the SDK saving the same item afterwards does not post it
        twice."""
        return self._post([as_turn(self._request(item), META)])[0]

    def _turn_posted(self, request: PostRequest) -> bool:
        """Whether the chat's newest message is this item, posted by `post_turn`."""
        mine = (request.metadata or {}).get(META, {})
        if mine.get("item", {}).get("role") != "user":
            return False
        newest = next(newest_first(self.world, self.chat), None)
        data = newest.metadata.get(META) if newest is not None else None
        return (
            isinstance(data, dict)
            and data.get(TURN) is True
            and data.get("session") == self.session_id
            and data.get("item") == mine.get("item")
        )

    async def pop_item(self) -> TResponseInputItem | None:
        """Hide the newest item from the session and return it; None when there is none."""
        self._check_open()
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        """Hide every item of the session so far (see the module's notes)."""
        self._check_open()
        await asyncio.to_thread(self._clear)

    # -- in a worker thread ---------------------------------------------------------------

    def _items(
        self, limit: int | None = None, hiding: tuple[int, frozenset[int]] | None = None
    ) -> list[tuple[int, TResponseInputItem]]:
        """(message id, item) of the session's visible items, oldest first: the newest `limit`
        (None: all), read from the end of the chat, so a few cost a few rows however long the
        session is. `hiding`: what is hidden, if the caller has just read it."""
        through, hidden = hiding if hiding is not None else self._hidden.load()
        found: list[tuple[int, TResponseInputItem]] = []
        for message in newest_first(self.world, self.chat, after=through, hidden=hidden):
            if limit is not None and len(found) >= limit:
                break
            data = message.metadata.get(META)
            if (
                isinstance(data, dict)
                and data.get("session") == self.session_id
                # Another agent's session of the same id shares the chat, not its items (an
                # item stored before items named their agent is the session's).
                and str(data.get("agent", self.agent.id)).lower() == self.agent.id.lower()
                and isinstance(data.get("item"), dict)
                and message.id not in hidden
            ):
                found.append((message.id, data["item"]))
        found.reverse()
        return found

    def _post(self, requests: list[PostRequest]) -> list[Message]:
        # Its reserved keys: the item, who a system item or tool result is for.
        return post_for(self.agent, requests)

    def _pop(self) -> TResponseInputItem | None:
        with self._lock:
            hiding = self._hidden.load()
            items = self._items(1, hiding)
            if not items:
                return None
            message_id, item = items[-1]
            self._hidden.hide(message_id, hiding)
            return item

    def _clear(self) -> None:
        with self._lock:
            through, _ = self._hidden.load()
            newest = next(newest_first(self.world, self.chat, after=through), None)
            self._hidden.hide_through(through if newest is None else newest.id)

    # -- items as messages ----------------------------------------------------------------

    def _request(self, item: TResponseInputItem) -> PostRequest:
        if not isinstance(item, Mapping):
            raise TypeError(f"a session item is a dict (TResponseInputItem), got {type(item).__name__}")
        data: dict[str, Any] = json.loads(json.dumps(item))
        metadata: dict[str, Any] = {META: {"session": self.session_id, "agent": self.agent.id, "item": data}}
        mine = self.agent.id  # what the session posts as `system` is for its agent alone
        kind, role = data.get("type"), data.get("role")
        if role is not None and kind in (None, "message"):
            text = _text(data.get("content"))
            sender = {"user": self.human, "assistant": self.agent.id}.get(str(role), "system")
            text = text if text.strip() else f"[{role} message]"
            private = mine if sender == "system" else None
            return PostRequest(sender, text, self.chat, metadata=metadata, private_for=private)
        if kind == "function_call":
            metadata["tool_calls"] = [
                {
                    "id": str(data.get("call_id", "")),
                    "type": "function",
                    "function": {"name": str(data.get("name", "")), "arguments": str(data.get("arguments", ""))},
                }
            ]
            return PostRequest(self.agent.id, "", self.chat, metadata=metadata)
        if kind == "function_call_output":
            output = data.get("output")
            text = output if isinstance(output, str) else _text(output) or json.dumps(output, ensure_ascii=False)
            metadata.update(tool_result_for=self.agent.id, tool_call_id=str(data.get("call_id", "")))
            text = text if text.strip() else "(no output)"
            return PostRequest("system", text, self.chat, metadata=metadata, private_for=mine)
        return PostRequest("system", f"[{kind or 'item'}]", self.chat, metadata=metadata, private_for=mine)
