"""Reply post-processing (spec §7): own mentions, the auto-mention of an agent sender, world tags."""

from __future__ import annotations

import pytest

from recall.core.routing import paragraph_mentions
from recall.runner.replies import process_reply
from tests.core.messages import make_message

FROM_AGENT = make_message("agent-b", "@agent-a what is the weather?")
FROM_HUMAN = make_message("maria", "@agent-a what is the weather?")


@pytest.mark.parametrize(
    ("reply", "answering", "text"),
    [
        # A reply to an agent that addresses nobody gets that agent's mention.
        ("Sunny, 21 degrees.", FROM_AGENT, "@agent-b Sunny, 21 degrees."),
        # A reply to a human stays public.
        ("Sunny, 21 degrees.", FROM_HUMAN, "Sunny, 21 degrees."),
        # The agent's own mention at a line start goes, on every line; mid-text it stays.
        ("@agent-a: Sunny.\n@Agent-A ask @agent-a again", FROM_HUMAN, "Sunny.\nask @agent-a again"),
        # Own mention removed, then nobody is addressed: the agent sender is mentioned.
        ("@agent-a Sunny.", FROM_AGENT, "@agent-b Sunny."),
        # A reply that already addresses someone is left to them.
        ("@agent-c can you check?", FROM_AGENT, "@agent-c can you check?"),
        ("@agent-a @agent-c can you check?", FROM_AGENT, "@agent-c can you check?"),
        # Quiet tags: the reply addresses nobody, no auto-mention, the tag is gone.
        ("Thanks, all done. <world>DONE</world>", FROM_AGENT, "Thanks, all done."),
        ("@agent-b bye <world>stop</world>", FROM_AGENT, "bye"),
        ("<world>PASS</world>", FROM_AGENT, ""),
        # TO: one line per recipient, so each is a paragraph-beginning mention.
        (
            "<world>TO: agent-c, @agent-b</world>Please both confirm.",
            FROM_HUMAN,
            "@agent-c\n@agent-b Please both confirm.",
        ),
        ("@agent-c hi <world>TO: agent-b, agent-a</world>", FROM_HUMAN, "@agent-b hi"),
        ("   ", FROM_AGENT, ""),
    ],
)
def test_process_reply(reply: str, answering: object, text: str) -> None:
    assert process_reply("agent-a", reply, answering).text == text  # type: ignore[arg-type]


def test_tags_are_reported_and_to_addresses_each_recipient() -> None:
    done = process_reply("agent-a", "ok <world>DONE</world>", FROM_AGENT)
    assert done.quiet == "DONE" and done.post and paragraph_mentions(done.text) == []
    passed = process_reply("agent-a", "<world>PASS</world>", FROM_AGENT)
    assert passed.quiet == "PASS" and not passed.post
    to = process_reply("agent-a", "<world>TO: agent-b, agent-c</world> confirm?", FROM_HUMAN)
    assert to.to == ("agent-b", "agent-c")
    assert paragraph_mentions(to.text) == ["agent-b", "agent-c"]


def test_without_the_message_answered_nothing_is_prefixed() -> None:
    assert process_reply("agent-a", "Hello", None).text == "Hello"
