"""`recall demo`: a small multi-agent world and what each agent's model gets; with --live, three
agents answering with a model (or recall's scripted one), the turn limit included."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from recall.api import Recall
from recall.cli.shared import check_location, fail, out
from recall.core.models import Message
from recall.demo import build_demo_world
from recall.errors import RecallError
from recall.settings import Settings
from recall.terminal import print_context


def demo(
    db: Annotated[str | None, typer.Option(help="Keep the demo store in this file instead of a temporary one.")] = None,
    live: Annotated[
        bool, typer.Option("--live", help="Run three agents live: runners, a model, the turn limit.")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(help="With --live: PROVIDER/MODEL to answer (default: settings, else the scripted model)."),
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="With --live --model: the model endpoint.")] = None,
) -> None:
    """A small multi-agent world: what each agent's model would get, and the report."""
    with tempfile.TemporaryDirectory() as tmp:
        path = db or str(Path(tmp) / "demo.db")
        try:
            check_location(path, create=True)
            if live:
                _live_demo(path, model, base_url)
                return
            _demo(path)
        except RecallError as exc:
            fail(exc)


def print_conversation(console: Console, messages: Iterable[Message]) -> None:
    """One line per message: id, sender, content; stored text printed as it is, never as markup."""
    for message in messages:
        console.print(
            Text.assemble("  ", (f"#{message.id}", "dim"), " ", (message.sender, "bold"), f": {message.content}")
        )


def _demo(path: str) -> None:
    with Recall(path) as mem:
        world = build_demo_world(mem)
        out.rule(Text.assemble(("recall demo", "bold"), f": world {world.id!r}, store {path}"))
        out.print("The conversation everyone heard:")
        print_conversation(out, world.messages())
        for person in world.participants():
            if person.kind == "agent":
                out.print()
                print_context(out, world.agent(person.id).context(), f"what {person.id}'s model gets")


def _live_demo(path: str, model_spec: str | None, base_url: str | None) -> None:
    # Imported here: the model SDKs and the scripted model server load only for --live.
    from recall.demo_live import AGENTS, LIVE_WORLD, run_live_demo, start_scripted_model
    from recall.llm.base import AgentModel
    from recall.llm.factory import agent_model, chat_model_from_settings
    from recall.llm.openai_compat import OpenAICompatibleModel

    settings = replace(Settings.from_env(), index_interval=0.0)
    scripted = None
    try:
        configured = agent_model(model_spec, base_url=base_url) if model_spec else chat_model_from_settings(settings)
    except RecallError as exc:
        fail(exc)
    if configured is None:
        scripted = start_scripted_model()
        configured = OpenAICompatibleModel("scripted", base_url=scripted.openai_url, max_retries=0)
    chat: AgentModel = configured  # type: ignore[assignment]  # both adapters speak chat()
    source = "recall's scripted model server (no model configured)" if scripted else chat.name
    try:
        with Recall(path, settings) as mem:
            out.rule(
                Text.assemble(("recall demo --live", "bold"), f": world {LIVE_WORLD!r}, agents answer with {source}")
            )
            world, runners = run_live_demo(mem, chat, out)
            table = Table("agent", "model calls", "replies", "turn-limit notices", "model errors")
            for runner in runners:
                s = runner.stats
                table.add_row(runner.agent_id, str(s.model_calls), str(s.replies), str(s.notices), str(s.model_errors))
            out.print(table)
            last = world.messages()[-2]
            if last.sender == "maria":
                agent = next((a for a in AGENTS if f"@{a}" in last.content), AGENTS[0])
                print_context(out, world.agent(agent).context(message=last.id), f"what {agent}'s model got last")
    finally:
        if scripted is not None:
            scripted.close()
