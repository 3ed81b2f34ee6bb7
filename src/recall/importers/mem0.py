"""mem0's memories: the JSON its `get_all` returns, read into one recall world.

The file is what `Memory.get_all(...)` (the open-source library) or `MemoryClient.get_all(...)`
(the platform) returns, written with `json.dump`: `{"results": [memory, …], "relations": […]}`
(the platform's pages add `count`, `next` and `previous`), or a bare list of memories (older
versions). A memory is
`{"id", "memory", "hash"?, "metadata"?, "categories"?, "created_at"?, "updated_at"?,
"user_id"?, "agent_id"?, "run_id"?, "actor_id"?, "role"?, "expiration_date"?, …}`
(mem0's `MemoryItem` and the payload keys `get_all` promotes, mem0/memory/main.py).

Each memory becomes a recall memory of type `mem0` in the world given (`mem0` by default), with
its text, its created_at, and its metadata; its mem0 id, hash, categories, updated_at and the
ids it was filed under are kept in the metadata's `imported_from`. Its `user_id` becomes a human
of the world, its `agent_id` an agent whose own (private) memory it is, and its `run_id` the
memory's chat. A future `expiration_date` is its expiry; one already past is not imported.
`relations` (mem0's graph) have no equivalent and are counted in the report.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recall.api import Recall
from recall.errors import InvalidInputError
from recall.importers.conversations import slug
from recall.importers.json_file import at, ident, load_json, mapping, objects, text, time
from recall.importers.plan import IMPORTED_FROM, ImportPlan, PlannedAgent, PlannedMemory, origin
from recall.importers.report import ImportReport
from recall.importers.storing import Progress, store_plan

SYSTEM = "mem0"
MEMORY_TYPE = "mem0"
#: Fields of a memory recall maps or keeps (the rest are counted as unmapped).
_KNOWN = {
    "id", "memory", "hash", "metadata", "categories", "created_at", "updated_at", "user_id", "agent_id", "run_id",
    "actor_id", "role", "attributed_to", "expiration_date", "app_id", "score", "event",
}  # fmt: skip


def read_mem0(path: str | Path, world_id: str = "mem0", now: datetime | None = None) -> ImportPlan:
    """What importing the mem0 export at `path` into `world_id` would write (nothing is stored);
    an InvalidInputError naming the place in the file for anything not in mem0's format."""
    data, _ = load_json(path, "a mem0 export (the JSON of get_all)")
    report = ImportReport(SYSTEM, Path(path).name)
    plan = ImportPlan(report)
    world = slug(world_id)
    plan.add_world(world, world_id)
    if isinstance(data, dict):
        if "results" not in data:
            raise InvalidInputError("file", 'a mem0 export is {"results": [memory, …]} or a list of memories')
        results, where = data["results"], "results"
        relations = data.get("relations")
        if relations:
            report.leave_out("relations: mem0's graph memory (recall keeps no graph)", len(relations))
        if data.get("next"):  # the platform's pages: {"count", "next", "previous", "results"}
            report.leave_out("later pages of get_all, not in the file (its `next` is set): save each page")
    else:
        results, where = data, ""
    if not isinstance(results, list):
        raise InvalidInputError(where or "file", 'must be a list of memories ({"results": [memory, …]})')
    now = now or datetime.now(UTC)
    for place, memory in objects(results, where):
        _read_memory(plan, world, memory, place, now)
    return plan


def _read_memory(plan: ImportPlan, world: str, memory: dict[str, Any], where: str, now: datetime) -> None:
    report = plan.report
    source_id = ident(memory, "id", where)
    content = text(memory, "memory", where)
    assert source_id is not None and content is not None
    created = time(memory, "created_at", where, required=False) or now
    updated = time(memory, "updated_at", where, required=False)
    expires = time(memory, "expiration_date", where, required=False)
    user = _participant(memory, "user_id", where)
    agent = _participant(memory, "agent_id", where)
    run = _participant(memory, "run_id", where)
    metadata = mapping(memory, "metadata", where)
    categories = memory.get("categories")
    if categories is not None and not isinstance(categories, list):
        raise InvalidInputError(at(where, "categories"), "must be a list of category names")
    if expires is not None and expires <= now:
        report.leave_out("memories past their expiration_date (recall keeps no expired memory)")
        return
    for name in sorted(set(memory) - _KNOWN):
        report.leave_out(f"memory field {name!r} (no equivalent in recall)")
    if user is not None:
        plan.add_human(world, user)
    if agent is not None:
        plan.add_agent(PlannedAgent(world, agent))
    kept = origin(
        SYSTEM,
        source_id,
        hash=memory.get("hash"),
        categories=categories,
        updated_at=None if updated is None else updated.isoformat(),
        user_id=memory.get("user_id"),
        agent_id=memory.get("agent_id"),
        run_id=memory.get("run_id"),
        app_id=memory.get("app_id"),
        actor_id=memory.get("actor_id"),
        role=memory.get("role"),
        attributed_to=memory.get("attributed_to"),
    )
    plan.add_memory(
        PlannedMemory(
            world_id=world,
            source_id=source_id,
            content=content,
            created_at=created,
            metadata={**metadata, IMPORTED_FROM: kept},
            type=MEMORY_TYPE,
            agent=agent,
            chat_id=run,
            expires_at=expires,
        ),
        at(where, "memory"),
    )


def _participant(memory: dict[str, Any], key: str, where: str) -> str | None:
    """A user, agent or run id as a recall id (`slug`), or None when the memory has none."""
    value = ident(memory, key, where, required=False)
    if value is None or not value.strip():
        return None
    try:
        return slug(value)
    except InvalidInputError:
        raise InvalidInputError(at(where, key), f"cannot make a recall id from {value!r}") from None


def import_mem0(
    mem: Recall, path: str | Path, world_id: str = "mem0", progress: Progress | None = None
) -> ImportReport:
    """Import the mem0 export at `path` into `world_id` (`read_mem0`); what was stored, skipped
    (imported before) and had no equivalent. Nothing is stored when the file is not in the format."""
    return store_plan(mem, read_mem0(path, world_id), progress)
