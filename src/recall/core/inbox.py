"""What an inbox check returns (spec §6): the new messages to answer, and context sent once.

Pure functions over messages the store has read. The server adds the waiting (long-poll);
the service adds the reads and writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from recall.core.context_parts import ReportItem
from recall.core.models import AgentProfile, Message
from recall.core.routing import context_verdict, would_respond


@dataclass(frozen=True)
class RecalledPast:
    """The recalled past of a context sent with a check: the block the context builder made
    (None when nothing was recalled, or when this session was sent the same block already)."""

    content: str | None
    tokens: int
    #: The passages in the block, as the context's report lists them (rank, scores, excerpt).
    passages: tuple[ReportItem, ...] = ()
    #: The same block was sent earlier in this session (context once): `content` is left out.
    unchanged: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "tokens": self.tokens,
            "unchanged": self.unchanged,
            "passages": [p.to_dict() for p in self.passages],
        }


@dataclass(frozen=True)
class CheckResult:
    new_mentions: tuple[Message, ...] = ()
    context: tuple[Message, ...] = ()
    #: More context was available than `context_limit` allowed.
    truncated: bool = False
    #: Only context not sent before in this session (context once).
    delta: bool = False
    chat_id: str | None = None
    #: Messages the agent was not addressed in that this check passed (and marked read).
    passed: int = field(default=0, compare=False)
    #: With context: the recalled past the context builder picks for the newest mention.
    recalled: RecalledPast | None = None
    #: With context: the model call its context was recorded as (`check(record=True)`).
    call_id: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "new_mentions": [m.to_dict() for m in self.new_mentions],
            "context": [m.to_dict() for m in self.context],
            "context_metadata": {
                "chat_id": self.chat_id,
                "total_messages": len(self.context),
                "oldest_id": self.context[0].id if self.context else None,
                "newest_id": self.context[-1].id if self.context else None,
                "truncated": self.truncated,
                "delta": self.delta,
            },
        }
        if self.recalled is not None:
            out["recalled"] = self.recalled.to_dict()
        if self.call_id is not None:
            out["call_id"] = self.call_id
        return out


def split_unread(agent_id: str, unread: Sequence[Message], limit: int) -> tuple[list[Message], list[Message]]:
    """Oldest first: up to `limit` messages the agent would respond to, and the others passed
    on the way (heard, nothing to answer)."""
    mentions: list[Message] = []
    passed: list[Message] = []
    for message in unread:
        if len(mentions) >= limit:
            break
        (mentions if would_respond(agent_id, message) else passed).append(message)
    return mentions, passed


def context_slice(
    agent: AgentProfile,
    memory: Iterable[Message],
    *,
    floor: int,
    below: int | None,
    exclude: set[int],
    limit: int,
) -> tuple[list[Message], bool]:
    """From the agent's memory of one chat, NEWEST FIRST: the newest `limit` messages in its
    context with `floor < id < below`, not in `exclude`, oldest first; and whether more were left."""
    picked: list[Message] = []
    for message in memory:
        if message.id <= floor:
            break
        if (
            (below is not None and message.id >= below)
            or message.id in exclude
            or not context_verdict(agent, message).addressed
        ):
            continue
        if len(picked) == limit:
            return list(reversed(picked)), True
        picked.append(message)
    return list(reversed(picked)), False
