"""The `recall` command: the exact forms scripts rely on, its errors, imports and demo."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from recall import Recall, Settings
from recall.cli import app

runner = CliRunner()


def recall(db: Path, *args: str, ok: bool = True) -> str:
    result = runner.invoke(app, ["--db", str(db), *args])
    if ok:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 1, result.output
    return result.output


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "cli.db"
    recall(path, "world", "create", "w")
    recall(path, "agent", "add", "w", "agent-a", "--system-prompt", "You are A.")
    recall(path, "agent", "add", "w", "agent-b", "--system-prompt", "You are B.")
    recall(path, "human", "add", "w", "maria")
    return path


def test_post_prints_the_stored_message_as_json(db: Path) -> None:
    message = json.loads(recall(db, "post", "w", "--sender", "maria", "--chat", "c1", "@agent-b please help"))
    assert message["id"] == 1
    assert message["sender"] == "maria"
    assert message["sender_type"] == "human"
    assert message["chat_id"] == "c1"
    assert message["addressed"] == ["agent-b"]


def test_seed_000_example_through_the_cli(db: Path) -> None:
    recall(db, "post", "w", "--sender", "maria", "hi")
    recall(db, "post", "w", "--sender", "agent-a", "how can I help you?")
    recall(db, "post", "w", "--sender", "maria", "@agent-b please help")
    data = json.loads(recall(db, "context", "w", "agent-b", "--format", "json"))
    assert data["messages"] == [
        {"role": "system", "content": "You are B."},
        {"role": "user", "content": "hi", "name": "maria"},
        {"role": "user", "content": "@agent-b please help", "name": "maria"},
    ]
    excluded = [i for i in data["report"]["items"] if not i["included"] and i.get("section") != "recalled"]
    assert excluded == [{"kind": "message", "id": 2, "included": False, "sender": "agent-a", "chat_id": None,
                         "reason": "not-addressed"}]  # fmt: skip
    # The recalled past does not bring back what the filter left out of the recent conversation.
    recalled = {i["id"]: i["reason"] for i in data["report"]["items"] if i.get("section") == "recalled"}
    assert recalled.get(2, "not-addressed") == "not-addressed"
    assert data["report"]["total_tokens"] <= data["report"]["budget"]


def test_context_formats_and_budget(db: Path) -> None:
    recall(db, "post", "w", "--sender", "maria", "--chat", "c", "hello there")
    openai = json.loads(recall(db, "context", "w", "agent-a", "--chat", "c"))
    assert openai[-1] == {"role": "user", "content": "hello there", "name": "maria"}
    anthropic = json.loads(recall(db, "context", "w", "agent-a", "--chat", "c", "--format", "anthropic"))
    assert anthropic == {"system": "You are A.", "messages": [{"role": "user", "content": "maria: hello there"}]}
    table = recall(db, "context", "w", "agent-a", "--chat", "c", "--format", "table")
    assert "incoming" in table and "hello there" in table
    tight = json.loads(recall(db, "context", "w", "agent-a", "--chat", "c", "--max-tokens", "200", "--format", "json"))
    assert tight["report"]["budget"] == 200


def test_errors_are_clear_and_exit_1(db: Path) -> None:
    out = recall(db, "post", "w", "--sender", "bob", "hi", ok=False)
    assert "'bob' is not a participant" in out and "recall human add w bob" in out
    assert "unknown world 'nope'" in recall(db, "context", "nope", "agent-a", ok=False)
    assert "unknown agent 'ghost'" in recall(db, "context", "w", "ghost", ok=False)
    recall(db, "post", "w", "--sender", "maria", "hi")
    assert "max_tokens=5 is too small" in recall(db, "context", "w", "agent-a", "--max-tokens", "5", ok=False)
    assert "already exists" in recall(db, "world", "create", "w", ok=False)
    with Recall(db) as mem:  # the failed commands stored nothing
        assert [m.content for m in mem.world("w").messages()] == ["hi"]


def test_db_defaults_to_recall_db_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env.db"
    monkeypatch.setenv("RECALL_DB", str(path))
    result = runner.invoke(app, ["world", "create", "from-env"])
    assert result.exit_code == 0, result.output
    with Recall(path) as mem:
        assert [w.id for w in mem.worlds()] == ["from-env"]


LOCOMO_SAMPLE = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! I went to a support group."},
                {
                    "speaker": "Melanie",
                    "dia_id": "D1:2",
                    "text": "That's great, Caroline!",
                    "blip_caption": "a photo of a park",
                },  # fmt: skip
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [{"speaker": "Caroline", "dia_id": "D2:1", "text": "I painted a sunrise."}],
            "session_3_date_time": "9:00 am on 1 July, 2023",
        },
        "qa": [],
    }
]


def test_import_locomo_keeps_timestamps_and_speakers(tmp_path: Path) -> None:
    source = tmp_path / "locomo.json"
    source.write_text(json.dumps(LOCOMO_SAMPLE))
    db = tmp_path / "l.db"
    assert "imported 3 messages into 1 worlds" in recall(db, "import", "locomo", str(source))
    with Recall(db) as mem:
        world = mem.world("locomo-conv-1")
        assert sorted((p.id, p.kind) for p in world.participants()) == [("Caroline", "agent"), ("Melanie", "agent")]
        messages = world.messages()
        assert [m.metadata["dia_id"] for m in messages] == ["D1:1", "D1:2", "D2:1"]
        assert messages[0].created_at.isoformat() == "2023-05-08T13:56:00+00:00"
        assert messages[2].created_at.isoformat() == "2023-06-27T10:37:00+00:00"
        assert messages[1].metadata["blip_caption"] == "a photo of a park"
        # Both speakers hear everything (filter `all`), so Melanie's context has the whole talk.
        ctx = world.agent("Melanie").context()
        assert [m["content"] for m in ctx.openai()] == [m.content for m in messages]


def test_import_jsonl_registers_speakers_and_rejects_bad_lines_whole(tmp_path: Path) -> None:
    good = tmp_path / "chat.jsonl"
    good.write_text(
        "\n".join(
            json.dumps(line)
            for line in [
                {"role": "system", "content": "Conversation started", "created_at": "2024-01-01T10:00:00Z"},
                {"role": "user", "name": "ana", "content": "@helper what's the weather?", "created_at": 1704103260},
                {"role": "assistant", "name": "helper", "content": "Sunny.", "created_at": "2024-01-01T10:02:00Z"},
                {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
            ]
        )
    )
    db = tmp_path / "j.db"
    assert "imported 4 messages into world chat" in recall(db, "import", "jsonl", str(good))
    # Found by their words at once: the import copied them into the search index (no indexer runs here).
    with Recall(db, settings=Settings(index_interval=0, embeddings="none")) as mem:
        assert mem.service.searcher.copy_new_messages() == 0
    with Recall(db) as mem:
        world = mem.world("chat")
        assert sorted((p.id, p.kind) for p in world.participants()) == [("ana", "human"), ("helper", "agent")]
        messages = world.messages()
        assert [m.sender for m in messages] == ["system", "ana", "helper", "user"]
        assert messages[1].created_at.isoformat() == "2024-01-01T10:01:00+00:00"
        # Imported history arrives read: nothing waits for an answer, all of it is in memory.
        assert world.agent("helper").inbox() == []
        assert world.agent("helper").inbox(unread_only=False)[0].content == "Conversation started"

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"role": "user", "content": "fine"}) + "\n{not json\n")
    out = recall(db, "import", "jsonl", str(bad), "--world", "chat", ok=False)
    assert "line 2" in out and "not valid JSON" in out
    with Recall(db) as mem:
        assert len(mem.world("chat").messages()) == 4


def test_demo_runs_as_a_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "recall"
    env = {**os.environ, "COLUMNS": "120"}
    result = subprocess.run([str(script), "demo"], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    for agent in ("triage", "billing", "tech"):
        assert f"what {agent}'s model gets" in result.stdout
    assert "not-addressed" in result.stdout


def test_help_lists_the_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("world", "agent", "human", "post", "context", "import", "demo"):
        assert command in result.output


def test_version_and_short_help() -> None:
    """Issue 24: `recall --version` and `-h` are what a new user types first."""
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert (result.exit_code, result.output) == (0, f"recall {version('recall-memory')}\n")
    for command in ([], ["world", "list"], ["agent", "run"], ["facts", "add"]):
        short, long = runner.invoke(app, [*command, "-h"]), runner.invoke(app, [*command, "--help"])
        assert short.exit_code == 0 and short.output == long.output and "Usage: " in short.output


def _every_command(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """The root, every group and every command, with the words that name it."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _every_command(sub, (*path, name))


