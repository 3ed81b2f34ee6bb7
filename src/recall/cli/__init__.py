"""The `recall` command: the Python API from a shell, for people and scripts.

Output meant for scripts (post, context --format …) is JSON on stdout; errors go to stderr
with exit status 1 (bad input, unknown names) so scripts can tell.

This module holds the root command and its global options (--db, --tenant); each command group
lives in a module of its own, and `shared` holds what they share. Heavy stacks (the model SDKs,
the web server, the embedding model) load inside the commands that need them, so `recall
--help` stays fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from recall.cli import demo, docs, lifecycle, messages, migrate, runner, search, serve
from recall.cli.calls import calls_app
from recall.cli.facts import facts_app
from recall.cli.help_format import App
from recall.cli.importing import import_app
from recall.cli.memories import memory_app
from recall.cli.participants import agent_app, human_app, world_app
from recall.cli.shared import DB_HELP, set_global_options
from recall.extras import MissingExtraError

__all__ = ["app", "main"]

app = App(
    help="recall: memory and context for LLM agents. Keeps everything each participant heard; "
    "builds for every model call only what matters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Shell completion is one `--show-completion` away in typer; two more lines in every --help
    # of a tool most people script are not worth it.
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"recall {version('recall-memory')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            typer.echo("recall (not installed: no version)")
        raise typer.Exit()


@app.callback()
def global_options(
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
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print recall's version and exit."),
    ] = False,
) -> None:
    set_global_options(db, tenant)


# Listed in `recall --help` in this order: the commands, then the groups.
for command in (
    messages.post,
    messages.messages,
    messages.inbox,
    messages.context,
    search.index,
    search.search,
    serve.serve,
    serve.mcp,
    migrate.migrate,
    lifecycle.export,
    demo.demo,
    docs.docs,
):
    app.command()(command)
app.command("import-world")(lifecycle.import_world)
app.command("delete-message")(lifecycle.delete_message)
agent_app.command("run")(runner.agent_run)
world_app.command("delete")(lifecycle.world_delete)
agent_app.command("delete")(lifecycle.agent_delete)
human_app.command("delete")(lifecycle.human_delete)
app.add_typer(world_app, name="world")
app.add_typer(agent_app, name="agent")
app.add_typer(human_app, name="human")
app.add_typer(import_app, name="import")
app.add_typer(facts_app, name="facts")
app.add_typer(memory_app, name="memory")
app.add_typer(calls_app, name="calls")


def main() -> None:
    """The `recall` console script."""
    try:
        app()
    except MissingExtraError as exc:  # a command of a part this install left out: one line, no traceback
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
