"""The messages a server woke its waiting checks with, remembered a few seconds' worth."""

from __future__ import annotations

from collections import deque

#: Ids of the messages this server announced that it remembers: a few seconds of posts, more
#: than lie between two looks of SQLite's `PostWatch`.
REMEMBERED = 8192


class RecentPosts:
    """The ids of the latest REMEMBERED messages the server woke its checks with. Written on the
    event loop; read from the listening thread, where a miss only costs a woken check a read."""

    def __init__(self, size: int = REMEMBERED) -> None:
        self._order: deque[int] = deque()
        self._ids: set[int] = set()
        self._size = size

    def add(self, message_id: int) -> None:
        if message_id in self._ids:
            return
        self._order.append(message_id)
        self._ids.add(message_id)
        while len(self._order) > self._size:
            self._ids.discard(self._order.popleft())

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids
