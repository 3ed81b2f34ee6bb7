"""Letta's archival memory, which no Agent File carries: the passages Letta's API lists for an
agent (`client.agents.passages.list(agent_id=...)`, Letta's `Passage` schema in
`letta/schemas/passage.py`), saved with `json.dump` as a list of
`{"id", "text", "created_at", "metadata"?, "tags"?, "archive_id"?, "file_name"?, "is_deleted"?,
"embedding"?, "embedding_config"?, …}`.

Each passage becomes a memory of the agent's own, of type `archival`, with its text, created_at
and metadata; its id, tags, archive and file name are kept in `imported_from`. A deleted passage
is not imported, and the embeddings (recall embeds with its own model) are counted in the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recall.errors import InvalidInputError
from recall.importers.json_file import at, ident, load_json, mapping, objects, text, time
from recall.importers.plan import IMPORTED_FROM, ImportPlan, PlannedMemory, origin

SYSTEM = "letta"
MEMORY_TYPE = "archival"
_KNOWN = {
    "id", "text", "created_at", "updated_at", "metadata", "metadata_", "tags", "archive_id", "file_id", "file_name",
    "source_id", "is_deleted", "agent_id", "organization_id", "created_by_id", "last_updated_by_id",
}  # fmt: skip


def read_passages(plan: ImportPlan, path: str | Path, world_id: str, agent_id: str) -> None:
    """Add the passages of the file at `path` to `plan` as `agent_id`'s own memories."""
    data, _ = load_json(path, "a list of Letta passages (archival memory)")
    if not isinstance(data, list):
        raise InvalidInputError("passages file", "must be the JSON list of passages Letta's API returns")
    name = Path(path).name
    for where, passage in objects(data, ""):
        place = f"{name} {where}"
        _read_passage(plan, world_id, agent_id, passage, place)


def _read_passage(plan: ImportPlan, world_id: str, agent_id: str, passage: dict[str, Any], where: str) -> None:
    report = plan.report
    source_id = ident(passage, "id", where)
    content = text(passage, "text", where)
    created = time(passage, "created_at", where)
    assert source_id is not None and content is not None and created is not None
    metadata = mapping(passage, "metadata" if "metadata" in passage else "metadata_", where)
    tags = passage.get("tags")
    if tags is not None and not isinstance(tags, list):
        raise InvalidInputError(at(where, "tags"), "must be a list of tags")
    if passage.get("is_deleted") is True:
        report.leave_out("deleted archival passages")
        return
    if passage.get("embedding") or passage.get("embedding_config"):
        report.leave_out("passage embeddings (recall embeds with its own model)")
    for field in sorted(set(passage) - _KNOWN - {"embedding", "embedding_config"}):
        report.leave_out(f"passage field {field!r} (no equivalent in recall)")
    kept = origin(
        SYSTEM,
        source_id,
        tags=tags,
        archive_id=passage.get("archive_id"),
        file_name=passage.get("file_name"),
        updated_at=passage.get("updated_at"),
    )
    memory = PlannedMemory(
        world_id=world_id,
        source_id=source_id,
        content=content,
        created_at=created,
        metadata={**metadata, IMPORTED_FROM: kept},
        type=MEMORY_TYPE,
        agent=agent_id,
    )
    plan.add_memory(memory, at(where, "text"))
