"""Stores as an older recall wrote them, for the tests of migrations: the schema up to a version
(and no further), then rows written straight into its tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import closing

import psycopg

from recall.store import postgres_schema, sqlite_schema
from recall.store.sqlite import sqlite3 as store_sqlite3


def store_before(
    location: str,
    sqlite_version: int,
    postgres_version: int,
    rows: Sequence[str],
    sequences: Mapping[str, int] | None = None,
) -> None:
    """Create the store at `location` (a SQLite path or a PostgreSQL URL) at the given schema
    version of its kind, and run `rows` (INSERTs) in it. On PostgreSQL, `sequences` names the
    next value of each serial or sequence the rows took ids of by hand ("table.column", or a
    sequence's name), as recall's own writes would have moved them."""
    if location.startswith("postgresql://"):
        with psycopg.connect(location) as conn:
            conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
            for version, sql in postgres_schema.MIGRATIONS:
                if version <= postgres_version:
                    conn.execute(sql.encode())
                    conn.execute("INSERT INTO schema_migrations VALUES (%s, 0.0)", (version,))
            for statement in rows:
                conn.execute(statement.encode())
            for name, following in (sequences or {}).items():
                table, _, column = name.partition(".")
                sequence = f"pg_get_serial_sequence('{table}', '{column}')" if column else f"'{name}'"
                conn.execute(f"SELECT setval({sequence}, %s, false)", (following,))
        return
    with closing(store_sqlite3.connect(location)) as db:
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
        for version, sql in sqlite_schema.MIGRATIONS:
            if version <= sqlite_version:
                for statement in sql.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO schema_migrations VALUES (?, 0.0)", (version,))
        for statement in rows:
            db.execute(statement)
        db.commit()
