"""Any OpenAI-compatible chat endpoint: OpenAI itself, a local Ollama (`http://localhost:11434/v1`),
vLLM, LM Studio, and the like, through the official `openai` package.

Local servers need no key, so a missing key is sent as a placeholder instead of failing before
the request. Retries are kept to one: the callers run in the background and prefer a quick,
logged failure to a long stall.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recall.errors import ModelError
from recall.llm.base import HostedModel, ModelReply, Tool, ToolCall


class OpenAICompatibleModel(HostedModel):
    """A chat model behind an OpenAI-compatible `/chat/completions` endpoint."""

    provider = "openai"
    sdk = "openai"
    sdk_client = "OpenAI"
    sdk_error = "OpenAIError"
    described = "an OpenAI-compatible chat model"

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: str | None = None,
        max_tokens: int = 1024,
        temperature: float | None = 0.0,
        json_output: bool = False,
    ) -> str:
        chat: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        chat.extend(dict(m) for m in messages)
        params: dict[str, Any] = {"model": self.model, "messages": chat, "max_tokens": max_tokens}
        if temperature is not None:
            params["temperature"] = temperature
        if json_output:
            params["response_format"] = {"type": "json_object"}
        return self._create(params).content or ""

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Tool] = (),
        max_tokens: int = 1024,
        temperature: float | None = None,
    ) -> ModelReply:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "max_tokens": max_tokens,
        }
        if temperature is not None:
            params["temperature"] = temperature
        if tools:
            params["tools"] = [tool.openai() for tool in tools]
        message = self._create(params)
        calls = tuple(
            ToolCall(call.id, call.function.name, call.function.arguments or "{}")
            for call in message.tool_calls or ()
            if getattr(call, "function", None) is not None
        )
        return ModelReply(message.content or "", calls)

    def _create(self, params: dict[str, Any]) -> Any:
        """The reply message of one chat completion."""
        # Newer OpenAI models reject `max_tokens` (they want `max_completion_tokens`) and a
        # non-default temperature; other servers may not know `max_completion_tokens`. Start
        # with the widely supported form and adapt once per rejected parameter.
        import openai  # loaded already by the client

        for _ in range(3):
            try:
                response = self._client.chat.completions.create(**params)
            except openai.BadRequestError as e:
                if not _adapt(params, str(e.message)):
                    raise self._error(e) from e
                continue
            except openai.OpenAIError as e:
                raise self._error(e) from e
            if not response.choices:
                raise ModelError(self.provider, self.model, "the reply had no choices", base_url=self.base_url)
            return response.choices[0].message
        raise ModelError(self.provider, self.model, "the endpoint kept rejecting the request", base_url=self.base_url)


def _adapt(params: dict[str, Any], message: str) -> bool:
    """Change the parameter a 400 complained about; False when there is nothing to change."""
    if "max_completion_tokens" in message and "max_tokens" in params:
        params["max_completion_tokens"] = params.pop("max_tokens")
        return True
    if "temperature" in message and "temperature" in params:
        del params["temperature"]
        return True
    return False
