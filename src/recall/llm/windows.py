"""How many tokens an agent's model takes in one call (its context window), for the runner's
context budget: the reply's tokens come out of the same window, and a context built for a bigger
window than the model has is cut by the provider (Ollama drops the start, system prompt first) or
refused.

Only hosted models whose provider serves their full window are listed. A model served some other
way gets a window that is safe rather than generous: Ollama serves every model at its own context
length (4,096 tokens by default on smaller machines, `OLLAMA_CONTEXT_LENGTH` changes it), and an
OpenAI-compatible server of unknown models (vLLM, LM Studio…) gets `DEFAULT_WINDOW`. A runner
given `--max-context` uses that instead.
"""

from __future__ import annotations

#: The window of a model recall knows nothing about: small enough for most models served today.
DEFAULT_WINDOW = 8_192
#: Ollama's default context length (below 24 GiB of VRAM): what it serves unless configured.
OLLAMA_WINDOW = 4_096

#: Windows by model-name prefix (the longest matching prefix wins), per provider. Names a prefix
#: matches wrongly get a smaller window, never a bigger one (`gpt-4-1106…` counts as `gpt-4`).
KNOWN_WINDOWS: dict[str, dict[str, int]] = {
    "openai": {
        "gpt-5": 400_000,
        "gpt-4.1": 1_047_576,
        "gpt-4.5": 128_000,
        "gpt-4o": 128_000,
        "chatgpt-4o": 128_000,
        "gpt-4-turbo": 128_000,
        "gpt-4-32k": 32_768,
        "gpt-4": 8_192,
        "gpt-3.5-turbo": 16_385,
        "o1": 200_000,
        "o1-mini": 128_000,
        "o1-preview": 128_000,
        "o3": 200_000,
        "o4-mini": 200_000,
    },
    "anthropic": {"claude-3": 200_000, "claude-sonnet-4": 200_000, "claude-opus-4": 200_000, "claude-haiku-4": 200_000},
}


def model_window(name: str) -> int:
    """The context window of the model `name` (`provider:model`, as `AgentModel.name` spells it,
    or `provider/model`): the known window, Ollama's default for `ollama`, else `DEFAULT_WINDOW`."""
    provider, model = split_model_name(name)
    if provider == "ollama":
        return OLLAMA_WINDOW
    tables = [KNOWN_WINDOWS[provider]] if provider in KNOWN_WINDOWS else list(KNOWN_WINDOWS.values())
    model = model.lower()
    for table in tables:
        matches = [prefix for prefix in table if model.startswith(prefix)]
        if matches:
            return table[max(matches, key=len)]
    return DEFAULT_WINDOW


def split_model_name(name: str) -> tuple[str, str]:
    """(provider, model) of `provider:model` or `provider/model`; provider '' when none is named.
    Only the first separator counts: Ollama tags hold colons (`llama3.2:3b`)."""
    for separator in (":", "/"):
        provider, found, model = name.partition(separator)
        if found and provider.strip().lower() in (*KNOWN_WINDOWS, "ollama"):
            return provider.strip().lower(), model.strip()
    return "", name.strip()
