"""`recall import mem0|zep|letta`: what other memory systems kept, brought into recall's worlds,
participants, messages, memories and facts with their ids and times, once however often it runs
(on SQLite and PostgreSQL), with a report of what had no equivalent; a file not in the format
fails naming its place before anything is stored. The files are written here, by the tests, to
each system's documented schema (tests/import_formats.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall import Recall, Settings
from recall.cli import app
from recall.errors import InvalidInputError
from recall.importers import IMPORTED_FROM, import_letta, import_mem0, import_zep, read_letta, read_mem0, read_zep
from tests.import_formats import letta_agent_file, letta_agent_file_v1, letta_passages, mem0_export, write, zep_export

QUICK = Settings(index_interval=0, embeddings="none")


@pytest.fixture
def on_store(store_location: str) -> Iterator[Recall]:
    with Recall(store_location, QUICK) as mem:
        yield mem


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def test_mem0_memories_keep_their_ids_times_and_owners_once(on_store: Recall, tmp_path: Path) -> None:
    source = write(tmp_path / "mem0.json", mem0_export())
    report = import_mem0(on_store, source, "mem0")
    assert report.to_dict()["stored"] == {"humans": 1, "agents": 1, "memories": 2}
    assert report.unmapped == {
        "memories past their expiration_date (recall keeps no expired memory)": 1,
        "relations: mem0's graph memory (recall keeps no graph)": 1,
    }
    world = on_store.world("mem0")
    assert [h.id for h in world.humans()] == ["maria"] and [a.id for a in world.agents()] == ["support-bot"]
    (tea,) = world.memories()  # the shared one; the other is the agent's own
    assert tea.content == "Drinks only green tea" and tea.type == "mem0" and tea.owner == ""
    assert tea.created_at == utc("2024-07-20T10:15:00.123456-07:00")
    assert tea.metadata["source"] == "chat"
    assert tea.metadata[IMPORTED_FROM] == {
        "system": "mem0",
        "id": "0b4c1f6e-6f2a-4d0b-9a51-3f1d5e2a7c01",
        "hash": "5b6f0f1c6a2e4e6c9d1f3a2b7c8d9e0f",
        "categories": ["food", "preferences"],
        "updated_at": "2024-07-21T15:00:00+00:00",
        "user_id": "maria",
    }
    own = [m for m in world.agent("support-bot").memories() if m.owner]
    assert [(m.owner, m.chat_id, m.content) for m in own] == [
        ("support-bot", "ticket-7", "Maria's parcel 4711 went to the Lyon depot")
    ]
    assert own[0].metadata[IMPORTED_FROM]["role"] == "user"

    again = import_mem0(on_store, source, "mem0")
    assert again.to_dict()["stored"] == {} and again.to_dict()["skipped"] == {"memories": 2}
    assert len(world.agent("support-bot").memories()) == 2
    # mem0 updated a memory in place since: the same memory changes, nothing is added.
    data = mem0_export()
    data["results"][0]["memory"] = "Drinks green or white tea"
    changed = import_mem0(on_store, write(source, data), "mem0")
    assert changed.to_dict()["updated"] == {"memories": 1} and changed.to_dict()["skipped"] == {"memories": 1}
    (tea_now,) = world.memories()
    assert (tea_now.id, tea_now.content, tea_now.created_at) == (tea.id, "Drinks green or white tea", tea.created_at)


def test_zep_sessions_become_chats_and_facts_keep_their_time_once(on_store: Recall, tmp_path: Path) -> None:
    source = write(tmp_path / "zep.json", zep_export())
    report = import_zep(on_store, source, "helpdesk", agent="helper")
    assert report.to_dict()["stored"] == {"humans": 1, "agents": 1, "messages": 4, "facts": 1}
    assert report.unmapped["facts Zep marks no longer true (invalid_at or expired_at set)"] == 1
    assert report.unmapped["fact field 'rating' (no equivalent in recall)"] == 1
    assert report.unmapped["user field 'email' (no equivalent in recall)"] == 1
    world = on_store.world("helpdesk")
    assert dict(world.chats()) == {"s-100": 2, "s-101": 2}
    first, reply = world.messages(chat="s-100")
    assert (first.sender, first.sender_type.value, first.content) == (
        "maria",
        "human",
        "Hi, please e-mail me the invoice",
    )
    assert first.created_at == utc("2024-05-02T09:00:00+00:00")
    assert first.metadata["page"] == "billing" and first.metadata[IMPORTED_FROM]["id"] == "m-0001"
    assert (reply.sender, reply.sender_type.value) == ("helper", "agent")
    asked, notice = world.messages(chat="s-101")
    assert (asked.sender, notice.sender, notice.sender_type.value) == ("maria", "system", "system")
    (fact,) = on_store.scope("user:maria").list()
    assert (fact.content, fact.source) == (
        "Maria prefers e-mail over phone calls",
        "zep:f1a2b3c4-0000-4000-8000-000000000001",
    )
    assert fact.created_at == fact.updated_at == utc("2024-05-02T09:30:00+00:00")

    again = import_zep(on_store, source, "helpdesk", agent="helper")
    assert again.to_dict()["stored"] == {} and again.to_dict()["skipped"] == {"messages": 4, "facts": 1}
    assert sum(n for _, n in world.chats()) == 4 and len(on_store.scope("user:maria").list()) == 1


def test_a_letta_agent_file_keeps_the_agent_its_blocks_replies_and_tool_calls_once(
    on_store: Recall, tmp_path: Path
) -> None:
    data = letta_agent_file()
    source = write(tmp_path / "sam.af", data)
    report = import_letta(on_store, source)
    assert report.to_dict()["stored"] == {"agents": 1, "messages": 5, "facts": 1}
    assert report.unmapped["send_message results (Letta's delivery receipts)"] == 1
    assert report.unmapped["tools (their code and JSON schemas: recall's runner takes tools from code)"] == 1
    assert report.unmapped["model settings (llm_config)"] == 1
    world = on_store.world("Sam")
    sam = world.agent("Sam")
    assert sam.profile.system_prompt == "You are Sam, a helpful companion."
    (persona,) = sam.facts.list()
    assert (persona.content, persona.source) == ("I am Sam. I like numbers.", "letta:block:persona")
    login, asked, call, result, reply = world.messages(limit=10)
    assert (login.sender, asked.sender, asked.sender_type.value) == ("system", "user", "human")
    assert asked.created_at == utc("2025-10-10T07:14:31+00:00")
    assert call.metadata["tool_calls"][0]["function"]["name"] == "core_memory_append" and call.content == ""
    assert call.metadata[IMPORTED_FROM]["inner_thoughts"] == "She wants a number; let me note her name."
    assert result.metadata["tool_result_for"] == "Sam" and result.metadata["tool_call_id"] == "call_mem"
    assert (reply.content, reply.metadata[IMPORTED_FROM]["id"]) == ("It is 55.", "message-5")
    # The agent's model sees its history as it happened, its block in the memory block.
    shown = sam.context(max_tokens=4000).openai()
    assert [m["role"] for m in shown] == ["system", "system", "user", "assistant", "tool", "assistant"]
    assert "I am Sam. I like numbers." in shown[1]["content"]

    assert import_letta(on_store, source).to_dict()["skipped"] == {"messages": 5, "facts": 1}
    # Edited since: the block's fact is updated in place, nothing else is new.
    data["blocks"][0]["value"] = "I am Sam. I love primes."
    edited = import_letta(on_store, write(source, data))
    assert edited.to_dict()["updated"] == {"facts": 1} and edited.to_dict()["stored"] == {}
    assert [f.content for f in sam.facts.list()] == ["I am Sam. I love primes."]
    assert len(world.messages(limit=10)) == 5


def test_letta_archival_passages_beside_the_file_become_the_agents_own_memories(tmp_path: Path) -> None:
    source = write(tmp_path / "sam.af", letta_agent_file())
    passages = write(tmp_path / "passages.json", letta_passages())
    with Recall(tmp_path / "r.db", QUICK) as mem:
        report = import_letta(mem, source, passages=passages)
        assert report.stored["memories"] == 1
        assert report.unmapped["deleted archival passages"] == 1
        assert report.unmapped["passage embeddings (recall embeds with its own model)"] == 1
        (thesis,) = mem.world("Sam").agent("Sam").memories()
        assert (thesis.owner, thesis.type, thesis.content) == (
            "Sam",
            "archival",
            "Sarah's thesis is on Fibonacci trends in markets",
        )
        assert thesis.created_at == utc("2025-10-11T08:00:00+00:00") and thesis.metadata["topic"] == "research"
        assert thesis.metadata[IMPORTED_FROM]["id"] == "passage-6f1d2c3b-0000-4000-8000-00000000a001"
        assert mem.world("Sam").memories() == []  # the agent's own, not the world's
        assert import_letta(mem, source, passages=passages, passages_agent="sam").skipped["memories"] == 1
        with pytest.raises(InvalidInputError, match="'Ann' is not an agent of the file; its agents: Sam"):
            read_letta(source, passages=passages, passages_agent="Ann")
        with pytest.raises(InvalidInputError) as caught:
            read_letta(source, passages=write(tmp_path / "bad.json", [{"id": "p", "text": "t"}]))
        assert caught.value.field == "bad.json [0].created_at"


def test_a_block_longer_than_a_fact_is_kept_in_parts_and_a_file_as_one_json_string_is_read(tmp_path: Path) -> None:
    """Real Agent Files have blocks of 10,000 to 30,000 characters, over a fact's 10,000, and the
    agent-file repository has files holding the export as one JSON string."""
    data = letta_agent_file()
    lines = [f"line {i}: " + "x" * 990 for i in range(25)]  # 25,000 characters or so
    data["blocks"][0]["value"] = "\n".join(lines)
    source = tmp_path / "big.af"
    source.write_text(json.dumps(json.dumps(data)), encoding="utf-8")
    with Recall(tmp_path / "r.db", QUICK) as mem:
        assert import_letta(mem, source).stored["facts"] == 3
        parts = sorted(mem.world("Sam").agent("Sam").facts.list(), key=lambda f: f.id)
        assert [f.source for f in parts] == ["letta:block:persona", "letta:block:persona#2", "letta:block:persona#3"]
        assert all(len(f.content) <= 10_000 for f in parts)
        assert "\n".join(f.content for f in parts) == data["blocks"][0]["value"]  # split between lines, nothing lost
        # The block shrank to one part since: the parts it no longer has go.
        data["blocks"][0]["value"] = "I am Sam."
        report = import_letta(mem, write(source, data))
        assert report.to_dict()["updated"] == {"facts": 1} and report.to_dict()["removed"] == {"facts": 2}
        assert [f.content for f in mem.world("Sam").agent("Sam").facts.list()] == ["I am Sam."]


def test_the_first_agent_file_schema_and_its_wrapped_user_messages(tmp_path: Path) -> None:
    with Recall(tmp_path / "r.db", QUICK) as mem:
        report = import_letta(mem, write(tmp_path / "old.af", letta_agent_file_v1()), "old", human="maria")
        assert report.to_dict()["stored"] == {"humans": 1, "agents": 1, "messages": 2, "facts": 1}
        said = [(m.sender, m.content) for m in mem.world("old").messages()]
        assert said == [("maria", "hey there"), ("memgpt_agent", "Hi!")]
        (fact,) = mem.world("old").agent("memgpt_agent").facts.list()
        assert fact.created_at == datetime(2025, 4, 1, 3, 47, 27, tzinfo=UTC)  # naive times are UTC


@pytest.mark.parametrize(
    ("reader", "data", "place"),
    [
        (read_mem0, {"results": [{"id": "a", "memory": "ok"}, {"id": "b"}]}, "results[1].memory"),
        (read_mem0, [{"id": "a", "memory": "ok", "created_at": "yesterday"}], "[0].created_at"),
        (read_mem0, {"memories": []}, "file"),
        (
            read_zep,
            {
                "sessions": [
                    {"session_id": "s", "messages": [{"role": "user", "content": "hi", "created_at": "13/13/2024"}]}
                ]
            },
            "sessions[0].messages[0].created_at",
        ),
        (
            read_zep,
            {"sessions": [{"session_id": "s", "messages": [{"role": "robot", "content": "hi"}]}]},
            "sessions[0].messages[0].role",
        ),
        (
            read_zep,
            {"users": [{"user_id": "u", "facts": [{"uuid": "f", "fact": "x"}]}]},
            "users[0].facts[0].created_at",
        ),
        (
            read_letta,
            {"agents": [{"name": "a", "messages": [{"role": "assistant", "content": []}]}]},
            "agents[0].messages[0].created_at",
        ),
        (read_letta, {"agents": [{"name": "a", "block_ids": ["block-9"]}], "blocks": []}, "agents[0].block_ids[0]"),
        (read_letta, {"agent": {}}, "file"),
        (read_letta, {"agents": [{"name": "a", "system": "be \x00 kind"}]}, "agents[0].system"),
    ],
)
def test_a_file_not_in_the_format_is_refused_naming_the_place(
    tmp_path: Path, reader: object, data: object, place: str
) -> None:
    source = write(tmp_path / "bad.json", data)
    with pytest.raises(InvalidInputError) as caught:
        reader(source)  # type: ignore[operator]
    assert caught.value.field == place


def test_the_cli_imports_each_system_once_and_prints_what_it_left_out(tmp_path: Path) -> None:
    db = tmp_path / "r.db"

    def cli(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, ["--db", str(db), "import", *args], env={"COLUMNS": "200"})
        return result.exit_code, " ".join(result.output.split())

    mem0 = write(tmp_path / "mem0.json", mem0_export()["results"])  # the older bare list
    assert cli("mem0", str(mem0), "--world", "prefs") == (
        0,
        "imported from mem0 (mem0.json) into prefs: 1 humans, 1 agents, 2 memories no equivalent in recall, not"
        " imported: 1 × memories past their expiration_date (recall keeps no expired memory)",
    )
    code, again = cli("mem0", str(mem0), "--world", "prefs")
    assert code == 0 and "nothing new already imported before, skipped: 2 memories" in again
    code, zep = cli("zep", str(write(tmp_path / "zep.json", zep_export())))
    assert code == 0 and "into zep: 1 humans, 1 agents, 4 messages, 1 facts" in zep
    code, letta = cli("letta", str(write(tmp_path / "sam.af", letta_agent_file())), "--human", "sarah")
    assert code == 0 and "into Sam: 1 humans, 1 agents, 5 messages, 1 facts" in letta
    assert "1 × tool rules" in letta

    # A file in no format: one line naming the place, and nothing stored.
    broken = write(tmp_path / "broken.af", {"agents": [{"name": "x", "messages": [{"role": "user"}]}]})
    code, said = cli("letta", str(broken), "--world", "nothing")
    assert code == 1 and "agents[0].messages[0].created_at" in said
    not_json = tmp_path / "notes.json"
    not_json.write_text("{results: [", encoding="utf-8")
    code, said = cli("mem0", str(not_json))
    assert code == 1 and "is not JSON, so not a mem0 export" in said and "line 1 column 2" in said
    with Recall(db, QUICK) as mem:
        assert sorted(w.id for w in mem.worlds()) == ["Sam", "prefs", "zep"]

    help_text = CliRunner().invoke(app, ["import", "--help"], env={"COLUMNS": "200"}).output
    assert all(name in help_text for name in ("mem0", "zep", "letta", "locomo", "jsonl"))


def test_messages_the_store_would_refuse_stop_the_import_before_anything_is_stored(tmp_path: Path) -> None:
    data = zep_export()
    data["sessions"][1]["messages"]["messages"][1]["content"] = "x" * 200
    source = write(tmp_path / "zep.json", data)
    with Recall(tmp_path / "r.db", Settings(index_interval=0, embeddings="none", max_message_chars=100)) as mem:
        with pytest.raises(
            InvalidInputError, match="message m-0004: is 200 characters; the limit is 100 .*RECALL_MAX_MESS"
        ):
            import_zep(mem, source)
        assert mem.worlds() == [] and mem.scope("user:maria").list() == []
        # A key only recall writes (who a message is for alone) is refused from a file too.
        data = zep_export()
        data["sessions"][0]["messages"][0]["metadata"] = {"private_for": "helper"}
        with pytest.raises(InvalidInputError, match="message m-0001 metadata.private_for: is a key recall reserves"):
            import_zep(mem, write(source, data))
        assert mem.worlds() == []


def test_a_page_of_the_platforms_get_all_says_there_are_more(tmp_path: Path) -> None:
    """The platform's get_all answers a page: {"count", "next", "previous", "results"}."""
    page = {"count": 120, "next": "https://example.invalid/v3/memories/?page=2", "previous": None}
    plan = read_mem0(write(tmp_path / "page1.json", {**page, "results": mem0_export()["results"][:1]}))
    assert len(plan.memories) == 1
    assert plan.report.unmapped == {"later pages of get_all, not in the file (its `next` is set): save each page": 1}


def test_an_export_read_is_only_read(tmp_path: Path) -> None:
    """Reading builds the plan and stores nothing: no store is even opened."""
    plan = read_mem0(write(tmp_path / "m.json", mem0_export()), "w")
    assert [m.source_id for m in plan.memories] == [
        "0b4c1f6e-6f2a-4d0b-9a51-3f1d5e2a7c01",
        "7d0e2c55-1a3b-4c5d-8e9f-0a1b2c3d4e5f",
    ]
    assert json.loads(json.dumps(plan.report.to_dict()))["worlds"] == ["w"]
    assert len(read_zep(write(tmp_path / "z.json", zep_export())).conversations[0].messages) == 4
    assert read_letta(write(tmp_path / "l.af", letta_agent_file())).agents[0].settings == {
        "system_prompt": "You are Sam, a helpful companion."
    }
