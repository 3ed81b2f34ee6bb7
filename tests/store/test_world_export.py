"""A world exported as JSON lines and imported into another store comes back whole: every table,
every column, on SQLite, on PostgreSQL and from SQLite to PostgreSQL; an import that collides
or a malformed line writes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recall import ConflictError, InvalidInputError, Recall, Settings
from recall.app.world_format import FORMAT
from tests.pg import new_database
from tests.worlds import NOT_COMPARED, populate, query, tables, world_rows

#: Keyword search only, the index brought up to date on demand: the tests drive it.
QUICK = Settings(index_interval=0, embeddings="none")


@pytest.fixture(params=["sqlite", "postgres"])
def two_stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """Two fresh stores of one backend: where a world is exported from, and where it goes."""
    if request.param == "sqlite":
        return str(tmp_path / "from.db"), str(tmp_path / "to.db")
    server = request.getfixturevalue("postgres_server")
    return new_database(server), new_database(server)


def exported(location: str, tmp_path: Path, world: str = "w") -> list[str]:
    """Populate world `world` (and a world `other` beside it), export it to a file; its lines."""
    with Recall(location, QUICK) as mem:
        populate(mem, world)
        other = mem.world("other", create=True)
        other.add_human("zoe")
        other.post("zoe", "a message of another world")
        path = tmp_path / f"{world}.jsonl"
        counts = mem.world(world).export_to(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["format"] == FORMAT
    assert json.loads(lines[-1]) == {"record": "end", "counts": counts}
    return lines


def assert_same_world(source: str, target: str, world: str = "w") -> None:
    before, after = world_rows(source, world), world_rows(target, world)
    compared = set(tables(source)) - set(NOT_COMPARED)
    assert set(before) == compared == set(after)
    empty = [table for table, rows in before.items() if not rows]
    assert not empty, f"the test world has no rows in {empty}: the round trip would not test them"
    for table in sorted(compared):
        assert after[table] == before[table], table


def test_a_world_comes_back_table_by_table_with_ids_times_and_read_flags(
    two_stores: tuple[str, str], tmp_path: Path
) -> None:
    source, target = two_stores
    lines = exported(source, tmp_path)
    with Recall(target, QUICK) as mem:
        world = mem.import_world(lines)
        assert_same_world(source, target)
        assert (world.id, world.name) == ("w", "Support team")
        assert [w.id for w in mem.worlds()] == ["w"]
        # Searchable at once: messages, memories and facts of the imported world.
        hits = world.search("parcel Lisbon", k=10)
        assert {h.kind for h in hits} >= {"message", "fact"}
        assert world.search("re-issued invoices", kinds=["memory"])[0].text.startswith("Invoices")
        assert mem.search("user:maria", "green tea")[0].text == "Drinks only green tea"
        # New ids follow the imported ones.
        newest = max(m.id for m in world.messages(all_chats=True, limit=1000))
        assert world.post("maria", "one more").id > newest
        assert world.agent("agent-a").inbox()[-1].content == "one more"


def test_a_world_moves_from_sqlite_to_postgres(tmp_path: Path, postgres_url: str) -> None:
    source = str(tmp_path / "from.db")
    lines = exported(source, tmp_path)
    with Recall(postgres_url, QUICK) as mem:
        mem.import_world(line.encode() for line in lines)
    assert_same_world(source, postgres_url)


def test_imported_messages_below_the_indexing_watermark_are_searchable(
    two_stores: tuple[str, str], tmp_path: Path
) -> None:
    source, target = two_stores
    lines = exported(source, tmp_path)
    with Recall(target, QUICK) as mem:
        # The target indexed messages beyond the imported ids, then lost them: ids are free
        # again, but the indexer's watermark is past them.
        scratch = mem.world("scratch", create=True)
        scratch.add_human("ann")
        for n in range(20):
            scratch.post("ann", f"filler {n}")
        mem.refresh_index()
        scratch.delete()
        world = mem.import_world(lines)
        found = world.search("tracking number", kinds=["message"], method="bm25")
        assert found and found[0].text.endswith("thanks! and the tracking number?")


def test_an_import_that_collides_writes_nothing(two_stores: tuple[str, str], tmp_path: Path) -> None:
    source, target = two_stores
    lines = exported(source, tmp_path)
    before = world_rows(source, "w")
    with Recall(source, QUICK) as mem, pytest.raises(ConflictError, match="world 'w' already exists"):
        mem.import_world(lines)
    assert world_rows(source, "w") == before
    with Recall(target, QUICK) as mem:
        clash = mem.world("clash", create=True)
        clash.add_human("ann")
        taken = [clash.post("ann", f"message {n}").id for n in range(3)]
        with pytest.raises(ConflictError, match=r"already holds 3 message id\(s\)") as raised:
            mem.import_world(lines)
        assert str(taken[0]) in str(raised.value)
        assert [w.id for w in mem.worlds()] == ["clash"]
        # Into another tenant the world id is free, the message ids are not.
        with pytest.raises(ConflictError, match="message id"):
            mem.import_world(lines, tenant="acme")
    assert query(target, "SELECT COUNT(*) FROM messages")[0][0] == 3
    assert query(target, "SELECT COUNT(*) FROM participants")[0][0] == 1


def _edit(kind: str, change: Callable[[dict[str, Any]], None]) -> Callable[[list[str]], list[str]]:
    """Change the first record of `kind`."""

    def edit(lines: list[str]) -> list[str]:
        out, done = [], False
        for line in lines:
            record = json.loads(line)
            if not done and record.get("record") == kind:
                change(record)
                done = True
                line = json.dumps(record)
            out.append(line)
        return out

    return edit


def _too_large(lines: list[str]) -> list[str]:
    """A message's time as 1e999, which JSON parsers read as infinity."""
    return [
        line.replace('"created_at": 7.5', '"created_at": 1e999')
        for line in _edit("message", lambda r: r.update(created_at=7.5))(lines)
    ]


