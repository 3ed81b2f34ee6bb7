"""How a context and its report look in a terminal (rich), for the CLI and the demo.

What came from the store (contents, senders, ids in titles) is printed as `Text`, never read as
rich markup: a message saying `[/]` prints as it is.
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from recall.core.context_records import Context

_ROLE_STYLE = {"system": "magenta", "user": "cyan", "assistant": "green", "tool": "yellow"}


def context_panel(ctx: Context, title: str) -> Panel:
    """The messages the model receives, one line each, with role, sender and tokens."""
    lines = []
    for m in ctx.messages:
        who = f"{m.role}" + (f" ({m.name})" if m.name else "")
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{who:<22}", style=_ROLE_STYLE.get(m.role, ""))
        line.append(f"{m.section:<14}", style="dim")
        line.append(f"{m.tokens:>5} tok  ", style="dim")
        first, *rest = m.content.splitlines() or [""]
        line.append(first + (" …" if rest else ""))
        lines.append(line)
    return Panel(Group(*lines), title=Text(title), title_align="left")


def report_table(ctx: Context) -> Table:
    """Every candidate: included (where, tokens) or excluded (why)."""
    report = ctx.report
    table = Table(
        title=f"{report.total_tokens} of {report.budget} tokens ({report.encoding}), "
        f"history limit {report.history_limit}, filter {report.context_filter}",
        title_justify="left",
    )
    for column in ("id", "sender", "status", "section / reason", "tokens"):
        table.add_column(column, justify="right" if column in ("id", "tokens") else "left")
    for item in report.items:
        status = "[green]included[/]" if item.included else "[red]excluded[/]"
        where = (item.section if item.included else item.reason) or ""
        if item.included and item.reason:  # why it is in, where that is not its rank (the recent window)
            where += f" · {item.reason}"
        score = item.score or {}
        if "rank" in score:  # a ranked message: its place in the ranking
            where += f" · rank {score['rank']}"
        if "score" in score:  # a ranked fact or message
            where += f" · score {score['score']:.2f}"
        if score.get("excerpt"):
            where += " · excerpt"
        label = str(item.id) if item.kind == "message" else f"{item.kind} {item.id}"
        tokens = str(item.tokens) if item.included and item.tokens else ""
        table.add_row(Text(label), Text(item.sender or ""), status, Text(where), tokens)
    for reason, n in sorted(report.unlisted.items()):
        table.add_row("…", "", "[red]excluded[/]", f"{reason} ({n} not listed)", "")
    return table


def sections_line(ctx: Context) -> str:
    parts = [f"{name} {n}" for name, n in ctx.report.sections.items() if n]
    return "tokens by section: " + ", ".join(parts)


def print_context(console: Console, ctx: Context, title: str) -> None:
    console.print(context_panel(ctx, title))
    console.print(report_table(ctx))
    console.print(sections_line(ctx), style="dim", markup=False)
    for note in ctx.report.notes:
        console.print(f"note: {note}", style="yellow", markup=False)
