"""Spec §2: mentions, sender types, the would-respond rule and the turn limit (seed 000)."""

from __future__ import annotations

import pytest

from recall.core.models import SenderType
from recall.core.routing import (
    Decision,
    Verdict,
    addressing,
    decide,
    history_verdict,
    mentions,
    paragraph_mentions,
    responders,
    sender_type,
    turn_limit_notice,
    would_respond,
)
from tests.core.messages import AGENTS, HUMANS, make_message

NOTICE_5 = "@human Turn limit reached (5 LLM calls). Please take control of the conversation."


# -- mentions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param("hello there", [], id="none"),
        pytest.param("@agent-a hi", ["agent-a"], id="at-start"),
        pytest.param("I think @other-agent should help", ["other-agent"], id="mid-text"),
        pytest.param("ask @Agent-B, then @AGENT-A", ["agent-b", "agent-a"], id="lowercased-in-order"),
        pytest.param("@bob and @bob again", ["bob", "bob"], id="duplicates-kept"),
        pytest.param("mail me at maria@example.com", ["example"], id="email-address-counts"),
        pytest.param("@a-b_c done", ["a-b_c"], id="hyphen-and-underscore-joined"),
        pytest.param("@agent-a, please", ["agent-a"], id="comma-ends-mention"),
        pytest.param("ping @agent- now", ["agent"], id="trailing-hyphen-not-part"),
        pytest.param("@über and @名前", [], id="non-ascii-not-matched"),
        pytest.param("just an @ sign", [], id="bare-at-sign"),
    ],
)
def test_mentions(content: str, expected: list[str]) -> None:
    assert mentions(content) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param("@test-agent, please", ["test-agent"], id="comma-after-mention"),
        pytest.param("I think @test-agent should help", [], id="mid-text-only"),
        pytest.param("Hello!\n  @agent-b can you check?", ["agent-b"], id="second-line-indented"),
        pytest.param("@a @b hi", ["a"], id="only-first-token-of-line"),
        pytest.param("@a one\n@b two\n@a three", ["a", "b", "a"], id="duplicates-kept-in-order"),
        pytest.param(" \t @Agent-B hi", ["agent-b"], id="leading-whitespace-and-case"),
        pytest.param("hi\n\n@agent-b\n", ["agent-b"], id="blank-lines"),
        pytest.param("maria@example.com wrote this", [], id="email-at-line-start-is-not-at-start"),
        pytest.param("@ agent-b hi", [], id="space-after-at"),
        pytest.param("@über hi", [], id="non-ascii"),
        pytest.param("", [], id="empty"),
    ],
)
def test_paragraph_mentions(content: str, expected: list[str]) -> None:
    assert paragraph_mentions(content) == expected


# -- sender types -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sender", "expected"),
    [
        pytest.param("", SenderType.SYSTEM, id="empty"),
        pytest.param(None, SenderType.SYSTEM, id="none"),
        pytest.param("   ", SenderType.SYSTEM, id="blank"),
        pytest.param("human", SenderType.HUMAN, id="human"),
        pytest.param("HUMAN", SenderType.HUMAN, id="human-upper"),
        pytest.param("User", SenderType.HUMAN, id="user"),
        pytest.param("you", SenderType.HUMAN, id="you"),
        pytest.param("maria", SenderType.HUMAN, id="registered-human"),
        pytest.param("Maria", SenderType.HUMAN, id="registered-human-case"),
        pytest.param("system", SenderType.SYSTEM, id="system"),
        pytest.param("SYSTEM", SenderType.SYSTEM, id="system-upper"),
        pytest.param("world", SenderType.WORLD, id="world"),
        pytest.param("World", SenderType.WORLD, id="world-case"),
        pytest.param("agent-a", SenderType.AGENT, id="registered-agent"),
        pytest.param("Agent-A", SenderType.AGENT, id="registered-agent-case"),
        pytest.param("stranger", None, id="unknown"),
    ],
)
def test_sender_type(sender: str | None, expected: SenderType | None) -> None:
    assert sender_type(sender, HUMANS, AGENTS) == expected


# -- would respond ----------------------------------------------------------------------

