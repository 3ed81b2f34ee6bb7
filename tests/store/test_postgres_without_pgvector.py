"""recall on a PostgreSQL without pgvector: the vectors go in a bytea column (search runs on the
copy in memory either way); without citext, one line saying what to install.

The databases here lack extensions for real: PostgreSQL 18's `extension_control_path`, set on
the database, points at a folder holding only the control and script files of the extensions
kept, so `CREATE EXTENSION vector` there answers what it answers on a server whose packages do
not include pgvector ('extension "vector" is not available').
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
import pytest
from numpy.typing import NDArray
from typer.testing import CliRunner

from recall import Recall, Settings
from recall.cli import app
from recall.errors import StoreOpenError
from recall.search.open import search_index
from recall.store.postgres import PostgresStore
from tests.pg import database_name, database_url, new_database

#: The real MiniLM embeddings; the tests drive the index.
SETTINGS = Settings(index_interval=0)


def _column_type(url: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT atttypid::regtype::text FROM pg_attribute"
            " WHERE attrelid = 'search_items'::regclass AND attname = 'embedding' AND NOT attisdropped"
        ).fetchone()
    assert row is not None
    return str(row[0])


def _as_user(url: str, user: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{user}@{rest.split('@', 1)[1]}"


@pytest.fixture
def database_lacking(postgres_server: str) -> Iterator[Callable[..., str]]:
    """Makes a new database on the session's server where only the extensions named can be
    created (plpgsql is there already, from the template); gives its URL."""
    folders: list[str] = []

    def make(*kept: str) -> str:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            row = conn.execute("SELECT setting FROM pg_config WHERE name = 'SHAREDIR'").fetchone()
            assert row is not None
            # Readable by the server's own system user (the wheel's, when the tests run as root).
            folder = tempfile.mkdtemp(prefix="recall-pg-ext-")
            folders.append(folder)
            (Path(folder) / "extension").mkdir()
            for name in kept:
                for file in (Path(str(row[0])) / "extension").glob(f"{name}[.-]*"):
                    shutil.copy(file, Path(folder) / "extension")
            for path in (folder, f"{folder}/extension", *(str(p) for p in Path(folder, "extension").iterdir())):
                os.chmod(path, 0o755)
            url = new_database(postgres_server)
            name = database_name(url)
            conn.execute(f"ALTER DATABASE \"{name}\" SET extension_control_path = '{folder}'")
        with psycopg.connect(url, autocommit=True) as conn:  # the database really lacks them
            available = {str(r[0]) for r in conn.execute("SELECT name FROM pg_available_extensions")}
        assert available == set(kept)
        return url

    yield make
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def _search_by_meaning(url: str) -> None:
    """Posts, embeds and finds a message by meaning alone; then a second process's copy (a new
    `Recall`) reads the stored vectors back and finds it too, without embedding again."""
    with Recall(url, SETTINGS) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.post("maria", "My invoice for February is wrong: I was charged twice.")
        laptop = world.post("maria", "My laptop screen cracked after I dropped it.")
        assert mem.refresh_index() > 0
        assert world.search("computer display smashed", method="vector", k=1)[0].source_id == laptop.id
    with Recall(url, SETTINGS) as again:
        assert again.refresh_index() == 0  # nothing left to embed: the vectors were stored
        hits = again.world("w").search("computer display smashed", method="vector", k=1)
        assert hits[0].source_id == laptop.id


def test_a_server_without_pgvector_stores_vectors_as_bytes(database_lacking: Callable[..., str]) -> None:
    url = database_lacking("citext")
    _search_by_meaning(url)
    assert _column_type(url) == "bytea"
    with psycopg.connect(url, autocommit=True) as conn:
        (blob,) = conn.execute("SELECT embedding FROM search_items WHERE embedded LIMIT 1").fetchone() or (b"",)
    assert len(blob) == 384 * 4  # MiniLM's 384 floats, 4 bytes each


def test_a_role_that_may_not_create_pgvector_stores_vectors_as_bytes(postgres_server: str) -> None:
    """pgvector is not a trusted extension: a database's owner who is not a superuser cannot
    create it, even where it is installed."""
    name = f"recall_plain_{os.getpid()}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"DROP ROLE IF EXISTS {name}")
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(f"CREATE DATABASE {name} OWNER {name}")
    url = _as_user(database_url(postgres_server, name), name)
    _search_by_meaning(url)
    assert _column_type(url) == "bytea"


def test_pgvector_already_in_the_database_is_used_by_a_plain_role(postgres_server: str) -> None:
    """An administrator created the extension: recall, not a superuser, uses its type."""
    name = f"recall_granted_{os.getpid()}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"DROP ROLE IF EXISTS {name}")
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(f"CREATE DATABASE {name} OWNER {name}")
    with psycopg.connect(database_url(postgres_server, name), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    url = _as_user(database_url(postgres_server, name), name)
    _search_by_meaning(url)
    assert _column_type(url) == "vector"


def test_pgvector_is_used_where_it_can_be_created(postgres_url: str) -> None:
    PostgresStore(postgres_url).close()
    assert _column_type(postgres_url) == "vector"


@dataclass(frozen=True)
class LengthEmbedder:
    """Another model, of another dimension: a text's vector is its length and its count of
    spaces (enough to tell the two test messages apart)."""

    name: str = "test-length"
    dim: int = 2

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.array([[len(t), t.count(" ")] for t in texts], dtype=np.float32)


def test_a_new_model_keeps_the_column_type_without_pgvector(database_lacking: Callable[..., str]) -> None:
    """Another embedder's vectors replace the column (they may be of another length): it is
    made again as bytea, not as pgvector's type, and the new vectors are read back."""
    url = database_lacking("citext")
    _search_by_meaning(url)
    store = PostgresStore(url)
    try:
        index = search_index(store, LengthEmbedder())
        assert index is not None and index.catch_up() == 2  # both messages embedded again
        assert _column_type(url) == "bytea"
        again = search_index(store, LengthEmbedder())  # a fresh copy reads the stored vectors
        assert again is not None and again.pending() == 0
        hits = again.search("x" * 44, tenant="", space="w", method="vector", k=2)
        assert len(hits) == 2
    finally:
        store.close()


def test_a_server_without_citext_is_one_line_naming_what_to_install(database_lacking: Callable[..., str]) -> None:
    url = database_lacking()
    with pytest.raises(StoreOpenError) as info:
        PostgresStore(url)
    message = str(info.value)
    assert "\n" not in message
    assert 'extension "citext" is not available' in message and "postgresql-contrib" in message
    result = CliRunner().invoke(app, ["--db", url, "world", "list"])
    assert result.exit_code != 0
    assert result.output.strip().count("\n") == 0 and "citext" in result.output


def test_a_role_that_may_not_create_tables_is_one_line(postgres_server: str) -> None:
    """A role that neither owns the database nor may create in its schema public."""
    name = f"recall_guest_{os.getpid()}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"DROP ROLE IF EXISTS {name}")
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(f"CREATE DATABASE {name}")
    with pytest.raises(StoreOpenError) as info:
        PostgresStore(_as_user(database_url(postgres_server, name), name))
    message = str(info.value)
    assert "\n" not in message
    assert "permission denied for schema public" in message and "database's owner" in message
