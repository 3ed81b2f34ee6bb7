"""Serving: the HTTP API with MCP and the inspector (`recall serve`), and MCP over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recall.cli.shared import DB_HELP, check_location, db_flag, err, fail, open_recall, tenant
from recall.errors import RecallError
from recall.extras import require
from recall.store.urls import redacted_url
from recall.telemetry.setup import configure_from_env


def serve(
    db: Annotated[str | None, typer.Option("--db", help=DB_HELP)] = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8765).")] = None,
    config: Annotated[Path | None, typer.Option(help="TOML config file (default: $RECALL_CONFIG).")] = None,
    rate_limit: Annotated[int | None, typer.Option(help="Requests per agent per minute (0: no limit).")] = None,
    max_body_bytes: Annotated[
        int | None, typer.Option(help="Largest request body in bytes (default 8 MiB); larger ones get 413.")
    ] = None,
    max_import_bytes: Annotated[
        int | None, typer.Option(help="Largest world import in bytes (default 512 MiB).")
    ] = None,
    header_timeout: Annotated[
        float | None, typer.Option(help="Seconds a client has to send a request's head (default 10).")
    ] = None,
    max_connections: Annotated[
        int | None, typer.Option(help="Open connections at most (default: the descriptor limit less 64).")
    ] = None,
    allow_unauthenticated_remote: Annotated[
        bool, typer.Option(help="Listen beyond loopback without API keys.")
    ] = False,
    demo: Annotated[bool, typer.Option(help="Create the demo world when the store has no world.")] = False,
) -> None:
    r"""Serve the HTTP API (/v1, docs at /docs), MCP (/mcp) and the web inspector (/).

    Without API keys it listens on loopback only and answers only loopback host names.
    Keys: RECALL_API_KEYS (KEY:TENANT[:AGENT], comma-separated) or [\[keys]] tables in --config.
    A key with admin = true also reads /metrics (counters of every tenant); any key reads /readyz.

    Settings: flags, else RECALL_* variables (RECALL_PORT, …), else the --config file, else defaults.
    The file is TOML: a \[server] table of the flags' settings (port = 8765, …), a [\[keys]] table per key.
    Every setting and key field, with its default: `recall docs configuration`.
    """
    # Imported here: the web stack loads only when serving (and says which extra it needs).
    require("server")
    import uvicorn

    from recall.server.collector import tune_for_serving
    from recall.server.config import connection_limit, load_config
    from recall.server.main import build_app
    from recall.server.protocol import timed_http

    try:
        settings = load_config(
            config,
            db=db or db_flag() or None,
            host=host,
            port=port,
            rate_limit=rate_limit,
            max_body_bytes=max_body_bytes,
            max_import_bytes=max_import_bytes,
            header_timeout=header_timeout,
            max_connections=max_connections,
            allow_unauthenticated_remote=allow_unauthenticated_remote or None,
            demo=demo or None,
        )
        settings.check_exposure()
        check_location(settings.db, create=True)
        # OTEL_* variables: traces and metrics to a collector (docs/opentelemetry.md); none: nothing.
        configure_from_env()
        application = build_app(settings)
    except RecallError as exc:
        fail(exc)
    auth = f"{len(settings.keys)} API key(s)" if settings.keys else "no API keys (loopback only)"
    where = redacted_url(settings.db)  # a URL's password stays out of the logs
    err.print(
        f"recall serving {where} at http://{settings.host}:{settings.port} ({auth}); inspector at /, API docs at /docs",
        markup=False,
    )
    tune_for_serving()
    uvicorn.run(
        application,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        # Slow senders are cut off and connections capped below the descriptor limit.
        http=timed_http(settings.header_timeout),
        limit_concurrency=connection_limit(settings),
    )


def mcp(
    world: Annotated[str | None, typer.Option(help="World the tools act on when a call names none.")] = None,
    agent: Annotated[str | None, typer.Option(help="Agent the tools act as when a call names none.")] = None,
) -> None:
    """Serve the MCP tools (messages, context, remember, recall, forget, facts, memories, search) over stdio."""
    import anyio

    from recall.server.mcp import run_stdio

    # stdout carries the protocol alone: errors go to stderr, like every other command's.
    try:
        configure_from_env()
    except RecallError as exc:
        fail(exc)
    with open_recall() as mem:
        if world is not None:
            # A misspelt default fails here, once, rather than in every call.
            handle = mem.world(world, tenant=tenant())
            if agent is not None:
                handle.agent(agent)
        anyio.run(run_stdio, mem.service, world, agent, tenant())
