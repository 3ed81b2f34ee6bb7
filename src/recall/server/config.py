"""Server settings from flags, `RECALL_*` environment variables and a TOML config file.

Precedence, highest first: command-line flags, environment, config file, defaults.

    # recall.toml
    [server]
    port = 8765
    rate_limit = 100          # requests per agent per minute

    [[keys]]
    key = "sk-triage"
    tenant = "acme"
    agent = "triage"          # this key may act only as agent `triage`

Every setting, its type, default, flag and variable: docs/configuration.md (a test holds it to
SERVER_SETTINGS, KEY_FIELDS and ENV_SETTINGS below). `RECALL_API_KEYS` adds keys as
`KEY:TENANT[:AGENT]`, comma-separated (admin keys only in the file).
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from recall.errors import InvalidInputError

DEFAULT_PORT = 8765
DEFAULT_HOST = "127.0.0.1"
#: The largest request body: a batch of posts of ordinary messages fits many times over.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
#: The largest world import (an export's JSON lines).
DEFAULT_MAX_IMPORT_BYTES = 512 * 1024 * 1024
_LIMITS = ("max_body_bytes", "max_import_bytes", "header_timeout", "max_connections")
#: What a config file's [server] table may set.
SERVER_SETTINGS = ("db", "host", "port", "rate_limit", *_LIMITS, "allow_unauthenticated_remote")
#: What each [[keys]] table of a config file may hold.
KEY_FIELDS = ("key", "tenant", "agent", "admin")
#: The settings a `RECALL_<NAME>` environment variable sets (besides RECALL_API_KEYS and RECALL_CONFIG).
ENV_SETTINGS = ("db", "host", "port", "rate_limit", *_LIMITS)


@dataclass(frozen=True)
class ApiKey:
    key: str
    tenant: str
    #: When set, the key may act only as this agent (in any world of its tenant).
    agent: str | None = None
    #: The operator's key: besides its tenant's worlds it reads /metrics, whose counters cover
    #: every tenant (never together with `agent`).
    admin: bool = False


@dataclass(frozen=True)
class ServerConfig:
    db: str = "recall.db"
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    keys: tuple[ApiKey, ...] = ()
    #: Requests per agent per minute (inbox, send, context, memory); 0 turns the limit off.
    rate_limit: int = 100
    #: The largest request body in bytes, and a world import's (POST /v1/worlds/import).
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_import_bytes: int = DEFAULT_MAX_IMPORT_BYTES
    #: Seconds a client has to send each request's head (slow senders are cut off: `protocol.py`).
    header_timeout: float = 10.0
    #: Open connections at most (more are answered 503); 0: the process's descriptor limit less 64.
    max_connections: int = 0
    #: Listen beyond loopback without API keys (anyone who can reach the port has full access).
    allow_unauthenticated_remote: bool = False
    #: Create the demo world when the store has no world yet.
    demo: bool = False

    def check_exposure(self) -> None:
        """Refuse to serve an open API beyond this machine unless told to."""
        if self.keys or self.allow_unauthenticated_remote or is_loopback(self.host):
            return
        raise InvalidInputError(
            "host",
            f"{self.host} is reachable from other machines and no API keys are configured: "
            "add keys (RECALL_API_KEYS or [[keys]] in the config file), listen on 127.0.0.1, "
            "or pass --allow-unauthenticated-remote",
        )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_keys(text: str, where: str = "RECALL_API_KEYS") -> tuple[ApiKey, ...]:
    keys = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        parts = entry.split(":")
        if len(parts) not in (2, 3) or not all(parts):
            raise InvalidInputError(where, f"{entry!r} is not KEY:TENANT or KEY:TENANT:AGENT")
        keys.append(ApiKey(parts[0], parts[1], parts[2] if len(parts) == 3 else None))
    return tuple(keys)


def _keys_from_toml(items: Any, where: str) -> tuple[ApiKey, ...]:
    if not isinstance(items, list):
        raise InvalidInputError(where, "[[keys]] must be a list of tables with key and tenant")
    keys = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str) or not item.get("key"):
            raise InvalidInputError(f"{where}[{i}]", 'needs key = "…" and tenant = "…"')
        unknown = set(item) - set(KEY_FIELDS)
        if unknown:
            # A misspelt `agent` must not leave the key acting as every agent of its tenant.
            raise InvalidInputError(
                f"{where}[{i}]", f"unknown field {sorted(unknown)[0]!r}: a key has key, tenant, agent and admin"
            )
        tenant, agent, admin = item.get("tenant"), item.get("agent"), item.get("admin", False)
        if not isinstance(tenant, str) or not tenant or (agent is not None and not isinstance(agent, str)):
            raise InvalidInputError(f"{where}[{i}]", "needs a tenant name; agent, when given, is an agent id")
        if not isinstance(admin, bool) or (admin and agent is not None):
            raise InvalidInputError(f"{where}[{i}]", "admin is true or false, and an admin key is bound to no agent")
        keys.append(ApiKey(item["key"], tenant, agent, admin))
    return tuple(keys)


def _int(value: Any, where: str, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InvalidInputError(where, f"must be a whole number, got {value!r}") from None
    if isinstance(value, bool) or not low <= number <= high:
        raise InvalidInputError(where, f"must be between {low} and {high}, got {value!r}")
    return number


def _seconds(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(where, f"must be a number of seconds, got {value!r}") from None
    if isinstance(value, bool) or not 0.1 <= number <= 3600:
        raise InvalidInputError(where, f"must be between 0.1 and 3600 seconds, got {value!r}")
    return number


def connection_limit(config: ServerConfig) -> int:
    """The most connections the server keeps open: the setting, else the descriptor limit less
    what the store, the worker and /healthz need."""
    if config.max_connections:
        return config.max_connections
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(64, (soft if soft != resource.RLIM_INFINITY else 65_536) - 64)


def load_config(
    config_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    **flags: Any,
) -> ServerConfig:
    """The server's settings: defaults < config file < `RECALL_*` environment < flags (None = unset)."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    keys: tuple[ApiKey, ...] = ()
    path = config_file or env.get("RECALL_CONFIG")
    if path:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise InvalidInputError("config", f"cannot read {path}: {exc}") from None
        tables = set(data) - {"server", "keys"}
        if tables:
            raise InvalidInputError(
                "config", f"unknown table [{sorted(tables)[0]}] in {path}: a config file has [server] and [[keys]]"
            )
        server = data.get("server", {})
        if not isinstance(server, Mapping):
            raise InvalidInputError("config", f"[server] in {path} must be a table of settings")
        unknown = set(server) - set(SERVER_SETTINGS)
        if unknown:
            raise InvalidInputError("config", f"unknown [server] setting {sorted(unknown)[0]!r} in {path}")
        if not isinstance(server.get("allow_unauthenticated_remote", False), bool):
            # A quoted "false" is a non-empty string: it would open the server to the network.
            raise InvalidInputError("allow_unauthenticated_remote", f"must be true or false in {path}")
        values.update(server)
        keys += _keys_from_toml(data.get("keys", []), f"{path} [[keys]]")
    for name in ENV_SETTINGS:
        raw = env.get(f"RECALL_{name.upper()}")
        if raw:
            values[name] = raw
    if env.get("RECALL_API_KEYS"):
        keys += parse_keys(env["RECALL_API_KEYS"])
    values.update({k: v for k, v in flags.items() if v is not None})
    config = replace(ServerConfig(), **{k: v for k, v in values.items() if k in _FIELDS}, keys=keys)
    return replace(
        config,
        port=_int(config.port, "port", 0, 65535),
        rate_limit=_int(config.rate_limit, "rate_limit", 0, 1_000_000),
        max_body_bytes=_int(config.max_body_bytes, "max_body_bytes", 1024, 2**40),
        max_import_bytes=_int(config.max_import_bytes, "max_import_bytes", 1024, 2**40),
        header_timeout=_seconds(config.header_timeout, "header_timeout"),
        max_connections=_int(config.max_connections, "max_connections", 0, 1_000_000),
        db=str(config.db),
        host=str(config.host),
    )


_FIELDS = {"db", "host", "port", "rate_limit", "allow_unauthenticated_remote", "demo", *_LIMITS}
