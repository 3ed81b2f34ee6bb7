"""Rows to records, shared by the SQLite and PostgreSQL stores: both keep times as epoch
seconds, JSON as text and the default chat as '', so one set of mappers serves them."""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from recall.core.facts import Fact
from recall.core.models import Message, SenderType
from recall.errors import RecallError
from recall.store.records import Memory, NewMessage, Note, ParticipantRecord, WorldRecord

#: Rows read per page when scanning an agent's memory newest first.
MEMORY_PAGE = 64

#: Deliveries are kept in the order (bucket, message id, agent key), an agent's bucket being its
#: key >> DELIVERY_BUCKET_BITS: the agents of a bucket (16 neighbouring keys, registered
#: together) share one run of the table's pages. A post to a thousand agents writes its rows
#: into ~63 runs, not one per agent as when rows were kept by agent and message: on SQLite 1.4
#: against 12.8 ms, the rest of that time being a thousand pages written to the WAL, and as
#: many copied at the next checkpoint. An agent's reads pass its bucket-mates' rows too. The
#: stored rows hold it: another value needs a migration that files every delivery again.
DELIVERY_BUCKET_BITS = 4


def delivery_bucket(key: int) -> int:
    """The bucket of the agent whose key is `key`."""
    return key >> DELIVERY_BUCKET_BITS


def of_agent(key: str, alias: str = "") -> str:
    """The condition that a delivery (`alias`, e.g. "d.") is to the agent whose key is the SQL
    expression `key`: its bucket, then its key (the table's order). A parameter for `key` is
    named twice (the cast: PostgreSQL shifts no parameter of unknown type)."""
    return f"{alias}bucket = (CAST({key} AS BIGINT) >> {DELIVERY_BUCKET_BITS}) AND {alias}agent_key = {key}"


