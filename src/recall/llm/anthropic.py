"""Anthropic's Messages API through the official `anthropic` package.

Takes the same OpenAI-format messages as every `ChatModel` and converts them the way
`recall.core.formats.to_anthropic` converts contexts: system-role messages join the `system`
prompt, a speaker's `name` becomes a `name: ` prefix (Anthropic has no name field), consecutive
same-role messages merge, and the conversation starts with a user turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anthropic

from recall.core.formats import ANTHROPIC_OPENING
from recall.llm.base import HostedModel, ModelError, status_hint
from recall.llm.openai_compat import _short

#: Anthropic has no JSON mode; `json_output` adds this to the system prompt instead.
JSON_INSTRUCTION = "Reply with one JSON object and nothing else: no prose, no code fences."


class AnthropicModel(HostedModel):
    """A Claude model (or anything that speaks the Anthropic Messages API at `base_url`)."""

    provider = "anthropic"

    def _make_client(self, api_key: str, timeout: float, max_retries: int) -> Any:
        return anthropic.Anthropic(base_url=self.base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: str | None = None,
        max_tokens: int = 1024,
        temperature: float | None = 0.0,
        json_output: bool = False,
    ) -> str:
        system_text, turns = anthropic_messages(messages, system)
        if json_output:
            system_text = f"{system_text}\n\n{JSON_INSTRUCTION}" if system_text else JSON_INSTRUCTION
        params: dict[str, Any] = {"model": self.model, "messages": turns, "max_tokens": max_tokens}
        if system_text:
            params["system"] = system_text
        # `temperature` is accepted for the protocol but not sent: the Messages API this SDK
        # speaks has no such parameter.
        try:
            response = self._client.messages.create(**params)
        except anthropic.AnthropicError as e:
            raise self._error(e) from e
        return "".join(getattr(block, "text", "") for block in response.content if block.type == "text")

    def _error(self, e: anthropic.AnthropicError) -> ModelError:
        url = str(self._client.base_url)
        if isinstance(e, anthropic.APIStatusError):
            problem = f"{status_hint(e.status_code)}; the endpoint said: {_short(e.message)}"
            return ModelError(self.provider, self.model, problem, status=e.status_code, base_url=url)
        if isinstance(e, anthropic.APITimeoutError):
            return ModelError(self.provider, self.model, "the request timed out", base_url=url)
        if isinstance(e, anthropic.APIConnectionError):
            problem = f"could not connect ({_short(str(e.__cause__ or e))}); is the server running?"
            return ModelError(self.provider, self.model, problem, base_url=url)
        return ModelError(self.provider, self.model, _short(str(e)), base_url=url)


def anthropic_messages(
    messages: Sequence[Mapping[str, Any]], system: str | None = None
) -> tuple[str, list[dict[str, str]]]:
    """(system prompt, alternating user/assistant turns) from OpenAI-format messages."""
    system_parts = [system] if system else []
    turns: list[dict[str, str]] = []
    for m in messages:
        role = str(m.get("role", "user"))
        content = _text(m.get("content"))
        if role == "system":
            if content:
                system_parts.append(content)
            continue
        if role == "assistant":
            text = content
        else:
            name = m.get("name")
            text = f"{name}: {content}" if role == "user" and name else content
            if role == "tool":
                text = f"tool result: {content}"
            role = "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    if not turns or turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": ANTHROPIC_OPENING})
    return "\n\n".join(system_parts), turns


def _text(content: object) -> str:
    """A message's text: a string, or the text parts of an OpenAI content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return "" if content is None else str(content)
