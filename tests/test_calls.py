"""Recorded model calls (issue 25): a record per call, replay from the store, diff, retention,
erase, on both stores."""

from __future__ import annotations

import json
import zlib
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from recall import Recall, Settings, World
from recall.cli import app
from recall.errors import InvalidInputError, UnknownCallError
from tests.test_cli import recall, runner


def shop(mem: Recall) -> World:
    world = mem.world("shop", create=True)
    world.add_human("maria")
    world.add_human("bob")
    world.add_agent("desk", system_prompt="You help customers of the shop.")
    world.post("maria", "My parcel to Lyon never arrived.", chat="t1")
    world.post("bob", "I was charged twice for my tea order.", chat="t2")
    mem.scope("user:maria").add("Lives in Lyon")
    return world


@pytest.fixture
def mem(store_location: str) -> Recall:  # type: ignore[misc]
    with Recall(store_location, Settings(index_interval=0)) as opened:
        yield opened


def test_a_recorded_call_replays_byte_identical(mem: Recall) -> None:
    world = shop(mem)
    trigger = world.post("maria", "@desk where is my parcel?", chat="t1")
    ctx = world.agent("desk").context("t1", message=trigger, record=True)
    assert ctx.call_id is not None and ctx.to_dict()["call_id"] == ctx.call_id
    call = world.agent("desk").call(ctx.call_id)
    assert (call.agent_id, call.chat_id, call.trigger_id, call.source) == ("desk", "t1", trigger.id, "python")
    assert call.total_tokens == ctx.report.total_tokens and call.sections == ctx.report.sections
    history = [i.id for i in call.items if i.section in ("history", "incoming") and i.included]
    assert history == [m.source_id for m in ctx.messages if m.source_id is not None and m.section != "recalled"]
    assert call.messages is None  # ids only, by default
    # Later posts and a later answer do not change what the call's trigger gets.
    world.post("desk", "It is on its way.", chat="t1")
    world.post("maria", "thanks", chat="t1")
    replay = world.agent("desk").replay(ctx.call_id)
    assert replay.identical and replay.diff is not None and replay.diff.items == ()
    assert replay.context is not None and replay.context.openai() == ctx.openai()


def test_replay_says_what_changed_a_fact_edited_a_message_deleted_a_setting_changed(mem: Recall) -> None:
    world = shop(mem)
    earlier = world.post("maria", "I ordered green tea and a kettle.", chat="t1")
    trigger = world.post("maria", "@desk where is my parcel?", chat="t1")
    desk = world.agent("desk")
    ctx = desk.context("t1", message=trigger, record=True)
    assert ctx.call_id is not None
    fact = mem.scope("user:maria").list()[0]
    mem.scope("user:maria").update(fact.id, content="Lives in Paris")
    world.delete_message(earlier)
    desk.update(history_limit=1)
    replay = desk.replay(ctx.call_id)
    assert not replay.identical and replay.diff is not None
    changes = {(c.kind, c.id): c for c in replay.diff.items}
    assert changes[("fact", fact.id)].change == "edited"
    assert changes[("fact", fact.id)].why == "edited since the call"
    assert changes[("message", earlier.id)].change == "removed"
    assert changes[("message", earlier.id)].why == "deleted since the call"
    assert replay.diff.settings["history_limit"] == (25, 1)


def test_compare_under_other_settings_and_two_calls(mem: Recall) -> None:
    world = shop(mem)
    for i in range(4):
        world.post("maria", f"@desk note {i} about the parcel", chat="t1")
        world.post("desk", f"noted ({i})", chat="t1")
    trigger = world.post("maria", "@desk any news?", chat="t1")
    desk = world.agent("desk")
    first = desk.context("t1", message=trigger, record=True)
    assert first.call_id is not None
    shallow = desk.compare(first.call_id, history_limit=2)
    assert shallow.diff is not None and not shallow.diff.identical
    removed = [c for c in shallow.diff.items if c.change == "removed"]
    assert removed and all(c.kind == "message" and c.b is not None and c.b.reason == "over-depth" for c in removed)
    assert shallow.diff.settings["history_limit"] == (25, 2)
    second = desk.context("t1", message=trigger, history_limit=2, record=True)
    assert second.call_id is not None
    both = desk.compare(first.call_id, second.call_id)
    assert both.diff is not None and {c.id for c in both.diff.items} == {c.id for c in shallow.diff.items}
    with pytest.raises(InvalidInputError, match="budget"):
        desk.compare(first.call_id, budget=3)


def test_calls_are_listed_newest_first_and_trimmed_to_the_retention_count(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=0, call_retention_count=3)) as mem:
        world = shop(mem)
        desk = world.agent("desk")
        ids = [desk.context("t1", record=True).call_id for _ in range(5)]
        listed = [c.id for c in desk.calls()]
        assert listed == ids[::-1][:3]
        # A listing reads each call's counts, not its items (`call` reads one whole).
        assert all(c.items == () and c.counts[0] > 0 for c in desk.calls())
        assert desk.call(listed[0]).counts == desk.calls()[0].counts
        with pytest.raises(UnknownCallError):
            desk.call(str(ids[0]))


