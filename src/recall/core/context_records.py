"""The request that builds a context (spec §3), the summarizer it may call, and the context it
builds; what a context is made of is in `core/context_parts.py`, `core/context.py` builds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from recall.core.context_parts import ContextBlock, ContextMessage, ContextReport
from recall.core.formats import to_anthropic, to_openai
from recall.core.models import AgentProfile, Message
from recall.core.recalled import RecallRequest
from recall.core.tokens import TokenCounter
from recall.core.window import WindowSettings

SUMMARY_HEADER = "Previous conversation summary:\n"


class Summarizer(Protocol):
    """Turns older history into a short summary (an LLM, once one is configured). '' means no
    summary could be made: the builder then keeps the newest messages that fit."""

    def summarize(self, messages: Sequence[Message]) -> str: ...


class PhaseSpan(Protocol):
    """What the builder tells about one of its phases: counts, never text."""

    def set(self, attributes: Mapping[str, str | bool | int | float | None]) -> None: ...


class _Untraced:
    def set(self, attributes: Mapping[str, str | bool | int | float | None]) -> None:
        pass


_UNTRACED = _Untraced()


def untraced(phase: str) -> AbstractContextManager[PhaseSpan]:
    """A phase nobody traces (the default)."""
    return nullcontext(_UNTRACED)


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
    #: Wraps a phase of the build ("ranking") for whoever traces it: the service passes
    #: OpenTelemetry spans (docs/opentelemetry.md); the pure core keeps no tracer of its own.
    phase: Callable[[str], AbstractContextManager[PhaseSpan]] = untraced


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
        return to_openai(self.messages)

    def anthropic(self) -> dict[str, Any]:
        return to_anthropic(self.messages)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": self.openai(), "report": self.report.to_dict()}
        if self.call_id is not None:
            out["call_id"] = self.call_id
        return out
