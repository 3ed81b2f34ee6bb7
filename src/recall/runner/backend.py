"""How a runner reaches recall: in this process (`LocalBackend`, a `recall.Agent`) or over HTTP
(`HttpBackend`, a recall server). The runner only uses these few calls, so the same loop drives
an agent either way, and agents in many processes coordinate only through recall."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import httpx

from recall.core.models import Message
from recall.core.routing import Decision
from recall.errors import BackendError

if TYPE_CHECKING:
    from recall.api import Agent


class Prompt(NamedTuple):
    """What the runner sends its model for one message: the OpenAI-format messages, and the id
    of the model call they were recorded as (None when recall records no calls)."""

    messages: list[dict[str, Any]]
    call_id: str | None


class RunnerBackend(Protocol):
    """What an agent runner needs of recall."""

    world_id: str
    agent_id: str

    def next_messages(self, timeout: float) -> list[Message]:
        """Unread messages the agent is addressed in, oldest first; waits up to `timeout`
        seconds for one when there are none. (Messages it is not addressed in are marked read
        as they pass: they stay in its memory.)"""
        ...

    def decide(self, message: Message) -> Decision: ...

    def context(self, message: Message, *, model: str | None = None, max_tokens: int | None = None) -> Prompt:
        """The OpenAI-format messages for answering `message` (it ends the incoming part), built
        for `model` in at most `max_tokens` (or the agent's own smaller budget) and recorded as the
        agent's model call."""
        ...

    def call_outcome(self, call_id: str, error: str | None) -> None:
        """Record what came of the model call `call_id`: answered (`error` None) or failed."""
        ...

    def record_llm_call(self) -> int: ...

    def send(
        self, content: str, *, chat: str | None, parent: int | None, metadata: Mapping[str, Any] | None = None
    ) -> int:
        """Post as the agent; the message id."""
        ...

    def post_tool_result(self, content: str, *, chat: str | None, parent: int | None, call_id: str) -> int:
        """Post a tool's result into the agent's history; the message id."""
        ...

    def ack(self, message_ids: Sequence[int]) -> None: ...

    def extract(self, chat: str | None) -> None:
        """Queue fact extraction from the chat (recall skips it when it has no model)."""
        ...


class LocalBackend:
    """An agent of a `Recall` opened in this process."""

    #: How often to look for posts by other processes sharing the store, at most.
    POLL = 0.5

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.service = agent.service
        self.world_id = agent.world_id
        #: What the service's per-world methods take (the world's key).
        self._world = agent.world.key
        self.agent_id = agent.profile.id
        self._seen = 0

    def next_messages(self, timeout: float) -> list[Message]:
        deadline = time.monotonic() + timeout
        while True:
            seen = self.service.post_count  # read before checking, so no post is missed
            found = list(self.service.deliveries.check(self._world, self.agent_id, limit=100).new_mentions)
            remaining = deadline - time.monotonic()
            if found or remaining <= 0:
                return found
            self.service.posting.wait_for_posts(seen, min(remaining, self.POLL))

    def decide(self, message: Message) -> Decision:
        return self.service.agent_state.decide(self._world, self.agent_id, message.id)

    def context(self, message: Message, *, model: str | None = None, max_tokens: int | None = None) -> Prompt:
        """What the model is sent for `message`, recorded as the runner's model call."""
        own = self.service.worlds.get_agent(self._world, self.agent_id).max_tokens
        built = self.service.contexts.build_context(
            self._world,
            self.agent_id,
            message.chat_id,
            message_id=message.id,
            model=model,
            max_tokens=budget(own, max_tokens),
        )
        built = self.service.calls.record(built, "runner")
        return Prompt(built.openai(), built.call_id)

    def call_outcome(self, call_id: str, error: str | None) -> None:
        self.service.calls.report_outcome(self._world, self.agent_id, call_id, error)

    def record_llm_call(self) -> int:
        return self.service.agent_state.record_llm_call(self._world, self.agent_id)

    def send(
        self, content: str, *, chat: str | None, parent: int | None, metadata: Mapping[str, Any] | None = None
    ) -> int:
        return self.service.deliveries.send(self._world, self.agent_id, content, chat, parent, metadata=metadata).id

    def post_tool_result(self, content: str, *, chat: str | None, parent: int | None, call_id: str) -> int:
        return self.service.posting.post_tool_result(self._world, self.agent_id, content, call_id, chat, parent).id

    def ack(self, message_ids: Sequence[int]) -> None:
        if message_ids:
            self.service.deliveries.ack(self._world, self.agent_id, list(message_ids))

    def extract(self, chat: str | None) -> None:
        self.agent.extract(chat)


class HttpBackend:
    """An agent on a recall server, through its REST API (long-poll inbox)."""

    def __init__(
        self,
        base_url: str,
        world_id: str,
        agent_id: str,
        *,
        api_key: str | None = None,
        client: httpx.Client | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.world_id = world_id
        self.agent_id = agent_id
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        # Long-polls hold a request open for their whole wait: the read timeout covers it.
        self._client = client or httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=httpx.Timeout(timeout, read=timeout + 35)
        )
        self._agent = f"/v1/worlds/{world_id}/agents/{agent_id}"

    def close(self) -> None:
        self._client.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as e:
            raise BackendError(f"recall server unreachable ({method} {path}): {e}") from e
        if response.status_code >= 400:
            try:
                detail = response.json().get("error", {}).get("message") or response.text
            except ValueError:
                detail = response.text
            raise BackendError(f"recall server refused {method} {path} (HTTP {response.status_code}): {detail}")
        return response.json()

    def next_messages(self, timeout: float) -> list[Message]:
        params: dict[str, Any] = {"limit": 100}
        if timeout > 0:
            params |= {"wait": "true", "timeout": min(timeout, 30.0)}
        data = self._call("GET", f"{self._agent}/inbox", params=params)
        return [Message.from_dict(m) for m in data.get("new_mentions", [])]

    def decide(self, message: Message) -> Decision:
        data = self._call("POST", f"{self._agent}/decide", json={"message_id": message.id})
        return Decision(bool(data["respond"]), int(data["turn_count"]), data.get("notice"), data.get("reason"))

    def context(self, message: Message, *, model: str | None = None, max_tokens: int | None = None) -> Prompt:
        body: dict[str, Any] = {
            "message_id": message.id,
            "chat_id": message.chat_id,
            "record": True,
        }  # the model gets it
        if model is not None:
            body["model"] = model
        if max_tokens is not None:  # the agent's own budget still holds when smaller
            body["max_tokens"] = budget(self._call("GET", self._agent).get("max_tokens"), max_tokens)
        answer = self._call("POST", f"{self._agent}/context", json=body)
        return Prompt(answer["messages"], answer.get("call_id"))

    def call_outcome(self, call_id: str, error: str | None) -> None:
        self._call("POST", f"{self._agent}/calls/{call_id}/outcome", json={"error": error})

    def record_llm_call(self) -> int:
        return int(self._call("POST", f"{self._agent}/llm-calls")["turn_count"])

    def send(
        self, content: str, *, chat: str | None, parent: int | None, metadata: Mapping[str, Any] | None = None
    ) -> int:
        body = {"content": content, "chat_id": chat, "parent_id": parent, "metadata": dict(metadata or {}) or None}
        return int(self._call("POST", f"{self._agent}/send", json=body)["message_id"])

    def post_tool_result(self, content: str, *, chat: str | None, parent: int | None, call_id: str) -> int:
        # The agent's own path: its key may store its tool results (not post as `system`).
        body = {"content": content, "call_id": call_id, "chat_id": chat, "parent_id": parent}
        return int(self._call("POST", f"{self._agent}/tool-results", json=body)["message_id"])

    def ack(self, message_ids: Sequence[int]) -> None:
        if message_ids:
            self._call("POST", f"{self._agent}/inbox/ack", json={"ids": list(message_ids)})

    def extract(self, chat: str | None) -> None:
        self._call("POST", f"{self._agent}/extract", json={"chat_id": chat})


def budget(own: int | None, window: int | None) -> int | None:
    """A context's budget: the runner's (what its model's window leaves), or the agent's own
    `max_tokens` setting when that is smaller."""
    if own is None or window is None:
        return window  # None: the agent's own setting (or its model's window) decides
    return min(own, window)