def test_nothing_is_recorded_with_retention_0_and_full_copies_on_request(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=0, call_retention_count=0)) as mem:
        ctx = shop(mem).agent("desk").context("t1", record=True)
        assert ctx.call_id is None and mem.world("shop").agent("desk").calls() == []
    with Recall(store_location, Settings(index_interval=0, call_copies="full")) as mem:
        ctx = mem.world("shop").agent("desk").context("t1", record=True)
        assert ctx.call_id is not None
        assert mem.world("shop").agent("desk").call(ctx.call_id).messages == tuple(ctx.openai())


def test_an_erase_takes_the_persons_messages_out_of_every_record(mem: Recall) -> None:
    world = shop(mem)
    said = world.post("maria", "@desk my address is 5 Rue Sala", chat="t1")
    desk = world.agent("desk")
    ctx = desk.context("t1", message=said, record=True)
    queued = desk.context("t1", record=True)  # maybe still queued when the erase runs
    assert ctx.call_id is not None and queued.call_id is not None
    world.delete_human("maria", erase=True)
    for call_id in (ctx.call_id, queued.call_id):
        call = desk.call(call_id)
        assert call.erased >= 1
        assert all(i.id != said.id for i in call.items if i.kind == "message")
    # No stored body names the message any more.
    rows = mem.service.store.list_calls(world.key, "desk")
    assert len(rows) == 2
    for row in rows:
        items = json.loads(zlib.decompress(row.body))["items"]
        assert [said.id] not in [[item[2]] for item in items if item[1] == "message"]
    replay = desk.replay(ctx.call_id)
    assert not replay.identical and replay.context is None
    assert "deleted or erased since" in replay.notes[0] and "erased" in replay.notes[1]


def test_an_agent_reads_only_its_own_calls_and_deleting_it_drops_them(mem: Recall) -> None:
    world = shop(mem)
    world.add_agent("other")
    ctx = world.agent("desk").context("t1", record=True)
    assert ctx.call_id is not None
    with pytest.raises(UnknownCallError):
        world.agent("other").call(ctx.call_id)
    world.delete_agent("desk")
    world.add_agent("desk")
    with pytest.raises(UnknownCallError):
        world.agent("desk").call(ctx.call_id)


def test_a_context_built_by_hand_cannot_be_recorded(mem: Recall) -> None:
    ctx = shop(mem).agent("desk").context("t1")
    with pytest.raises(InvalidInputError, match="context"):
        mem.service.calls.record(replace(ctx, params=None), "python")
    with pytest.raises(InvalidInputError, match="source"):
        mem.service.calls.record(ctx, "telepathy")


