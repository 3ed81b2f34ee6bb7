"""`recall import …`: conversations from files, with their timestamps, and a progress bar, and
what other memory systems (mem0, Zep, Letta) kept. Importing a file again stores only what is not
in its worlds yet, and says what it skipped."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from recall import importers
from recall.cli.help_format import App
from recall.cli.shared import err, open_recall, out

import_app = App(
    help="Import conversations (keeps their timestamps), or what mem0, Zep or Letta remember.", no_args_is_help=True
)


@contextmanager
def _progress(total: int, label: str) -> Iterator[Callable[[int], None]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    # The label is a world id from the file: text, not markup.
    columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


@import_app.command("locomo")
def import_locomo(
    file: Path,
    speakers: Annotated[
        str, typer.Option(help="Register the speakers as 'agents' (hear everything) or 'humans'.")
    ] = "agents",
) -> None:
    """Import a LoCoMo benchmark file: one world per conversation, real session timestamps.

    Again with the same file: nothing is stored twice."""
    with open_recall(create=True) as mem:
        conversations = importers.read_locomo(file, speakers)
        stored = skipped = 0
        for conversation in conversations:
            with _progress(len(conversation.messages), conversation.world_id) as advance:
                done = importers.import_conversation(mem, conversation, advance)
            stored, skipped = stored + done.stored, skipped + done.skipped
        out.print(
            f"imported {stored} messages into {len(conversations)} worlds" + _skipped(skipped, file),
            markup=False,
        )


def _skipped(skipped: int, file: Path) -> str:
    """The messages an earlier import of the same file stored already (not stored twice)."""
    if not skipped:
        return ""
    return f"; {skipped} already imported from {file.name} before, skipped"


@import_app.command("jsonl")
def import_jsonl(
    file: Path,
    world: Annotated[str | None, typer.Option(help="World to import into (default: from the file name).")] = None,
    chat: Annotated[str | None, typer.Option(help="Chat for lines without a chat_id.")] = None,
) -> None:
    """Import OpenAI-style chat lines ({role, content, name?, created_at?, chat_id?}).

    Again with the same file into the same world: nothing is stored twice."""
    with open_recall(create=True) as mem:
        conversation = importers.read_jsonl(file, world, chat)
        with _progress(len(conversation.messages), conversation.world_id) as advance:
            done = importers.import_conversation(mem, conversation, advance)
        out.print(
            f"imported {done.stored} messages into world {conversation.world_id}" + _skipped(done.skipped, file),
            markup=False,
        )


def _print_report(report: importers.ImportReport) -> None:
    for line in report.lines():
        out.print(line, markup=False)


@import_app.command("mem0")
def import_mem0(
    file: Path,
    world: Annotated[str, typer.Option(help="World the memories go to (their run_id is their chat).")] = "mem0",
) -> None:
    """Import mem0 memories: the JSON of get_all ({"results": [...]}, or a list).

    user_id becomes a human, agent_id an agent whose own memory it is, run_id the memory's chat;
    mem0's id, hash and categories stay in the memory's metadata. Again with the same file:
    nothing is stored twice. Prints what had no equivalent in recall."""
    with open_recall(create=True) as mem:
        _print_report(importers.import_mem0(mem, file, world))


@import_app.command("zep")
def import_zep(
    file: Path,
    world: Annotated[str, typer.Option(help="World the users and sessions go to (a session is a chat).")] = "zep",
    agent: Annotated[
        str, typer.Option(help="The agent assistant messages come from when they name none.")
    ] = "assistant",
) -> None:
    """Import Zep users, sessions, messages and facts ({"users": [...], "sessions": [...]}).

    Each session is a chat of the world, its messages kept with their times; a user's facts
    become facts about them (user:ID). Again with the same file: nothing is stored twice. Prints
    what had no equivalent in recall."""
    with open_recall(create=True) as mem:
        plan = importers.read_zep(file, world, agent)
        with _progress(sum(len(c.messages) for c in plan.conversations), plan.report.worlds[0]) as advance:
            report = importers.store_plan(mem, plan, advance)
        _print_report(report)


@import_app.command("letta")
def import_letta(
    file: Path,
    world: Annotated[str | None, typer.Option(help="World to import into (default: the first agent's name).")] = None,
    human: Annotated[str, typer.Option(help="Who the agent's user messages come from.")] = "user",
    passages: Annotated[
        Path | None,
        typer.Option(help="The agent's archival memory: the JSON list of passages Letta's API returns."),
    ] = None,
    passages_agent: Annotated[
        str | None, typer.Option(help="The agent the passages are of (needed when the file has several).")
    ] = None,
) -> None:
    """Import a Letta Agent File (.af): agents with their system prompts, memory blocks as facts
    about each agent, and their messages with their times and tool calls; with --passages, an
    agent's archival memory as its own memories.

    Again with the same file: nothing is stored twice (a block edited since is updated). Prints
    what had no equivalent in recall."""
    with open_recall(create=True) as mem:
        plan = importers.read_letta(file, world, human, passages, passages_agent)
        with _progress(sum(len(c.messages) for c in plan.conversations), plan.report.worlds[0]) as advance:
            report = importers.store_plan(mem, plan, advance)
        _print_report(report)
