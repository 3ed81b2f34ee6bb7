"""Anthropic's Messages API through the official `anthropic` package.

Takes the same OpenAI-format messages as every `ChatModel` and converts them the way
`recall.core.formats.to_anthropic` converts contexts: system-role messages join the `system`
prompt, a speaker's `name` becomes a `name: ` prefix (Anthropic has no name field), consecutive
same-role messages merge, and the conversation starts with a user turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from recall.core.formats import ANTHROPIC_OPENING
from recall.llm.base import HostedModel, ModelReply, Tool, ToolCall

#: Anthropic has no JSON mode; `json_output` adds this to the system prompt instead.
JSON_INSTRUCTION = "Reply with one JSON object and nothing else: no prose, no code fences."


class AnthropicModel(HostedModel):
    """A Claude model (or anything that speaks the Anthropic Messages API at `base_url`)."""

    provider = "anthropic"
    sdk = "anthropic"
    sdk_client = "Anthropic"
    sdk_error = "AnthropicError"
    described = "an Anthropic chat model"

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
        response = self._create(params)
        return "".join(getattr(block, "text", "") for block in response.content if block.type == "text")

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Tool] = (),
        max_tokens: int = 1024,
        temperature: float | None = None,
    ) -> ModelReply:
        system_text, turns = anthropic_messages(messages)
        params: dict[str, Any] = {"model": self.model, "messages": turns, "max_tokens": max_tokens}
        if system_text:
            params["system"] = system_text
        if tools:
            params["tools"] = [tool.anthropic() for tool in tools]  # `temperature`: see complete()
        response = self._create(params)
        text = "".join(getattr(block, "text", "") for block in response.content if block.type == "text")
        calls = tuple(
            ToolCall(block.id, block.name, json.dumps(block.input))
            for block in response.content
            if block.type == "tool_use"
        )
        return ModelReply(text, calls)

    def _create(self, params: dict[str, Any]) -> Any:
        import anthropic  # loaded already by the client

        try:
            return self._client.messages.create(**params)
        except anthropic.AnthropicError as e:
            raise self._error(e) from e


def anthropic_messages(
    messages: Sequence[Mapping[str, Any]], system: str | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """(system prompt, alternating user/assistant turns) from OpenAI-format messages.

    A turn's content is a string when it is only text; an assistant's tool calls become
    `tool_use` blocks and tool results `tool_result` blocks of a user turn, as the Messages API
    wants them."""
    system_parts = [system] if system else []
    turns: list[dict[str, Any]] = []
    for m in messages:
        role = str(m.get("role", "user"))
        content = _text(m.get("content"))
        if role == "system":
            if content:
                system_parts.append(content)
            continue
        blocks: list[dict[str, Any]] = []
        if role == "assistant":
            if content:
                blocks.append({"type": "text", "text": content})
            blocks += [_tool_use(call) for call in m.get("tool_calls") or ()]
        elif role == "tool":
            role = "user"
            blocks.append({"type": "tool_result", "tool_use_id": str(m.get("tool_call_id", "")), "content": content})
        else:
            name = m.get("name")
            role = "user"
            blocks.append({"type": "text", "text": f"{name}: {content}" if name else content})
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += blocks
        else:
            turns.append({"role": role, "content": blocks})
    if not turns or turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": ANTHROPIC_OPENING}]})
    for turn in turns:
        if all(block["type"] == "text" for block in turn["content"]):
            turn["content"] = "\n\n".join(block["text"] for block in turn["content"])
    return "\n\n".join(system_parts), turns


def _tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI `tool_calls` entry as an Anthropic `tool_use` block."""
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except ValueError:
        arguments = {}
    return {
        "type": "tool_use",
        "id": str(call.get("id", "")),
        "name": str(function.get("name", "")),
        "input": arguments if isinstance(arguments, dict) else {},
    }


def _text(content: object) -> str:
    """A message's text: a string, or the text parts of an OpenAI content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return "" if content is None else str(content)
