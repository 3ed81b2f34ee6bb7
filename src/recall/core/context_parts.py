"""The parts a context is made of (spec §3): its sections, blocks and messages, and the report
of what is in and what was left out. `core/context_records.py` holds the request that builds a
context and the context itself, `core/context.py` builds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Sections in output order. `summary` holds the compressed part of the history.
SECTIONS = ("system_prompt", "memory", "long_term", "recalled", "observations", "summary", "history", "incoming")


#: Sections filled from context blocks (system messages between the prompt and the history).
#: A caller's block may have a name of its own; it is reported under that name.
BLOCK_SECTIONS = ("memory", "long_term", "recalled", "observations")

#: Sections of messages, not blocks: no block may take these names.
MESSAGE_SECTIONS = ("system_prompt", "summary", "history", "incoming")


@dataclass(frozen=True)
class ContextBlock:
    """A system-role context message placed between the system prompt and the history.

    `section` names it in the report: one of `BLOCK_SECTIONS` or a name of the caller's own
    (`rules`), never one of `MESSAGE_SECTIONS`. `content` is placed as given: recall escapes
    the stored text in the blocks it builds (spec §4); a caller's own block is the caller's text,
    so stored text put into one should go through `recall.core.escaping.escape`."""

    section: str
    content: str
    items: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ContextMessage:
    """One message of a built context, independent of the provider format."""

    role: str
    content: str
    section: str
    tokens: int
    name: str | None = None
    source_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportItem:
    """One candidate message or block: where it went, or why it was left out. An included item's
    `reason` says why it is in when not by its rank (`in-recent-window`)."""

    kind: str
    id: int | str | None
    included: bool
    section: str | None = None
    reason: str | None = None
    tokens: int = 0
    sender: str | None = None
    chat_id: str | None = None
    #: Facts, memories and similar messages of a context block: why they ranked where they did.
    score: dict[str, Any] | None = None

    def __init__(
        self,
        kind: str,
        id: int | str | None,
        included: bool,
        section: str | None = None,
        reason: str | None = None,
        tokens: int = 0,
        sender: str | None = None,
        chat_id: str | None = None,
        score: dict[str, Any] | None = None,
    ) -> None:
        # The frozen dataclass's own __init__ sets each field through object.__setattr__; a
        # build reports hundreds of items (each scanned and recalled message), so they go in
        # at once: the same fields, still frozen afterwards.
        self.__dict__.update(
            kind=kind,
            id=id,
            included=included,
            section=section,
            reason=reason,
            tokens=tokens,
            sender=sender,
            chat_id=chat_id,
            score=score,
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "id": self.id, "included": self.included}
        if self.sender is not None:
            d["sender"] = self.sender
        if self.kind == "message" and (self.section is None or self.section in (*MESSAGE_SECTIONS, "recalled")):
            d["chat_id"] = self.chat_id
        if self.score is not None:
            d.update(self.score)
        if self.included:
            d["section"] = self.section
            d["tokens"] = self.tokens
            if self.reason is not None:  # why it is in, when not by its rank (`in-recent-window`)
                d["reason"] = self.reason
        else:
            if self.section is not None:  # a candidate of a block or of the recalled past
                d["section"] = self.section
            d["reason"] = self.reason
        return d


@dataclass(frozen=True)
class ContextReport:
    agent_id: str
    chat_id: str | None
    encoding: str
    budget: int
    total_tokens: int
    sections: dict[str, int]
    history_limit: int
    context_filter: str
    incoming_count: int
    items: tuple[ReportItem, ...]
    #: Exclusions counted without listing each message (older than the depth, other chats).
    unlisted: dict[str, int]
    notes: tuple[str, ...] = ()

    @property
    def excluded(self) -> dict[str, int]:
        """Excluded candidates by reason, listed and unlisted together. A recalled candidate
        the history already shows (`in-history`) is listed but not counted: it is in the context."""
        counts: dict[str, int] = {}
        # A message the recent conversation and the recalled past both left out, for the same
        # reason, counts once.
        for _, _, reason in {
            (i.kind, i.id, i.reason) for i in self.items if not i.included and i.reason and i.reason != "in-history"
        }:
            assert reason is not None
            counts[reason] = counts.get(reason, 0) + 1
        for reason, n in self.unlisted.items():
            counts[reason] = counts.get(reason, 0) + n
        return dict(sorted(counts.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "chat_id": self.chat_id,
            "encoding": self.encoding,
            "budget": self.budget,
            "total_tokens": self.total_tokens,
            "sections": dict(self.sections),
            "history_limit": self.history_limit,
            "context_filter": self.context_filter,
            "incoming_count": self.incoming_count,
            "excluded": self.excluded,
            "items": [item.to_dict() for item in self.items],
            "notes": list(self.notes),
        }
