"""Spec §3 item 1: the static system prompt (seed 001)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recall.core.context import build_context
from recall.core.context_records import ContextRequest
from recall.core.models import AgentProfile, Message, SenderType
from recall.core.prompt import build_system_prompt
from recall.core.tokens import TokenCounter

AGENT = AgentProfile(
    id="receptionist",
    system_prompt="You answer for Bright Dental.",
    identity="Sam, the receptionist of Bright Dental.",
    personality="Warm and brief.",
    knowledge="Open Monday to Friday, 9 to 5.",
    goals=("Book appointments",),
    constraints=("Never give medical advice",),
    guidelines=("Confirm the date twice",),
)


def test_prompt_is_static() -> None:
    assert build_system_prompt(AGENT) == build_system_prompt(AGENT)
    assert build_system_prompt(AGENT, "call") == build_system_prompt(AGENT, "call")


def test_sections_in_order() -> None:
    prompt = build_system_prompt(AGENT, "chat")
    assert prompt.startswith("You answer for Bright Dental.\n\n# Identity\nSam, the receptionist of Bright Dental.")
    headings = ["# Identity", "# Personality", "# Knowledge", "# Goals", "# Constraints", "# Guidelines", "# Channel"]
    positions = [prompt.index(h) for h in headings]
    assert positions == sorted(positions)
    assert "# Goals\n- Book appointments" in prompt
    assert "# Constraints\n- Never give medical advice" in prompt
    assert "# Guidelines\n- Confirm the date twice" in prompt


def test_empty_parts_are_left_out() -> None:
    assert build_system_prompt(AgentProfile(id="bare")) == ""
    assert build_system_prompt(AgentProfile(id="x", identity="Sam")) == "# Identity\nSam"


@pytest.mark.parametrize(
    ("channel", "phrases"),
    [
        pytest.param("call", ["spoken", "short", "no formatting"], id="call"),
        pytest.param("sms", ["SMS", "under 160 characters where possible"], id="sms"),
        pytest.param("email", ["e-mail", "greeting", "body", "closing"], id="email"),
    ],
)
def test_channel_guidelines(channel: str, phrases: list[str]) -> None:
    prompt = build_system_prompt(AGENT, channel)
    channel_part = prompt.split("# Channel\n", 1)[1]
    for phrase in phrases:
        assert phrase.lower() in channel_part.lower()


def test_channel_defaults_to_the_agents_and_can_be_overridden() -> None:
    on_phone = AgentProfile(id="sam", identity="Sam", channel="call")
    assert "spoken" in build_system_prompt(on_phone)
    assert "160 characters" in build_system_prompt(on_phone, "sms")
    assert "# Channel" not in build_system_prompt(AgentProfile(id="sam", identity="Sam"))


def test_no_memory_or_history_in_the_prompt() -> None:
    """The context's system message is the same whatever the history holds."""
    prompt = build_system_prompt(AGENT, "sms")
    counter = TokenCounter("cl100k_base")

    def system_message(history: list[str]) -> str:
        memory = [
            Message(i, "w", "human", SenderType.HUMAN, text, datetime(2025, 1, 1, tzinfo=UTC))
            for i, text in enumerate(history, start=1)
        ]
        ctx = build_context(
            ContextRequest(AGENT, None, prompt, list(reversed(memory)), 25, 4000, counter),
        )
        return ctx.openai()[0]["content"]

    short = system_message(["Hi"])
    long = system_message(["Hi", "I need a cleaning next Tuesday", "My name is Maria"])
    assert short == long == prompt
    assert "<memory>" not in prompt
    assert "Maria" not in prompt and "Tuesday" not in prompt
