"""Spec §3's budget spent by value (core/window.py, core/recalled.py's pool): a recent window,
then the older history and the recalled past by one ranking; long messages by their relevant
part; the report says why each message is in or out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recall.core.context import build_context
from recall.core.context_records import Context, ContextRequest
from recall.core.models import AgentProfile, ContextFilter, Message
from recall.core.recalled import Passage, RecallCandidate, RecallRequest, RecallSettings
from recall.core.tokens import TokenCounter
from recall.core.window import EXCERPT_MARK, WindowSettings
from tests.core.messages import conversation

COUNTER = TokenCounter("o200k_base")
FILLER = "We went through the deployment checklist line by line and nothing stood out. "
LONG_REPLY = FILLER * 40  # ~600 tokens: a model's reply


def _words(text: str) -> list[str]:
    return [w.strip(".,!?@").lower()[:6] for w in text.split()]


def build(
    memory: Sequence[Message],
    scores: dict[int, float] | None = None,
    *,
    max_tokens: int = 2000,
    terms: Sequence[str] = (),
    window: WindowSettings | None = None,
    agent: str = "agent-b",
    **overrides: Any,
) -> Context:
    """A context of `agent` over `memory` (oldest first, all heard in this chat), the search
    ranking the messages of `scores` (id → score) as recalled candidates."""
    by_id = {m.id: m for m in memory}
    ranked = sorted((scores or {}).items(), key=lambda pair: -pair[1])
    candidates = tuple(
        RecallCandidate(i, by_id[i].sender, by_id[i].chat_id, rank, score) for rank, (i, score) in enumerate(ranked, 1)
    )

    def read(wanted: Sequence[RecallCandidate]) -> dict[int, Passage]:
        return {c.id: Passage(by_id[c.id]) for c in wanted}

    recalled = RecallRequest(
        candidates, RecallSettings(max_tokens=1_000_000, cutoff=0.002), read, frozenset(terms), _words
    )
    fields: dict[str, Any] = {
        "agent": AgentProfile(id=agent, context_filter=ContextFilter.ALL),
        "chat_id": None,
        "system_prompt": "You are B.",
        "memory": list(reversed(memory)),
        "history_limit": 25,
        "max_tokens": max_tokens,
        "counter": COUNTER,
        "recalled": recalled,
        "window": window or WindowSettings(),
    }
    fields.update(overrides)
    return build_context(ContextRequest(**fields))


def items(ctx: Context) -> dict[int, Any]:
    return {int(i.id): i for i in ctx.report.items if i.kind == "message" and i.section != "recalled"}


def test_long_replies_do_not_crowd_out_an_older_short_answer() -> None:
    # An early user line holds the answer; then many long model replies.
    turns: list[tuple[str, str]] = [("maria", "My staging database is called heron-7."), ("agent-b", "Noted.")]
    for n in range(20):
        turns += [("maria", f"Next step {n}?"), ("agent-b", LONG_REPLY)]
    turns.append(("maria", "@agent-b what is my staging database called?"))
    memory = conversation(*turns)
    trigger = memory[-1].id
    ctx = build(memory, {1: 0.9, 5: 0.01}, max_tokens=1200, trigger_id=trigger, terms=["stage", "databa"])
    report = items(ctx)
    # Beyond Memory Depth (25): recalled, with its date and speaker.
    answer = next(i for i in ctx.report.items if i.id == 1 and i.included)
    assert answer.section == "recalled"
    assert "maria: My staging database is called heron-7." in ctx.openai()[1]["content"]
    assert ctx.report.total_tokens <= 1200
    # The newest long reply is in the recent window, cut to its relevant part.
    newest_reply = memory[-2].id
    assert report[newest_reply].reason == "in-recent-window"
    # Older long replies are shown by their part (excerpts), or say why they are out: better-ranked
    # ones took the room.
    replies = [report[m.id] for m in memory[-26:-3] if m.sender == "agent-b"]  # Memory Depth 25
    assert all(i.score["excerpt"] for i in replies if i.included)
    assert {i.reason for i in replies if not i.included} == {"outranked"}


def test_the_recent_window_is_bounded_by_its_share_and_excerpts_the_message_that_does_not_fit() -> None:
    memory = conversation(
        ("maria", "Can you review the rollout?"),
        ("agent-b", LONG_REPLY + "The rollback plan is step nine."),
        ("maria", "@agent-b and the rollback?"),
    )
    ctx = build(memory, {}, trigger_id=3, terms=["rollba"], window=WindowSettings(messages=4, share=0.2))
    report = items(ctx)
    assert report[2].reason == "in-recent-window" and report[2].score == {"excerpt": True}
    assert report[2].tokens <= 0.2 * 2000
    shown = next(m for m in ctx.messages if m.source_id == 2)
    assert shown.content.startswith(EXCERPT_MARK) and "The rollback plan is step nine." in shown.content
    # The window ends with the message it had to cut; the one before competes in the pool.
    assert report[1].included and report[1].reason is None and report[1].score["rank"] == 1


def test_spare_room_shows_the_history_whole_and_in_chat_order() -> None:
    memory = conversation(
        ("maria", "first question"),
        ("agent-b", LONG_REPLY),
        ("maria", "second"),
        ("agent-b", "short answer"),
        ("maria", "third"),
        ("agent-b", "ok"),
        ("maria", "@agent-b anything else?"),
    )
    ctx = build(memory, {}, max_tokens=100_000, trigger_id=7)
    shown = [m.source_id for m in ctx.messages if m.section in ("history", "incoming")]
    assert shown == [1, 2, 3, 4, 5, 6, 7]
    assert all(not (i.score or {}).get("excerpt") for i in items(ctx).values())
    assert next(m for m in ctx.messages if m.source_id == 2).content == LONG_REPLY


def test_a_mention_of_the_agent_stays_while_public_chatter_competes() -> None:
    turns: list[tuple[str, str]] = [("agent-b", "I am here.")]
    turns += [("maria", f"public note {n}: {FILLER * 3}") for n in range(30)]
    turns += [("maria", "@agent-b please check invoice 12"), ("maria", "@agent-b what did I ask you to check?")]
    memory = conversation(*turns)
    trigger = memory[-1].id
    ctx = build(memory, {}, max_tokens=1000, trigger_id=trigger)
    report = items(ctx)
    assert report[trigger - 1].included and report[trigger - 1].section == "incoming"
    left_out = [i for i in report.values() if not i.included]
    assert left_out and {i.reason for i in left_out} <= {"outranked", "over-budget"}
    assert ctx.report.total_tokens <= 1000


def test_recency_is_a_signal_the_search_can_outweigh() -> None:
    turns = [("maria", f"line {n} {FILLER}") for n in range(20)]
    turns.append(("maria", "@agent-b question"))
    memory = conversation(*turns)
    ctx = build(memory, {2: 0.9}, max_tokens=700, trigger_id=21, window=WindowSettings(messages=2, share=0.1))
    report = items(ctx)
    assert report[2].included and report[2].score["relevance"] == 0.9
    ranks = {i: report[i].score["rank"] for i in report if report[i].score and "rank" in report[i].score}
    assert ranks[2] == 1  # the relevant old line first, then the newest by recency
    assert ranks[18] < ranks[10]


def test_a_tool_call_and_its_result_go_in_together_or_not_at_all() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    turns: list[tuple[str, str] | tuple[str, str, dict[str, Any]]] = [
        ("maria", "@agent-b weather?"),
        ("agent-b", "", {"tool_calls": [call]}),
        ("system", '{"temp": 21}', {"tool_result_for": "agent-b", "tool_call_id": "call_1"}),
        ("agent-b", "It is 21 degrees."),
    ]
    turns += [("maria", f"line {n} {FILLER}") for n in range(12)]
    turns.append(("maria", "@agent-b what was the temperature?"))
    memory = conversation(*turns)
    trigger = memory[-1].id
    # The search ranks the tool result high, its call not at all, and the budget holds only the
    # best few: the result alone would be an orphan the model refuses, so it goes too.
    ctx = build(memory, {3: 0.9}, max_tokens=150, trigger_id=trigger, window=WindowSettings(messages=1, share=0.1))
    shown = {m.source_id for m in ctx.messages}
    assert 2 not in shown and 3 not in shown and "tool" not in [m["role"] for m in ctx.openai()]
    left = {int(i.id): i for i in ctx.report.items if i.kind == "message" and i.section == "history"}
    assert left[3].included is False and left[3].reason == "outranked"
    assert any("without their other half" in n for n in ctx.report.notes)
    # With room for both, both go in, the call before its result.
    roomy = build(memory, {3: 0.9}, max_tokens=4000, trigger_id=trigger)
    roles = [m["role"] for m in roomy.openai()]
    assert roles[roles.index("tool") - 1] == "assistant" and roomy.openai()[roles.index("tool") - 1]["tool_calls"]


class _Recording(TokenCounter):
    """A token counter that keeps the length of every text it counts."""

    def __init__(self) -> None:
        super().__init__("o200k_base")
        self.lengths: list[int] = []

    def count(self, text: str) -> int:
        self.lengths.append(len(text))
        return super().count(text)


def test_a_history_message_longer_than_the_budget_holds_is_not_counted_whole() -> None:
    """Bounded work whatever a message's length: a pasted log of 200,000 characters in the history
    of a 2,000-token context is shown by its relevant part, never counted (or cut) whole."""
    log = "The nightly export wrote its rows and closed the file without an error. " * 2_800  # ~200,000 chars
    memory = conversation(
        ("maria", "Here is the export log."),
        ("maria", log + "The parcel table was empty at the end."),
        ("maria", "@agent-b was the parcel table empty?"),
    )
    counter = _Recording()
    ctx = build(memory, max_tokens=2000, terms=["parcel", "table", "empty"], counter=counter)
    shown = "\n".join(str(m["content"]) for m in ctx.openai())
    assert EXCERPT_MARK in shown and "The parcel table was empty at the end." in shown
    assert ctx.report.total_tokens <= 2000
    assert max(counter.lengths) < 20_000
