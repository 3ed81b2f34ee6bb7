"""`recall migrate`: copy a whole store into an empty PostgreSQL database, verified."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from recall.cli.shared import check_location, err, fail, out
from recall.errors import RecallError


def migrate(
    source: Annotated[str, typer.Option("--from", help="The store to copy: a SQLite file or a postgresql:// URL.")],
    target: Annotated[str, typer.Option("--to", help="An empty PostgreSQL database: postgresql://…")],
) -> None:
    """Copy a whole store into an empty PostgreSQL database and verify it.

    Every table is checked afterwards: row counts and SHA-256 checksums on both sides."""
    from recall.store.migrate import migrate as copy_store

    try:
        check_location(source, create=False)
        copies = copy_store(source, target, lambda table, n: err.print(f"{table}: {n:,} rows", highlight=False))
    except RecallError as exc:
        fail(exc)
    table = Table("table", "rows", "sha256 (both sides)", title="copied and verified")
    for copy in copies:
        table.add_row(copy.table, f"{copy.rows:,}", copy.checksum[:16] + "…")
    out.print(table)