MESSAGE_COLUMNS = (
    "m.id, m.world_id, m.chat_id, m.sender, m.sender_type, m.channel, m.parent_id, "
    "m.content, m.mentions, m.addressed, m.metadata, m.created_at"
)
#: How both stores write messages (the rows of `MessageBatch.rows`), with `?` placeholders.
INSERT_MESSAGE = (
    "INSERT INTO messages (id, world_id, chat_id, sender, sender_type, channel, parent_id, content,"
    " mentions, addressed, metadata, created_at, idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _null(_: str) -> None:
    return None


#: Stored JSON as Python, where a NaN or Infinity (which no JSON answer can hold) that an older
#: recall stored unchecked reads as null: no stored value makes a later read fail (spec §8).
load_json = json.JSONDecoder(parse_constant=_null).decode


def ts(at: datetime) -> float:
    """Epoch seconds: how both stores keep times."""
    return at.timestamp()


def dt(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def chat_key(chat_id: str | None) -> str:
    return chat_id or ""


def chat_id_of(key: str) -> str | None:
    return key or None


WORLD_COLUMNS = "id, name, created_at, turn_limit, tenant, key"


def world_record(row: Sequence[Any]) -> WorldRecord:
    return WorldRecord(row[0], row[1], dt(row[2]), row[3], row[4], row[5])


def new_world_key(world_id: str, tenant: str, taken: Callable[[str], bool]) -> str:
    """The key of a new world: its id, unless some world (another tenant's) has that key; then
    'TENANT/ID' (then 'TENANT/2/ID', … should tenants differ only in case). Ids never hold '/',
    so every key ends with its world's id after the last '/': `world_id_of` reads it back."""
    candidates = itertools.chain(
        (world_id, f"{tenant}/{world_id}"), (f"{tenant}/{n}/{world_id}" for n in itertools.count(2))
    )
    return next(key for key in candidates if not taken(key))


def world_id_of(key: str) -> str:
    """The id of the world a key names (what its tenant calls it)."""
    return key.rpartition("/")[2]


def json_list(items: Sequence[str]) -> str:
    return json.dumps(list(items)) if items else "[]"


def load_tuple(text: str) -> tuple[str, ...]:
    # Most messages mention no one: skip the JSON parser for the common empty list.
    return tuple(json.loads(text)) if text != "[]" else ()


def memory_item(row: Sequence[Any]) -> Note:
    return Note(row[0], load_json(row[1]), dt(row[2]), None if row[3] is None else dt(row[3]))


def recipient_key(keys: dict[str, int], agent_id: str) -> int:
    key = keys.get(agent_id.lower())
    if key is None:
        raise RecallError(f"cannot deliver to {agent_id!r}: it is not an agent of this world")
    return key


#: Sender types by their stored value (a dict look-up costs a tenth of the enum's call).
_SENDER_TYPES = {t.value: t for t in SenderType}


def message_record(row: Sequence[Any]) -> Message:
    # A frozen dataclass's __init__ sets each field through object.__setattr__; a stored row
    # is already valid, so its fields go in at once (half the time: a context build decodes
    # hundreds of messages: the history and the recalled past's candidates).
    message: Message = object.__new__(Message)
    message.__dict__.update(
        id=row[0],
        world_id=world_id_of(row[1]),
        sender=row[3],
        sender_type=_SENDER_TYPES[row[4]],
        content=row[7],
        created_at=dt(row[11]),
        chat_id=chat_id_of(row[2]),
        channel=row[5],
        parent_id=row[6],
        mentions=load_tuple(row[8]),
        addressed=load_tuple(row[9]),
        metadata=load_json(row[10]) if row[10] != "{}" else {},
    )
    return message


FACT_COLUMNS = "id, scope, content, category, confidence, created_at, updated_at, source, avoid"
NOTE_COLUMNS = "id, world_id, owner, type, content, importance, chat_id, metadata, created_at, updated_at, expires_at"
PARTICIPANT_COLUMNS = "world_id, id, kind, profile, created_at"


def fact_record(row: Sequence[Any]) -> Fact:
    return Fact(row[0], row[1], row[2], row[3], row[4], dt(row[5]), dt(row[6]), row[7], row[8])


def note_record(row: Sequence[Any]) -> Memory:
    return Memory(
        row[0], world_id_of(row[1]), row[2], row[3], row[4], row[5], row[6], load_json(row[7]), dt(row[8]),
        dt(row[9]), None if row[10] is None else dt(row[10]),
    )  # fmt: skip


def participant_record(row: Sequence[Any]) -> ParticipantRecord:
    return ParticipantRecord(world_id_of(row[0]), row[1], row[2], dt(row[4]), load_json(row[3]))


@dataclass
class MessageBatch:
    """What storing a batch of messages writes, worked out once for both stores.

    Posts fan out to the same few recipient lists (every agent but the author), so deliveries
    and memory counts are grouped per list: its agents × its messages."""

    #: One per message of the batch, in order: the new message, or the stored one a repeated
    #: idempotency key names.
    stored: list[Message] = field(default_factory=list)
    #: `messages` rows to insert (columns as in `INSERT INTO messages (id, world_id, …)`).
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    #: (recipients, own, read_at) → message ids delivered to them (read at that time, or unread).
    fanout: dict[tuple[tuple[str, ...], int, float | None], list[int]] = field(
        default_factory=lambda: defaultdict(list)
    )
    #: (recipients, chat) → how many messages each of them gains in that chat's memory.
    per_chat: Counter[tuple[tuple[str, ...], str]] = field(default_factory=Counter)
    #: (recipients, chat) → the first of those messages (a memory count's `first_id` when new).
    first_in_chat: dict[tuple[tuple[str, ...], str], int] = field(default_factory=dict)
    #: Agents whose turn counters go back to 0.
    resets: set[str] = field(default_factory=set)
    #: Chats the batch writes to, with the time of their first message.
    chats: dict[str, datetime] = field(default_factory=dict)

    def count(self, recipients: tuple[str, ...], chat: str, message_id: int) -> None:
        """One more message in each recipient's memory of `chat`."""
        self.per_chat[(recipients, chat)] += 1
        self.first_in_chat.setdefault((recipients, chat), message_id)


def plan_batch(
    world_id: str, batch: Sequence[NewMessage], already: Mapping[str, Message], ids: Iterator[int]
) -> MessageBatch:
    """Ids (from `ids`) and rows for the messages of `batch` that are new: one whose idempotency
    key is in `already` (or earlier in the batch) is not stored again."""
    plan = MessageBatch()
    by_key = dict(already)
    for new in batch:
        if new.idempotency_key is not None and new.idempotency_key in by_key:
            plan.stored.append(by_key[new.idempotency_key])
            continue
        message_id = next(ids)
        chat = chat_key(new.chat_id)
        plan.rows.append(
            (
                message_id, world_id, chat, new.sender, new.sender_type.value, new.channel, new.parent_id,
                new.content, json_list(new.mentions), json_list(new.addressed),
                json.dumps(new.metadata) if new.metadata else "{}", ts(new.created_at), new.idempotency_key,
            )
        )  # fmt: skip
        plan.fanout[(new.recipients, 0, None if new.read_at is None else ts(new.read_at))].append(message_id)
        plan.count(new.recipients, chat, message_id)
        if new.author_agent is not None:
            plan.fanout[((new.author_agent,), 1, None)].append(message_id)
            plan.count((new.author_agent,), chat, message_id)
        if new.reset_turns:
            # Nothing else in a batch touches the counters, so one reset at the end is the same.
            plan.resets.update(new.recipients)
        plan.chats.setdefault(chat, new.created_at)
        message = Message(
            id=message_id,
            world_id=world_id_of(world_id),
            sender=new.sender,
            sender_type=new.sender_type,
            content=new.content,
            created_at=new.created_at,
            chat_id=new.chat_id or None,
            channel=new.channel,
            parent_id=new.parent_id,
            mentions=new.mentions,
            addressed=new.addressed,
            metadata=new.metadata,
        )
        if new.idempotency_key is not None:
            by_key[new.idempotency_key] = message
        plan.stored.append(message)
    return plan


def merged_sections(current: str | None, changes: Mapping[str, str]) -> str:
    """A scope's sections (stored JSON) with `changes` applied; an empty text removes one."""
    merged = {**(json.loads(current) if current else {}), **changes}
    return json.dumps({k: v for k, v in merged.items() if v}, sort_keys=True)