def test_help_writes_flags_and_arguments_as_a_command_line() -> None:
    """Issue 24, point 12: typer showed `--json <bool>` and `--help <bool>` as if flags took a
    value, and arguments as `{file}`. On every command: a flag shows no value, an option that
    takes one its type, and an argument its name in capitals, in the usage line and the panel."""
    commands = list(_every_command(typer.main.get_command(app)))
    assert len(commands) > 30
    for path, command in commands:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        text = result.output
        assert "<bool>" not in text, path
        assert re.search(r"--help\s+-h\s+Show this message", text), (path, text)
        usage = next(line for line in text.splitlines() if "Usage:" in line)
        assert not re.search(r"[{}<>]", usage), usage
        for param in command.params:
            if param.param_type_name == "argument":
                name = param.name.upper()
                if param.required:
                    assert re.search(rf" {name}\b", usage), (usage, name)
                    assert re.search(rf"\*\s+{name}\s", text), (path, name)
                else:  # an optional one in brackets, as click writes it
                    assert re.search(rf" \[{name}\]", usage), (usage, name)
                    assert re.search(rf"\s{name}\s", text), (path, name)
    # Options that take a value still show what they take.
    search = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "200"}).output
    assert re.search(r"--k\s+<int>", search) and re.search(r"--json\s+JSON instead", search)
    # And an argument left out is named as the usage line writes it.
    missing = runner.invoke(app, ["import", "locomo"])
    assert missing.exit_code == 2 and re.search(r"Usage: \S+ import locomo \[OPTIONS\] FILE\n", missing.output)
    assert "Missing argument 'FILE'" in missing.output
