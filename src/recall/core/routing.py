"""Who a message is for: mention parsing, sender types, the would-respond rule, turn limits.

One rule decides both whether an agent answers a message live and whether that message
belongs in the agent's history later, so the two can never disagree (seed 000, option 1).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from recall.core.models import AgentProfile, ContextFilter, Message, SenderType

#: `@` then an ASCII word, optionally joined by `-` or `_` (an e-mail address matches too).
MENTION = re.compile(r"@(\w+(?:[-_]\w+)*)", re.ASCII)

TURN_LIMIT_MARKER = "Turn limit reached"

#: Sender names anyone may post as without registering, with the type each stands for.
RESERVED_SENDERS: dict[str, SenderType] = {
    "human": SenderType.HUMAN,
    "user": SenderType.HUMAN,
    "you": SenderType.HUMAN,
    "system": SenderType.SYSTEM,
    "world": SenderType.WORLD,
}


def mentions(content: str) -> list[str]:
    """Every mention anywhere in the content, lowercased, in order."""
    return [m.lower() for m in MENTION.findall(content)]


def paragraph_mentions(content: str) -> list[str]:
    """The mention each line starts with (after leading whitespace), lowercased, in order.

    Only the first token of a line counts: `@a @b hi` addresses `a`.
    """
    found: list[str] = []
    for line in content.split("\n"):
        match = MENTION.match(line.lstrip())
        if match:
            found.append(match.group(1).lower())
    return found


def sender_type(sender: str | None, humans: AbstractSet[str], agents: AbstractSet[str]) -> SenderType | None:
    """The type a sender name stands for, or None when it is neither reserved nor registered.

    `humans` and `agents` hold the world's registered ids, lowercased.
    """
    name = (sender or "").strip().lower()
    if not name:
        return SenderType.SYSTEM
    if name in RESERVED_SENDERS:
        return RESERVED_SENDERS[name]
    if name in humans:
        return SenderType.HUMAN
    if name in agents:
        return SenderType.AGENT
    return None


@dataclass(frozen=True)
class Verdict:
    """Whether an agent is addressed by a message, and if not, why not (a report reason)."""

    addressed: bool
    reason: str | None = None


def is_own(agent_id: str, message: Message) -> bool:
    return message.sender.lower() == agent_id.lower()


#: The metadata key naming the one agent a message is for (a tool result, an adapter's system
#: item): recall alone writes it (`app/posting.py` refuses it from callers), delivers the message
#: to that agent alone, and no other agent's context, search or inbox ever shows it.
PRIVATE_FOR = "private_for"
#: The metadata keys of a tool result: the agent whose call it answers, and the call.
TOOL_RESULT_FOR = "tool_result_for"
TOOL_CALL_ID = "tool_call_id"
#: The agent a LangChain history's `SystemMessage` is for (integrations/langchain.py).
LANGCHAIN_SYSTEM_FOR = "langchain_system_for"


def private_owner(metadata: Mapping[str, Any]) -> str | None:
    """The agent (lowercased) a message with this metadata is for alone, or None for a message
    of the chat. A tool result or a LangChain system message stored before `PRIVATE_FOR`
    existed is its agent's alone too."""
    for key in (PRIVATE_FOR, TOOL_RESULT_FOR, LANGCHAIN_SYSTEM_FOR):
        owner = metadata.get(key)
        if isinstance(owner, str) and owner:
            return owner.lower()
    return None


def is_own_tool_result(agent_id: str, message: Message) -> bool:
    owner = message.metadata.get(TOOL_RESULT_FOR)
    return isinstance(owner, str) and owner.lower() == agent_id.lower() and bool(message.metadata.get(TOOL_CALL_ID))


@dataclass(frozen=True)
class Audience:
    """Whom a message addresses (spec §2 rules 2–6), apart from its own sender: everyone, or
    exactly `agents` (lowercased; none at all with a `reason`)."""

    everyone: bool
    agents: frozenset[str] = frozenset()
    #: Why an agent outside `agents` is not addressed (a report reason).
    reason: str = "not-addressed"

    def includes(self, agent_id: str) -> bool:
        return self.everyone or agent_id.lower() in self.agents


