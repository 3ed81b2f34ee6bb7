"""Build the configured chat model from `Settings` (spec §4 extraction, §3 summaries).

No model configured (`llm_model` empty) means no model: extraction and LLM summaries are off
and callers fall back to their non-LLM behaviour. The API key never lives in settings; it is
read from the environment variable `settings.llm_api_key_env` names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from recall.errors import InvalidInputError
from recall.llm.anthropic import AnthropicModel
from recall.llm.base import ChatModel
from recall.llm.openai_compat import OpenAICompatibleModel
from recall.settings import Settings

#: Provider names `llm_provider` accepts; empty means "openai".
PROVIDERS = ("openai", "anthropic")


def chat_model_from_settings(settings: Settings, environ: Mapping[str, str] | None = None) -> ChatModel | None:
    """The chat model `settings` describe, or None when `llm_model` is empty."""
    model = settings.llm_model.strip()
    if not model:
        return None
    provider = (settings.llm_provider.strip() or "openai").lower()
    env = os.environ if environ is None else environ
    api_key = env.get(settings.llm_api_key_env) if settings.llm_api_key_env else None
    base_url = settings.llm_base_url.strip() or None
    if provider == "openai":
        return OpenAICompatibleModel(model, base_url=base_url, api_key=api_key or None)
    if provider == "anthropic":
        return AnthropicModel(model, base_url=base_url, api_key=api_key or None)
    raise InvalidInputError(
        "llm_provider",
        f"must be one of {', '.join(PROVIDERS)} (use 'openai' for Ollama, vLLM and other "
        f"OpenAI-compatible servers), got {settings.llm_provider!r}",
    )
