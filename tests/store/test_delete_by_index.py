"""Deleting a message finds its replies through an index, not by reading every newer message
of its world (issue 27's scaling table: delete_message grew 18× from 1,000 to 100,000 messages)."""

from __future__ import annotations

from recall import Recall


def test_a_deleted_messages_replies_move_to_its_parent(mem: Recall) -> None:
    world = mem.world("w", create=True)
    world.add_human("maria")
    root = world.post("maria", "first")
    middle = world.post("maria", "second", parent=root.id)
    reply = world.post("maria", "third", parent=middle.id)
    world.delete_message(middle)
    moved = [m for m in world.messages() if m.id == reply.id]
    assert moved and moved[0].parent_id == root.id


def test_the_replies_are_found_by_the_parent_index(mem: Recall) -> None:
    plan = mem.service.store._read(
        "EXPLAIN QUERY PLAN SELECT id, parent_id FROM messages WHERE world_id = ? AND id > ?"
        " AND parent_id IS NOT NULL AND parent_id IN (?, ?)",
        ("w", 1, 2, 3),
    )
    assert "messages_by_parent" in " ".join(str(row[-1]) for row in plan)
