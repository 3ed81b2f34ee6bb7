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
from recall.llm.base import DEFAULT_TIMEOUT, ChatModel
from recall.llm.openai_compat import OpenAICompatibleModel
from recall.settings import Settings

#: Provider names `llm_provider` accepts; empty means "openai".
PROVIDERS = ("openai", "anthropic")
#: Providers an agent's `--model PROVIDER/MODEL` may name.
AGENT_PROVIDERS = ("openai", "ollama", "anthropic")
#: Where a local Ollama serves its OpenAI-compatible API.
OLLAMA_URL = "http://localhost:11434/v1"
#: Where each provider's key is read from when none is given.
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
#: Retries of a failed model call (with the client's exponential backoff) before giving up.
AGENT_RETRIES = 3


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


def agent_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = AGENT_RETRIES,
    environ: Mapping[str, str] | None = None,
) -> OpenAICompatibleModel | AnthropicModel:
    """The model `PROVIDER/MODEL` names (`openai/gpt-4o-mini`, `ollama/llama3.2`,
    `anthropic/claude-sonnet-4-5`) for an agent runner: `openai` is any OpenAI-compatible
    endpoint (`base_url`), `ollama` one on this machine unless `base_url` says otherwise. The
    key, when not given, comes from OPENAI_API_KEY or ANTHROPIC_API_KEY."""
    provider, _, model = spec.partition("/")
    provider = provider.strip().lower()
    if provider not in AGENT_PROVIDERS or not model.strip():
        raise InvalidInputError(
            "model", f"must be PROVIDER/MODEL with PROVIDER one of {', '.join(AGENT_PROVIDERS)}, got {spec!r}"
        )
    env = os.environ if environ is None else environ
    key = api_key or env.get(KEY_VARIABLES.get(provider, "")) or None
    kind = AnthropicModel if provider == "anthropic" else OpenAICompatibleModel
    if provider == "ollama":
        base_url = base_url or OLLAMA_URL
    chat = kind(model.strip(), base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)
    # Named as given: an Ollama model is served at Ollama's context length, not the model's own.
    chat.name = f"{provider}:{model.strip()}"
    return chat
