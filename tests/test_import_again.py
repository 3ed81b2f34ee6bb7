"""Importing the same conversation file twice stores its messages once and says what it
skipped: `recall import jsonl|locomo` (typer's runner and the real console script) and the
Python importers; a JSONL file that grew imports only its new lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from recall import Recall, Settings
from recall.cli import app
from recall.importers import import_conversation, read_jsonl, read_locomo, store_conversation
from tests.test_cli import LOCOMO_SAMPLE

QUICK = Settings(index_interval=0, embeddings="none")
LINES = [
    {"role": "user", "name": "ana", "content": "my parcel number is 7731", "created_at": "2024-01-01T10:00:00Z"},
    {"role": "assistant", "name": "helper", "content": "Noted, 7731.", "created_at": "2024-01-01T10:01:00Z"},
    {"role": "user", "name": "ana", "content": "thanks"},
]


def write_jsonl(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def cli(db: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["--db", str(db), *args])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())  # as one line, however the console wrapped it


def contents(db: Path, world: str) -> list[str]:
    with Recall(db, QUICK) as mem:
        return [m.content for m in mem.world(world).messages(limit=1000)]


def test_importing_a_jsonl_file_twice_stores_it_once(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "chat.jsonl", LINES)
    db = tmp_path / "r.db"
    first = cli(db, "import", "jsonl", str(source))
    assert "imported 3 messages into world chat" in first and "skipped" not in first
    again = cli(db, "import", "jsonl", str(source))
    assert "imported 0 messages into world chat; 3 already imported from chat.jsonl before, skipped" in again
    assert contents(db, "chat") == [line["content"] for line in LINES]

    # The file grew: only the new line is stored.
    write_jsonl(source, [*LINES, {"role": "assistant", "name": "helper", "content": "You're welcome."}])
    grown = cli(db, "import", "jsonl", str(source))
    assert "imported 1 messages into world chat; 3 already imported from chat.jsonl before, skipped" in grown
    assert contents(db, "chat")[-2:] == ["thanks", "You're welcome."] and len(contents(db, "chat")) == 4

    # Into another world it is another import: the same lines are that world's history too.
    assert "imported 4 messages into world other" in cli(db, "import", "jsonl", str(source), "--world", "other")


def test_importing_a_locomo_file_twice_stores_it_once(tmp_path: Path) -> None:
    source = tmp_path / "locomo.json"
    source.write_text(json.dumps(LOCOMO_SAMPLE), encoding="utf-8")
    db = tmp_path / "r.db"
    assert "imported 3 messages into 1 worlds" in cli(db, "import", "locomo", str(source))
    # The console script a user runs, in a process of its own.
    script = Path(sys.executable).parent / "recall"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RECALL_")}, "COLUMNS": "200"}
    done = subprocess.run(
        [str(script), "--db", str(db), "import", "locomo", str(source)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "imported 0 messages into 1 worlds; 3 already imported from locomo.json before, skipped" in done.stdout
    assert len(contents(db, "locomo-conv-1")) == 3


def test_the_python_importers_are_idempotent_too(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "chat.jsonl", LINES)
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps(LOCOMO_SAMPLE), encoding="utf-8")
    with Recall(tmp_path / "r.db", QUICK) as mem:
        assert store_conversation(mem, read_jsonl(source)) == 3
        assert store_conversation(mem, read_jsonl(source)) == 0
        again = import_conversation(mem, read_jsonl(source))
        assert (again.stored, again.skipped) == (0, 3)
        for expected in ((3, 0), (0, 3)):
            done = import_conversation(mem, read_locomo(locomo)[0])
            assert (done.stored, done.skipped) == expected
        assert len(mem.world("chat").messages()) == 3
        assert len(mem.world("locomo-conv-1").messages()) == 3


def test_a_file_that_is_not_utf8_is_refused_by_line(tmp_path: Path) -> None:
    source = tmp_path / "chat.jsonl"
    source.write_bytes(json.dumps(LINES[0]).encode() + b"\n" + b'{"role": "user", "content": "caf\xe9"}\n')
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "r.db"), "import", "jsonl", str(source)])
    assert result.exit_code == 1
    assert "line 2" in result.output and "not UTF-8" in result.output
