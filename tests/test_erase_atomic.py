"""Issue 23, point 5: an erase (and a world or message delete) and the search index's forgetting
are one transaction. Before, the store's delete committed first; a SIGKILL before the index
forgot left the erased words searchable after a restart, and erasing again answered 404.

Each case runs in a child process that kills itself (SIGKILL) at the worst moment: as the index
starts to remove the items. After it, the store and the index agree: either the delete happened
in full, or not at all and doing it again works. Both stores."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from recall import Recall, Settings

QUICK = Settings(index_interval=0, embeddings="none")
SECRET = "zanzibar"

#: The child: erase/delete, killed as the index removes the first item.
CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from recall import Recall, Settings
    from recall.search import sqlite as sqlite_search, postgres as postgres_search

    def die(*_args, **_kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    for backend in (sqlite_search.SQLiteSearch, postgres_search.PostgresSearch):
        backend.delete_items = die
    with Recall(sys.argv[1], Settings(index_interval=0, embeddings="none")) as mem:
        world = mem.world("w")
        what = sys.argv[2]
        if what == "erase":
            world.delete_human("maria", erase=True)
        elif what == "message":
            world.delete_message(int(sys.argv[3]))
        else:
            world.delete()
    """
)


def found(mem: Recall) -> bool:
    if not [w for w in mem.worlds() if w.id == "w"]:
        return False
    return any(SECRET in r.text for r in mem.world("w").search(SECRET, method="bm25"))


@pytest.mark.parametrize("what", ["erase", "message", "world"])
def test_a_kill_while_the_index_forgets_leaves_store_and_index_agreeing(store_location: str, what: str) -> None:
    with Recall(store_location, QUICK) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("desk")
        secret = world.post("maria", f"@desk my door code is {SECRET}")
        world.post("desk", "noted")
        mem.refresh_index()
        assert found(mem)
    args = [sys.executable, "-c", CHILD, store_location, what, str(secret.id)]
    child = subprocess.run(args, capture_output=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    with Recall(store_location, QUICK) as mem:
        mem.refresh_index()
        # Nothing was deleted: the words are still there, and the delete can be done again.
        assert found(mem)
        world = mem.world("w")
        if what == "erase":
            world.delete_human("maria", erase=True)
        elif what == "message":
            world.delete_message(secret.id)
        else:
            world.delete()
        mem.refresh_index()
        assert not found(mem)