def _repeated_key(lines: list[str]) -> list[str]:
    """Two messages with one idempotency key (the store's unique index refused it: a 500)."""
    out = []
    for line in lines:
        record = json.loads(line)
        if record.get("record") == "message":
            record["idempotency_key"] = "k-1"
        out.append(json.dumps(record))
    return out


MALFORMED: dict[str, tuple[Callable[[list[str]], list[Any]], str, str]] = {
    "not json": (lambda ls: [ls[0], "{oops", *ls[1:]], "line 2", "is not JSON"),
    "not UTF-8": (lambda ls: [ls[0].encode(), b'{"record": "\xff"}', *ls[1:]], "line 2", "not UTF-8"),
    "not a header": (lambda ls: ls[1:], "line 1: format", "begins with a header"),
    "cut short": (lambda ls: ls[:-1], "line", "cut short"),
    "a record missing": (lambda ls: [ls[0], ls[1], *ls[3:]], "end.counts.participant", "the file holds 3"),
    "unknown record": (_edit("chat", lambda r: r.update(record="channel")), "record", "must be one of"),
    "unknown field": (_edit("message", lambda r: r.update(colour="red")), "message.colour", "not a field"),
    "missing field": (_edit("message", lambda r: r.pop("content")), "message.content", "is missing"),
    "NUL in content": (_edit("message", lambda r: r.update(content="a\x00b")), "message.content", "NUL"),
    "not finite": (_too_large, "message.created_at", "finite"),
    "bad id": (_edit("participant", lambda r: r.update(id="no spaces allowed")), "participant.id", "not a valid id"),
    "bad profile": (_edit("participant", lambda r: r["profile"].update(history_limit="x")), "profile.history_limit", "integer"),
    "dangling parent": (_edit("message", lambda r: r.update(parent_id=999)), "message.parent_id", "earlier message"),
    "unknown agent": (_edit("delivery", lambda r: r.update(agent="agent-z")), "delivery.agent", "not an agent"),
    "foreign scope": (_edit("fact", lambda r: r.update(scope="world:elsewhere")), "fact.scope", "not a scope"),
    "read flag": (_edit("delivery", lambda r: r.update(own="yes")), "delivery.own", "true or false"),
    "id past the range": (_edit("message", lambda r: r.update(id=2**62)), "message.id", "between 1 and"),
    "repeated idempotency key": (_repeated_key, "message.idempotency_key", "appears twice"),
}  # fmt: skip


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_line_is_named_and_nothing_is_written(case: str, tmp_path: Path) -> None:
    lines = exported(str(tmp_path / "from.db"), tmp_path)
    edit, field, problem = MALFORMED[case]
    target = str(tmp_path / "to.db")
    with Recall(target, QUICK) as mem:
        with pytest.raises(InvalidInputError) as raised:
            mem.import_world(edit(lines))
        assert raised.value.field.startswith("line ")
        assert field in raised.value.field and problem in raised.value.problem, str(raised.value)
        assert mem.worlds() == []
    assert query(target, "SELECT COUNT(*) FROM messages")[0][0] == 0


def test_import_into_a_tenant_and_vectors_are_made_again(tmp_path: Path) -> None:
    source = str(tmp_path / "from.db")
    lines = exported(source, tmp_path)
    with Recall(tmp_path / "to.db", Settings(index_interval=0)) as mem:
        world = mem.import_world(lines, tenant="acme")
        assert world.tenant == "acme" and mem.worlds("") == []
        mem.refresh_index()
        hit = world.search("a delivery that is delayed", kinds=["message"], method="vector")[0]
        assert hit.similarity is not None and "parcel" in hit.text
        assert mem.scope("user:maria", tenant="acme").list()[0].content == "Drinks only green tea"


def test_an_imported_id_never_pushes_later_ids_past_the_cap(two_stores: tuple[str, str], tmp_path: Path) -> None:
    """Issue 23: a world imported with message id 2^62 made every later message of every tenant
    get an id past the cap (its ack, reply and context then answered 422 for good). Imported
    ids stay below MAX_IMPORTED_ID: the ids the store hands out after it stay usable."""
    from recall.app.validation import MAX_IMPORTED_ID, MAX_MESSAGE_ID

    source, target = two_stores
    lines = exported(source, tmp_path)
    highest = [json.loads(line) for line in lines if json.loads(line).get("record") == "message"][-1]["id"]
    shifted = [
        line.replace(f'"id": {highest},', f'"id": {MAX_IMPORTED_ID},', 1)
        if f'"id": {highest},' in line and '"record": "message"' in line
        else line
        for line in lines
    ]
    shifted = [line.replace(f'"message_id": {highest},', f'"message_id": {MAX_IMPORTED_ID},') for line in shifted]
    with Recall(target, QUICK) as mem:
        mem.import_world(shifted, tenant="acme")
        other = mem.world("mine", create=True)
        other.add_human("ann")
        other.add_agent("bot")
        posted = other.post("ann", "@bot hello")
        assert MAX_IMPORTED_ID < posted.id < MAX_MESSAGE_ID
        assert [m.id for m in other.agent("bot").inbox(mark_read=True)] == [posted.id]
        assert other.agent("bot").context().messages[-1].content == "@bot hello"
