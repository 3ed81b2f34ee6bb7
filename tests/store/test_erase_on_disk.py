"""Issue 23, point 4: after an erase the erased text was still readable in the SQLite file (136
copies after close) and in its `-wal` (777 while open). Freed pages are now zeroed
(`secure_delete`) and a deletion checkpoints the WAL and truncates it."""

from __future__ import annotations

from pathlib import Path

import pytest

from recall import Recall, Settings

SECRET = b"zanzibar-door-code-4711"


def copies(db: Path) -> int:
    """Occurrences of the secret in the store's files (the database, its WAL and shared memory)."""
    return sum(path.read_bytes().count(SECRET) for path in db.parent.glob(db.name + "*") if path.is_file())


@pytest.mark.parametrize("how", ["erase", "message", "world"])
def test_erased_text_leaves_no_readable_copy_on_disk(tmp_path: Path, how: str) -> None:
    db = tmp_path / "erase.db"
    with Recall(db, Settings(index_interval=0, embeddings="none")) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("desk")
        secret = None
        for i in range(50):  # enough rows that pages split and the text is copied around
            posted = world.post("maria", f"@desk {SECRET.decode()} number {i}" if i % 10 == 0 else f"@desk chat {i}")
            secret = secret or posted
            world.post("desk", f"reply {i} " + "x" * 200)
        mem.refresh_index()
        assert copies(db) > 0
        if how == "erase":
            world.delete_human("maria", erase=True)
        elif how == "message":
            for m in world.messages(limit=200):
                if SECRET.decode() in m.content:
                    world.delete_message(m.id)
        else:
            world.delete()
        assert copies(db) == 0, "readable while the store is open"
    assert copies(db) == 0, "readable after close"
