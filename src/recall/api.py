"""The Python API: `Recall` → `World` → `Agent`, thin handles over the service.

mem = Recall("recall.db")
world = mem.world("support", create=True)
world.add_agent("triage", system_prompt="You route tickets.")
world.add_human("maria")
world.post("maria", "@triage my invoice is wrong", chat="ticket-42")
ctx = world.agent("triage").context(chat="ticket-42", max_tokens=4000)
ctx.openai(); ctx.anthropic(); ctx.report

This module holds `Recall`, the open store; the handles it gives out live below it, one to a
module (`api_world.py`, `api_agent.py`, `api_scope.py`), and are imported from here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from recall.api_agent import Agent
from recall.api_scope import Scope
from recall.api_world import World
from recall.app.gate import Gate, Principal
from recall.app.search import SearchResult
from recall.app.service import RecallService
from recall.errors import UnknownWorldError
from recall.off_loop import off_loop
from recall.settings import Settings
from recall.store import open_store
from recall.store.base import Store

__all__ = ["DEFAULT_DB", "Agent", "Recall", "Scope", "World", "default_db"]

DEFAULT_DB = "recall.db"


def default_db() -> str:
    """`RECALL_DB` if set, else `./recall.db`."""
    return os.environ.get("RECALL_DB") or DEFAULT_DB


class Recall:
    """An open recall store. Use as a context manager, or call `close()`."""

    def __init__(self, db: str | Path | Store | None = None, settings: Settings | None = None) -> None:
        settings = settings or Settings.from_env()
        location = str(db if db is not None else default_db())
        store = open_store(location, settings.busy_timeout) if not _is_store(db) else db
        self.service = RecallService(store, settings)  # type: ignore[arg-type]
        self.gate = Gate(self.service)

    def world(
        self,
        world_id: str,
        *,
        create: bool = False,
        name: str | None = None,
        turn_limit: int | None = None,
        tenant: str | None = None,
    ) -> World:
        """The world `world_id` of `tenant` (a server's API keys name tenants; "" without keys).
        With tenant None: the only world of that id in any tenant (AmbiguousWorldError when
        several have one). With `create=True` it is created if missing (in `tenant`, or "")."""
        try:
            record = self.gate.world(Principal.local(tenant), world_id)
        except UnknownWorldError:
            if not create:
                raise
            record = self.service.worlds.create_world(world_id, name=name, turn_limit=turn_limit, tenant=tenant or "")
        return World(self.service, record)

    def create_world(
        self, world_id: str, *, name: str | None = None, turn_limit: int | None = None, tenant: str = ""
    ) -> World:
        """Create a new world of `tenant`; a ConflictError if the tenant has one of that id."""
        record = self.service.worlds.create_world(world_id, name=name, turn_limit=turn_limit, tenant=tenant)
        return World(self.service, record)

    def worlds(self, tenant: str | None = None) -> list[World]:
        """Every world, or only those of `tenant`."""
        return [World(self.service, w) for w in self.gate.worlds(Principal.local(tenant))]

    def scope(self, scope: str, *, tenant: str | None = None) -> Scope:
        """The facts and sections of a scope: 'user:ID', 'agent:WORLD/AGENT' or 'world:ID', in
        `tenant`. With tenant None a user scope is in tenant "", and a world or agent scope in
        the tenant of its world (found as `world` finds it)."""
        return Scope(self.service, *self.gate.scope(Principal.local(tenant), scope))

    def search(self, /, space: str, query: str, *, tenant: str | None = None, **options: Any) -> list[SearchResult]:
        """Search a world (messages, memories, facts; found as `world` finds it) or a user's
        facts (`user:ID`, in `tenant`, or ""); see `World.search`."""
        if isinstance(space, str) and space.startswith("user:"):
            return self.service.searcher.search(space, query, tenant=tenant or "", **options)
        return self.world(space, tenant=tenant).search(query, **options)

    def import_world(self, lines: Iterable[str | bytes | Mapping[str, Any]], *, tenant: str | None = None) -> World:
        """Import an export (`World.export()` records or `export_to` lines) into `tenant` (None:
        the export's), ids, times and read flags kept. A bad line (InvalidInputError) or a taken
        world or id (ConflictError) writes nothing."""
        return World(self.service, self.service.exports.import_world(lines, tenant).world)

    def refresh_index(self, *, graphs: bool = True) -> int:
        """Index and embed everything not yet in the search index, now; the work done. A
        background thread does this on its own within seconds of a post (unless
        `index_interval` is 0): call it when a search must see vectors for what was just written.
        With `graphs` (the default) it also builds what makes vector search over a large space
        fast (on SQLite an HNSW graph per space of 20,000 items or more, ~25 s per 100,000 on
        first build, then only what is new); a short-lived process searching once can skip it
        (`graphs=False`): without a graph a search scores every vector."""
        return self.service.searcher.refresh_index(graphs=graphs)

    def flush_extraction(self, scope: str | None = None) -> int:
        """Run queued fact extractions now instead of after their debounce; the model calls made."""
        return self.service.extraction.flush_extraction(None, scope)

    def close(self) -> None:
        self.service.close()

    def __enter__(self) -> Recall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Recall:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # Coroutine forms for asyncio and trio programs (`recall.off_loop`).
    aworld = off_loop(world)
    acreate_world = off_loop(create_world)
    aworlds = off_loop(worlds)
    asearch = off_loop(search)
    aimport_world = off_loop(import_world)
    arefresh_index = off_loop(refresh_index)
    aflush_extraction = off_loop(flush_extraction)
    aclose = off_loop(close)


def _is_store(db: object) -> bool:
    return db is not None and not isinstance(db, (str, Path))
