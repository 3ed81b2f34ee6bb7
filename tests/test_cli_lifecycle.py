"""`recall world|agent|human delete`, `recall delete-message`, `recall export` and
`recall import-world`: what they print, what they ask, and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall import Recall, Settings
from recall.cli import app

runner = CliRunner()


def recall(db: Path, *args: str, ok: bool = True, input: str | None = None) -> str:
    result = runner.invoke(app, ["--db", str(db), *args], input=input)
    assert result.exit_code == (0 if ok else 1), result.output
    return result.output


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "cli.db"
    recall(path, "world", "create", "w")
    recall(path, "agent", "add", "w", "agent-a")
    recall(path, "human", "add", "w", "maria")
    recall(path, "human", "add", "w", "bob")
    recall(path, "post", "w", "--sender", "maria", "@agent-a my parcel is late")
    recall(path, "post", "w", "--sender", "bob", "@agent-a hello")
    recall(path, "facts", "add", "user:maria", "Lives in Lisbon")
    return path


def facts(db: Path, scope: str = "user:maria") -> list[dict[str, object]]:
    return list(json.loads(recall(db, "facts", "list", scope, "--json"))["facts"])


def message_ids(db: Path) -> list[int]:
    return [json.loads(line)["id"] for line in recall(db, "messages", "w").splitlines()]


def test_export_and_import_world_round_trip_through_a_file(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "w.jsonl"
    assert "exported world w to" in recall(db, "export", "w", "-o", str(out))
    lines = out.read_text().splitlines()
    assert recall(db, "export", "w").splitlines()[1:] == lines[1:]  # stdout: the same records
    target = tmp_path / "new.db"  # import-world creates the store
    printed = json.loads(recall(target, "import-world", str(out)))
    counts = {"world": 1, "participant": 3, "chat": 1, "message": 2, "delivery": 2, "memory_count": 1, "fact": 1}
    assert printed == {"world": "w", "tenant": "", "imported": counts}
    assert message_ids(target) == message_ids(db)
    assert "already exists" in recall(target, "import-world", str(out), ok=False)
    # Into another tenant (from stdin) the world id is free, but not the message ids.
    taken = recall(target, "--tenant", "acme", "import-world", "-", input=out.read_text(), ok=False)
    assert "already holds 2 message id(s)" in taken and "nothing was imported" in taken
    assert "no such file" in recall(target, "import-world", str(tmp_path / "missing.jsonl"), ok=False)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines[:-1]) + "\n")
    assert "cut short" in recall(tmp_path / "other.db", "import-world", str(broken), ok=False)
    broken.write_bytes(out.read_bytes().replace(b'"maria"', b'"mar\xeda"', 1))
    assert "line 4: is not UTF-8" in recall(tmp_path / "other.db", "import-world", str(broken), ok=False)


def test_deleting_asks_first_unless_told_yes(db: Path) -> None:
    first, second = message_ids(db)
    assert "nothing was deleted" in recall(db, "delete-message", "w", str(first), input="n\n", ok=False)
    assert message_ids(db) == [first, second]
    answer = recall(db, "delete-message", "w", str(first), input="y\n")
    deleted = json.loads(answer[answer.index("{") :])
    assert deleted["deleted"] is True and deleted["messages"] == 1
    assert message_ids(db) == [second]
    assert f"no message {first} in world 'w'" in recall(db, "delete-message", "w", str(first), "--yes", ok=False)


def test_erasing_a_human_and_deleting_an_agent_and_the_world(db: Path) -> None:
    erased = json.loads(recall(db, "human", "delete", "w", "maria", "--erase", "--yes"))
    assert erased["messages"] == 1 and erased["facts"] == 1 and erased["participants"] == 1
    assert json.loads(recall(db, "facts", "list", "user:maria", "--json"))["facts"] == []
    kept = json.loads(recall(db, "human", "delete", "w", "bob", "-y"))
    assert kept["messages"] == 0 and len(message_ids(db)) == 1
    assert "unknown human 'bob'" in recall(db, "human", "delete", "w", "bob", "-y", ok=False)
    assert json.loads(recall(db, "agent", "delete", "w", "agent-a", "-y"))["deliveries"] == 1
    assert json.loads(recall(db, "world", "delete", "w", "-y"))["messages"] == 1
    assert "unknown world 'w'" in recall(db, "world", "delete", "w", "-y", ok=False)


def test_backup_delete_and_restore_in_one_store(db: Path, tmp_path: Path) -> None:
    """Issue 24: export, world delete, import-world failed on the `user:` fact the delete keeps."""
    out = tmp_path / "w.jsonl"
    said = recall(db, "export", "w", "-o", str(out))
    assert said.strip().endswith(
        "1 world, 3 participants, 1 chat, 2 messages, 2 deliveries, 1 fact, and 1 record of read state and counters"
    )
    recall(db, "world", "delete", "w", "--yes")
    assert [f["content"] for f in facts(db)] == ["Lives in Lisbon"]
    printed = json.loads(recall(db, "import-world", str(out)))
    assert printed["imported"]["message"] == 2 and "fact" not in printed["imported"]  # the fact was still here
    assert [json.loads(line)["content"] for line in recall(db, "messages", "w").splitlines()] == [
        "@agent-a my parcel is late",
        "@agent-a hello",
    ]
    with Recall(db, Settings(index_interval=0)) as mem:
        assert [h.text for h in mem.search("user:maria", "Lisbon")] == ["Lives in Lisbon"]  # indexed once
    # A different fact under the exported fact's id is still a conflict, and says so.
    recall(db, "world", "delete", "w", "--yes")
    recall(db, "facts", "delete", "user:maria", str(facts(db)[0]["id"]))
    recall(db, "facts", "add", "user:maria", "Moved to Porto")
    changed = out.read_text().replace('"Lives in Lisbon"', '"Lives in Faro"')
    taken = recall(db, "import-world", "-", input=changed, ok=False)
    assert "nothing was imported" in taken


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_an_export_never_overwrites_the_store(db: Path, suffix: str) -> None:
    """Issue 23: `recall export W -o <the store file>` emptied the store (0 bytes, a traceback)."""
    before = db.read_bytes()
    target = Path(f"{db}{suffix}")
    output = recall(db, "export", "w", "-o", str(target), ok=False)
    assert "error:" in output and "store" in output and "Traceback" not in output
    assert len(output.strip().splitlines()) == 1
    assert db.read_bytes() == before
    assert len(message_ids(db)) == 2  # the store still answers, whole


def test_an_export_to_a_missing_folder_is_one_line_and_leaves_nothing(db: Path, tmp_path: Path) -> None:
    output = recall(db, "export", "w", "-o", str(tmp_path / "missing" / "dir" / "x.jsonl"), ok=False)
    assert output.strip().count("\n") == 0 and "no such folder" in output and "Traceback" not in output
    assert not (tmp_path / "missing").exists()


def test_an_export_replaces_its_file_only_once_it_is_whole(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "w.jsonl"
    out.write_text("an older export\n")
    recall(db, "export", "w", "-o", str(out))
    assert out.read_text().splitlines()[-1].startswith('{"record": "end"')
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["cli.db", "w.jsonl", *[p.name for p in tmp_path.glob("cli.db-*")]]
    )
