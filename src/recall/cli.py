"""The `recall` command: the Python API from a shell, for people and scripts.

Output meant for scripts (post, context --format …) is JSON on stdout; errors go to stderr
with exit status 1 (bad input, unknown names) so scripts can tell.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from recall import importers
from recall.api import Recall, default_db
from recall.demo import build_demo_world
from recall.errors import RecallError, StoreOpenError
from recall.settings import Settings
from recall.store.urls import is_collapsed_postgres_url, is_postgres_url, redacted_url
from recall.terminal import print_context

app = typer.Typer(
    help="recall: memory and context for LLM agents. Keeps everything each participant heard; "
    "builds for every model call only what matters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
world_app = typer.Typer(help="Create and list worlds.", no_args_is_help=True)
agent_app = typer.Typer(help="Register agents and run them with a model.", no_args_is_help=True)
human_app = typer.Typer(help="Register humans.", no_args_is_help=True)
import_app = typer.Typer(help="Import conversations (keeps their timestamps).", no_args_is_help=True)
facts_app = typer.Typer(
    help="Facts about a user, an agent or a world, and their summary sections.", no_args_is_help=True
)
memory_app = typer.Typer(help="Long-term memories of a world, shared or private to an agent.", no_args_is_help=True)
app.add_typer(world_app, name="world")
app.add_typer(agent_app, name="agent")
app.add_typer(human_app, name="human")
app.add_typer(import_app, name="import")
app.add_typer(facts_app, name="facts")
app.add_typer(memory_app, name="memory")

out = Console()
err = Console(stderr=True, soft_wrap=True)

_state: dict[str, str] = {}

DB_HELP = (
    "The store: a SQLite file or a postgresql://USER:PASSWORD@HOST/DB URL (default: $RECALL_DB, else ./recall.db)."
)


@app.callback()
def main(
    db: Annotated[
        str | None,
        typer.Option("--db", help=DB_HELP, show_default=False),
    ] = None,
    tenant: Annotated[
        str | None,
        typer.Option(
            help="The tenant whose worlds and scopes commands name (a server's API keys name tenants; '' without"
            " keys). Default: a world id names the only world of that id in any tenant, a user scope tenant ''.",
            show_default=False,
        ),
    ] = None,
) -> None:
    _state["db"] = db or default_db()
    _state["db_flag"] = db or ""
    if tenant is not None:
        _state["tenant"] = tenant
    else:
        _state.pop("tenant", None)


def _tenant() -> str | None:
    return _state.get("tenant")


@contextmanager
def _open(*, create: bool = False) -> Iterator[Recall]:
    """Open the store; turn recall's errors into a clear message and exit status 1. Only a
    command that creates (`create=True`) may open a store that does not exist yet."""
    try:
        location = _state.get("db") or default_db()
        check_location(location, create=create)
        # A command is short-lived: no background indexer; `search` refreshes the index itself.
        settings = replace(Settings.from_env(), index_interval=0.0)
        with Recall(location, settings) as mem:
            yield mem
    except RecallError as exc:
        _fail(exc)


def _fail(exc: RecallError) -> NoReturn:
    """One line on stderr (the message is text, not markup), exit status 1."""
    err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
    raise typer.Exit(1) from None


def check_location(location: str, *, create: bool) -> None:
    """Refuse a store file that does not exist (unless the command creates one), and never
    create missing folders: a misspelt --db must not leave an empty store behind. A URL, and
    a file that exists, are left to the store to judge."""
    if location == ":memory:" or is_postgres_url(location) or is_collapsed_postgres_url(location):
        return
    path = Path(location)
    if path.exists():
        return
    if not create:
        flag = f" --db {location}" if _state.get("db_flag") == location else ""
        raise StoreOpenError(f"no recall store at {location}: create one with `recall{flag} world create ID`")
    if not path.parent.is_dir():
        raise StoreOpenError(f"cannot create {location}: folder {path.parent} does not exist (create it first)")


def _json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


# -- worlds, agents, humans ------------------------------------------------------------------


@world_app.command("create")
def world_create(
    world: str,
    name: Annotated[str | None, typer.Option(help="Display name.")] = None,
    turn_limit: Annotated[int | None, typer.Option(help="LLM calls per agent before a human must step in.")] = None,
) -> None:
    """Create a world."""
    with _open(create=True) as mem:
        created = mem.create_world(world, name=name, turn_limit=turn_limit, tenant=_tenant() or "")
        out.print(f"created world [bold]{created.id}[/]")


@world_app.command("list")
def world_list() -> None:
    """List worlds with their participants and message counts."""
    with _open() as mem:
        table = Table("world", "name", "agents", "humans", "chats", "messages")
        for world in mem.worlds(_tenant()):
            people = world.participants()
            chats = world.chats()
            table.add_row(
                world.id,
                world.name,
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
    with _open() as mem:
        agent = mem.world(world, tenant=_tenant()).add_agent(
            agent_id,
            system_prompt=system_prompt,
            identity=identity,
            channel=channel,
            history_limit=history_limit,
            max_tokens=max_tokens,
            context_filter=context_filter.value,
        )
        out.print(f"added agent [bold]{agent.id}[/] to {world}")


@agent_app.command("run")
def agent_run(
    server: Annotated[str, typer.Option(help="URL of the recall server (recall serve).")],
    world: Annotated[str, typer.Option(help="The world the agents are in.")],
    agent: Annotated[list[str], typer.Option(help="An agent to run; repeat for several (one thread each).")],
    model: Annotated[str, typer.Option(help="PROVIDER/MODEL: openai/…, ollama/…, anthropic/….")],
    base_url: Annotated[
        str | None, typer.Option(help="The model endpoint (any OpenAI-compatible URL; Ollama's by default).")
    ] = None,
    api_key: Annotated[
        str | None, typer.Option(help="The model's API key (default: $OPENAI_API_KEY or $ANTHROPIC_API_KEY).")
    ] = None,
    server_key: Annotated[
        str | None, typer.Option(envvar="RECALL_API_KEY", help="The recall server's API key, when it has keys.")
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="Longest reply, in tokens.")] = 1024,
    no_extract: Annotated[bool, typer.Option("--no-extract", help="Do not queue fact extraction.")] = False,
) -> None:
    """Run agents against a recall server: answer what they are addressed in with the model, until
    Ctrl-C or SIGTERM."""
    import logging
    import signal
    import threading

    from recall.llm.factory import agent_model
    from recall.runner.agent_runner import AgentRunner, run_agents
    from recall.runner.backend import HttpBackend

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        chat_model = agent_model(model, base_url=base_url, api_key=api_key)
        # A model that cannot answer would only post apologies: say so now, and start nothing.
        chat_model.check()
    except RecallError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    backends = [HttpBackend(server, world, agent_id, api_key=server_key) for agent_id in agent]
    runners = [AgentRunner(b, chat_model, max_tokens=max_tokens, extract=not no_extract) for b in backends]
    threads = run_agents(runners, stop)
    err.print(f"running {', '.join(agent)} in {world} on {chat_model.name}; Ctrl-C stops")
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        stop.set()
    for thread in threads:
        thread.join(timeout=40)  # a long-poll ends within its 30 s timeout
    for backend in backends:
        backend.close()


@human_app.command("add")
def human_add(world: str, human_id: str) -> None:
    """Register a human in a world."""
    with _open() as mem:
        human = mem.world(world, tenant=_tenant()).add_human(human_id)
        out.print(f"added human [bold]{human.id}[/] to {world}")


# -- messages ----------------------------------------------------------------------------------


@app.command()
def post(
    world: str,
    text: str,
    sender: Annotated[str, typer.Option(help="Who posts: a participant, or system/world/human.")],
    chat: Annotated[str | None, typer.Option(help="Chat id (default: the world's default chat).")] = None,
    channel: Annotated[str | None, typer.Option(help="chat, call, sms or email.")] = None,
    parent: Annotated[int | None, typer.Option(help="Id of the message this replies to.")] = None,
    at: Annotated[str | None, typer.Option(help="Timestamp (ISO 8601) for imported history.")] = None,
) -> None:
    """Post a message; prints the stored message as JSON."""
    with _open() as mem:
        message = mem.world(world, tenant=_tenant()).post(
            sender, text, chat=chat, channel=channel, parent=parent, at=at
        )
        _json(message.to_dict())


@app.command()
def messages(
    world: str,
    chat: Annotated[str | None, typer.Option(help="Chat id (default: the world's default chat).")] = None,
    after: Annotated[int, typer.Option(help="Only messages with a larger id.")] = 0,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
) -> None:
    """List a chat's messages as JSON lines, oldest first."""
    with _open() as mem:
        for message in mem.world(world, tenant=_tenant()).messages(chat, after=after, limit=limit):
            sys.stdout.write(json.dumps(message.to_dict(), ensure_ascii=False) + "\n")