# (agent, sender, content, live: would_respond, history: kept, reason when not kept)
RESPONSE_RULES = [
    # 1. own messages
    pytest.param("agent-a", "agent-a", "how can I help you?", False, True, None, id="own-message"),
    pytest.param("agent-a", "Agent-A", "hello", False, True, None, id="own-message-case-insensitive"),
    pytest.param("agent-a", "agent-a", NOTICE_5, False, True, None, id="own-turn-limit-notice-kept"),
    # 2. turn limit notices
    pytest.param("agent-b", "agent-a", NOTICE_5, False, False, "turn-limit-notice", id="turn-limit-notice"),
    pytest.param(
        "agent-b",
        "agent-a",
        "@agent-b Turn limit reached",
        False,
        False,
        "turn-limit-notice",
        id="notice-beats-mention",
    ),
    pytest.param("agent-a", "human", "Turn limit reached?", False, False, "turn-limit-notice", id="notice-from-human"),
    # 3. system
    pytest.param("agent-a", "system", "agent-c joined", False, False, "system-sender", id="system"),
    pytest.param("agent-a", "", "agent-c joined", False, False, "system-sender", id="empty-sender-is-system"),
    pytest.param("agent-a", "system", "@agent-a restart", False, False, "system-sender", id="system-with-mention"),
    # 4. world
    pytest.param("agent-a", "world", "A storm begins.", True, True, None, id="world"),
    pytest.param("agent-a", "world", "@agent-b the gate opens", True, True, None, id="world-mentioning-other"),
    # 5. humans
    pytest.param("agent-b", "human", "@agent-b please help", True, True, None, id="human-mentions-me"),
    pytest.param("agent-a", "human", "@agent-b please help", False, False, "not-addressed", id="human-mentions-other"),
    pytest.param("test-agent", "user", "@test-agent, please", True, True, None, id="human-mention-with-comma"),
    pytest.param("agent-b", "human", "Hello!\n  @agent-b check?", True, True, None, id="human-mentions-me-line-2"),
    pytest.param(
        "agent-a", "human", "Hello!\n  @agent-b check?", False, False, "not-addressed", id="human-mentions-other-line-2"
    ),
    pytest.param("agent-a", "human", "@agent-b @agent-a hi", False, False, "not-addressed", id="human-second-token"),
    pytest.param("agent-a", "human", "@agent-b ask @agent-a", False, False, "not-addressed", id="human-me-mid-text"),
    pytest.param("agent-a", "human", "hi", True, True, None, id="human-public"),
    pytest.param("agent-a", "maria", "Good morning all", True, True, None, id="registered-human-public"),
    pytest.param("agent-a", "You", "anyone there?", True, True, None, id="you-public"),
    pytest.param(
        "test-agent",
        "user",
        "I think @other-agent should help",
        False,
        False,
        "not-addressed",
        id="human-mid-text-mention-of-other",
    ),
    pytest.param(
        "other-agent",
        "user",
        "I think @other-agent should help",
        False,
        False,
        "not-addressed",
        id="human-mid-text-mention-of-me",
    ),
    pytest.param(
        "agent-a", "human", "mail me at maria@example.com", False, False, "not-addressed", id="human-email-not-public"
    ),
    # 6. agents
    pytest.param("agent-b", "agent-a", "@agent-b your turn", True, True, None, id="agent-mentions-me"),
    pytest.param(
        "agent-b", "agent-a", "how can I help you?", False, False, "not-addressed", id="agent-no-mention-is-not-public"
    ),
    pytest.param("agent-b", "agent-a", "ask @agent-b", False, False, "not-addressed", id="agent-mid-text"),
    pytest.param("agent-b", "agent-a", "@human done", False, False, "not-addressed", id="agent-mentions-human"),
    # agent ids compare case-insensitively
    pytest.param("Agent-B", "agent-a", "@agent-b your turn", True, True, None, id="agent-id-upper"),
    pytest.param("agent-b", "human", "@AGENT-B hi", True, True, None, id="mention-upper"),
]


@pytest.mark.parametrize(("agent", "sender", "content", "live", "kept", "reason"), RESPONSE_RULES)
def test_would_respond_and_history_verdict(
    agent: str, sender: str, content: str, live: bool, kept: bool, reason: str | None
) -> None:
    message = make_message(sender, content)
    assert would_respond(agent, message) is live
    assert history_verdict(agent, message) == Verdict(kept, reason)
    if sender.lower() != agent.lower():
        # Rules 2-6 are the same function live and in history.
        assert addressing(agent, message) == Verdict(kept, reason)


@pytest.mark.parametrize(("agent", "sender", "content", "live", "kept", "reason"), RESPONSE_RULES)
def test_responders_among_many_agree_with_would_respond(
    agent: str, sender: str, content: str, live: bool, kept: bool, reason: str | None
) -> None:
    """The server wakes `responders` of its waiting agents: the same agents, one by one, as
    `would_respond` finds, whether the ids come as a set (looked up) or a list (walked)."""
    message = make_message(sender, content)
    crowd = [agent.lower(), sender.lower(), *(f"w{i:03d}" for i in range(50)), *AGENTS, "other-agent", "test-agent"]
    crowd = list(dict.fromkeys(crowd))
    expected = {a for a in crowd if would_respond(a, message)}
    assert (agent.lower() in expected) is live
    assert set(responders(set(crowd), message)) == expected
    assert set(responders(crowd, message)) == expected
    # A post addressed to a few is routed by looking at those few, not at everyone.
    if not live and reason == "not-addressed":
        assert len(responders(set(crowd), message)) <= len(message.addressed)


