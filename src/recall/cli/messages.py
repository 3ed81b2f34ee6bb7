"""Commands on a world's messages: post, messages, inbox, and the context an agent's model gets."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from recall.cli.shared import ChatOption, LimitOption, err, open_recall, out, print_json, print_json_lines, tenant
from recall.terminal import print_context


def post(
    world: str,
    text: str,
    sender: Annotated[str, typer.Option(help="Who posts: a participant, or system/world/human.")],
    chat: ChatOption = None,
    channel: Annotated[str | None, typer.Option(help="chat, call, sms or email.")] = None,
    parent: Annotated[int | None, typer.Option(help="Id of the message this replies to.")] = None,
    at: Annotated[str | None, typer.Option(help="Timestamp (ISO 8601) for imported history.")] = None,
) -> None:
    """Post a message; prints the stored message as JSON."""
    with open_recall() as mem:
        message = mem.world(world, tenant=tenant()).post(sender, text, chat=chat, channel=channel, parent=parent, at=at)
        print_json(message.to_dict())


def messages(
    world: str,
    chat: ChatOption = None,
    after: Annotated[int, typer.Option(help="Only messages with a larger id.")] = 0,
    limit: LimitOption = 100,
    all_chats: Annotated[bool, typer.Option("--all-chats", help="Every chat's messages, not one chat's.")] = False,
) -> None:
    """List a chat's messages as JSON lines, oldest first."""
    with open_recall() as mem:
        found = mem.world(world, tenant=tenant()).messages(chat, after=after, limit=limit, all_chats=all_chats)
        print_json_lines(message.to_dict() for message in found)


def inbox(
    world: str,
    agent_id: str,
    all_: Annotated[bool, typer.Option("--all", help="Read messages too, not only unread.")] = False,
    mark_read: Annotated[bool, typer.Option(help="Mark what is shown as read.")] = False,
    limit: LimitOption = 100,
) -> None:
    """An agent's inbox as JSON lines, oldest first (FIFO)."""
    with open_recall() as mem:
        agent = mem.world(world, tenant=tenant()).agent(agent_id)
        delivered = agent.service.deliveries.inbox(agent.world.key, agent.id, not all_, limit, mark_read)
        print_json_lines({**message.to_dict(), "read": read} for message, read in delivered)


class ContextFormat(StrEnum):
    openai = "openai"
    anthropic = "anthropic"
    json = "json"
    table = "table"


def context(
    world: str,
    agent_id: str,
    chat: ChatOption = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="Token budget (default: the model's window minus the reply reserve).")
    ] = None,
    history_limit: Annotated[int | None, typer.Option(help="Messages of history (default 25).")] = None,
    message: Annotated[int | None, typer.Option(help="The message being answered; incoming ends with it.")] = None,
    channel: Annotated[str | None, typer.Option(help="Channel guidelines to use: chat, call, sms, email.")] = None,
    recalled_max_tokens: Annotated[
        int | None, typer.Option(help="Cap on the recalled past for this call (0: none; default: the agent's).")
    ] = None,
    format_: Annotated[
        ContextFormat,
        typer.Option("--format", help="openai/anthropic: the messages; json: messages and report; table: for people."),
    ] = ContextFormat.openai,
    record: Annotated[
        bool, typer.Option("--record", help="Record it as a model call (its id goes to stderr; see `recall calls`).")
    ] = False,
) -> None:
    """The context an agent's next model call receives, and what was left out and why."""
    with open_recall() as mem:
        ctx = (
            mem.world(world, tenant=tenant())
            .agent(agent_id)
            .context(
                chat,
                max_tokens=max_tokens,
                history_limit=history_limit,
                message=message,
                channel=channel,
                recalled_max_tokens=recalled_max_tokens,
                record=record,
            )
        )
        if ctx.call_id is not None:
            err.print(f"recorded as call {ctx.call_id}")
        if format_ is ContextFormat.openai:
            print_json(ctx.openai())
        elif format_ is ContextFormat.anthropic:
            print_json(ctx.anthropic())
        elif format_ is ContextFormat.json:
            print_json(ctx.to_dict())
        else:
            print_context(out, ctx, f"{agent_id} in {world}" + (f" / {chat}" if chat else ""))