@app.command()
def inbox(
    world: str,
    agent_id: str,
    all_: Annotated[bool, typer.Option("--all", help="Read messages too, not only unread.")] = False,
    mark_read: Annotated[bool, typer.Option(help="Mark what is shown as read.")] = False,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
) -> None:
    """An agent's inbox as JSON lines, oldest first (FIFO)."""
    with _open() as mem:
        agent = mem.world(world, tenant=_tenant()).agent(agent_id)
        for message, read in agent.service.inbox(agent.world.key, agent.id, not all_, limit, mark_read):
            sys.stdout.write(json.dumps({**message.to_dict(), "read": read}, ensure_ascii=False) + "\n")


class ContextFormat(StrEnum):
    openai = "openai"
    anthropic = "anthropic"
    json = "json"
    table = "table"


@app.command()
def context(
    world: str,
    agent_id: str,
    chat: Annotated[str | None, typer.Option(help="Chat id (default: the world's default chat).")] = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="Token budget (default: the model's window minus the reply reserve).")
    ] = None,
    history_limit: Annotated[int | None, typer.Option(help="Messages of history (default 25).")] = None,
    message: Annotated[int | None, typer.Option(help="The message being answered; incoming ends with it.")] = None,
    channel: Annotated[str | None, typer.Option(help="Channel guidelines to use: chat, call, sms, email.")] = None,
    format_: Annotated[
        ContextFormat,
        typer.Option("--format", help="openai/anthropic: the messages; json: messages and report; table: for people."),
    ] = ContextFormat.openai,
) -> None:
    """The context an agent's next model call receives, and what was left out and why."""
    with _open() as mem:
        ctx = (
            mem.world(world, tenant=_tenant())
            .agent(agent_id)
            .context(chat, max_tokens=max_tokens, history_limit=history_limit, message=message, channel=channel)
        )
        if format_ is ContextFormat.openai:
            _json(ctx.openai())
        elif format_ is ContextFormat.anthropic:
            _json(ctx.anthropic())
        elif format_ is ContextFormat.json:
            _json(ctx.to_dict())
        else:
            print_context(out, ctx, f"{agent_id} in {world}" + (f" / {chat}" if chat else ""))