def test_cli_records_lists_replays_and_diffs(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    with Recall(db, Settings(index_interval=0)) as opened:
        world = shop(opened)
        for i in range(3):
            world.post("maria", f"@desk note {i}", chat="t1")
            world.post("desk", f"noted {i}", chat="t1")
    result = runner.invoke(app, ["--db", str(db), "context", "shop", "desk", "--chat", "t1", "--record"])
    assert result.exit_code == 0, result.output
    call_id = result.stderr.split("recorded as call ")[1].strip()
    listed = json.loads(recall(db, "calls", "list", "shop", "desk", "--json"))
    assert [c["id"] for c in listed] == [call_id]
    with Recall(db, Settings(index_interval=0)) as opened:
        opened.world("shop").agent("desk").call_outcome(call_id, error="model server down")
    assert "failed:" in recall(db, "calls", "list", "shop", "desk")  # the table wraps the rest
    (failed,) = json.loads(recall(db, "calls", "list", "shop", "desk", "--json"))
    assert (failed["outcome"], failed["error"]) == ("failed", "model server down")
    assert json.loads(recall(db, "calls", "show", "shop", "desk", call_id))["source"] == "python"
    assert f"replayed {call_id}: the same bytes" in recall(db, "calls", "replay", "shop", "desk", call_id)
    diffed = recall(db, "calls", "diff", "shop", "desk", call_id, "--history-limit", "1")
    assert "not the same bytes" in diffed and "setting history_limit: 25 → 1" in diffed and "removed" in diffed
    missing = runner.invoke(app, ["--db", str(db), "calls", "show", "shop", "desk", "c_none"])
    assert missing.exit_code == 1 and "unknown call 'c_none'" in missing.output


def test_a_replay_says_the_search_index_moved_a_recalled_passages_scores(tmp_path: Path) -> None:
    # On SQLite, where BM25 weighs a word by its rarity in the index (PostgreSQL's ts_rank does
    # not, so later posts leave its scores as they were); the explanation is the service's.
    with Recall(tmp_path / "rarity.db", Settings(index_interval=0)) as mem:
        world = shop(mem)
        # Half hold one of the question's words, half the other: as "parcel" grows common, their
        # keyword scores move against each other (each is measured against the best one's).
        for i in range(4):
            thing = "parcel" if i % 2 else "trip to Lyon"
            world.post("maria", f"My {thing} {i} never went as planned, the courier said tuesday", chat=f"old-{i}")
        trigger = world.post("maria", "@desk where is my parcel to Lyon?", chat="t1")
        desk = world.agent("desk")
        ctx = desk.context("t1", message=trigger, record=True)
        assert ctx.call_id is not None
        for i in range(20):  # posted after the call: never in its replay, but "parcel" grows common
            world.post("bob", f"parcel parcel news {i}", chat="other")
        replay = desk.replay(ctx.call_id)
    assert replay.diff is not None
    recalled = [c for c in replay.diff.items if c.a is not None and c.a.section == "recalled"]
    assert recalled and all(c.change in ("rescored", "moved") for c in recalled)  # new scores, new order
    assert all(c.why is not None and "search index changed since the call" in c.why for c in recalled)


def test_an_erase_rewrites_only_the_calls_quoting_the_person(mem: Recall, monkeypatch: pytest.MonkeyPatch) -> None:
    # `a_b` is erased; `axb` would match it were `_` a wildcard: its call must not be read.
    from recall.app import call_writer as calls_module

    world = mem.world("quotes", create=True)
    world.add_agent("desk")
    for person in ("a_b", "axb"):
        world.add_human(person)
        world.post(person, f"@desk hello from {person}", chat=person)
    desk = world.agent("desk")
    quoting = desk.context("a_b", record=True, recalled_max_tokens=0).call_id
    other = desk.context("axb", record=True, recalled_max_tokens=0).call_id
    assert quoting is not None and other is not None
    assert len(desk.calls()) == 2  # written (a read stores what is queued)
    store = mem.service.store
    before = {row.id: row.body for row in store.list_calls(world.key, "desk")}
    visited: list[bytes] = []
    real = calls_module._scrubber

    def watched(erasure: Any) -> Any:
        scrub = real(erasure)
        return lambda body, trigger: visited.append(body) or scrub(body, trigger)

    monkeypatch.setattr(calls_module, "_scrubber", watched)
    world.delete_human("a_b", erase=True)
    assert visited == [before[quoting]]  # only the call that quotes a_b is read
    after = {row.id: row.body for row in store.list_calls(world.key, "desk")}
    assert after[other] == before[other] and desk.call(other).erased == 0
    assert after[quoting] != before[quoting] and desk.call(quoting).erased == 1


def test_a_full_queue_has_the_caller_write_its_own_record(mem: Recall, monkeypatch: pytest.MonkeyPatch) -> None:
    from recall.app import call_writer

    world = shop(mem)
    monkeypatch.setattr(call_writer, "MAX_QUEUED", 0)  # always full
    ctx = world.agent("desk").context("t1", record=True)
    # Stored when `record` returned, not by the writer: nothing waits in its queue.
    assert [row.id for row in mem.service.store.list_calls(world.key, "desk")] == [ctx.call_id]


def test_a_call_waiting_to_be_written_never_lands_on_an_agent_made_again_under_its_name(mem: Recall) -> None:
    from recall.app.call_writer import Pending

    world = shop(mem)
    built = world.agent("desk").context("t1")
    waiting = Pending("c_waiting", "python", datetime.now(UTC), built, "ids")
    world.delete_agent("desk")
    world.add_agent("desk")  # the same name, another agent
    mem.service.calls.writer.put(waiting)
    assert world.agent("desk").calls() == []


def test_a_context_built_before_an_erase_and_recorded_after_it_leaves_the_person_out(mem: Recall) -> None:
    world = shop(mem)
    said = world.post("maria", "@desk my address is 5 Rue Sala", chat="t1")
    built = world.agent("desk").context("t1", message=said)  # built, not yet recorded
    world.delete_human("maria", erase=True)
    call_id = mem.service.calls.record(built, "python").call_id
    assert call_id is not None
    call = world.agent("desk").call(call_id)
    assert call.trigger_id is None and call.trigger_erased and call.erased >= 1
    assert all(i.id != said.id for i in call.items if i.kind == "message")
    assert not any(str(i.scores.get("scope")) == "user:maria" for i in call.items)
    (row,) = mem.service.store.list_calls(world.key, "desk")
    assert "maria" not in json.dumps(json.loads(zlib.decompress(row.body)))
    replay = world.agent("desk").replay(call_id)
    assert replay.context is None and "erased since" in replay.notes[0]


def test_the_writer_outlives_a_store_error(mem: Recall, monkeypatch: pytest.MonkeyPatch) -> None:
    world = shop(mem)
    writer = mem.service.calls.writer
    real = mem.service.store.add_calls
    failures = iter([RuntimeError("disk on fire")])

    def flaky(calls: Any) -> int:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real(calls)

    monkeypatch.setattr(mem.service.store, "add_calls", flaky)
    lost = world.agent("desk").context("t1", record=True).call_id
    assert world.agent("desk").calls() == [] and writer.lost == 1  # logged and counted
    kept = world.agent("desk").context("t1", record=True).call_id
    assert [c.id for c in world.agent("desk").calls()] == [kept] and kept != lost
