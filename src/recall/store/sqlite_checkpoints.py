"""Checkpoints beside the writer: the WAL is copied into the database by a thread and a
connection of their own, so that no commit waits for the copy.

SQLite checkpoints inside the commit that takes the WAL past `wal_autocheckpoint` pages: with a
post to 1,000 agents writing ~80 pages, one post in ~100 copied 8,000 pages and synced the file
before it returned (40-57 ms, against ~4 ms for the others). Here the copy runs at most once a
`CHECKPOINT_EVERY` after a commit, PASSIVE (it never waits for a writer or a reader, nor holds
one up), and the WAL starts over at the next write once everything in it is copied. When the
writes never pause long enough for that, the writer's own autocheckpoint is still the bound on
the WAL's size, with less left to copy.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("recall.store")

#: Seconds between two checkpoints at most; the commits in between are copied together (a
#: page rewritten by many posts is copied once).
CHECKPOINT_EVERY = 1.0


class Checkpointer:
    """Checkpoints a WAL database on its own connection (`connect()`) and thread, after commits
    (`committed`), until `close`."""

    def __init__(self, connect: Callable[[], Any], every: float = CHECKPOINT_EVERY) -> None:
        self._db = connect()
        self._every = every
        self._committed = threading.Event()
        self._closing = threading.Event()
        #: Checkpoints run so far.
        self.runs = 0
        self._thread = threading.Thread(target=self._run, name="recall-checkpoints", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """A write committed: the WAL has new pages to copy."""
        self._committed.set()

    def _run(self) -> None:
        try:
            while True:
                self._committed.wait()
                # The commits of the next `every` seconds join this checkpoint.
                if self._closing.wait(self._every):
                    return
                self._committed.clear()
                if self._closing.is_set():  # close() came between the wait and the clear: its wake-up is gone
                    return
                try:
                    self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.runs += 1
                except Exception:  # noqa: BLE001 - the writer's autocheckpoint still bounds the WAL
                    logger.exception("a checkpoint beside the writer failed")
        finally:
            self._db.close()  # the thread's own connection, closed by the thread

    def close(self) -> None:
        """Stop the thread (a checkpoint under way finishes first; its connection closes with it)."""
        self._closing.set()
        self._committed.set()
        # A store dropped during a collection that runs on this very thread ends it here: the
        # thread then stops at its next turn.
        if threading.current_thread() is not self._thread:
            self._thread.join()
