"""What every command group shares: the global options, opening the store, printing.

Output meant for scripts is JSON on stdout; errors go to stderr with exit status 1 (bad input,
unknown names) so scripts can tell. Stored text is printed literally, never read as rich markup.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from recall.api import Recall, default_db
from recall.errors import InvalidInputError, RecallError, StoreOpenError
from recall.settings import Settings
from recall.store.urls import foreign_scheme, foreign_url_error, is_collapsed_postgres_url, is_postgres_url

out = Console()
err = Console(stderr=True, soft_wrap=True)

DB_HELP = (
    "The store: a SQLite file or a postgresql://USER:PASSWORD@HOST/DB URL (default: $RECALL_DB, else ./recall.db)."
)

#: Options several commands take, declared once.
ChatOption = Annotated[str | None, typer.Option(help="Chat id (default: the world's default chat).")]
LimitOption = Annotated[int, typer.Option(help="At most this many.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="JSON instead of a table.")]

#: The global options of this invocation (--db, --tenant), set by the root callback.
_state: dict[str, str] = {}


def set_global_options(db: str | None, tenant: str | None) -> None:
    _state["db"] = db or default_db()
    _state["db_flag"] = db or ""
    if tenant is not None:
        _state["tenant"] = tenant
    else:
        _state.pop("tenant", None)


def tenant() -> str | None:
    """The --tenant given, or None (worlds are then found in any tenant)."""
    return _state.get("tenant")


def db_location() -> str:
    """The store this invocation names: --db, else $RECALL_DB, else ./recall.db."""
    return _state.get("db") or default_db()


def db_flag() -> str:
    """The --db given on the command line ('' when none was)."""
    return _state.get("db_flag", "")


@contextmanager
def open_recall(*, create: bool = False) -> Iterator[Recall]:
    """Open the store; turn recall's errors into a clear message and exit status 1. Only a
    command that creates (`create=True`) may open a store that does not exist yet."""
    try:
        location = db_location()
        check_location(location, create=create)
        # A command is short-lived: no background indexer; `search` refreshes the index itself.
        settings = replace(Settings.from_env(), index_interval=0.0)
        with Recall(location, settings) as mem:
            yield mem
    except RecallError as exc:
        fail(exc)


def fail(exc: RecallError | str) -> NoReturn:
    """One line on stderr (the message is text, not markup), exit status 1."""
    err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
    raise typer.Exit(1) from None


def check_location(location: str, *, create: bool) -> None:
    """Refuse a store file that does not exist (unless the command creates one), and never
    create missing folders: a misspelt --db must not leave an empty store behind. A URL, and
    a file that exists, are left to the store to judge."""
    if foreign_scheme(location) is not None:
        raise InvalidInputError("db", foreign_url_error(location))
    if location == ":memory:" or is_postgres_url(location) or is_collapsed_postgres_url(location):
        return
    path = Path(location)
    if path.exists():
        return
    if not create:
        flag = f" --db {location}" if db_flag() == location else ""
        raise StoreOpenError(f"no recall store at {location}: create one with `recall{flag} world create ID`")
    if not path.parent.is_dir():
        raise StoreOpenError(f"cannot create {location}: folder {path.parent} does not exist (create it first)")


def print_json(data: Any) -> None:
    """One JSON document, indented, on stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def print_json_lines(rows: Iterable[dict[str, Any]]) -> None:
    """One JSON object per line on stdout, for scripts that read a stream."""
    for row in rows:
        sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
