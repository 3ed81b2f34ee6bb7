"""Writing an `ImportPlan`: its worlds and participants, then its messages, memories and facts,
each once. Running the same import again stores nothing new and counts what it skipped:

- messages carry an idempotency key made of the source system's id for them, which the store
  keeps unique per world and sender (`import_conversation`);
- memories carry the source's id in their metadata (`IMPORTED_FROM`): those of the world that
  have it are read once before writing, and a memory whose id is there is skipped, or, when its
  text changed at the source (mem0 updates a memory in place), updated;
- facts carry the source's id as their `source`: a fact whose scope has one with that source is
  skipped, or, when its text changed in the file (a Letta memory block edited since), updated;
  the parts of a Letta block the file no longer has (it shrank, or was emptied) are removed.

The file's messages are checked against the store's limits before the first write, so a file
that cannot be imported whole stores nothing (every other record was checked when read)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from recall import limits
from recall.api import Recall, World
from recall.app.posting import RESERVED_METADATA_KEYS
from recall.app.validation import check_chat
from recall.core.routing import RESERVED_SENDERS
from recall.errors import InvalidInputError, text_problem
from recall.importers.conversations import import_conversation
from recall.importers.plan import IMPORTED_FROM, ImportPlan, PlannedFact, PlannedMemory
from recall.importers.report import ImportReport
from recall.store.records import Memory

#: Memories of a world read at most, to find those imported before (far above any world's).
_ALL = 10_000_000

Progress = Callable[[int], None]


def store_plan(mem: Recall, plan: ImportPlan, progress: Progress | None = None) -> ImportReport:
    """Write what `plan` holds that the store does not have yet; the plan's report, counted."""
    _check_messages(mem, plan)
    report = plan.report
    worlds = {world_id: mem.world(world_id, create=True, name=name) for world_id, name in plan.worlds.items()}
    known = {world_id: {p.id.lower() for p in world.participants()} for world_id, world in worlds.items()}
    for world_id, human in plan.humans:
        if human.lower() in RESERVED_SENDERS or human.lower() in known[world_id]:
            continue
        worlds[world_id].add_human(human)
        known[world_id].add(human.lower())
        report.stored["humans"] += 1
    for agent in plan.agents:
        if agent.agent_id.lower() in known[agent.world_id]:
            continue
        worlds[agent.world_id].add_agent(agent.agent_id, **agent.settings)
        known[agent.world_id].add(agent.agent_id.lower())
        report.stored["agents"] += 1
    for conversation in plan.conversations:
        done = import_conversation(mem, conversation, progress)
        report.stored["messages"] += done.stored
        report.skipped["messages"] += done.skipped
    for world_id in {m.world_id for m in plan.memories}:
        _store_memories(mem, worlds[world_id], [m for m in plan.memories if m.world_id == world_id], report)
    for scope in dict.fromkeys([*(f.scope for f in plan.facts), *(scope for scope, _ in plan.owned)]):
        owned = [source for owner, source in plan.owned if owner == scope]
        _store_facts(mem, worlds, scope, [f for f in plan.facts if f.scope == scope], owned, report)
    return report


def _check_messages(mem: Recall, plan: ImportPlan) -> None:
    """What the store would refuse of a message, found before anything is written."""
    most = mem.service.settings.max_message_chars
    for conversation in plan.conversations:
        for request in conversation.messages:
            where = f"message {_source_id(request.metadata) or request.idempotency_key}"
            if len(request.content) > most:
                raise InvalidInputError(
                    where,
                    f"is {len(request.content):,} characters; the limit is {most:,} (the setting max_message_chars,"
                    " RECALL_MAX_MESSAGE_CHARS)",
                )
            if problem := text_problem(request.content):
                raise InvalidInputError(where, problem)
            metadata = dict(request.metadata or {})
            limits.check_json(f"{where} metadata", metadata, limits.MAX_METADATA_CHARS)
            reserved = sorted(set(metadata) & RESERVED_METADATA_KEYS)
            if reserved and not conversation.trusted:
                raise InvalidInputError(f"{where} metadata.{reserved[0]}", "is a key recall reserves for itself")
            check_chat(request.chat_id)


def _source_id(metadata: Mapping[str, Any] | None) -> str | None:
    """The id a message had in the system it was imported from, if it had one."""
    source = (metadata or {}).get(IMPORTED_FROM)
    return source.get("id") if isinstance(source, dict) else None


def imported(memories: Iterable[Memory], system: str) -> dict[str, Memory]:
    """The memories imported from `system`, by their id there."""
    found = {}
    for memory in memories:
        source = memory.metadata.get(IMPORTED_FROM)
        if isinstance(source, dict) and source.get("system") == system and isinstance(source.get("id"), str):
            found[source["id"]] = memory
    return found


def _store_memories(mem: Recall, world: World, memories: list[PlannedMemory], report: ImportReport) -> None:
    service = mem.service.memories
    owners: list[str | None] = [None, *(agent.id for agent in world.agents())]
    present = {m.id: m for owner in owners for m in service.list_memories(world.key, owner, 1, _ALL)}
    seen = imported(present.values(), report.system)
    for memory in memories:
        there = seen.get(memory.source_id)
        if there is not None and there.content == memory.content:
            report.skipped["memories"] += 1
        elif there is not None:  # changed at the source since (mem0 updates a memory in place)
            changes = {"content": memory.content, "metadata": memory.metadata}
            seen[memory.source_id] = service.update_memory(world.key, there.id, changes, there.owner or None)
            report.updated["memories"] += 1
        else:
            seen[memory.source_id] = service.add_memory(
                world.key,
                memory.content,
                type=memory.type,
                importance=memory.importance,
                agent=memory.agent,
                chat_id=memory.chat_id,
                metadata=memory.metadata,
                created_at=memory.created_at,
                expires_at=memory.expires_at,
            )
            report.stored["memories"] += 1


def _store_facts(
    mem: Recall,
    worlds: dict[str, World],
    scope: str,
    facts: list[PlannedFact],
    owned: list[str],
    report: ImportReport,
) -> None:
    service = mem.service.facts
    tenant = next(iter(worlds.values())).tenant if worlds else ""
    by_source = {fact.source: fact for fact in service.list_facts(scope, tenant)}
    in_file = {f.fact.source for f in facts}
    for source, gone in by_source.items():
        if source not in in_file and any(source == own or source.startswith(f"{own}#") for own in owned):
            service.delete_fact(scope, gone.id, tenant)
            report.removed["facts"] += 1
    new = []
    for planned in facts:
        there = by_source.get(planned.fact.source)
        if there is None:
            new.append((planned.fact, planned.created_at))
        elif there.content == planned.fact.content:
            report.skipped["facts"] += 1
        else:
            service.update_fact(scope, there.id, {"content": planned.fact.content}, tenant)
            report.updated["facts"] += 1
    report.stored["facts"] += len(service.add_dated_facts(scope, new, tenant))
