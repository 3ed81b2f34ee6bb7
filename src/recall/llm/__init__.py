"""Chat-model adapters: one small `ChatModel` protocol, OpenAI-compatible and Anthropic clients.

recall calls a chat model for two background jobs, fact extraction (spec §4) and history
summaries (spec §3). Both only need "messages in, text out", so that is all the protocol asks;
`chat_model_from_settings` builds the configured one (or None when no model is configured).
"""

from __future__ import annotations

from recall.errors import ModelError
from recall.llm.anthropic import AnthropicModel
from recall.llm.base import ChatModel
from recall.llm.factory import PROVIDERS, chat_model_from_settings
from recall.llm.openai_compat import OpenAICompatibleModel

__all__ = [
    "PROVIDERS",
    "AnthropicModel",
    "ChatModel",
    "ModelError",
    "OpenAICompatibleModel",
    "chat_model_from_settings",
]
