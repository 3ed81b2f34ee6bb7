"""What an import from another memory system will write, read whole from its file first: worlds,
participants, conversations, memories and facts, each carrying the id the source system gave it
(`IMPORTED_FROM`), and the report of what the file holds that recall does not keep.

A reader (`mem0.py`, `zep.py`, `letta.py`) turns a file into an `ImportPlan` and checks every
record as the store will, so a file that cannot be imported fails naming its place before
anything is stored; `storing.store_plan` then writes it, skipping what an earlier run stored."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from recall import limits
from recall.app.validation import check_chat
from recall.core.facts import NewFact, validate_new_fact
from recall.errors import InvalidInputError, text_problem
from recall.importers.conversations import Conversation
from recall.importers.report import ImportReport

#: The metadata key of an imported message or memory holding where it came from: the source
#: system, the id it had there, and what else of it recall has no field for.
IMPORTED_FROM = "imported_from"


def origin(system: str, source_id: str | None, **kept: Any) -> dict[str, Any]:
    """An `IMPORTED_FROM` value: the system, the record's id there, and the fields kept with it
    (those that are None are left out)."""
    return {"system": system, "id": source_id, **{k: v for k, v in kept.items() if v is not None}}


@dataclass(frozen=True)
class PlannedAgent:
    world_id: str
    agent_id: str
    #: Settings of `World.add_agent` (system_prompt, …) given when the agent is new.
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PlannedMemory:
    """A long-term memory to write once: `source_id` is its id in the source system."""

    world_id: str
    source_id: str
    content: str
    created_at: datetime
    metadata: dict[str, Any]
    type: str
    agent: str | None = None
    chat_id: str | None = None
    importance: int = 5
    expires_at: datetime | None = None


@dataclass(frozen=True)
class PlannedFact:
    """A fact to write once in `scope` (`user:ID`, `agent:WORLD/AGENT`): its `source` is the
    source system's id for it, which a later run finds it by."""

    scope: str
    fact: NewFact
    created_at: datetime


@dataclass
class ImportPlan:
    report: ImportReport
    #: World id → its name, for worlds created by the import.
    worlds: dict[str, str] = field(default_factory=dict)
    humans: list[tuple[str, str]] = field(default_factory=list)
    agents: list[PlannedAgent] = field(default_factory=list)
    conversations: list[Conversation] = field(default_factory=list)
    memories: list[PlannedMemory] = field(default_factory=list)
    facts: list[PlannedFact] = field(default_factory=list)
    #: (scope, source): the facts planned with that source, or `source#N`, are all the scope
    #: has of it; others an earlier import left are removed (a Letta block that shrank).
    owned: list[tuple[str, str]] = field(default_factory=list)

    def add_world(self, world_id: str, name: str) -> None:
        self.worlds.setdefault(world_id, name)
        if world_id not in self.report.worlds:
            self.report.worlds.append(world_id)

    def add_human(self, world_id: str, human_id: str) -> None:
        if (world_id, human_id) not in self.humans:
            self.humans.append((world_id, human_id))

    def add_agent(self, agent: PlannedAgent) -> None:
        if not any(a.world_id == agent.world_id and a.agent_id == agent.agent_id for a in self.agents):
            self.agents.append(agent)

    def own_sources(self, scope: str, source: str) -> None:
        """Declare the planned facts of `scope` with `source` (or `source#N`) the only ones it has."""
        self.owned.append((scope, source))

    def add_memory(self, memory: PlannedMemory, where: str) -> None:
        """Add a memory once it passes the checks `add_memory` makes (InvalidInputError naming `where`)."""
        content = memory.content
        if len(content) > limits.MAX_NOTE_CHARS:
            raise InvalidInputError(
                where, f"{len(content):,} characters, more than a memory holds ({limits.MAX_NOTE_CHARS:,})"
            )
        if problem := text_problem(content):
            raise InvalidInputError(where, problem)
        limits.check_json(f"{where} (as metadata)", memory.metadata, limits.MAX_METADATA_CHARS)
        check_chat(memory.chat_id)
        self.memories.append(memory)

    def add_fact(self, scope: str, fact: NewFact, created_at: datetime, where: str) -> None:
        """Add a fact once it passes the checks of a fact (InvalidInputError naming `where`)."""
        try:
            checked = validate_new_fact(fact)
        except InvalidInputError as e:
            raise InvalidInputError(f"{where} ({e.field})", e.problem) from None
        self.facts.append(PlannedFact(scope, checked, created_at))
