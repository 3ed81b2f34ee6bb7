"""Deleting and exporting: `recall world|agent|human delete`, `recall delete-message`, `recall
export` and `recall import-world`. Deletions print what went as JSON and, without `--yes`, ask
first; an export is JSON lines (on stdout, or `-o FILE`) that `import-world` takes back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from recall.cli.shared import err, fail, open_recall, print_json, tenant

Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
Erase = Annotated[
    bool,
    typer.Option(help="Also delete every message it sent (and, for a human, its user:ID facts in the world's tenant)."),
]


def _confirm(what: str, yes: bool) -> None:
    if not yes and not typer.confirm(f"Delete {what}? This cannot be undone", err=True):
        fail("nothing was deleted (pass --yes to delete without asking)")


def world_delete(world: str, yes: Yes = False) -> None:
    """Delete a world and everything in it; prints what went as JSON.

    Its humans' user:ID facts stay: they belong to the tenant (human delete --erase removes them)."""
    with open_recall() as mem:
        handle = mem.world(world, tenant=tenant())
        _confirm(f"world {handle.id!r} and everything in it", yes)
        print_json(handle.delete())


def agent_delete(world: str, agent_id: str, erase: Erase = False, yes: Yes = False) -> None:
    """Delete an agent and what was private to it; prints what went as JSON.

    The messages it wrote stay (others heard them) unless --erase."""
    with open_recall() as mem:
        handle = mem.world(world, tenant=tenant())
        _confirm(f"agent {agent_id!r} of world {handle.id!r}" + (" and every message it sent" if erase else ""), yes)
        print_json(handle.delete_agent(agent_id, erase=erase))


def human_delete(world: str, human_id: str, erase: Erase = False, yes: Yes = False) -> None:
    """Delete a human, or with --erase everything known about them; prints what went as JSON.

    --erase also deletes the messages they sent in the world and their user:ID facts."""
    with open_recall() as mem:
        handle = mem.world(world, tenant=tenant())
        detail = ", every message they sent and their user facts" if erase else ""
        _confirm(f"human {human_id!r} of world {handle.id!r}{detail}", yes)
        print_json(handle.delete_human(human_id, erase=erase))


def delete_message(world: str, message_id: int, yes: Yes = False) -> None:
    """Delete one message with its deliveries; prints what went as JSON.

    Replies to it become replies to its parent (or start their thread)."""
    with open_recall() as mem:
        handle = mem.world(world, tenant=tenant())
        _confirm(f"message {message_id} of world {handle.id!r}", yes)
        print_json(handle.delete_message(message_id))


def export(
    world: str,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")] = None,
) -> None:
    """Export a world as JSON lines (recall.world/1), for import-world.

    Every message, delivery, read flag, participant, memory, note and fact, ids and times kept."""
    with open_recall() as mem:
        handle = mem.world(world, tenant=tenant())
        if output is None:
            handle.export_to(sys.stdout)
            return
        counts = handle.export_to(output)
        err.print(f"exported world {handle.id} to {output}: " + _summary(counts), highlight=False)


def import_world(
    file: Annotated[str, typer.Argument(help="An export (recall export … -o FILE), or - for stdin.")],
) -> None:
    """Import a world from an export; prints the world and what it held as JSON.

    Into --tenant, else the export's tenant. A bad line or a taken world or id writes nothing."""
    with open_recall(create=True) as mem:
        # Bytes: the import reports a line that is not UTF-8 by its number.
        if file == "-":
            world = mem.service.exports.import_world(sys.stdin.buffer, tenant())
        else:
            path = Path(file)
            if not path.is_file():
                fail(f"cannot read {file}: no such file")
            with path.open("rb") as source:
                world = mem.service.exports.import_world(source, tenant())
        print_json({"world": world.world.id, "tenant": world.world.tenant, "imported": world.counts})


#: Record types of an export as a person counts them (one, many); the others are bookkeeping.
_NOUNS = {
    "world": ("world", "worlds"),
    "participant": ("participant", "participants"),
    "chat": ("chat", "chats"),
    "message": ("message", "messages"),
    "delivery": ("delivery", "deliveries"),
    "observation": ("observation", "observations"),
    "note": ("agent note", "agent notes"),
    "memory": ("memory", "memories"),
    "fact": ("fact", "facts"),
    "fact_sections": ("scope's summary", "scopes' summaries"),
}


def _summary(counts: dict[str, Any]) -> str:
    """`1 world, 4 participants, 7 messages, …`, then how many bookkeeping records (read marks,
    counters, context sessions) came along."""
    shown = [f"{n} {_NOUNS[kind][n != 1]}" for kind, n in counts.items() if kind in _NOUNS and n]
    other = sum(n for kind, n in counts.items() if kind not in _NOUNS)
    if other:
        shown.append(f"and {other} record{'s' if other != 1 else ''} of read state and counters")
    return ", ".join(shown)
