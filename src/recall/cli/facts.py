"""`recall facts …`: the facts of a scope (user, agent or world), its summary sections, and
extracting facts from a conversation with the chat model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from recall.cli.help_format import App
from recall.cli.shared import JsonFlag, err, fail, open_recall, out, print_json, tenant

facts_app = App(help="Facts about a user, an agent or a world, and their summary sections.", no_args_is_help=True)

SCOPE_HELP = "user:ID, agent:WORLD/AGENT or world:ID"


@facts_app.command("list")
def facts_list(
    scope: Annotated[str, typer.Argument(help=SCOPE_HELP)],
    json_: JsonFlag = False,
) -> None:
    """A scope's facts and summary sections."""
    with open_recall() as mem:
        handle = mem.scope(scope, tenant=tenant())
        facts, sections = handle.list(), handle.sections
        if json_:
            print_json({"scope": handle.id, "facts": [f.to_dict() for f in facts], "sections": sections})
            return
        table = Table("id", "category", "confidence", "content", "source", title=Text(f"facts of {handle.id}"))
        for f in facts:
            table.add_row(
                str(f.id),
                Text(f.category),
                f"{f.confidence:.2f}",
                Text(f.content + (f" (avoid: {f.avoid})" if f.avoid else "")),
                Text(f.source),
            )
        out.print(table)
        for name, text in sections.items():
            # Stored text: printed as it is, never read as markup.
            out.print(Text.assemble((name, "bold"), f": {text}"))


@facts_app.command("add")
def facts_add(
    scope: Annotated[str, typer.Argument(help=SCOPE_HELP)],
    content: str,
    category: Annotated[
        str, typer.Option(help="preference, knowledge, context, behavior, goal or correction.")
    ] = "knowledge",
    confidence: Annotated[float, typer.Option(help="0 to 1.")] = 1.0,
    avoid: Annotated[str | None, typer.Option(help="For a correction: what to avoid.")] = None,
) -> None:
    """Add a fact; prints it as JSON."""
    with open_recall(create=True) as mem:
        fact = mem.scope(scope, tenant=tenant()).add(content, category=category, confidence=confidence, avoid=avoid)
        print_json(fact.to_dict())


@facts_app.command("update")
def facts_update(
    scope: str,
    fact_id: int,
    content: Annotated[str | None, typer.Option(help="New text.")] = None,
    category: Annotated[str | None, typer.Option(help="New category.")] = None,
    confidence: Annotated[float | None, typer.Option(help="New confidence, 0 to 1.")] = None,
) -> None:
    """Change some fields of a fact; prints it as JSON."""
    changes = {
        k: v for k, v in {"content": content, "category": category, "confidence": confidence}.items() if v is not None
    }
    with open_recall() as mem:
        print_json(mem.scope(scope, tenant=tenant()).update(fact_id, **changes).to_dict())


@facts_app.command("delete")
def facts_delete(scope: str, fact_id: int) -> None:
    """Delete one fact."""
    with open_recall() as mem:
        mem.scope(scope, tenant=tenant()).delete(fact_id)
        err.print(f"deleted fact {fact_id}")


@facts_app.command("clear")
def facts_clear(scope: str) -> None:
    """Delete every fact and section of a scope."""
    with open_recall() as mem:
        err.print(f"removed {mem.scope(scope, tenant=tenant()).clear()} facts")


@facts_app.command("export")
def facts_export(scope: str) -> None:
    """Write a scope's facts and sections as JSON to stdout (for `facts import`)."""
    with open_recall() as mem:
        print_json(mem.scope(scope, tenant=tenant()).export())


@facts_app.command("import")
def facts_import(
    scope: str,
    file: Annotated[Path, typer.Argument(help="JSON written by `facts export` ('-' for stdin).", allow_dash=True)],
    replace: Annotated[bool, typer.Option(help="Clear the scope first.")] = False,
) -> None:
    """Add the facts of an export to a scope, skipping duplicates; all or nothing."""
    try:
        data = json.loads(sys.stdin.read() if str(file) == "-" else file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        fail(f"cannot read {file}: {exc}")
    with open_recall(create=True) as mem:
        print_json(mem.scope(scope, tenant=tenant()).import_facts(data, replace=replace))


@facts_app.command("extract")
def facts_extract(
    world: str,
    agent: str,
    chat: Annotated[str | None, typer.Option(help="The chat (default: the world's default chat).")] = None,
    scope: Annotated[str | None, typer.Option(help="Where the facts go (default: the newest human's user:ID).")] = None,
) -> None:
    """Extract facts from an agent's conversation with the configured chat model (RECALL_LLM_*),
    now; prints what was queued and how many model calls ran. Exit status 1 with the reason
    when the extraction failed (model unreachable or refusing, an answer that is not JSON)."""
    with open_recall() as mem:
        queued = mem.world(world, tenant=tenant()).agent(agent).extract(chat, scope=scope)
        runs = mem.service.extraction.run_extraction(None, queued["scope"]) if queued["queued"] else []
        failed = next((run for run in runs if run.error), None)
        if failed is not None:  # the model's or the answer's fault: a script must see it
            fail(f"extraction for {failed.scope} failed: {failed.error or ''}")
        print_json({**queued, "extractions": sum(run.model_called for run in runs)})
