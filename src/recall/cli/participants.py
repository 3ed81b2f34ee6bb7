"""Commands that set a world up: create and list worlds, register agents and humans."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from recall.app.worlds import profile_settings
from recall.cli.help_format import App
from recall.cli.shared import JsonFlag, open_recall, out, print_json, print_json_lines, tenant
from recall.errors import ConflictError

world_app = App(help="Create, list and delete worlds.", no_args_is_help=True)
agent_app = App(help="Register, list, show, change, delete and run agents.", no_args_is_help=True)
human_app = App(help="Register, list and delete (or erase) humans.", no_args_is_help=True)

ExistOkFlag = Annotated[bool, typer.Option("--exist-ok", help="No error if it exists already (left unchanged).")]


@world_app.command("create")
def world_create(
    world: str,
    name: Annotated[str | None, typer.Option(help="Display name.")] = None,
    turn_limit: Annotated[int | None, typer.Option(help="LLM calls per agent before a human must step in.")] = None,
    exist_ok: ExistOkFlag = False,
) -> None:
    """Create a world."""
    with open_recall(create=True) as mem:
        try:
            created = mem.create_world(world, name=name, turn_limit=turn_limit, tenant=tenant() or "")
        except ConflictError:
            if not exist_ok:
                raise
            out.print(Text.assemble("world ", (world, "bold"), " exists already (left unchanged)"))
            return
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


#: Re-running a setup script: a participant already there is left as it is, not an error.


class ContextFilterOption(StrEnum):
    addressed = "addressed"
    all = "all"


class RecalledScopeOption(StrEnum):
    world = "world"
    chat = "chat"


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
    exist_ok: ExistOkFlag = False,
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
            exist_ok=exist_ok,
        )
        out.print(Text.assemble("added agent ", (agent.id, "bold"), f" to {world}"))


@agent_app.command("list")
def agent_list(world: str, as_json: JsonFlag = False) -> None:
    """List a world's agents with their settings."""
    with open_recall() as mem:
        profiles = [agent.profile for agent in mem.world(world, tenant=tenant()).agents()]
        if as_json:
            print_json_lines({"id": p.id, **profile_settings(p)} for p in profiles)
            return
        table = Table("agent", "channel", "context", "model", "system prompt")
        for p in profiles:
            prompt = p.system_prompt if len(p.system_prompt) <= 60 else p.system_prompt[:59] + "…"
            table.add_row(Text(p.id), p.channel or "", p.context_filter.value, Text(p.model or ""), Text(prompt))
        out.print(table)


@agent_app.command("show")
def agent_show(world: str, agent_id: str) -> None:
    """An agent's settings as JSON."""
    with open_recall() as mem:
        profile = mem.world(world, tenant=tenant()).agent(agent_id).profile
        print_json({"id": profile.id, **profile_settings(profile)})


@agent_app.command("update")
def agent_update(
    world: str,
    agent_id: str,
    system_prompt: Annotated[str | None, typer.Option(help="The agent's base system prompt.")] = None,
    identity: Annotated[str | None, typer.Option(help="Who the agent is.")] = None,
    personality: Annotated[str | None, typer.Option(help="How it speaks.")] = None,
    knowledge: Annotated[str | None, typer.Option(help="What it knows.")] = None,
    channel: Annotated[str | None, typer.Option(help="chat, call, sms or email.")] = None,
    history_limit: Annotated[int | None, typer.Option(help="Messages of history in its context.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Token budget of its context.")] = None,
    context_filter: Annotated[ContextFilterOption | None, typer.Option(help="addressed or all.")] = None,
    model: Annotated[str | None, typer.Option(help="The chat model it runs with.")] = None,
    recalled_max_tokens: Annotated[
        int | None, typer.Option(help="Cap on the recalled past in its context, in tokens (0: none).")
    ] = None,
    recalled_cutoff: Annotated[
        float | None, typer.Option(help="Recalled passages stop below this share of the best one's score (0-1).")
    ] = None,
    recalled_limit: Annotated[
        int | None, typer.Option(help="At most this many recalled passages (0: no limit).")
    ] = None,
    recalled_min_similarity: Annotated[
        float | None, typer.Option(help="Recalled passages need at least this cosine similarity (0-1).")
    ] = None,
    recalled_scope: Annotated[
        RecalledScopeOption | None, typer.Option(help="world: recall from every chat; chat: from this one.")
    ] = None,
) -> None:
    """Change some of an agent's settings (the others stay); prints its settings as JSON."""
    given = {
        "system_prompt": system_prompt,
        "identity": identity,
        "personality": personality,
        "knowledge": knowledge,
        "channel": channel,
        "history_limit": history_limit,
        "max_tokens": max_tokens,
        "context_filter": None if context_filter is None else context_filter.value,
        "model": model,
        "recalled_max_tokens": recalled_max_tokens,
        "recalled_cutoff": recalled_cutoff,
        "recalled_limit": recalled_limit,
        "recalled_min_similarity": recalled_min_similarity,
        "recalled_scope": None if recalled_scope is None else recalled_scope.value,
    }
    changes = {name: value for name, value in given.items() if value is not None}
    if not changes:
        raise typer.BadParameter("name at least one setting to change, e.g. --system-prompt")
    with open_recall() as mem:
        profile = mem.world(world, tenant=tenant()).agent(agent_id).update(**changes)
        print_json({"id": profile.id, **profile_settings(profile)})


@human_app.command("add")
def human_add(world: str, human_id: str, exist_ok: ExistOkFlag = False) -> None:
    """Register a human in a world."""
    with open_recall() as mem:
        human = mem.world(world, tenant=tenant()).add_human(human_id, exist_ok=exist_ok)
        out.print(Text.assemble("added human ", (human.id, "bold"), f" to {world}"))


@human_app.command("list")
def human_list(world: str, as_json: JsonFlag = False) -> None:
    """List a world's humans."""
    with open_recall() as mem:
        humans = mem.world(world, tenant=tenant()).humans()
        if as_json:
            print_json_lines({"id": h.id, "created_at": h.created_at.isoformat()} for h in humans)
            return
        table = Table("human", "since")
        for h in humans:
            table.add_row(Text(h.id), h.created_at.isoformat(timespec="seconds"))
        out.print(table)
