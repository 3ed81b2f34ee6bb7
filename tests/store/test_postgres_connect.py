"""A PostgreSQL store that cannot log in or find its server fails at once, with one line naming
the reason and never the password, instead of the connection pool's 30 s of retries (real
server: the session's embedded PostgreSQL, with a role that needs a password)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from recall.errors import StoreOpenError
from recall.store.postgres import PostgresStore

ROLE = "recall_password_user"
DATABASE = "recall_password_db"
PASSWORD = "right-horse-battery"
WRONG = "hunter2-wrong"
#: Far below the pool's 30 s of retries, far above a refused login.
BOUND = 10.0


def _socket_folder(server_url: str) -> str:
    return next(p.removeprefix("host=") for p in server_url.partition("?")[2].split("&") if p.startswith("host="))


@pytest.fixture(scope="module")
def password_url(postgres_server: str) -> Iterator[Callable[[str], str]]:
    """URLs for a role that must give its password (the server trusts every other login):
    `password_url(password)`. A superuser, as recall's migrations create extensions."""
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {ROLE} SUPERUSER LOGIN PASSWORD '{PASSWORD}'")  # constants, not input
        conn.execute(f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
        hba = Path(str(conn.execute("SHOW hba_file").fetchone()[0]))  # type: ignore[index]
        original = hba.read_text()
        # The first matching line wins: this role alone must authenticate.
        hba.write_text(f"local all {ROLE} scram-sha-256\n{original}")
        conn.execute("SELECT pg_reload_conf()")
    folder = _socket_folder(postgres_server)
    try:
        yield lambda password: f"postgresql://{ROLE}:{password}@/{DATABASE}?host={folder}"
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            hba.write_text(original)
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(f"DROP DATABASE {DATABASE} WITH (FORCE)")
            conn.execute(f"DROP ROLE {ROLE}")


def open_failure(url: str, caplog: pytest.LogCaptureFixture) -> tuple[str, float]:
    """The error opening `url` gives, and how long it took; fails if the pool retried."""
    start = time.monotonic()
    with caplog.at_level(logging.DEBUG, logger="psycopg.pool"), pytest.raises(StoreOpenError) as info:
        PostgresStore(url)
    elapsed = time.monotonic() - start
    retries = [
        r.getMessage() for r in caplog.records if r.name.startswith("psycopg.pool") and "error" in r.getMessage()
    ]
    assert retries == []  # one direct attempt, no pool retrying
    return str(info.value), elapsed


def test_the_right_password_opens_the_store(password_url: Callable[[str], str]) -> None:
    store = PostgresStore(password_url(PASSWORD))  # the role can log in: a failure below is the password's
    store.close()


def test_a_wrong_password_fails_at_once_without_showing_it(
    password_url: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    message, elapsed = open_failure(password_url(WRONG), caplog)
    assert "password authentication failed" in message
    assert f"postgresql://{ROLE}:***@" in message
    assert WRONG not in message and "\n" not in message
    assert elapsed < BOUND


def test_an_unknown_host_fails_at_once_without_the_password(caplog: pytest.LogCaptureFixture) -> None:
    message, elapsed = open_failure(f"postgresql://recall:{WRONG}@nonexistent.invalid/recall", caplog)
    assert "postgresql://recall:***@nonexistent.invalid/recall" in message
    assert "nonexistent.invalid" in message.split(": ", 1)[1]  # the reason names the host
    assert WRONG not in message and "\n" not in message
    assert elapsed < BOUND


def test_a_malformed_url_is_a_clear_error(caplog: pytest.LogCaptureFixture) -> None:
    message, _ = open_failure(f"postgresql://recall:{WRONG}@localhost/recall?nonsense=1", caplog)
    assert "cannot connect to PostgreSQL" in message and "nonsense" in message
    assert WRONG not in message


@pytest.mark.parametrize("command", [["world", "list"], ["world", "create", "w"], ["serve"]])
def test_the_cli_prints_one_line_and_no_traceback(
    password_url: Callable[[str], str], command: list[str], tmp_path: Path
) -> None:
    url = password_url(WRONG)
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "recall.cli", "--db", url, *command],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "RECALL_CONFIG": ""},
    )
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: cannot connect to PostgreSQL") and "password authentication failed" in lines[0]
    assert WRONG not in result.stderr
    assert time.monotonic() - start < BOUND + 5  # the interpreter's start included
