"""Assemble the server: the store named by the config, the service, the REST app, MCP, and the
search index worker process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from fastapi import FastAPI

from recall.api import Recall
from recall.demo import build_demo_world
from recall.search.worker import start_worker_process, stop_worker_process
from recall.server.app import create_app
from recall.server.config import ServerConfig
from recall.server.mcp_http import mount_mcp
from recall.settings import Settings


def build_app(config: ServerConfig) -> FastAPI:
    settings = Settings.from_env()
    # Embedding runs in a worker process (see recall.search.worker), not in a thread of the
    # server's: a stored database can be shared; an in-memory one keeps the thread.
    worker = settings.index_interval > 0 and config.db != ":memory:"
    mem = Recall(config.db, replace(settings, index_interval=0) if worker else settings)
    if config.demo and not mem.service.worlds.list_worlds():
        build_demo_world(mem)
    app = create_app(mem.service, config)
    mount_mcp(app)
    if worker:

        @asynccontextmanager
        async def index_worker() -> AsyncIterator[None]:
            process = start_worker_process(config.db)
            # The worker copies and embeds; the server keeps its own copy of the index in memory
            # (and its search graphs) in step with what the worker writes.
            mem.service.follow_index_worker()
            try:
                yield
            finally:
                stop_worker_process(process)

        app.state.lifespans.append(index_worker)
    return app
