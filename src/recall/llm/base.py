"""The `ChatModel` protocol every provider adapter implements, and the one error they raise.

Messages go in OpenAI chat format (`{"role": "user" | "assistant", "content": str}`), the reply
comes back as plain text. Adapters turn every HTTP, connection and protocol failure into
`ModelError`, so callers (the extraction queue, the summariser, the agent runner) handle one
type and can log its message as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from recall.errors import RecallError


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


class ModelError(RecallError):
    """A chat model could not be reached or refused the request."""

    def __init__(
        self, provider: str, model: str, problem: str, *, status: int | None = None, base_url: str | None = None
    ) -> None:
        self.provider = provider
        self.model = model
        self.status = status
        self.base_url = base_url
        self.problem = problem
        where = f" at {base_url}" if base_url else ""
        code = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{provider} model {model!r}{where} failed{code}: {problem}")


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
