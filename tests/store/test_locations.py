"""Where a store lives, and what recall does with a location it cannot use: a PostgreSQL URL
mangled into a `Path` is refused (never opened as a SQLite file named after the URL), and a
directory, an unwritable place or a file that is not a recall store gives one clear error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from recall import Recall, Settings
from recall.errors import InvalidInputError, RecallError
from recall.store import SQLiteStore, open_store

SETTINGS = Settings(embeddings="none", index_interval=0)


def unwritable_place(tmp_path: Path) -> Path:
    """A file name in a folder nobody may write to (as root: /proc)."""
    if os.geteuid() == 0:
        return Path("/proc/recall-test.db")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder / "recall.db"


@pytest.mark.parametrize(
    "url", ["postgresql://recall:hunter2@db.example:5432/recall", "postgres://recall:hunter2@db.example/recall"]
)
def test_a_postgres_url_given_as_a_path_is_refused_not_opened_as_a_file(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    mangled = Path(url)  # pathlib collapses '//': postgresql:/recall:hunter2@…
    assert str(mangled).count("//") == 0
    with pytest.raises(InvalidInputError) as info:
        Recall(mangled, SETTINGS)
    message = str(info.value)
    assert "PostgreSQL URL" in message and "str" in message
    assert "hunter2" not in message
    assert list(tmp_path.iterdir()) == []  # no folder named after the URL, password included


@pytest.mark.parametrize("location", ["postgresql://u:hunter2@h/db", "postgres:/u:hunter2@h/db"])
def test_the_sqlite_store_never_takes_a_url_for_a_file_name(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInputError, match="PostgreSQL URL") as info:
        SQLiteStore(location)
    assert "hunter2" not in str(info.value)
    if not location.startswith("postgresql://"):  # open_store takes that one to PostgreSQL
        with pytest.raises(InvalidInputError, match="PostgreSQL URL"):
            open_store(location)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("location", ["mysql://u:hunter2@h/db", "redis:/u:hunter2@h:6379", "sqlite:///x.db"])
def test_a_url_of_another_database_names_the_schemes_recall_opens(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInputError, match="postgresql://") as info:
        Recall(location)
    assert f"is a {location.partition(':')[0]} URL" in str(info.value) and "a SQLite file" in str(info.value)
    assert "hunter2" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(RecallError, match=f"cannot open {tmp_path}: it is a directory"):
        Recall(tmp_path, SETTINGS)


def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 100)
    with pytest.raises(RecallError, match=f"cannot open {notes}: .*not a recall store"):
        Recall(notes, SETTINGS)
    assert notes.read_text() == "not a database\n" * 100


def test_an_unwritable_place_is_a_clear_error(tmp_path: Path) -> None:
    place = unwritable_place(tmp_path)
    with pytest.raises(RecallError, match=f"cannot open {place}: unable to open"):
        Recall(place, SETTINGS)
    assert not place.exists()


def test_a_folder_under_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(RecallError, match="cannot create .*file/sub/recall.db"):
        Recall(tmp_path / "file" / "sub" / "recall.db", SETTINGS)


def test_recall_still_creates_a_new_file_and_its_folders(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b" / "recall.db"
    with Recall(nested, SETTINGS) as mem:
        mem.world("w", create=True)
    assert nested.is_file()
