"""`recall --db`: a command that only reads or adds to a store needs one to exist (a typo must
not leave an empty store behind); a command that creates may create the file but not missing
folders; a bad location (a folder, an unwritable place, a file that is not a store, a bad
PostgreSQL URL) is one line on stderr and exit status 1 on every command, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from recall.cli import app
from tests.store.test_locations import unwritable_place

runner = CliRunner()


@pytest.fixture(autouse=True)
def _work_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative names resolve in the test's folder: even a failing run writes nothing into
    the repository (the old code made a folder named after a Path-mangled URL there)."""
    monkeypatch.chdir(tmp_path)


#: Commands that need an existing store (they read it, or add to a world that must exist).
NEEDS_A_STORE: list[list[str]] = [
    ["world", "list"],
    ["agent", "add", "w", "bot"],
    ["human", "add", "w", "maria"],
    ["post", "w", "hello", "--sender", "maria"],
    ["messages", "w"],
    ["inbox", "w", "bot"],
    ["context", "w", "bot"],
    ["facts", "list", "user:maria"],
    ["facts", "update", "user:maria", "1", "--content", "x"],
    ["facts", "delete", "user:maria", "1"],
    ["facts", "clear", "user:maria"],
    ["facts", "export", "user:maria"],
    ["facts", "extract", "w", "bot"],
    ["memory", "add", "w", "a note"],
    ["memory", "list", "w"],
    ["search", "w", "hello"],
    ["index", "--once"],
    ["mcp"],
]


def creating_commands(tmp_path: Path) -> list[list[str]]:
    """Commands that may create the store (their inputs written to `tmp_path`)."""
    jsonl = tmp_path / "chat.jsonl"
    jsonl.write_text(json.dumps({"role": "user", "name": "ana", "content": "hi"}) + "\n")
    locomo = tmp_path / "locomo.json"
    locomo.write_text("[]")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"facts": [], "sections": {}}))
    return [
        ["world", "create", "w"],
        ["import", "jsonl", str(jsonl)],
        ["import", "locomo", str(locomo)],
        ["facts", "add", "user:maria", "Likes tea"],
        ["facts", "import", "user:maria", str(facts)],
    ]


def run(db: str | Path, *args: str) -> Result:
    return runner.invoke(app, ["--db", str(db), *args])


def assert_one_line_error(result: Result, *expected: str) -> str:
    """Exit status 1 and one line on stderr holding `expected`; no traceback."""
    assert result.exit_code == 1, result.output
    assert not isinstance(result.exception, Exception), result.exception  # only the SystemExit of the error
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for text in expected:
        assert text in lines[0], result.output
    return lines[0]


@pytest.mark.parametrize("command", NEEDS_A_STORE, ids=" ".join)
def test_a_missing_store_is_an_error_and_is_not_created(command: list[str], tmp_path: Path) -> None:
    typo = tmp_path / "teem.db"
    result = run(typo, *command)
    assert_one_line_error(result, f"no recall store at {typo}", f"create one with `recall --db {typo} world create ID`")
    assert list(tmp_path.iterdir()) == []


def test_a_missing_store_named_by_recall_db_says_how_to_create_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECALL_DB", str(tmp_path / "env.db"))
    result = runner.invoke(app, ["world", "list"])
    assert_one_line_error(result, f"no recall store at {tmp_path / 'env.db'}", "`recall world create ID`")
    assert list(tmp_path.iterdir()) == []


def test_migrate_needs_an_existing_source(tmp_path: Path) -> None:
    missing = tmp_path / "old.db"
    result = runner.invoke(app, ["migrate", "--from", str(missing), "--to", "postgresql://u@localhost/x"])
    assert_one_line_error(result, f"no recall store at {missing}")
    assert list(tmp_path.iterdir()) == []


def test_creating_commands_create_the_file(tmp_path: Path) -> None:
    for number, command in enumerate(creating_commands(tmp_path)):
        db = tmp_path / f"new-{number}.db"
        result = run(db, *command)
        assert result.exit_code == 0, (command, result.output)
        assert db.is_file(), command
    assert run(tmp_path / "new-0.db", "world", "list").exit_code == 0  # and the store is there to read


def test_creating_commands_do_not_create_missing_folders(tmp_path: Path) -> None:
    db = tmp_path / "no" / "such" / "dir" / "x.db"
    for command in creating_commands(tmp_path):
        result = run(db, *command)
        assert_one_line_error(result, f"cannot create {db}", f"folder {db.parent} does not exist")
    result = runner.invoke(app, ["serve", "--db", str(db)])
    assert_one_line_error(result, f"cannot create {db}", "does not exist")
    result = runner.invoke(app, ["demo", "--db", str(db)])
    assert_one_line_error(result, f"cannot create {db}", "does not exist")
    assert not (tmp_path / "no").exists()


def bad_locations(tmp_path: Path) -> dict[str, tuple[str, str, str]]:
    """A bad --db of each kind, and what its error says to a command that needs a store and
    to one that creates."""
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("plain text, not a database\n" * 50)
    unwritable = str(unwritable_place(tmp_path))
    url = "postgresql://u:hunter2@localhost/db?nonsense=1"
    return {
        "directory": (str(tmp_path), "is a directory", "is a directory"),
        "unwritable": (unwritable, f"no recall store at {unwritable}", f"cannot open {unwritable}"),
        "not sqlite": (str(not_sqlite), "not a recall store", "not a recall store"),
        "bad url": (url, "cannot connect to PostgreSQL", "cannot connect to PostgreSQL"),
        "path-mangled url": ("postgresql:/u:hunter2@localhost/db", "PostgreSQL URL", "PostgreSQL URL"),
        "other database's url": ("mysql://u:hunter2@host/db", "is a mysql URL", "postgresql://"),
        "path-mangled other url": ("mysql:/u:hunter2@localhost", "is a mysql URL", "a SQLite file"),
    }


@pytest.mark.parametrize(
    "kind",
    [
        "directory",
        "unwritable",
        "not sqlite",
        "bad url",
        "path-mangled url",
        "other database's url",
        "path-mangled other url",
    ],
)
def test_a_bad_location_is_one_line_on_every_command(kind: str, tmp_path: Path) -> None:
    location, needs, creates = bad_locations(tmp_path)[kind]
    creating = creating_commands(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    for commands, expected in ((NEEDS_A_STORE, needs), (creating, creates)):
        for command in commands:
            assert "hunter2" not in assert_one_line_error(run(location, *command), expected)
    for command in (["serve", "--db", location], ["demo", "--db", location]):
        assert "hunter2" not in assert_one_line_error(runner.invoke(app, command), creates)
    to = "postgresql://u@localhost/x"
    assert_one_line_error(runner.invoke(app, ["migrate", "--from", location, "--to", to]), needs)
    assert sorted(tmp_path.rglob("*")) == before  # nothing left behind


def test_the_installed_command_prints_no_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "recall"), "--db", str(tmp_path), "world", "list"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: cannot open {tmp_path}: it is a directory, not a store file"


def test_help_says_db_takes_a_postgres_url() -> None:
    for command in ([], ["serve"]):
        result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0
        assert "postgresql://" in result.output, result.output