def test_seed_000_example_routing() -> None:
    """`hi`; agent-a answers; `@agent-b please help`: who is addressed by what."""
    hi = make_message("human", "hi", 1)
    answer = make_message("agent-a", "how can I help you?", 2)
    ask_b = make_message("human", "@agent-b please help", 3)
    assert [would_respond("agent-a", m) for m in (hi, answer, ask_b)] == [True, False, False]
    assert [would_respond("agent-b", m) for m in (hi, answer, ask_b)] == [True, False, True]
    assert [history_verdict("agent-b", m).addressed for m in (hi, answer, ask_b)] == [True, False, True]


@pytest.mark.parametrize(
    ("agent", "owner", "kept", "reason"),
    [
        pytest.param("agent-a", "agent-a", True, None, id="own-tool-call"),
        pytest.param("agent-a", "Agent-A", True, None, id="own-tool-call-case-insensitive"),
        pytest.param("agent-b", "agent-a", False, "system-sender", id="someone-elses-tool-call"),
    ],
)
def test_tool_result_kept_in_history_of_its_caller(agent: str, owner: str, kept: bool, reason: str | None) -> None:
    result = make_message("system", '{"temp": 21}', metadata={"tool_result_for": owner, "tool_call_id": "call_1"})
    assert history_verdict(agent, result) == Verdict(kept, reason)
    # A tool result is never something to answer live.
    assert would_respond(agent, result) is False


# -- turn limit -------------------------------------------------------------------------


def test_turn_limit_notice_text() -> None:
    assert turn_limit_notice(5) == NOTICE_5
    assert turn_limit_notice(3) == "@human Turn limit reached (3 LLM calls). Please take control of the conversation."


# (sender, content, counter before, limit, decision for agent-b)
DECISIONS = [
    pytest.param("agent-a", "@agent-b go", 0, 5, Decision(True, 0), id="fresh"),
    pytest.param("agent-a", "@agent-b go", 4, 5, Decision(True, 4), id="below-limit"),
    pytest.param(
        "agent-a", "@agent-b go", 5, 5, Decision(False, 5, NOTICE_5, "turn-limit"), id="at-limit-posts-notice"
    ),
    pytest.param("agent-a", "@agent-b go", 7, 5, Decision(False, 7, NOTICE_5, "turn-limit"), id="over-limit"),
    pytest.param(
        "agent-a",
        "@agent-b go",
        3,
        3,
        Decision(False, 3, turn_limit_notice(3), "turn-limit"),
        id="notice-names-the-limit",
    ),
    pytest.param("human", "@agent-b help", 5, 5, Decision(True, 0), id="human-resets-before-deciding"),
    pytest.param("maria", "anyone?", 9, 5, Decision(True, 0), id="registered-human-resets"),
    pytest.param("world", "The gate opens.", 5, 5, Decision(True, 0), id="world-resets"),
    pytest.param(
        "human", "@agent-a only you", 5, 5, Decision(False, 0, reason="not-addressed"), id="human-resets-even-if-not-me"
    ),
    pytest.param(
        "agent-a", "not for you", 5, 5, Decision(False, 5, reason="not-addressed"), id="agent-does-not-reset-no-notice"
    ),
    pytest.param("system", "@agent-b hi", 5, 5, Decision(False, 5, reason="system-sender"), id="system-does-not-reset"),
    pytest.param(
        "agent-a", NOTICE_5, 0, 5, Decision(False, 0, reason="turn-limit-notice"), id="never-answer-others-notice"
    ),
    pytest.param("agent-b", "my own reply", 2, 5, Decision(False, 2, reason="own"), id="own-message"),
]


@pytest.mark.parametrize(("sender", "content", "count", "limit", "expected"), DECISIONS)
def test_decide(sender: str, content: str, count: int, limit: int, expected: Decision) -> None:
    assert decide("agent-b", make_message(sender, content), count, limit) == expected


def test_two_agents_ping_pong_until_the_limit_then_a_human_resets() -> None:
    """Counters as a runner keeps them: +1 per LLM call, reset by human/world messages."""
    counters = {"agent-a": 0, "agent-b": 0}
    last = make_message("human", "@agent-a start a discussion with agent-b", 1)
    transcript: list[str] = []
    speaker = "agent-a"
    for msg_id in range(2, 20):
        d = decide(speaker, last, counters[speaker], 5)
        counters[speaker] = d.turn_count
        if d.notice:
            transcript.append(f"{speaker}: notice")
            last = make_message(speaker, d.notice, msg_id)
            break
        assert d.respond
        counters[speaker] += 1
        other = "agent-b" if speaker == "agent-a" else "agent-a"
        transcript.append(speaker)
        last = make_message(speaker, f"@{other} over to you", msg_id)
        speaker = other
    # agent-a answers the human and 4 more times, agent-b 5 times; agent-a then hits its limit.
    assert transcript == ["agent-a", "agent-b"] * 5 + ["agent-a: notice"]
    assert counters == {"agent-a": 5, "agent-b": 5}
    assert last.content == NOTICE_5
    # Nobody answers the notice; a human message gives the turns back.
    assert not decide("agent-b", last, counters["agent-b"], 5).respond
    assert decide("agent-a", make_message("human", "@agent-a go on"), counters["agent-a"], 5) == Decision(True, 0)
