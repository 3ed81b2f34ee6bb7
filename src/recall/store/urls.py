"""Telling a PostgreSQL URL from a SQLite file name, and showing a URL without its password.

Kept free of heavy imports: the SQLite store, the CLI and the server's start-up text use it
without loading psycopg.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

#: The schemes of a PostgreSQL URL, as libpq accepts them.
SCHEMES = ("postgresql", "postgres")


def is_postgres_url(location: str) -> bool:
    """Whether a store location names a PostgreSQL database (else it is a SQLite file)."""
    return location.startswith(tuple(f"{scheme}://" for scheme in SCHEMES))


#: What a URL of any scheme begins with (`mysql://`, `sqlite:///`, `redis:/` once collapsed).
_ANY_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):/")


def foreign_scheme(location: str) -> str | None:
    """The scheme of a URL recall does not open (anything but PostgreSQL's), else None: such a
    location is never a file name."""
    found = _ANY_URL.match(location)
    if found is None or found.group(1).lower() in SCHEMES:
        return None
    return found.group(1)


def foreign_url_error(location: str) -> str:
    """What to say of a location `foreign_scheme` names, without its password."""
    shown = re.sub(r"^([^:]+:/+[^/@:]*:)[^@/]*@", r"\1***@", location)
    return (
        f"{shown} is a {foreign_scheme(location)} URL: recall opens a SQLite file (a path, or :memory:) "
        "or a PostgreSQL database (postgresql://USER:PASSWORD@HOST/DB or postgres://…)"
    )


def is_collapsed_postgres_url(location: str) -> bool:
    """Whether a location is a PostgreSQL URL whose `//` became `/`, as `str(Path(url))` makes
    it: such a name must never be opened as a SQLite file."""
    return location.startswith(tuple(f"{scheme}:/" for scheme in SCHEMES)) and not is_postgres_url(location)


def _credentials(url: str) -> tuple[str, str, str | None, str] | None:
    """(scheme and slashes, user, password or None, the rest from the host on) of a PostgreSQL
    URL, collapsed or not; None for anything else."""
    scheme, sep, rest = url.partition(":/")
    if not sep or scheme not in SCHEMES:
        return None
    slashes = ":/" + ("/" if rest.startswith("/") else "")
    rest = rest.removeprefix("/")
    authority, slash, tail = rest.partition("/")
    credentials, at, host = authority.rpartition("@")
    if not at:
        return None
    user, colon, password = credentials.partition(":")
    return scheme + slashes, user, password if colon else None, f"{host}{slash}{tail}"


def redacted_url(url: str) -> str:
    """The URL without its password, for messages and logs (a file name comes back as it is)."""
    parts = _credentials(url)
    if parts is None or parts[2] is None:
        return url
    prefix, user, _, rest = parts
    return f"{prefix}{user}:***@{rest}"


def redacted_text(text: str, url: str) -> str:
    """`text` (an error from libpq) without the password of `url`: where it quotes the URL or a
    `password=` setting. The password alone is not searched for: a short one ('e') would
    garble every word that holds it."""
    parts = _credentials(url)
    password = parts[2] if parts is not None else None
    if parts is not None and password is not None:
        prefix, user, _, rest = parts
        for shown in dict.fromkeys((password, unquote(password))):
            text = text.replace(f"{prefix}{user}:{shown}@{rest}", redacted_url(url))
            text = text.replace(f":{shown}@", ":***@")
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", text)
