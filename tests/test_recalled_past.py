"""The recalled past through the Python API on both stores: it brings back what the agent heard
weeks ago in any chat, and never a message it did not hear nor another tenant's."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from recall import Context, Recall, Settings, World

LONG_AGO = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
LATER = datetime(2025, 4, 2, 10, 0, tzinfo=UTC)


@pytest.fixture
def mem(open_on_store: Callable[[Settings], Recall]) -> Recall:
    # No background indexer: each test brings the index up to date where it says so.
    return open_on_store(Settings(index_interval=0))


@pytest.fixture
def world(mem: Recall) -> World:
    w = mem.world("shop", create=True)
    w.add_human("maria")
    w.add_agent("desk")
    return w


def recalled(ctx: Context) -> str:
    return "\n".join(m.content for m in ctx.messages if m.section == "recalled")


def recalled_ids(ctx: Context) -> set[int]:
    return {int(i.id) for i in ctx.report.items if i.section == "recalled" and i.included}  # type: ignore[arg-type]


def test_a_passage_from_another_chat_long_ago_reaches_the_context(mem: Recall, world: World) -> None:
    old = world.post("maria", "My parcel number is 4711 and it never arrived.", chat="ticket-7", at=LONG_AGO)
    for i in range(30):
        world.post("maria", f"Unrelated chatter number {i} about the weather.", chat="ticket-9", at=LATER)
    ask = world.post("maria", "@desk what was my parcel number again?", chat="ticket-9", at=LATER)
    mem.refresh_index()
    ctx = world.agent("desk").context(chat="ticket-9", max_tokens=4000, message=ask.id)
    assert old.id in recalled_ids(ctx)
    assert "[2025-03-01, Saturday, chat ticket-7]\nmaria: My parcel number is 4711 and it never arrived." in recalled(
        ctx
    )
    item = next(i for i in ctx.report.items if i.id == old.id and i.section == "recalled")
    assert item.score is not None and item.score["rank"] >= 1 and 0 < item.score["score"] <= 1
    assert ctx.report.sections["recalled"] > 0 and ctx.report.total_tokens <= 4000
    # The history (the newest 25 of ticket-9) does not hold it; the budget and the cap bound it.
    assert (
        world.agent("desk").context(chat="ticket-9", message=ask.id, recalled_max_tokens=0).report.sections["recalled"]
        == 0
    )


def test_found_by_its_words_before_the_indexer_ran(mem: Recall, world: World) -> None:
    old = world.post("maria", "The spare key is under the blue flowerpot.", chat="house", at=LONG_AGO)
    ask = world.post("maria", "@desk where is the spare key?", chat="now", at=LATER)
    # No refresh_index(): nothing copied into the index, nothing embedded.
    ctx = world.agent("desk").context(chat="now", message=ask.id)
    assert old.id in recalled_ids(ctx)


def test_never_a_message_the_agent_did_not_hear(mem: Recall, world: World) -> None:
    secret = world.post("maria", "The vault code is 9931, tell nobody.", chat="old", at=LONG_AGO)
    world.add_agent("newcomer")  # joined after the secret was said: it was never delivered to it
    ask = world.post("maria", "@newcomer what is the vault code?", chat="now", at=LATER)
    mem.refresh_index()
    ctx = world.agent("newcomer").context(chat="now", message=ask.id)
    assert secret.id not in {i.id for i in ctx.report.items}  # not even listed as left out
    assert "9931" not in str(ctx.to_dict())
    # The agent that heard it gets it.
    assert secret.id in recalled_ids(world.agent("desk").context(chat="now", message=ask.id))


def test_never_another_tenants_world(mem: Recall, world: World) -> None:
    other = mem.world("shop", create=True, tenant="acme")
    other.add_human("maria")
    other.add_agent("desk")
    other.post("maria", "Acme's parcel number is 5150.", at=LONG_AGO)
    ask = world.post("maria", "@desk what was the parcel number?", at=LATER)
    mem.refresh_index()
    assert "5150" not in str(world.agent("desk").context(message=ask.id).to_dict())


def test_nothing_after_the_message_being_answered(mem: Recall, world: World) -> None:
    ask = world.post("maria", "@desk which colour was the bike?", chat="a", at=LONG_AGO)
    later = world.post("maria", "The bike was red.", chat="b", at=LATER)
    mem.refresh_index()
    ctx = world.agent("desk").context(chat="a", message=ask.id)
    assert later.id not in recalled_ids(ctx)
    assert any(i.id == later.id and i.reason == "after-trigger" for i in ctx.report.items)


def test_agent_settings_shape_it(mem: Recall, world: World) -> None:
    for i in range(6):
        world.post("maria", f"Order {i} of blue paint was delivered.", chat="orders", at=LONG_AGO)
    ask = world.post("maria", "@desk what about the blue paint orders?", chat="now", at=LATER)
    mem.refresh_index()
    desk = world.agent("desk")
    desk.update(recalled_limit=2, recalled_scope="world")
    ctx = desk.context(chat="now", message=ask.id)
    assert len(recalled_ids(ctx)) == 2
    assert any(i.reason == "over-depth" for i in ctx.report.items if i.section == "recalled")
    desk.update(recalled_scope="chat")
    assert recalled_ids(desk.context(chat="now", message=ask.id)) == set()
    desk.update(recalled_max_tokens=0, recalled_scope=None, recalled_limit=None)
    assert desk.context(chat="now", message=ask.id).report.sections["recalled"] == 0


def test_bad_settings_are_refused_with_what_was_wrong(world: World) -> None:
    from recall import InvalidInputError

    with pytest.raises(InvalidInputError, match="recalled_cutoff"):
        world.agent("desk").update(recalled_cutoff=1.5)
    with pytest.raises(InvalidInputError, match="recalled_scope"):
        world.agent("desk").update(recalled_scope="galaxy")
    with pytest.raises(InvalidInputError, match="recalled_max_tokens"):
        world.agent("desk").context(recalled_max_tokens=-1)
    assert world.agent("desk").profile.recalled_cutoff is None  # nothing was stored


def test_an_inbox_check_with_context_carries_the_recalled_past_once(mem: Recall, world: World) -> None:
    old = world.post("maria", "My parcel number is 4711 and it never arrived.", chat="ticket-7", at=LONG_AGO)
    world.post("maria", "@desk what was my parcel number again?", chat="ticket-9", at=LATER)
    check = mem.service.deliveries.check
    first = check("shop", "desk", include_context=True, session="s", mark_read=True)
    assert first.recalled is not None and first.recalled.content is not None
    assert "maria: My parcel number is 4711" in first.recalled.content
    assert old.id in {p.id for p in first.recalled.passages}
    assert first.recalled.tokens > 0 and not first.recalled.unchanged
    body = first.to_dict()["recalled"]
    assert body["passages"][0]["rank"] >= 1 and body["content"] == first.recalled.content

    # Asked again in the same session about the same thing: the same block is not sent again.
    world.post("maria", "@desk my parcel number, please?", chat="ticket-9", at=LATER)
    again = check("shop", "desk", include_context=True, session="s", mark_read=True)
    assert again.recalled is not None
    assert again.recalled.unchanged and again.recalled.content is None
    assert old.id in {p.id for p in again.recalled.passages}
    # A refresh, or another session, sends it in full.
    world.post("maria", "@desk the parcel number?", chat="ticket-9", at=LATER)
    fresh = check("shop", "desk", include_context=True, session="s", refresh=True)
    assert fresh.recalled is not None and fresh.recalled.content is not None and not fresh.recalled.unchanged
    other = check("shop", "desk", include_context=True, session="t")
    assert other.recalled is not None and other.recalled.content is not None
    # Without context, no recalled past (and no key in the answer).
    assert "recalled" not in check("shop", "desk").to_dict()


def test_an_inbox_check_never_recalls_what_the_agent_did_not_hear(mem: Recall, world: World) -> None:
    world.post("maria", "The vault code is 9931, tell nobody.", chat="old", at=LONG_AGO)
    world.add_agent("newcomer")
    world.post("maria", "@newcomer what is the vault code?", chat="now", at=LATER)
    result = mem.service.deliveries.check("shop", "newcomer", include_context=True)
    assert "9931" not in str(result.to_dict())
    assert result.recalled is not None and result.recalled.content is None


@pytest.mark.parametrize("recent_weight", [0.5, 0.0])
def test_a_follow_up_that_says_little_searches_the_recent_turns_too(store_location: str, recent_weight: float) -> None:
    # Keyword search only: the follow-up shares no word with the passage it needs.
    with Recall(
        store_location, Settings(index_interval=0, embeddings="none", recalled_recent_weight=recent_weight)
    ) as mem:
        w = mem.world("shop", create=True)
        w.add_human("maria")
        w.add_agent("desk")
        bike = w.post("maria", "The bike I bought in spring was painted bright red.", chat="old", at=LONG_AGO)
        w.post("maria", "@desk tell me about the bike I bought", chat="now", at=LATER)
        w.post("desk", "Happy to help with that.", chat="now", at=LATER)
        ask = w.post("maria", "@desk and its colour?", chat="now", at=LATER)
        found = bike.id in recalled_ids(w.agent("desk").context(chat="now", message=ask.id))
        assert found is (recent_weight > 0)
        # A question that names what it asks about is searched for on its own.
        named = w.post("maria", "@desk which spring purchase was painted?", chat="now", at=LATER)
        assert bike.id in recalled_ids(w.agent("desk").context(chat="now", message=named.id))


def test_the_store_finds_the_turn_before_and_what_was_heard_only_in_the_world_asked(mem: Recall, world: World) -> None:
    first = world.post("maria", "First.", chat="a", at=LONG_AGO)
    world.post("maria", "Elsewhere.", chat="b", at=LONG_AGO)
    second = world.post("maria", "Second.", chat="a", at=LATER)
    other = mem.world("barn", create=True)
    other.add_human("maria")
    other.add_agent("desk")
    there = [other.post("maria", "Hay.", chat="a"), other.post("maria", "Straw.", chat="a")]
    store, key = mem.service.store, world.key
    assert store.turns_before(key, [first.id, second.id, *(m.id for m in there)]) == {second.id: first.id}
    asked = [first.id, second.id, *(m.id for m in there)]
    heard = store.heard_among(key, "desk", asked)
    assert set(heard) == {first.id, second.id}
    assert store.heard_ids(key, "desk", asked) == {first.id, second.id}
    assert {i: m.content for i, m in store.messages_among(key, asked).items()} == {
        first.id: "First.",
        second.id: "Second.",
    }
    # An agent that joined later heard none of it; one of no world, nothing.
    world.add_agent("newcomer")
    assert store.heard_ids(key, "newcomer", asked) == set()
    assert store.heard_ids(key, "nobody", asked) == set()


def test_relative_times_count_back_from_the_message_being_answered(mem: Recall, world: World) -> None:
    # The same words twice (long enough to stand alone), months apart: only the time tells them apart.
    said = "We painted the old garden fence green with the neighbours on a sunny weekend afternoon."
    march = world.post("maria", said, chat="spring", at=LONG_AGO)  # 2025-03-01
    june = world.post("maria", said, chat="summer", at=datetime(2025, 6, 3, tzinfo=UTC))
    ask = world.post("maria", "@desk what did we paint last week?", chat="now", at=datetime(2025, 6, 8, tzinfo=UTC))
    mem.refresh_index()
    ctx = world.agent("desk").context(chat="now", message=ask.id)
    scores = {i.id: i.score or {} for i in ctx.report.items if i.section == "recalled" and i.included}
    assert scores.keys() == {march.id, june.id}
    # "Last week" of 8 June 2025, not of today: the June passage is in it, the March one is not.
    assert scores[june.id]["time"] > scores[march.id]["time"]
    assert scores[june.id]["rank"] < scores[march.id]["rank"]
    # Each passage carries its date for the model to reason about "when".
    block = recalled(ctx)
    assert "[2025-03-01, Saturday, chat spring]" in block and "[2025-06-03, Tuesday, chat summer]" in block


def test_a_flood_of_dates_in_long_messages_still_builds_a_context(mem: Recall, world: World) -> None:
    """Issue 23: four long messages of `jan 1 ` made one context build take 13.8 s (every
    yearless date read as thirty periods, and the ranking's matrix of candidates × periods).
    What a context searches for is cut to the search's length cap, and read for times only at
    its start, so the build answers and the search still finds the passage: the long messages
    themselves, shown as incoming, are the query and no candidates (they would match best by
    words), and the passage, the nearest by meaning, is recalled."""
    old = world.post("maria", "The parcel was sent on jan 1 to Oslo.", chat="ticket-7", at=LONG_AGO)
    for _ in range(4):
        world.post("maria", "@desk jan 1 " * 8_000 + "where did the parcel go?", chat="ticket-9", at=LATER)
    mem.refresh_index()
    ctx = world.agent("desk").context(chat="ticket-9", max_tokens=200_000)
    found = {i.id: i.reason for i in ctx.report.items if i.section == "recalled"}
    assert found == {old.id: None}
    assert ctx.report.sections["incoming"] > 4 * 16_000  # the long messages themselves are all there


LONG_REPLY = "We went through the deployment checklist line by line and nothing stood out. " * 40


def test_long_replies_leave_room_for_the_answer_and_the_window_for_the_thread(mem: Recall, world: World) -> None:
    """Issue 42: with model-length replies in the history, the budget goes to what matters: an
    early user line that answers the question lands, each long reply is shown by its part, the
    newest messages are the recent window, and every message in is one the agent heard."""
    answer = world.post("maria", "Our staging database is called heron-7.", chat="t", at=LONG_AGO)
    for n in range(12):
        world.post("maria", f"Next step {n}, please.", chat="t", at=LATER)
        world.post("desk", LONG_REPLY, chat="t", at=LATER)
    world.add_agent("newcomer")  # joins now: it heard none of the above
    welcome = world.post("maria", "@newcomer hello, welcome to the team.", chat="t", at=LATER)
    ask = world.post("maria", "@desk what is our staging database called?", chat="t", at=LATER)
    mem.refresh_index()
    ctx = world.agent("desk").context(chat="t", max_tokens=2000, message=ask.id)
    assert ctx.report.total_tokens <= 2000
    assert any(i.id == answer.id and i.included for i in ctx.report.items)
    assert "heron-7" in "\n".join(m.content for m in ctx.messages)
    window = [i for i in ctx.report.items if i.included and i.reason == "in-recent-window"]
    assert window and all(i.section == "history" for i in window)
    excerpted = [i for i in ctx.report.items if i.included and (i.score or {}).get("excerpt")]
    assert excerpted and all(i.sender == "desk" for i in excerpted)
    assert {i.reason for i in ctx.report.items if not i.included} <= {
        "outranked",
        "over-budget",
        "in-history",
        "below-cutoff",
        "over-depth",
        "not-addressed",
    }
    # The newcomer's context holds nothing it did not hear, however relevant.
    late = world.post("maria", "@newcomer what is our staging database called?", chat="t", at=LATER)
    theirs = world.agent("newcomer").context(chat="t", max_tokens=2000, message=late.id)
    shown = {i.id for i in theirs.report.items if i.included and i.kind == "message"}
    assert shown <= {welcome.id, late.id} and answer.id not in {i.id for i in theirs.report.items}
    assert "heron-7" not in str(theirs.to_dict())


def test_one_context_analyses_a_bounded_share_of_many_long_messages(
    mem: Recall, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43, point 8: the excerpts of one context analyse `MAX_CONTEXT_SCAN_CHARS` at most,
    history and recalled past together; the rest are cut where the question's words are."""
    from recall.core import excerpts

    analysed: list[int] = []
    real = excerpts._analysed.__wrapped__

    def counted(text: str, words: Callable[[str], list[str]]) -> object:
        analysed.append(len(text))
        return real(text, words)

    monkeypatch.setattr(excerpts, "_analysed", counted)
    monkeypatch.setattr(excerpts, "MAX_CONTEXT_SCAN_CHARS", 30_000)
    filler = "The weather stayed mild and the meeting notes were filed as usual. " * 300
    for n in range(12):
        world.post("desk", f"{filler}Shipment {n}: the parcel for Oslo left the depot on Friday. {filler}")
    asked = world.post("maria", "@desk which depot did the parcel for Oslo leave from?")
    mem.refresh_index()
    ctx = world.agent("desk").context(message=asked, max_tokens=20_000)
    assert 0 < sum(analysed) <= 30_000
    shown = "\n".join(str(m["content"]) for m in ctx.openai())
    assert sum(f"Shipment {n}: the parcel for Oslo" in shown for n in range(12)) >= 6
