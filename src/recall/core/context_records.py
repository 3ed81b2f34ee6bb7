"""What a context is made of (spec §3): its blocks, messages and report, the request that
builds one, and the summarizer it may call. `core/context.py` builds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from recall.core.models import AgentProfile, Message
from recall.core.tokens import TokenCounter

if TYPE_CHECKING:
    from recall.core.recalled import RecallRequest
    from recall.core.window import WindowSettings

SUMMARY_HEADER = "Previous conversation summary:\n"

#: Sections in output order. `summary` holds the compressed part of the history.
SECTIONS = ("system_prompt", "memory", "long_term", "recalled", "observations", "summary", "history", "incoming")


#: Sections filled from context blocks (system messages between the prompt and the history).
#: A caller's block may have a name of its own; it is reported under that name.
BLOCK_SECTIONS = ("memory", "long_term", "recalled", "observations")

#: Sections of messages, not blocks: no block may take these names.
MESSAGE_SECTIONS = ("system_prompt", "summary", "history", "incoming")


class Summarizer(Protocol):
    """Turns older history into a short summary (an LLM, once one is configured). '' means no
    summary could be made: the builder then keeps the newest messages that fit."""

    def summarize(self, messages: Sequence[Message]) -> str: ...


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


@dataclass(frozen=True)
class ContextRequest:
    agent: AgentProfile
    chat_id: str | None
    system_prompt: str
    #: The agent's memory (what was delivered to it plus what it wrote), NEWEST FIRST.
    #: Read lazily: only as much as the history limit needs is consumed.
    memory: Iterable[Message]
    history_limit: int
    max_tokens: int
    counter: TokenCounter
    #: Most new messages shown as incoming; older unanswered ones fall back to history.
    #: Its own limit, not `history_limit`: a depth of 1 must still show all that is new.
    incoming_limit: int = 100
    #: How many messages of the agent's memory are in this chat / in other chats, when the
    #: caller knows; lets the report count what was never read.
    chat_memory_total: int | None = None
    other_chat_total: int = 0
    blocks: Sequence[ContextBlock] = ()
    #: The message the call answers; the incoming part ends with it.
    trigger_id: int | None = None
    summarizer: Summarizer | None = None
    compress_above: int = 20
    compress_keep_recent: int = 5
    #: The recalled past's candidates and settings. With `window` too, the budget is spent by
    #: value: a recent window, then the older history and the recalled past by one ranking;
    #: without (or with a summarizer), the history first and the recalled past in what is left.
    recalled: RecallRequest | None = None
    window: WindowSettings | None = None


@dataclass(frozen=True)
class BuildParams:
    """What a context was built from besides the stored data, for recording the call: the
    world (its key), the trigger, the model, the arguments the caller gave (`explicit`: a
    replay passes them again) and every setting that shaped it, as resolved (`settings`)."""

    world_key: str
    tenant: str
    trigger_id: int | None
    model: str
    explicit: dict[str, Any]
    settings: dict[str, Any]


@dataclass(frozen=True)
class Context:
    messages: tuple[ContextMessage, ...]
    report: ContextReport
    #: How it was built (set by the service's builder; None for a context built by hand).
    params: BuildParams | None = field(default=None, compare=False, repr=False)
    #: The id of the model call it was recorded as (`record=True`), else None.
    call_id: str | None = None

    def openai(self) -> list[dict[str, Any]]:
        from recall.core.formats import to_openai

        return to_openai(self.messages)

    def anthropic(self) -> dict[str, Any]:
        from recall.core.formats import to_anthropic

        return to_anthropic(self.messages)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": self.openai(), "report": self.report.to_dict()}
        if self.call_id is not None:
            out["call_id"] = self.call_id
        return out
