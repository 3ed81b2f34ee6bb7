"""The static system prompt: who the agent is, never what happened (seed 001).

Built only from the agent's profile and the channel, so it is byte-identical across calls
and provider prompt caching works.
"""

from __future__ import annotations

from recall.core.models import AgentProfile

CHANNEL_GUIDELINES: dict[str, tuple[str, ...]] = {
    "call": (
        "You are on a phone call: your words are spoken aloud.",
        "Keep each reply short and conversational: one or two sentences.",
        "Use no formatting: no lists, no markdown, no emoji, no URLs read out character by character.",
    ),
    "sms": (
        "You are replying by SMS.",
        "Keep each reply under 160 characters where possible.",
        "Use plain text only: no markdown.",
    ),
    "email": (
        "You are replying by e-mail.",
        "Structure every reply as a greeting, a body, and a closing with your name.",
        "Complete sentences; short paragraphs.",
    ),
    "chat": (
        "You are in a text chat.",
        "Be concise; light formatting is fine.",
    ),
}


def _section(title: str, body: str) -> str:
    return f"# {title}\n{body.strip()}"


def _bullets(items: tuple[str, ...]) -> str:
    return "\n".join(f"- {item.strip()}" for item in items if item.strip())


def build_system_prompt(agent: AgentProfile, channel: str | None = None) -> str:
    """The agent's system prompt for a channel (default: the agent's own channel)."""
    parts: list[str] = []
    if agent.system_prompt.strip():
        parts.append(agent.system_prompt.strip())
    if agent.identity.strip():
        parts.append(_section("Identity", agent.identity))
    if agent.personality.strip():
        parts.append(_section("Personality", agent.personality))
    if agent.knowledge.strip():
        parts.append(_section("Knowledge", agent.knowledge))
    for title, items in (("Goals", agent.goals), ("Constraints", agent.constraints), ("Guidelines", agent.guidelines)):
        body = _bullets(items)
        if body:
            parts.append(_section(title, body))
    guidelines = CHANNEL_GUIDELINES.get(channel or agent.channel or "", ())
    if guidelines:
        parts.append(_section("Channel", _bullets(guidelines)))
    return "\n\n".join(parts)