def audience(message: Message) -> Audience:
    """Whom the message addresses: one answer for every agent, so a post to one of a thousand
    agents is routed by looking at the one (the server's wake-ups)."""
    if TURN_LIMIT_MARKER in message.content:
        return Audience(False, reason="turn-limit-notice")
    if message.sender_type is SenderType.SYSTEM:
        return Audience(False, reason="system-sender")
    if message.sender_type is SenderType.WORLD:
        return Audience(True)
    if message.sender_type is SenderType.HUMAN and not message.addressed:
        # No line starts with a mention: public unless someone is mentioned mid-text.
        return Audience(not message.mentions)
    return Audience(False, frozenset(message.addressed))


def addressing(agent_id: str, message: Message) -> Verdict:
    """Spec §2 rules 2–6 for a message the agent did not write."""
    heard_by = audience(message)
    return Verdict(True) if heard_by.includes(agent_id) else Verdict(False, heard_by.reason)


def would_respond(agent_id: str, message: Message) -> bool:
    """Live form: would this agent answer this message? Never its own."""
    if is_own(agent_id, message):
        return False
    return addressing(agent_id, message).addressed


def responders(agent_ids: Iterable[str], message: Message) -> list[str]:
    """Those of `agent_ids` (lowercased ids) that would respond to the message: when it
    addresses a few agents, found by looking up those few, whatever the number of ids."""
    heard_by = audience(message)
    sender = message.sender.lower()
    if heard_by.everyone:
        return [a for a in agent_ids if a != sender]
    present = agent_ids if isinstance(agent_ids, AbstractSet) else set(agent_ids)
    return [a for a in heard_by.agents if a in present and a != sender]


def history_verdict(agent_id: str, message: Message) -> Verdict:
    """History form: own messages and results of its own tool calls are always kept."""
    if is_own(agent_id, message) or is_own_tool_result(agent_id, message):
        return Verdict(True)
    return addressing(agent_id, message)


def context_verdict(agent: AgentProfile, message: Message) -> Verdict:
    """Whether a message of the agent's memory belongs in its context, by its context filter.
    A message for another agent alone never does (it is not delivered to this one; one stored
    before recall delivered such messages to their agent alone may still be)."""
    owner = private_owner(message.metadata)
    if owner is not None and owner != agent.id.lower():
        return Verdict(False, "for-another-agent")
    if agent.context_filter is ContextFilter.ALL:
        return Verdict(True)
    return history_verdict(agent.id, message)


def turn_limit_notice(limit: int) -> str:
    return f"@human {TURN_LIMIT_MARKER} ({limit} LLM calls). Please take control of the conversation."


def resets_turns(kind: SenderType) -> bool:
    """A human or world message gives every agent its turns back."""
    return kind in (SenderType.HUMAN, SenderType.WORLD)


@dataclass(frozen=True)
class Decision:
    """What an agent does with one incoming message, given its turn counter."""

    respond: bool
    #: The agent's turn counter to use from now on (0 after a human or world message).
    turn_count: int
    #: Text the agent posts as itself instead of answering, when the limit stops it.
    notice: str | None = None
    reason: str | None = None


def decide(agent_id: str, message: Message, turn_count: int, turn_limit: int) -> Decision:
    """The live decision, turn limit included (spec §2)."""
    count = 0 if resets_turns(message.sender_type) else turn_count
    if is_own(agent_id, message):
        return Decision(False, count, reason="own")
    verdict = addressing(agent_id, message)
    if not verdict.addressed:
        return Decision(False, count, reason=verdict.reason)
    if count >= turn_limit:
        return Decision(False, count, notice=turn_limit_notice(turn_limit), reason="turn-limit")
    return Decision(True, count)