# -- facts, memories, search -------------------------------------------------------------------


@facts_app.command("list")
def facts_list(
    scope: Annotated[str, typer.Argument(help="user:ID, agent:WORLD/AGENT or world:ID")],
    json_: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
) -> None:
    """A scope's facts and summary sections."""
    with _open() as mem:
        handle = mem.scope(scope, tenant=_tenant())
        facts, sections = handle.list(), handle.sections
        if json_:
            _json({"scope": handle.id, "facts": [f.to_dict() for f in facts], "sections": sections})
            return
        table = Table("id", "category", "confidence", "content", "source", title=f"facts of {handle.id}")
        for f in facts:
            table.add_row(
                str(f.id),
                f.category,
                f"{f.confidence:.2f}",
                f.content + (f" (avoid: {f.avoid})" if f.avoid else ""),
                f.source,
            )
        out.print(table)
        for name, text in sections.items():
            out.print(f"[bold]{name}[/]: {text}", highlight=False)


@facts_app.command("add")
def facts_add(
    scope: Annotated[str, typer.Argument(help="user:ID, agent:WORLD/AGENT or world:ID")],
    content: str,
    category: Annotated[
        str, typer.Option(help="preference, knowledge, context, behavior, goal or correction.")
    ] = "knowledge",
    confidence: Annotated[float, typer.Option(help="0 to 1.")] = 1.0,
    avoid: Annotated[str | None, typer.Option(help="For a correction: what to avoid.")] = None,
) -> None:
    """Add a fact; prints it as JSON."""
    with _open(create=True) as mem:
        _json(
            mem.scope(scope, tenant=_tenant())
            .add(content, category=category, confidence=confidence, avoid=avoid)
            .to_dict()
        )


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
    with _open() as mem:
        _json(mem.scope(scope, tenant=_tenant()).update(fact_id, **changes).to_dict())


