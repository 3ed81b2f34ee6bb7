"""The REST API's routers, one per resource, in the order the app includes them (and the
OpenAPI schema lists them)."""

from __future__ import annotations

from fastapi import APIRouter

from recall.server.routes import (
    agents,
    calls,
    extraction,
    facts,
    inbox,
    lifecycle,
    memories,
    messages,
    notes,
    ops,
    search,
    worlds,
)

ROUTERS: tuple[APIRouter, ...] = (
    ops.router,
    worlds.router,
    messages.router,
    inbox.router,
    agents.router,
    calls.router,
    notes.router,
    facts.router,
    memories.router,
    extraction.router,
    search.router,
    lifecycle.router,
)
