"""`recall memory …`: long-term memories of a world, shared or private to one agent."""

from __future__ import annotations

from typing import Annotated

import typer

from recall.api import Agent, Recall, World
from recall.cli.help_format import App
from recall.cli.shared import open_recall, print_json, print_json_lines, tenant

memory_app = App(help="Long-term memories of a world, shared or private to an agent.", no_args_is_help=True)


def _owner(mem: Recall, world: str, agent: str | None) -> World | Agent:
    """The world (its shared memories) or, with an agent, that agent (its own memories too)."""
    handle = mem.world(world, tenant=tenant())
    return handle.agent(agent) if agent else handle


@memory_app.command("add")
def memory_add(
    world: str,
    content: str,
    agent: Annotated[str | None, typer.Option(help="Private to this agent (default: shared in the world).")] = None,
    type_: Annotated[str, typer.Option("--type", help="A kind of memory: note, episode, preference, ...")] = "note",
    importance: Annotated[int, typer.Option(help="1 (trivia) to 10 (crucial).")] = 5,
) -> None:
    """Add a long-term memory; prints it as JSON."""
    with open_recall() as mem:
        print_json(_owner(mem, world, agent).add_memory(content, type=type_, importance=importance).to_dict())


@memory_app.command("list")
def memory_list(
    world: str,
    agent: Annotated[str | None, typer.Option(help="Also this agent's private memories.")] = None,
    min_importance: Annotated[int, typer.Option(help="The least importance.")] = 1,
) -> None:
    """Long-term memories as JSON lines, most important first."""
    with open_recall() as mem:
        print_json_lines(note.to_dict() for note in _owner(mem, world, agent).memories(min_importance=min_importance))
