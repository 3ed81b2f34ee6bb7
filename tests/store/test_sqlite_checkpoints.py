"""Checkpoints beside the writer (`store/sqlite_checkpoints.py`): what a commit writes to the WAL
reaches the database file without the writer copying it, and the checkpointing thread ends
with its store."""

from __future__ import annotations

import gc
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from recall.store import sqlite_checkpoints
from recall.store.sqlite import SQLiteStore


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        time.sleep(0.005)


def in_database_file(path: Path, sql: str) -> list[tuple[object, ...]]:
    """Rows read from the database file alone, not its WAL (`immutable` ignores the WAL)."""
    db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "recall-checkpoints"]


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_checkpoints, "CHECKPOINT_EVERY", 0.01)


@pytest.mark.usefixtures("quick")
def test_a_commit_reaches_the_database_file_without_the_writer_copying_it(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    try:
        # The writer itself would not checkpoint before ~8,000 pages of WAL.
        assert store._read("PRAGMA wal_autocheckpoint") == [(8000,)]
        checkpoints = store._checkpoints
        assert checkpoints is not None
        before = checkpoints.runs
        store.create_world("w", "W", None, datetime.now(UTC))
        wait_until(lambda: checkpoints.runs > before, "a checkpoint after the commit")
        assert in_database_file(path, "SELECT id FROM worlds") == [("w",)]
    finally:
        store.close()


@pytest.mark.usefixtures("quick")
def test_no_checkpoint_without_a_commit(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        checkpoints = store._checkpoints
        assert checkpoints is not None
        store._read("SELECT COUNT(*) FROM worlds")  # reads are not commits
        assert not checkpoints._committed.is_set()
        assert checkpoints.runs == 0
    finally:
        store.close()


def test_the_thread_ends_at_close_or_when_the_store_is_dropped(tmp_path: Path) -> None:
    already = set(checkpoint_threads())
    closed = SQLiteStore(tmp_path / "closed.db")
    (started,) = set(checkpoint_threads()) - already
    closed.close()
    assert not started.is_alive()
    closed.close()  # closing twice is harmless

    dropped = SQLiteStore(tmp_path / "dropped.db")
    (started,) = set(checkpoint_threads()) - already
    del dropped
    gc.collect()
    started.join(timeout=10)
    assert not started.is_alive()


def test_a_store_in_memory_has_no_checkpoint_thread() -> None:
    already = set(checkpoint_threads())
    store = SQLiteStore(":memory:")
    try:
        assert store._checkpoints is None
        assert set(checkpoint_threads()) == already
    finally:
        store.close()


def test_closed_from_its_own_thread_it_stops_and_closes_its_connection(tmp_path: Path) -> None:
    """A store dropped in a garbage collection that happens to run on the checkpoint thread
    closes its checkpointer there: no join of the thread by itself, and the connection still
    closes."""
    closed = threading.Event()

    class Connection:
        def __init__(self) -> None:
            self.real = sqlite3.connect(tmp_path / "s.db", check_same_thread=False)

        def execute(self, sql: str) -> sqlite3.Cursor:
            checkpointer.close()  # as a finalizer run on this thread would
            return self.real.execute(sql)

        def close(self) -> None:
            self.real.close()
            closed.set()

    checkpointer = sqlite_checkpoints.Checkpointer(Connection, every=0.0)
    checkpointer.committed()
    checkpointer._thread.join(timeout=10)
    assert not checkpointer._thread.is_alive()
    assert closed.is_set()


def test_a_close_that_lands_between_the_wait_and_the_next_turn_still_ends_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread's timed wait ended just before close() set its flags; the thread then clears the
    wake-up close() gave it. It must still see that it is closing, not wait for a commit forever."""
    real_event = threading.Event
    made: list[threading.Event] = []

    class ClosedJustBeforeClear(real_event):  # type: ignore[valid-type,misc]
        def clear(self) -> None:
            made[1].set()  # the closing flag: what close() does first, landing right here
            super().clear()

    def event() -> threading.Event:  # the checkpointer's first event is its wake-up, the second its closing flag
        made.append(ClosedJustBeforeClear() if not made else real_event())
        return made[-1]

    monkeypatch.setattr(sqlite_checkpoints.threading, "Event", event)
    checkpointer = sqlite_checkpoints.Checkpointer(
        lambda: sqlite3.connect(tmp_path / "db.sqlite", check_same_thread=False), every=0.0
    )
    monkeypatch.setattr(sqlite_checkpoints.threading, "Event", real_event)
    checkpointer.committed()
    checkpointer._thread.join(timeout=30)
    assert not checkpointer._thread.is_alive(), "the thread waits for a commit after close()"