@facts_app.command("delete")
def facts_delete(scope: str, fact_id: int) -> None:
    """Delete one fact."""
    with _open() as mem:
        mem.scope(scope, tenant=_tenant()).delete(fact_id)
        err.print(f"deleted fact {fact_id}")


@facts_app.command("clear")
def facts_clear(scope: str) -> None:
    """Delete every fact and section of a scope."""
    with _open() as mem:
        err.print(f"removed {mem.scope(scope, tenant=_tenant()).clear()} facts")


@facts_app.command("export")
def facts_export(scope: str) -> None:
    """Write a scope's facts and sections as JSON to stdout (for `facts import`)."""
    with _open() as mem:
        _json(mem.scope(scope, tenant=_tenant()).export())


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
        err.print(f"[red]error:[/] {escape(f'cannot read {file}: {exc}')}", highlight=False)
        raise typer.Exit(1) from None
    with _open(create=True) as mem:
        _json(mem.scope(scope, tenant=_tenant()).import_facts(data, replace=replace))


@memory_app.command("add")
def memory_add(
    world: str,
    content: str,
    agent: Annotated[str | None, typer.Option(help="Private to this agent (default: shared in the world).")] = None,
    type_: Annotated[str, typer.Option("--type", help="A kind of memory: note, episode, preference, ...")] = "note",
    importance: Annotated[int, typer.Option(help="1 (trivia) to 10 (crucial).")] = 5,
) -> None:
    """Add a long-term memory; prints it as JSON."""
    with _open() as mem:
        target = mem.world(world, tenant=_tenant()).agent(agent) if agent else mem.world(world, tenant=_tenant())
        _json(target.add_memory(content, type=type_, importance=importance).to_dict())


@memory_app.command("list")
def memory_list(
    world: str,
    agent: Annotated[str | None, typer.Option(help="Also this agent's private memories.")] = None,
    min_importance: Annotated[int, typer.Option(help="The least importance.")] = 1,
) -> None:
    """Long-term memories as JSON lines, most important first."""
    with _open() as mem:
        target = mem.world(world, tenant=_tenant()).agent(agent) if agent else mem.world(world, tenant=_tenant())
        for note in target.memories(min_importance=min_importance):
            sys.stdout.write(json.dumps(note.to_dict(), ensure_ascii=False) + "\n")


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
    with _open() as mem:
        queued = mem.world(world, tenant=_tenant()).agent(agent).extract(chat, scope=scope)
        runs = mem.service.long_term.run_extraction(None, queued["scope"]) if queued["queued"] else []
        failed = next((run for run in runs if run.error), None)
        if failed is not None:  # the model's or the answer's fault: a script must see it
            err.print(
                f"[red]error:[/] extraction for {failed.scope} failed: {escape(failed.error or '')}", highlight=False
            )
            raise typer.Exit(1)
        _json({**queued, "extractions": sum(run.model_called for run in runs)})


@app.command("index")
def index_command(
    once: Annotated[bool, typer.Option(help="Index everything pending, then exit.")] = False,
) -> None:
    """Keep the search index up to date: copy new messages and embed them in batches, until
    stopped (Ctrl-C). `recall serve` runs this for its store by itself; run it by hand beside
    other processes that write the store, or with --once after a bulk import."""
    from recall.index_worker import run_worker

    try:
        location = _state.get("db") or default_db()
        check_location(location, create=False)
        done = run_worker(location, Settings.from_env(), once=once)
    except RecallError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        return
    if once:
        err.print(f"indexed: {done} steps of work (messages copied + vectors stored)")


