"""Posts other processes store in a SQLite file, noticed by looking (SQLite cannot announce them).

A script or the CLI writing the file a server serves commits through its own connection: no
notification reaches the server. `PostWatch` looks every POLL_SECONDS on the store's own
connection, where `PRAGMA data_version` moves only with other connections' commits, and when it
moved reads the messages stored since it last looked. One cheap statement a look (a counter and
the highest message id, from one snapshot), so it may look a few times a second; the server's
posts, which its own connection commits, are no news to it.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

from recall.store.base import PostListener

logger = logging.getLogger("recall.store")

#: Seconds between looks: a post by another process wakes the waiting checks within about this.
POLL_SECONDS = 0.25
#: Message ids one announcement names at most; past that, their world is told something changed.
ANNOUNCED_IDS = 200
#: One snapshot: a commit of another process between two statements would otherwise be missed.
_LOOK = "SELECT data_version, (SELECT COALESCE(MAX(id), 0) FROM messages) FROM pragma_data_version"


class _Readable(Protocol):
    def _read(self, sql: str, params: Any = ...) -> list[Any]: ...


class PostWatch:
    """`PostAnnouncer` of a SQLite store: tells `on_post` (world key, message ids) about the
    messages other processes stored, from a thread of its own, until `stop` is set."""

    def __init__(self, store: _Readable, interval: float = POLL_SECONDS) -> None:
        # Weakly: the store holds its watch, and a store dropped without `close` must still be
        # collected at once (its checkpoint thread ends with it).
        self._store = weakref.ref(store)
        self.interval = interval

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        store = self._store()
        if store is None:
            raise RuntimeError("the store is gone")
        return store._read(sql, params)

    def listen(self, on_post: PostListener, stop: threading.Event) -> threading.Thread:
        version, seen = self._look()

        def run() -> None:
            nonlocal version, seen
            while not stop.wait(self.interval) and self._store() is not None:
                try:
                    now, newest = self._look()
                    if now != version and newest > seen:
                        self._announce(seen, newest, on_post)
                    # Told, or (the counter unmoved) all this process's own: seen either way.
                    version, seen = now, max(seen, newest)
                except Exception:  # the thread must outlive a busy or failing read
                    logger.exception("looking for other processes' posts failed; looking again")

        thread = threading.Thread(target=run, name="recall-sqlite-posts", daemon=True)
        thread.start()
        return thread

    def _look(self) -> tuple[int, int]:
        row = self._read(_LOOK)[0]
        return int(row[0]), int(row[1])

    def _announce(self, after: int, upto: int, on_post: PostListener) -> None:
        """The messages stored after id `after` up to `upto`, by world, oldest first (their
        worlds alone when too many)."""
        rows = self._read(
            "SELECT id, world_id FROM messages WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
            (after, upto, ANNOUNCED_IDS + 1),
        )
        if len(rows) > ANNOUNCED_IDS:
            for (world,) in self._read(
                "SELECT DISTINCT world_id FROM messages WHERE id > ? AND id <= ?", (after, upto)
            ):
                on_post(str(world), None)
            return
        by_world: dict[str, list[int]] = defaultdict(list)
        for message_id, world in rows:
            by_world[str(world)].append(int(message_id))
        for world, ids in by_world.items():
            on_post(world, ids)
