"""`recall memory …`: long-term memories of a world, shared or private to one agent."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from recall.api import Agent, Recall, World
from recall.app.validation import parse_timestamp
from recall.cli.help_format import App
from recall.cli.shared import err, open_recall, print_json, print_json_lines, tenant

memory_app = App(help="Long-term memories of a world, shared or private to an agent.", no_args_is_help=True)

#: The expiry options `add` and `update` share.
TtlOption = Annotated[
    float | None, typer.Option(help="Seconds until it expires: then it is never returned and is deleted.")
]
ExpiresAtOption = Annotated[
    str | None, typer.Option(help="When it expires instead: ISO 8601 (2026-01-31T18:00:00Z) or epoch seconds.")
]


def _owner(mem: Recall, world: str, agent: str | None) -> World | Agent:
    """The world (its shared memories) or, with an agent, that agent (its own memories too)."""
    handle = mem.world(world, tenant=tenant())
    return handle.agent(agent) if agent else handle


def _time(text: str | None) -> datetime | None:
    """--expires-at as a time: ISO 8601 text, or epoch seconds."""
    if text is None:
        return None
    try:
        seconds = float(text)
    except ValueError:
        return parse_timestamp(text.strip(), "expires_at")
    return parse_timestamp(seconds, "expires_at")


@memory_app.command("add")
def memory_add(
    world: str,
    content: str,
    agent: Annotated[str | None, typer.Option(help="Private to this agent (default: shared in the world).")] = None,
    type_: Annotated[str, typer.Option("--type", help="A kind of memory: note, episode, preference, ...")] = "note",
    importance: Annotated[int, typer.Option(help="1 (trivia) to 10 (crucial).")] = 5,
    ttl: TtlOption = None,
    expires_at: ExpiresAtOption = None,
) -> None:
    """Add a long-term memory; prints it as JSON."""
    with open_recall() as mem:
        note = _owner(mem, world, agent).add_memory(
            content, type=type_, importance=importance, ttl=ttl, expires_at=_time(expires_at)
        )
        print_json(note.to_dict())


@memory_app.command("list")
def memory_list(
    world: str,
    agent: Annotated[str | None, typer.Option(help="Also this agent's private memories.")] = None,
    min_importance: Annotated[int, typer.Option(help="The least importance.")] = 1,
) -> None:
    """Long-term memories as JSON lines, most important first."""
    with open_recall() as mem:
        print_json_lines(note.to_dict() for note in _owner(mem, world, agent).memories(min_importance=min_importance))


@memory_app.command("update")
def memory_update(
    world: str,
    memory_id: int,
    agent: Annotated[str | None, typer.Option(help="One of this agent's own (default: a shared memory).")] = None,
    content: Annotated[str | None, typer.Option(help="New text.")] = None,
    type_: Annotated[str | None, typer.Option("--type", help="New kind of memory.")] = None,
    importance: Annotated[int | None, typer.Option(help="New importance, 1 to 10.")] = None,
    ttl: TtlOption = None,
    expires_at: ExpiresAtOption = None,
    no_expiry: Annotated[bool, typer.Option("--no-expiry", help="It never expires.")] = False,
) -> None:
    """Change a memory in place (its id and created_at stay); prints it as JSON."""
    with open_recall() as mem:
        note = _owner(mem, world, agent).update_memory(
            memory_id,
            content=content,
            type=type_,
            importance=importance,
            ttl=ttl,
            expires_at=_time(expires_at),
            clear_expiry=no_expiry,
        )
        print_json(note.to_dict())


@memory_app.command("delete")
def memory_delete(
    world: str,
    memory_id: int,
    agent: Annotated[str | None, typer.Option(help="One of this agent's own (default: a shared memory).")] = None,
) -> None:
    """Delete a memory."""
    with open_recall() as mem:
        _owner(mem, world, agent).delete_memory(memory_id)
        err.print(f"deleted memory {memory_id}")
