"""Spec §3 output formats: OpenAI chat messages and Anthropic `system` + alternating turns."""

from __future__ import annotations

from collections.abc import Sequence

from recall.core.context import build_context
from recall.core.context_parts import ContextBlock
from recall.core.context_records import Context, ContextRequest
from recall.core.formats import ANTHROPIC_OPENING
from recall.core.models import AgentProfile, Message
from recall.core.tokens import TokenCounter
from tests.core.messages import conversation

PROMPT = "You are agent B. You review answers."
COUNTER = TokenCounter("cl100k_base")


def build(agent: str, memory: Sequence[Message], blocks: Sequence[ContextBlock] = ()) -> Context:
    return build_context(
        ContextRequest(
            agent=AgentProfile(id=agent),
            chat_id=None,
            system_prompt=PROMPT,
            memory=list(reversed(memory)),
            history_limit=25,
            max_tokens=4000,
            counter=COUNTER,
            blocks=blocks,
        )
    )


def test_openai_names_others_and_not_the_agent_itself() -> None:
    ctx = build(
        "agent-b", conversation(("maria", "@agent-b hi"), ("agent-b", "Hello Maria."), ("maria", "@agent-b ok"))
    )
    assert ctx.openai() == [
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": "@agent-b hi", "name": "maria"},
        {"role": "assistant", "content": "Hello Maria."},
        {"role": "user", "content": "@agent-b ok", "name": "maria"},
    ]


def test_anthropic_joins_system_messages_with_a_blank_line() -> None:
    block = ContextBlock("memory", "<memory>\nFacts:\n- [preference | 0.90] Maria likes tea\n</memory>")
    ctx = build("agent-b", conversation(("maria", "@agent-b hi")), blocks=[block])
    out = ctx.anthropic()
    assert out["system"] == PROMPT + "\n\n" + block.content
    assert out["messages"] == [{"role": "user", "content": "maria: @agent-b hi"}]


def test_anthropic_prefixes_senders_and_merges_consecutive_user_turns() -> None:
    """Seed 000: agent-b's two incoming messages become one user turn."""
    ctx = build(
        "agent-b",
        conversation(("human", "hi"), ("agent-a", "how can I help you?"), ("human", "@agent-b please help")),
    )
    assert ctx.anthropic() == {
        "system": PROMPT,
        "messages": [{"role": "user", "content": "human: hi\n\nhuman: @agent-b please help"}],
    }


def test_anthropic_merges_consecutive_assistant_turns_and_alternates() -> None:
    memory = conversation(
        ("maria", "@agent-b hi"),
        ("agent-b", "Hello."),
        ("agent-b", "How can I help?"),
        ("maria", "@agent-b a question"),
        ("maria", "and another"),
    )
    messages = build("agent-b", memory).anthropic()["messages"]
    assert messages == [
        {"role": "user", "content": "maria: @agent-b hi"},
        {"role": "assistant", "content": "Hello.\n\nHow can I help?"},
        {"role": "user", "content": "maria: @agent-b a question\n\nmaria: and another"},
    ]


def test_anthropic_leading_assistant_turn_gets_a_user_opening() -> None:
    ctx = build("agent-b", conversation(("agent-b", "I'll start."), ("maria", "@agent-b go on")))
    assert ctx.openai()[1] == {"role": "assistant", "content": "I'll start."}
    assert ANTHROPIC_OPENING == "(conversation continues)"
    assert ctx.anthropic()["messages"] == [
        {"role": "user", "content": "(conversation continues)"},
        {"role": "assistant", "content": "I'll start."},
        {"role": "user", "content": "maria: @agent-b go on"},
    ]


def test_anthropic_tool_results_are_user_text() -> None:
    memory = conversation(
        ("maria", "@agent-a weather?"),
        ("agent-a", "Checking."),
        ("system", '{"temp": 21}', {"tool_result_for": "agent-a", "tool_call_id": "call_1"}),
        ("maria", "@agent-a well?"),
    )
    messages = build("agent-a", memory).anthropic()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == 'tool result: {"temp": 21}\n\nmaria: @agent-a well?'