class SearchMethod(StrEnum):
    hybrid = "hybrid"
    bm25 = "bm25"
    vector = "vector"


@app.command()
def search(
    world: str,
    query: str,
    k: Annotated[int, typer.Option("--k", help="How many results.")] = 10,
    kind: Annotated[list[str] | None, typer.Option(help="message, memory or fact (repeat; default all).")] = None,
    method: Annotated[
        SearchMethod, typer.Option(help="hybrid fuses BM25 keywords and embeddings.")
    ] = SearchMethod.hybrid,
    chat: Annotated[str | None, typer.Option(help="Only this chat.")] = None,
    sender: Annotated[str | None, typer.Option(help="Only messages from this sender.")] = None,
    json_: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
) -> None:
    """Search a world's messages, memories and facts (brings the index up to date first)."""
    with _open() as mem:
        mem.refresh_index()
        results = mem.world(world, tenant=_tenant()).search(
            query,
            k=k,
            kinds=tuple(kind or ("message", "memory", "fact")),
            method=method.value,
            chat=chat,
            sender=sender,
        )
        if json_:
            _json([r.to_dict() for r in results])
            return
        table = Table("score", "kind", "id", "when", "chat", "text", title=f"{query!r} in {world}")
        for r in results:
            table.add_row(
                f"{r.score:.4f}",
                r.kind,
                str(r.source_id),
                r.created_at.strftime("%Y-%m-%d %H:%M"),
                r.chat_id or "",
                r.text,
            )
        out.print(table)


# -- import ------------------------------------------------------------------------------------


@contextmanager
def _progress(total: int, label: str) -> Iterator[Callable[[int], None]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
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
    """Import a LoCoMo benchmark file: one world per conversation, real session timestamps."""
    with _open(create=True) as mem:
        conversations = importers.read_locomo(file, speakers)
        for conversation in conversations:
            with _progress(len(conversation.messages), conversation.world_id) as advance:
                importers.store_conversation(mem, conversation, advance)
        total = sum(len(c.messages) for c in conversations)
        out.print(f"imported {total} messages into {len(conversations)} worlds")


@import_app.command("jsonl")
def import_jsonl(
    file: Path,
    world: Annotated[str | None, typer.Option(help="World to import into (default: from the file name).")] = None,
    chat: Annotated[str | None, typer.Option(help="Chat for lines without a chat_id.")] = None,
) -> None:
    """Import OpenAI-style chat lines ({role, content, name?, created_at?, chat_id?})."""
    with _open(create=True) as mem:
        conversation = importers.read_jsonl(file, world, chat)
        with _progress(len(conversation.messages), conversation.world_id) as advance:
            stored = importers.store_conversation(mem, conversation, advance)
        out.print(f"imported {stored} messages into world {conversation.world_id}")


# -- server ------------------------------------------------------------------------------------


@app.command()
def serve(
    db: Annotated[str | None, typer.Option("--db", help=DB_HELP)] = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8765).")] = None,
    config: Annotated[Path | None, typer.Option(help="TOML config file (default: $RECALL_CONFIG).")] = None,
    rate_limit: Annotated[int | None, typer.Option(help="Requests per agent per minute (0: no limit).")] = None,
    allow_unauthenticated_remote: Annotated[
        bool, typer.Option(help="Listen beyond loopback without API keys.")
    ] = False,
    demo: Annotated[bool, typer.Option(help="Create the demo world when the store has no world.")] = False,
) -> None:
    r"""Serve the HTTP API (/v1, docs at /docs), MCP (/mcp) and the web inspector (/).

    Without API keys it listens on loopback only and answers only loopback host names.
    Keys: RECALL_API_KEYS (KEY:TENANT[:AGENT], comma-separated) or [\[keys]] tables in --config.
    A key with admin = true also reads /metrics (counters of every tenant); any key reads /readyz.
    """
    import uvicorn

    from recall.server.config import load_config
    from recall.server.main import build_app

    try:
        settings = load_config(
            config,
            db=db or _state.get("db_flag") or None,
            host=host,
            port=port,
            rate_limit=rate_limit,
            allow_unauthenticated_remote=allow_unauthenticated_remote or None,
            demo=demo or None,
        )
        settings.check_exposure()
        check_location(settings.db, create=True)
        application = build_app(settings)
    except RecallError as exc:
        _fail(exc)
    auth = f"{len(settings.keys)} API key(s)" if settings.keys else "no API keys (loopback only)"
    where = redacted_url(settings.db)  # a URL's password stays out of the logs
    err.print(
        f"recall serving {where} at http://{settings.host}:{settings.port} ({auth}); inspector at /, API docs at /docs"
    )
    uvicorn.run(application, host=settings.host, port=settings.port, log_level="warning", access_log=False)


