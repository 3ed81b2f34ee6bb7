"""Commands that set a world up: create and list worlds, register agents and humans."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from recall.cli.shared import open_recall, out, tenant

world_app = typer.Typer(help="Create and list worlds.", no_args_is_help=True)
agent_app = typer.Typer(help="Register agents and run them with a model.", no_args_is_help=True)
human_app = typer.Typer(help="Register humans.", no_args_is_help=True)


@world_app.command("create")
def world_create(
    world: str,
    name: Annotated[str | None, typer.Option(help="Display name.")] = None,
    turn_limit: Annotated[int | None, typer.Option(help="LLM calls per agent before a human must step in.")] = None,
) -> None:
    """Create a world."""
    with open_recall(create=True) as mem:
        created = mem.create_world(world, name=name, turn_limit=turn_limit, tenant=tenant() or "")
        out.print(Text.assemble("created world ", (created.id, "bold")))


@world_app.command("list")
def world_list() -> None:
    """List worlds with their participants and message counts."""
    with open_recall() as mem:
        table = Table("world", "name", "agents", "humans", "chats", "messages")
        for world in mem.worlds(tenant()):
            people = world.participants()
            chats = world.chats()
            table.add_row(
                Text(world.id),
                Text(world.name),
                str(sum(p.kind == "agent" for p in people)),
                str(sum(p.kind == "human" for p in people)),
                str(len(chats)),
                str(sum(n for _, n in chats)),
            )
        out.print(table)


class ContextFilterOption(StrEnum):
    addressed = "addressed"
    all = "all"


@agent_app.command("add")
def agent_add(
    world: str,
    agent_id: str,
    system_prompt: Annotated[str, typer.Option(help="The agent's base system prompt.")] = "",
    identity: Annotated[str, typer.Option(help="Who the agent is.")] = "",
    channel: Annotated[str | None, typer.Option(help="chat, call, sms or email (adds channel guidelines).")] = None,
    history_limit: Annotated[int | None, typer.Option(help="Messages of history in its context.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Token budget of its context.")] = None,
    context_filter: Annotated[
        ContextFilterOption, typer.Option(help="addressed: what it was addressed in; all: everything it heard.")
    ] = ContextFilterOption.addressed,
) -> None:
    """Register an agent in a world."""
    with open_recall() as mem:
        agent = mem.world(world, tenant=tenant()).add_agent(
            agent_id,
            system_prompt=system_prompt,
            identity=identity,
            channel=channel,
            history_limit=history_limit,
            max_tokens=max_tokens,
            context_filter=context_filter.value,
        )
        out.print(Text.assemble("added agent ", (agent.id, "bold"), f" to {world}"))


@human_app.command("add")
def human_add(world: str, human_id: str) -> None:
    """Register a human in a world."""
    with open_recall() as mem:
        human = mem.world(world, tenant=tenant()).add_human(human_id)
        out.print(Text.assemble("added human ", (human.id, "bold"), f" to {world}"))
