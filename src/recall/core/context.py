"""Build the message list for one LLM call, and a report of what went in and why (spec §3).

`build_context` is a pure function of its inputs: the same stored data gives the same
output, byte for byte. It reads the agent's memory newest first and stops as soon as it has
enough, so its cost depends on the history limit, not on the size of the store. The blocks
between the prompt and the history, and their order in the report, are `core/context_blocks.py`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from recall.core.context_blocks import fit_blocks, insert_recalled, report_order, section_names
from recall.core.context_parts import ContextMessage, ContextReport, ReportItem
from recall.core.context_records import SUMMARY_HEADER, Context, ContextRequest
from recall.core.escaping import escape
from recall.core.excerpts import CHARS_PER_TOKEN_BOUND, Analysis
from recall.core.models import Message
from recall.core.recalled import pack_recalled
from recall.core.routing import TOOL_CALL_ID, context_verdict, is_own, is_own_tool_result
from recall.core.tokens import REPLY_PRIMING
from recall.core.window import Cutter, history_candidates, recent_window
from recall.errors import BudgetExceededError, InvalidInputError


@dataclass
class Scan:
    """The outcome of reading the memory: incoming, history, and the report items so far."""

    incoming: list[Message] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)
    items: list[ReportItem] = field(default_factory=list)
    read_in_chat: int = 0
    found_trigger: bool = True
    #: More was new than `incoming_limit` allows; the older new messages went to history.
    incoming_capped: bool = False


#: Reasons the scan leaves a message of the recent conversation out that the recalled past keeps.
_HIDDEN = ("not-addressed", "for-another-agent", "system-sender", "turn-limit-notice", "after-trigger", "compressed")


def _excluded(message: Message, reason: str) -> ReportItem:
    return ReportItem("message", message.id, False, reason=reason, sender=message.sender, chat_id=message.chat_id)


def scan_memory(req: ContextRequest) -> Scan:
    """Split the memory into incoming (new since the agent last spoke) and history.

    Newest first: messages after the trigger are skipped; until the agent's own last
    message, the messages it would respond to are incoming; from there on they are history.
    Incoming holds at most `incoming_limit` messages (older new ones fall to history),
    history at most `history_limit`.
    """
    scan = Scan(found_trigger=req.trigger_id is None)
    seen_own = False
    for message in req.memory:
        if message.chat_id != req.chat_id:
            scan.items.append(_excluded(message, "other-chat"))
            continue
        scan.read_in_chat += 1
        if not scan.found_trigger:
            if message.id != req.trigger_id:
                scan.items.append(_excluded(message, "after-trigger"))
                continue
            scan.found_trigger = True
        own = is_own(req.agent.id, message)
        seen_own = seen_own or own
        verdict = context_verdict(req.agent, message)
        if not verdict.addressed:
            scan.items.append(_excluded(message, verdict.reason or "not-addressed"))
            continue
        if not seen_own:
            if len(scan.incoming) < req.incoming_limit:
                scan.incoming.append(message)
                continue
            scan.incoming_capped = True
        if len(scan.history) < req.history_limit:
            scan.history.append(message)
        else:
            scan.items.append(_excluded(message, "over-depth"))
            break
    scan.incoming.reverse()
    scan.history.reverse()
    return scan


def _role(agent_id: str, message: Message) -> tuple[str, str | None, dict[str, Any]]:
    """Role, name and extra OpenAI fields for a history or incoming message."""
    if is_own(agent_id, message):
        calls = message.metadata.get("tool_calls")
        return "assistant", None, ({"tool_calls": calls} if calls else {})
    if is_own_tool_result(agent_id, message):  # the `tool` role answers this agent's own call only
        return "tool", None, {"tool_call_id": message.metadata[TOOL_CALL_ID]}
    return "user", message.sender, {}


def _to_context_message(req: ContextRequest, message: Message, section: str, exact: bool = False) -> ContextMessage:
    """The message with its tokens: a lower bound above the budget for one longer than the whole
    budget holds (a token is assumed fewer characters, as excerpts assume), never shown whole
    and so never counted whole (100,000 characters: ~3 ms); `exact` (the trigger's) always."""
    role, name, extra = _role(req.agent.id, message)
    if not exact and len(message.content) > CHARS_PER_TOKEN_BOUND * req.max_tokens:
        tokens = len(message.content) // CHARS_PER_TOKEN_BOUND
    else:
        tokens = req.counter.message(role, message.content, name, extra)
    return ContextMessage(role, message.content, section, tokens, name, message.id, extra)


def _system(req: ContextRequest, content: str, section: str) -> ContextMessage:
    return ContextMessage("system", content, section, req.counter.message("system", content))


def _fit_history(
    req: ContextRequest,
    history: list[ContextMessage],
    room: int,
    originals: dict[int, Message],
    what: str = "history messages",
) -> tuple[list[ContextMessage], list[ReportItem], list[str]]:
    """Fit the history into `room` tokens: all of it, else compressed, else its newest part.
    `what` names the messages in the report's notes."""
    if sum(m.tokens for m in history) <= room:
        return history, [], []
    notes: list[str] = []
    if req.summarizer is not None and len(history) > req.compress_above:
        keep = history[-req.compress_keep_recent :] if req.compress_keep_recent else []
        older = history[: len(history) - len(keep)]
        text = req.summarizer.summarize([originals[m.source_id] for m in older if m.source_id is not None]).strip()
        # A summary is made from stored text (a model may repeat it word for word): escaped.
        summary = _system(req, SUMMARY_HEADER + escape(text), "summary")
        if not text:
            notes.append("no summary could be made; kept the newest messages that fit instead")
        elif summary.tokens + sum(m.tokens for m in keep) <= room:
            dropped = [_excluded(originals[m.source_id], "compressed") for m in older if m.source_id is not None]
            return [summary, *keep], dropped, [f"{len(older)} older {what} compressed into one summary"]
        else:
            notes.append("the summary did not fit the budget; kept the newest messages that fit instead")
    kept: list[ContextMessage] = []
    used = 0
    for message in reversed(history):
        if used + message.tokens > room:
            break
        kept.append(message)
        used += message.tokens
    kept.reverse()
    cut = history[: len(history) - len(kept)]
    dropped = [_excluded(originals[m.source_id], "over-budget") for m in cut if m.source_id is not None]
    notes.append(f"{len(cut)} older {what} did not fit the budget")
    return kept, dropped, notes


def build_context(req: ContextRequest, scan: Scan | None = None) -> Context:
    """Assemble system prompt, context blocks, history and incoming within the budget, then
    the recalled past in what is left. `scan` is `scan_memory(req)` when the caller already
    made it (to search for what the incoming messages need)."""
    if req.history_limit < 0:
        raise InvalidInputError("history_limit", f"must be 0 or more, got {req.history_limit}")
    if req.incoming_limit < 1:
        raise InvalidInputError("incoming_limit", f"must be 1 or more, got {req.incoming_limit}")
    if req.max_tokens <= 0:
        raise InvalidInputError("max_tokens", f"must be a positive number of tokens, got {req.max_tokens}")

    names = section_names(req.blocks)
    scan = scan if scan is not None else scan_memory(req)
    if not scan.found_trigger:
        raise InvalidInputError(
            "message_id", f"message {req.trigger_id} is not in agent {req.agent.id!r}'s memory of this chat"
        )
    originals = {m.id: m for m in (*scan.history, *scan.incoming)}

    system = [_system(req, req.system_prompt, "system_prompt")] if req.system_prompt else []
    last = len(scan.incoming) - 1
    incoming_all = [_to_context_message(req, m, "incoming", exact=n == last) for n, m in enumerate(scan.incoming)]
    history_all = [_to_context_message(req, m, "history") for m in scan.history]
    # Only the system prompt and the triggering message (the newest incoming) are never cut.
    trigger = incoming_all[-1:]
    fixed = REPLY_PRIMING + sum(m.tokens for m in (*system, *trigger))
    if fixed > req.max_tokens:
        raise BudgetExceededError(fixed, req.max_tokens, "the system prompt and the triggering incoming message")

    earlier_incoming = incoming_all[:-1]
    notes: list[str] = []
    reported: set[int] = set()
    spent = None
    if req.recalled is not None and req.window is not None and req.summarizer is None:
        spent = _spend_by_value(req, scan, fixed, earlier_incoming, history_all, originals)
    if spent is not None:
        blocks, items, body, notes, reported = spent
        body = [*body, *trigger]
        dropped: list[ReportItem] = []
    elif fixed + sum(m.tokens for m in earlier_incoming) <= req.max_tokens:
        # Everything new fits: it all stays incoming; blocks, then the history, take the rest.
        blocks, items, used = fit_blocks(req, fixed + sum(m.tokens for m in earlier_incoming))
        history, dropped, notes = _fit_history(req, history_all, req.max_tokens - used, originals)
        body = [*history, *incoming_all]
    else:
        # More is new than the budget holds (an agent back from downtime): the older new
        # messages are treated as history, so they are compressed or the newest that fit are
        # kept (those stay incoming); blocks get what is left.
        earlier = [*history_all, *earlier_incoming]
        fitted, dropped, notes = _fit_history(req, earlier, req.max_tokens - fixed, originals, "messages")
        blocks, items, _ = fit_blocks(req, fixed + sum(m.tokens for m in fitted))
        body = [*fitted, *trigger]
        shown = sum(1 for m in fitted if m.section == "incoming")
        notes.append(
            f"{len(earlier_incoming) - shown} older new messages did not fit the budget as incoming "
            "and were treated as history"
        )
    if req.recalled is not None and spent is None:
        room = req.max_tokens - REPLY_PRIMING - sum(m.tokens for m in (*system, *blocks, *body))
        visible = {m.source_id for m in body if m.source_id is not None} | {m.id for m in scan.incoming}
        # What the filter left out of the recent conversation stays out (its reason carries over).
        # A compressed message is in the summary: it is not repeated either.
        hidden = _hidden([*scan.items, *dropped])
        recalled = pack_recalled(
            req.recalled, room, visible, req.counter, req.chat_id, hidden, req.trigger_id, analysis=Analysis()
        )
        insert_recalled(blocks, recalled.message)
        items.extend(recalled.items)
        notes.extend(recalled.notes)
    messages = (*system, *blocks, *body)

    kept_ids = {m.source_id for m in messages if m.source_id is not None}
    for m in (*history_all, *incoming_all):
        if m.source_id in kept_ids and m.source_id not in reported:
            source = originals[m.source_id]
            items.append(
                ReportItem("message", source.id, True, m.section, None, m.tokens, source.sender, source.chat_id)
            )
    items.extend(dropped)
    items.extend(scan.items)
    items.sort(key=lambda item: report_order(item, names))

    unlisted: dict[str, int] = {}
    if req.chat_memory_total is not None and req.chat_memory_total > scan.read_in_chat:
        unlisted["over-depth"] = req.chat_memory_total - scan.read_in_chat
    if req.other_chat_total:
        unlisted["other-chat"] = req.other_chat_total

    sections = {name: 0 for name in names}
    for m in messages:
        sections[m.section] += m.tokens
    incoming_count = sum(1 for m in messages if m.section == "incoming")
    if scan.incoming_capped:
        notes.append(f"more than {req.incoming_limit} new messages: the older new ones are shown as history")
    if not incoming_count:
        notes.append("nothing new: no message the agent would respond to since its last reply")
    report = ContextReport(
        agent_id=req.agent.id,
        chat_id=req.chat_id,
        encoding=req.counter.name,
        budget=req.max_tokens,
        total_tokens=REPLY_PRIMING + sum(m.tokens for m in messages),
        sections=sections,
        history_limit=req.history_limit,
        context_filter=req.agent.context_filter.value,
        incoming_count=incoming_count,
        items=tuple(items),
        unlisted=unlisted,
        notes=tuple(notes),
    )
    return Context(messages, report)


def _hidden(items: Sequence[ReportItem]) -> dict[int, str]:
    """What the filter left out of the recent conversation stays out of the recalled past too,
    its reason carried over. A compressed message is in the summary: it is not repeated either."""
    return {int(i.id): str(i.reason) for i in items if isinstance(i.id, int) and i.reason in _HIDDEN}


def _addresses(agent_id: str, message: Message) -> bool:
    """Whether a message mentions the agent: an unanswered mention stays visible (spec §3)."""
    return agent_id.lower() in (m.lower() for m in message.mentions)


def _spend_by_value(
    req: ContextRequest,
    scan: Scan,
    fixed: int,
    earlier_incoming: list[ContextMessage],
    history_all: list[ContextMessage],
    originals: dict[int, Message],
) -> tuple[list[ContextMessage], list[ReportItem], list[ContextMessage], list[str], set[int]] | None:
    """The budget spent by value (spec §3): the new messages that mention the agent, a recent
    window, the blocks, then older history and the recalled past by one ranking. Returns the
    blocks, the report items so far, the body without the trigger, notes and the ids already
    reported; None when the mentions alone do not fit (the caller treats the older new
    messages as history)."""
    assert req.recalled is not None and req.window is not None
    mentions = [
        m for m in earlier_incoming if m.source_id is not None and _addresses(req.agent.id, originals[m.source_id])
    ]
    taken = fixed + sum(m.tokens for m in mentions)
    if taken > req.max_tokens:
        return None
    conversation = sorted(
        (m for m in (*history_all, *earlier_incoming) if m not in mentions), key=lambda m: m.source_id or 0
    )
    parts = {c.id: c.part for c in req.recalled.candidates if c.part}
    # One bound on what the context's excerpts analyse, history and recalled past together.
    analysis = Analysis()
    cutter = Cutter(req.counter, req.recalled.terms, req.recalled.words, originals, parts, analysis)
    room = min(int(req.window.share * req.max_tokens), req.max_tokens - taken)
    with req.phase("ranking") as span:
        window, older = recent_window(conversation, req.window, room, cutter)
        taken += sum(m.tokens for m in window)
        blocks, items, used = fit_blocks(req, taken)
        pool = history_candidates(
            conversation[:older],
            req.recalled.candidates,
            originals,
            req.window,
            cutter,
            req.recalled.settings.excerpt_tokens,
        )
        span.set(
            {
                "recall.ranking.window": len(window),
                "recall.ranking.history_candidates": len(pool),
                "recall.ranking.recalled_candidates": len(req.recalled.candidates),
            }
        )
    shown = {m.source_id for m in (*mentions, *window)} | {m.id for m in scan.incoming[-1:]}
    recalled = pack_recalled(
        req.recalled,
        req.max_tokens - used,
        {i for i in shown if i is not None},
        req.counter,
        req.chat_id,
        _hidden(scan.items),
        req.trigger_id,
        pool,
        analysis,
    )
    insert_recalled(blocks, recalled.message)
    for m in window:
        source = originals[m.source_id] if m.source_id is not None else None
        if source is not None:
            score = {"excerpt": True} if m.content != source.content else None
            items.append(
                ReportItem(
                    "message",
                    source.id,
                    True,
                    m.section,
                    "in-recent-window",
                    m.tokens,
                    source.sender,
                    source.chat_id,
                    score,
                )
            )
    items.extend(recalled.items)
    body = sorted([*mentions, *window, *recalled.history], key=lambda m: m.source_id or 0)
    body, unpaired = _paired(body)
    notes = list(recalled.notes)
    if unpaired:
        # A model refuses a tool result without its call, and a call without its results.
        items = [_unpaired(i) if i.id in unpaired and i.included else i for i in items]
        notes.append(f"{len(unpaired)} tool calls or results left out without their other half")
    reported = {m.source_id for m in (*window, *recalled.history) if m.source_id is not None}
    return blocks, items, body, notes, reported


def _paired(body: list[ContextMessage]) -> tuple[list[ContextMessage], set[int]]:
    """The body without a tool result whose call is not in it, nor a call whose results are
    not all in it; and the ids left out so."""
    called = {
        str(call.get("id"))
        for m in body
        for call in (m.extra.get("tool_calls") or [])
        if isinstance(call, dict) and m.role == "assistant"
    }
    answered = {str(m.extra.get("tool_call_id")) for m in body if m.role == "tool"}
    out: set[int] = set()
    for m in body:
        if m.role == "tool" and str(m.extra.get("tool_call_id")) not in called:
            out.add(m.source_id or 0)
        calls = [c for c in (m.extra.get("tool_calls") or []) if isinstance(c, dict)]
        if m.role == "assistant" and any(str(c.get("id")) not in answered for c in calls):
            out.add(m.source_id or 0)
    return [m for m in body if m.source_id not in out], out


def _unpaired(item: ReportItem) -> ReportItem:
    return ReportItem(item.kind, item.id, False, item.section, "outranked", 0, item.sender, item.chat_id, item.score)