@app.command()
def mcp(
    world: Annotated[str | None, typer.Option(help="World the tools act on when a call names none.")] = None,
    agent: Annotated[str | None, typer.Option(help="Agent the tools act as when a call names none.")] = None,
) -> None:
    """Serve the MCP tools (messages, context, remember, recall, forget) over stdio."""
    import anyio

    from recall.server.mcp import run_stdio

    # stdout carries the protocol alone: errors go to stderr, like every other command's.
    with _open() as mem:
        if world is not None:
            # A misspelt default fails here, once, rather than in every call.
            handle = mem.world(world, tenant=_tenant())
            if agent is not None:
                handle.agent(agent)
        anyio.run(run_stdio, mem.service, world, agent, _tenant())


@app.command()
def migrate(
    source: Annotated[str, typer.Option("--from", help="The store to copy: a SQLite file or a postgresql:// URL.")],
    target: Annotated[str, typer.Option("--to", help="An empty PostgreSQL database: postgresql://…")],
) -> None:
    """Copy a whole store into an empty PostgreSQL database, then verify every table (row counts
    and SHA-256 checksums on both sides)."""
    from recall.store.migrate import migrate as copy_store

    try:
        check_location(source, create=False)
        copies = copy_store(source, target, lambda table, n: err.print(f"{table}: {n:,} rows", highlight=False))
    except RecallError as exc:
        _fail(exc)
    table = Table("table", "rows", "sha256 (both sides)", title="copied and verified")
    for copy in copies:
        table.add_row(copy.table, f"{copy.rows:,}", copy.checksum[:16] + "…")
    out.print(table)


# -- demo --------------------------------------------------------------------------------------


@app.command()
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
            _fail(exc)


def _demo(path: str) -> None:
    with Recall(path) as mem:
        world = build_demo_world(mem)
        out.rule(f"[bold]recall demo[/]: world {world.id!r}, store {path}")
        out.print("The conversation everyone heard:")
        for message in world.messages():
            out.print(f"  [dim]#{message.id}[/] [bold]{message.sender}[/]: {message.content}", highlight=False)
        for person in world.participants():
            if person.kind == "agent":
                out.print()
                print_context(out, world.agent(person.id).context(), f"what {person.id}'s model gets")


def _live_demo(path: str, model_spec: str | None, base_url: str | None) -> None:
    from recall.demo_live import AGENTS, LIVE_WORLD, run_live_demo, start_scripted_model
    from recall.llm.base import AgentModel
    from recall.llm.factory import agent_model, chat_model_from_settings
    from recall.llm.openai_compat import OpenAICompatibleModel

    settings = replace(Settings.from_env(), index_interval=0.0)
    scripted = None
    try:
        configured = agent_model(model_spec, base_url=base_url) if model_spec else chat_model_from_settings(settings)
    except RecallError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    if configured is None:
        scripted = start_scripted_model()
        configured = OpenAICompatibleModel("scripted", base_url=scripted.openai_url, max_retries=0)
    chat: AgentModel = configured  # type: ignore[assignment]  # both adapters speak chat()
    source = "recall's scripted model server (no model configured)" if scripted else chat.name
    try:
        with Recall(path, settings) as mem:
            out.rule(f"[bold]recall demo --live[/]: world {LIVE_WORLD!r}, agents answer with {source}")
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


if __name__ == "__main__":  # pragma: no cover
    app()
