"""Assemble the server: the store named by the config, the service, the REST app and MCP."""

from __future__ import annotations

from fastapi import FastAPI

from recall.api import Recall
from recall.demo import build_demo_world
from recall.server.app import create_app
from recall.server.config import ServerConfig
from recall.server.mcp import mount_mcp
from recall.settings import Settings


def build_app(config: ServerConfig) -> FastAPI:
    mem = Recall(config.db, Settings.from_env())
    if config.demo and not mem.service.list_worlds():
        build_demo_world(mem)
    app = create_app(mem.service, config)
    mount_mcp(app)
    return app
