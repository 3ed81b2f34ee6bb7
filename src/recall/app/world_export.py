"""Export a world as JSON lines and import it back, losslessly (spec §8; the format is
`world_format.py`'s).

An export holds the world with its participants (agents with their profiles and settings),
chats, messages, deliveries with their read flags, inbox marks and memory counts, turn
counters, observations and actions, agents' notes and context sessions, long-term memories,
and the facts and summary sections of the world's scope (`world:ID`), of its agents' scopes,
and of its humans' `user:ID` scopes in the world's tenant. The search index is not exported:
an import indexes what it stored (vectors are made again by the background indexer).

An import checks every line first (an `InvalidInputError` names the line and the field), then
stores the whole world in one transaction under the importing caller's tenant: a world of that
id in the tenant, or any kept id the store holds already, is a `ConflictError`, and nothing is
written.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from recall import limits
from recall.app.lifecycle import world_scopes
from recall.app.world_format import FORMAT, TYPES, record_of, row_of
from recall.app.worlds import Worlds, _validate_profile
from recall.errors import InvalidInputError
from recall.settings import Settings
from recall.store.base import Store
from recall.store.records import WorldRecord
from recall.store.rows import dt
from recall.store.world_records import WORLD_TABLES, WorldImport
from recall.version import __version__

if TYPE_CHECKING:
    from recall.app.memories import Memories
    from recall.search.base import IndexItem
    from recall.search.index import SearchIndex

#: A line of an export: JSON text, or the record itself (as `export_world` yields it).
Line = str | bytes | Mapping[str, Any]


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _parse(line: Line, number: int) -> Mapping[str, Any] | None:
    """A line as a JSON object (None for a blank line)."""
    if isinstance(line, Mapping):
        return line
    if isinstance(line, bytes | str) and len(line) > limits.MAX_IMPORT_LINE_BYTES:
        raise InvalidInputError(
            f"line {number}", f"is {len(line):,} long; a record is at most {limits.MAX_IMPORT_LINE_BYTES:,} bytes"
        )
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
    except UnicodeDecodeError as e:
        raise InvalidInputError(f"line {number}", f"is not UTF-8 text ({e.reason} at byte {e.start})") from None
    if not isinstance(text, str):
        raise InvalidInputError(f"line {number}", f"must be a line of text, got {type(line).__name__}")
    if not text.strip():
        return None
    try:
        value = json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError) as e:
        raise InvalidInputError(f"line {number}", f"is not JSON ({e})") from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"line {number}", "must be a JSON object (one record per line)")
    return value


@dataclass(frozen=True)
class Imported:
    """An imported world, and how many records of each kind it held."""

    world: WorldRecord
    counts: dict[str, int]


@dataclass
class _Read:
    """What the lines of an export held, checked line by line."""

    world: dict[str, Any]
    rows: dict[str, list[tuple[Any, ...]]]
    lines: dict[str, list[int]]


@dataclass(frozen=True, eq=False)
class WorldExports:
    """Export a world, import one."""

    store: Store
    settings: Settings
    worlds: Worlds
    index: SearchIndex | None = None
    #: Long-term memories: a world's expired ones are purged before it is exported.
    memories: Memories | None = None

    # -- export ---------------------------------------------------------------------------

    def export_world(self, world_id: str) -> Iterator[dict[str, Any]]:
        """The records of the world (by key), header first and the end record last."""
        world = self.worlds.get_world(world_id)
        if self.memories is not None:
            self.memories.purge_world(world.key)  # no expired memory leaves in an export
        scopes = world_scopes(world, self.store.list_participants(world.key), users=True)
        yield {"format": FORMAT, "exported_at": datetime.now(UTC).isoformat(), "recall_version": __version__}
        counts: Counter[str] = Counter()
        for table, row in self.store.export_world(world.key, scopes):
            record = record_of(table, row)
            counts[record["record"]] += 1
            yield record
        yield {"record": "end", "counts": dict(counts)}

    def write_export_file(self, world_id: str, path: str | Path) -> dict[str, int]:
        """Write the world's export to the file `path`; the records per type. The path is
        checked before anything is opened (never one of the store's own files, a folder that
        exists), and the export goes to a temporary file beside it that replaces `path` only once
        it is whole: a failure leaves `path` as it was."""
        target = Path(path)
        own = getattr(self.store, "path", None)
        if isinstance(own, str) and own != ":memory:":
            store_file = Path(own).resolve()
            if target.resolve() in {Path(f"{store_file}{end}") for end in ("", "-wal", "-shm", "-journal")}:
                raise InvalidInputError("output", f"{path} is a file of the store itself; export to another file")
        if not target.parent.is_dir():
            raise InvalidInputError("output", f"cannot write {path}: no such folder {target.parent}")
        if target.is_dir():
            raise InvalidInputError("output", f"cannot write {path}: it is a folder")
        self.worlds.get_world(world_id)  # an unknown world creates no file
        try:
            descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
        except OSError as exc:
            raise InvalidInputError("output", f"cannot write {path}: {exc.strerror}") from exc
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                counts = self.write_export(world_id, out)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return counts

    def write_export(self, world_id: str, out: IO[str]) -> dict[str, int]:
        """Write the world's export to a text file, a record per line; the records per type."""
        counts: dict[str, int] = {}
        for record in self.export_world(world_id):
            out.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
            if record.get("record") == "end":
                counts = dict(record["counts"])
        return counts

    # -- import ---------------------------------------------------------------------------

    def import_world(self, lines: Iterable[Line], tenant: str | None = None) -> Imported:
        """Store the world an export's lines hold under `tenant` (None: the tenant the export
        names); nothing is written when a line is malformed (InvalidInputError naming it) or an
        id is taken (ConflictError)."""
        if tenant is not None and not isinstance(tenant, str):
            raise InvalidInputError("tenant", "must be text")
        read = self._read(lines)
        self._check_references(read)
        into = str(read.world["tenant"]) if tenant is None else tenant
        rows = self._without_what_is_here(into, read.rows)
        world = self.store.import_world(WorldImport(into, read.world, rows))
        self.worlds._drop_caches()
        self._index(world, rows)
        counts = {TYPES[table]: len(table_rows) for table, table_rows in rows.items() if table_rows}
        return Imported(world, {"world": 1, **counts})

    def _without_what_is_here(
        self, tenant: str, rows: Mapping[str, list[tuple[Any, ...]]]
    ) -> dict[str, list[tuple[Any, ...]]]:
        """The rows to store: but the facts and summary sections the store already holds as they
        are. A world delete keeps its humans' `user:ID` facts (they belong to the tenant), so a
        world exported, deleted and imported again finds them in place; a different fact under
        one of the ids is still a conflict."""
        kept = dict(rows)
        kept["facts"] = [row for row in rows.get("facts", ()) if not self._fact_is_here(tenant, row)]
        kept["fact_sections"] = [
            row
            for row in rows.get("fact_sections", ())
            if self.store.get_sections(tenant, row[0]) != _json_object(row[1])
        ]
        return kept

    def _fact_is_here(self, tenant: str, row: tuple[Any, ...]) -> bool:
        fact_id, scope, *fields = row[:7]
        here = self.store.get_fact(tenant, scope, fact_id)
        return here is not None and [here.content, here.category, here.confidence, here.source, here.avoid] == fields

    def _read(self, lines: Iterable[Line]) -> _Read:
        world: dict[str, Any] | None = None
        rows: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
        numbers: dict[str, list[int]] = defaultdict(list)
        header = end = False
        number = 0
        for number, line in enumerate(lines, 1):
            record = _parse(line, number)
            if record is None:
                continue
            if end:
                raise InvalidInputError(
                    f"line {number}", "comes after the end record: the file holds more than one export"
                )
            if not header:
                if record.get("format") != FORMAT:
                    raise InvalidInputError(
                        f"line {number}: format",
                        f"an export begins with a header of format {FORMAT!r}, got {record.get('format')!r}"
                        " (is this a file `recall export` wrote?)",
                    )
                header = True
                continue
            if record.get("record") == "end":
                self._check_end(record, rows, number)
                end = True
                continue
            table, row = row_of(record, number)
            if table == "worlds":
                if world is not None:
                    raise InvalidInputError(f"line {number}: world", "an export holds one world record")
                world = dict(zip(("id", "name", "turn_limit", "created_at", "tenant"), row, strict=True))
                continue
            if world is None:
                raise InvalidInputError(f"line {number}: record", "the world record must come before the others")
            if table == "messages" and len(row[6]) > self.settings.max_message_chars:
                raise InvalidInputError(
                    f"line {number}: message.content",
                    f"is {len(row[6]):,} characters; the limit is {self.settings.max_message_chars:,}",
                )
            rows[table].append(row)
            numbers[table].append(number)
        if not header:
            raise InvalidInputError("line 1", "the export is empty: it has no header")
        if not end:
            raise InvalidInputError(
                f"line {number + 1}", "the export ends without its end record: it was cut short, export it again"
            )
        if world is None:
            raise InvalidInputError("line 2", "the export holds no world record")
        return _Read(world, rows, numbers)

    @staticmethod
    def _check_end(record: Mapping[str, Any], rows: Mapping[str, list[Any]], number: int) -> None:
        said = record.get("counts")
        if not isinstance(said, dict):
            raise InvalidInputError(f"line {number}: end.counts", "must be an object of record kind to count")
        held = {TYPES[table]: len(found) for table, found in rows.items() if found}
        held["world"] = 1
        for kind in sorted(set(said) | set(held)):
            if said.get(kind, 0) != held.get(kind, 0):
                raise InvalidInputError(
                    f"line {number}: end.counts.{kind}",
                    f"the file holds {held.get(kind, 0)} {kind} record(s), its end record says {said.get(kind, 0)!r}:"
                    " records are missing or were added; export it again",
                )

    def _check_references(self, read: _Read) -> None:
        """Every record names something the export holds (once): agents, messages, chats, scopes."""
        rows, lines = read.rows, read.lines

        def fail(table: str, index: int, field: str, problem: str) -> None:
            raise InvalidInputError(f"line {lines[table][index]}: {TYPES[table]}.{field}", problem)

        def unique(table: str, key: Any, seen: set[Any], index: int, field: str) -> None:
            if key in seen:
                fail(table, index, field, f"{key!r} appears twice in the export")
            seen.add(key)

        people: set[str] = set()
        agents: set[str] = set()
        humans: set[str] = set()
        for i, (pid, kind, profile, _) in enumerate(rows["participants"]):
            unique("participants", pid.lower(), people, i, "id")
            (agents if kind == "agent" else humans).add(pid.lower())
            if kind == "agent":
                try:
                    _validate_profile(pid, json.loads(profile))
                except InvalidInputError as e:
                    fail("participants", i, f"profile.{e.field}", e.problem)
        chats: set[str] = set()
        for i, row in enumerate(rows["chats"]):
            unique("chats", row[0], chats, i, "id")
        messages: set[int] = set()
        keys: set[str] = set()
        for i, row in enumerate(rows["messages"]):
            unique("messages", row[0], messages, i, "id")
            if row[11] is not None:  # one world's idempotency keys are unique (as when posted)
                unique("messages", row[11], keys, i, "idempotency_key")
            if row[1] not in chats:
                fail("messages", i, "chat_id", f"names chat {row[1] or None!r}, which the export has no chat record of")
            if row[5] is not None and (row[5] not in messages or row[5] >= row[0]):
                fail(
                    "messages", i, "parent_id", f"names message {row[5]}, which is not an earlier message of the export"
                )
        for table in WORLD_TABLES:
            if WORLD_TABLES[table][0] == "agent":
                for i, row in enumerate(rows[table]):
                    if row[0].lower() not in agents:
                        fail(table, i, "agent", f"names {row[0]!r}, which is not an agent of the export")
        pairs: set[tuple[str, int]] = set()
        for i, (agent, message_id, *_) in enumerate(rows["deliveries"]):
            if message_id not in messages:
                fail("deliveries", i, "message_id", f"names message {message_id}, which the export does not hold")
            unique("deliveries", (agent.lower(), message_id), pairs, i, "message_id")
        for table in ("observations", "notes", "facts"):
            seen: set[int] = set()
            for i, row in enumerate(rows[table]):
                unique(table, row[0], seen, i, "id")
        for i, row in enumerate(rows["notes"]):
            if row[1] and row[1].lower() not in agents:
                fail("notes", i, "owner", f"names {row[1]!r}, which is not an agent of the export")
        world = str(read.world["id"]).lower()
        scopes = {f"world:{world}"} | {f"agent:{world}/{a}" for a in agents} | {f"user:{h}" for h in humans}
        sections: set[str] = set()
        for table in ("facts", "fact_sections"):
            for i, row in enumerate(rows[table]):
                scope = row[1] if table == "facts" else row[0]
                if scope not in scopes:
                    fail(table, i, "scope", f"{scope!r} is not a scope of this world, its agents or its humans")
                if table == "fact_sections":
                    unique(table, scope, sections, i, "scope")

    def _index(self, world: WorldRecord, rows: Mapping[str, list[tuple[Any, ...]]]) -> None:
        """Make the imported messages, memories and facts searchable now: their ids are kept, and
        may lie below the point the background indexer has copied messages up to."""
        if self.index is None:
            return
        from recall.search.base import IndexItem

        self.index.index_message_ids([row[0] for row in rows.get("messages", ())])
        items: list[IndexItem] = []
        for note_id, owner, _, content, importance, chat_id, metadata, created_at, *_ in rows.get("notes", ()):
            items.append(
                IndexItem(
                    world.tenant, world.id, "memory", note_id, owner, content, dt(created_at), chat_id, None,
                    importance, _json_object(metadata),
                )
            )  # fmt: skip
        for fact_id, scope, content, *_, updated_at in rows.get("facts", ()):
            kind, _, rest = scope.partition(":")
            space, _, owner = (scope, "", "") if kind == "user" else rest.partition("/")
            items.append(IndexItem(world.tenant, space, "fact", fact_id, owner, content, dt(updated_at)))
        if items:
            self.index.add(items)


def _json_object(stored: Any) -> dict[str, Any]:
    """A JSON object as an export row holds it (JSON text): a scope's summary sections, a memory's
    metadata."""
    return dict(json.loads(stored)) if isinstance(stored, str) else dict(stored or {})
