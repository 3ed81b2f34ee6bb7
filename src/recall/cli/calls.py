"""`recall calls …`: an agent's recorded model calls, what each context held, replayed from the
store and compared (docs/context.md, "What the model saw")."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from recall.app.calls import Replay
from recall.cli.help_format import App
from recall.cli.shared import JsonFlag, open_recall, out, print_json, tenant
from recall.core.calls import CallItem

calls_app = App(help="An agent's recorded model calls: list, show, replay and compare.", no_args_is_help=True)


@calls_app.command("list")
def calls_list(
    world: str,
    agent: str,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 20,
    json_: JsonFlag = False,
) -> None:
    """The agent's recorded model calls, newest first."""
    with open_recall() as mem:
        calls = mem.world(world, tenant=tenant()).agent(agent).calls(limit=limit)
        if json_:
            print_json([c.to_dict() for c in calls])
            return
        table = Table("call", "when", "source", "chat", "trigger", "tokens", "items", "outcome")
        for c in calls:
            inside, out_ = c.counts
            outcome = Text(f"failed: {c.error}", style="red") if c.outcome == "failed" else Text(c.outcome or "")
            table.add_row(c.id, c.at.strftime("%Y-%m-%d %H:%M:%S"), c.source, Text(c.chat_id or ""),
                          str(c.trigger_id or ""), str(c.total_tokens), f"{inside} in, {out_} out", outcome)  # fmt: skip
        out.print(table)


@calls_app.command("show")
def calls_show(world: str, agent: str, call: str) -> None:
    """One recorded call as JSON: its settings, sections and items (ids, versions, scores, reasons)."""
    with open_recall() as mem:
        print_json(mem.world(world, tenant=tenant()).agent(agent).call(call).to_dict())


@calls_app.command("replay")
def calls_replay(world: str, agent: str, call: str, json_: JsonFlag = False) -> None:
    """Rebuild a call's context from the store: the same bytes, or what changed since, item by item."""
    with open_recall() as mem:
        replay = mem.world(world, tenant=tenant()).agent(agent).replay(call)
        _print(replay, json_, "replayed")


@calls_app.command("diff")
def calls_diff(
    world: str,
    agent: str,
    call: str,
    other: Annotated[str | None, typer.Argument(help="Another recorded call (default: the call rebuilt now).")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Rebuild with this budget.")] = None,
    history_limit: Annotated[int | None, typer.Option(help="Rebuild with this history depth.")] = None,
    recalled_max_tokens: Annotated[int | None, typer.Option(help="Rebuild with this recalled-past cap.")] = None,
    json_: JsonFlag = False,
) -> None:
    """A call beside another, or beside itself rebuilt now with other settings."""
    settings = {
        name: value
        for name, value in (
            ("max_tokens", max_tokens),
            ("history_limit", history_limit),
            ("recalled_max_tokens", recalled_max_tokens),
        )
        if value is not None
    }
    with open_recall() as mem:
        replay = mem.world(world, tenant=tenant()).agent(agent).compare(call, other, **settings)
        _print(replay, json_, "compared")


def _print(replay: Replay, json_: bool, verb: str) -> None:
    if json_:
        data = replay.to_dict()
        data.pop("messages", None)
        print_json(data)
        return
    for note in replay.notes:
        out.print(Text(note))
    if replay.diff is None:
        return
    d = replay.diff
    out.print(Text(f"{verb} {replay.call.id}: " + ("the same bytes" if d.identical else "not the same bytes")))
    out.print(Text(f"tokens {d.tokens[0]} → {d.tokens[1]}"))
    for name, (a, b) in d.settings.items():
        out.print(Text(f"setting {name}: {a!r} → {b!r}"))
    if not d.items:
        return
    table = Table("change", "item", "before", "after", "why")
    for c in d.items:
        table.add_row(c.change, f"{c.kind} {c.id}", _side(c.a), _side(c.b), Text(c.why or ""))
    out.print(table)
    for note in d.notes:
        out.print(Text(note))


def _side(item: CallItem | None) -> Text:
    if item is None:
        return Text("–")
    where = f"{item.section} #{item.rank}" if item.included else f"out ({item.reason})"
    score = item.scores.get("score")
    return Text(where + ("" if score is None else f" · {score}"))
