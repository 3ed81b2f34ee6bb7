"""The `ChatModel` protocol every provider adapter implements, and the one error they raise.

Messages go in OpenAI chat format (`{"role": "user" | "assistant", "content": str}`), the reply
comes back as plain text. Adapters turn every HTTP, connection and protocol failure into
`ModelError`, so callers (the extraction queue, the summariser, the agent runner) handle one
type and can log its message as it is.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from recall.errors import ModelError
from recall.extras import require


@runtime_checkable
class ChatModel(Protocol):
    """A chat model recall can ask for a reply."""

    #: `provider:model`, for logs and reports.
    name: str

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        json_output: bool = False,
    ) -> str:
        """The model's reply text to `messages` (OpenAI format, roles user/assistant).

        `system` is the system prompt; `json_output` asks for a single JSON object (the
        provider's JSON mode where it has one). Raises `ModelError` on any failure.
        """
        ...


@dataclass(frozen=True)
class Tool:
    """A function the model may call: its name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }

    def anthropic(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": dict(self.parameters)}


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for; `arguments` is JSON text, as OpenAI sends it."""

    id: str
    name: str
    arguments: str

    def openai(self) -> dict[str, Any]:
        """The call as an OpenAI `tool_calls` entry (what recall keeps in the history)."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as an object; ValueError when they are not a JSON object."""
        value = json.loads(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError("tool arguments must be a JSON object")
        return value


@dataclass(frozen=True)
class ModelReply:
    """What a model answered: text, tool calls, or both."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()


@runtime_checkable
class AgentModel(Protocol):
    """A chat model an agent talks through: full conversations, with tools."""

    name: str

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Tool] = (),
        max_tokens: int = 1024,
        temperature: float | None = None,
    ) -> ModelReply:
        """The reply to `messages` (OpenAI format: system, user, assistant with `tool_calls`,
        tool). Raises `ModelError` on any failure."""
        ...


#: Seconds one request may take before it counts as failed.
DEFAULT_TIMEOUT = 60.0
#: Retries of the model check at start: a missing server is reported in seconds, not minutes.
CHECK_RETRIES = 1
#: Sent when no key is configured: local servers (Ollama, vLLM) ignore it.
PLACEHOLDER_KEY = "not-needed"


class HostedModel:
    """What the adapters share: a model name on a provider, reached through its official client.

    Local servers need no key, so a missing key is sent as a placeholder instead of failing
    before the request. Retries are kept to one by default: the callers run in the background
    and prefer a quick, logged failure to a long stall."""

    provider: ClassVar[str]
    #: The provider's official package (`openai`, `anthropic`): loaded with the first client,
    #: its errors (`<SDK>Error` and the status, timeout and connection ones) become `ModelError`s.
    sdk: ClassVar[str]
    #: The names of the package's client class and of its base error class.
    sdk_client: ClassVar[str]
    sdk_error: ClassVar[str]
    #: What the model is, in the message that names the extra to install when the package is missing.
    described: ClassVar[str]

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 1,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name")
        self.model = model
        self.base_url = base_url or None
        self.name = f"{self.provider}:{model}"
        self._client = self._make_client(api_key or PLACEHOLDER_KEY, timeout, max_retries)

    def _make_client(self, api_key: str, timeout: float, max_retries: int) -> Any:
        """The provider's client for `self.base_url`."""
        require("models", self.described, (self.sdk,))
        client = getattr(importlib.import_module(self.sdk), self.sdk_client)
        return client(base_url=self.base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)

    def check(self) -> None:
        """Make sure the endpoint is reachable and takes the key, before any real work (an agent
        runner starts with it): list the models, which spends no tokens; where the endpoint has
        no such list (404, 405, 501), ask for a one-token reply instead, which passes when it is
        answered or refused as a bad request (the endpoint understood the model and the key).
        Raises `ModelError` saying what failed: no connection, a timeout, 401/403, 5xx…"""
        try:
            self._list_models()
            return
        except ModelError as e:
            if e.status not in (404, 405, 501):  # no models list here: ask for one token instead
                raise
        try:
            self._one_token()
        except ModelError as e:
            if e.status != 400:
                raise

    def _list_models(self) -> None:
        """One request for the endpoint's models list (one retry at most); `ModelError` if it fails."""
        sdk = importlib.import_module(self.sdk)  # loaded already by the client
        try:
            self._client.with_options(max_retries=CHECK_RETRIES).models.list()
        except getattr(sdk, self.sdk_error) as e:
            raise self._error(e) from e

    def _one_token(self) -> None:
        """The smallest chat request: a one-token reply to "Hi"; `ModelError` if it fails."""
        self._create({"model": self.model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})

    def _create(self, params: dict[str, Any]) -> Any:
        """One chat request with these parameters; `ModelError` if it fails."""
        raise NotImplementedError

    def _error(self, e: Exception) -> ModelError:
        """An error of the SDK as a `ModelError`: what to check for an HTTP status, a timeout,
        no connection, or the SDK's own message."""
        sdk = importlib.import_module(self.sdk)
        url = str(self._client.base_url)
        if isinstance(e, sdk.APIStatusError):
            problem = f"{status_hint(e.status_code)}; the endpoint said: {short(e.message)}"
            return ModelError(self.provider, self.model, problem, status=e.status_code, base_url=url)
        if isinstance(e, sdk.APITimeoutError):
            return ModelError(self.provider, self.model, "the request timed out", base_url=url)
        if isinstance(e, sdk.APIConnectionError):
            problem = f"could not connect ({short(str(e.__cause__ or e))}); is the server running?"
            return ModelError(self.provider, self.model, problem, base_url=url)
        return ModelError(self.provider, self.model, short(str(e)), base_url=url)


def status_hint(status: int) -> str:
    """What to check for an HTTP status a model endpoint answered with."""
    if status in (401, 403):
        return "check the API key (settings.llm_api_key_env names the variable that holds it)"
    if status == 404:
        return "check the model name and the base URL (an OpenAI-compatible URL usually ends in /v1)"
    if status == 429:
        return "rate limited or out of quota; try again later"
    if status >= 500:
        return "the provider had a server error; try again later"
    return "the provider rejected the request"


def short(text: str, limit: int = 500) -> str:
    """An endpoint's message on one line, at most `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
