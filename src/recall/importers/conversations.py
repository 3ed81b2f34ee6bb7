"""Conversations from files: LoCoMo benchmark files and OpenAI-style JSONL.

Each importer reads and validates the whole file first, so a bad line stops the import
before anything is stored, then registers the speakers it found and posts in batches with
the real timestamps.

Importing a file again adds nothing: each message read from a file carries an idempotency key,
so a message already imported into the world is not stored twice (an import cut short is
finished by running it again). A JSONL line's key is the SHA-256 of the file up to and with it:
a file that grew by lines at its end imports only those; a line changed makes it and the lines
after it new. A LoCoMo message's key is the file's SHA-256 and its place in the file.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recall.api import Recall, World
from recall.app.posting import PostRequest
from recall.app.validation import ID_PATTERN, MAX_ID_LENGTH, parse_timestamp
from recall.core.routing import RESERVED_SENDERS
from recall.errors import InvalidInputError

LOCOMO_DATE_FORMAT = "%I:%M %p on %d %B, %Y"

Progress = Callable[[int], None]


def slug(name: str) -> str:
    """A participant or world id made from a display name (`Mary Ann` → `Mary-Ann`)."""
    cleaned = re.sub(r"[^A-Za-z0-9_]+", "-", name.strip()).strip("-_")[:MAX_ID_LENGTH].strip("-_")
    if not cleaned or not ID_PATTERN.fullmatch(cleaned):
        raise InvalidInputError("name", f"cannot make an id from {name!r}")
    return cleaned


@dataclass
class Conversation:
    """A conversation ready to import: the world it goes to, its speakers, its messages."""

    world_id: str
    name: str
    humans: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)
    messages: list[PostRequest] = field(default_factory=list)
    #: Agent settings given to every agent this import registers.
    agent_settings: dict[str, Any] = field(default_factory=dict)
    #: The file the messages were read from, as `file_label` names it ('' when built in code).
    source: str = ""
    #: Whether the messages may carry what only recall writes: an agent's tool results, read by
    #: recall's own importers from a file that has the agent's tool calls (`letta.py`).
    trusted: bool = False


@dataclass(frozen=True)
class Imported:
    """What an import stored: `stored` new messages; `skipped` were in the world already
    (imported from the same file before)."""

    stored: int
    skipped: int


def file_label(data: bytes) -> str:
    """A file's name in its messages' idempotency keys: the start of its SHA-256."""
    return "sha256:" + hashlib.sha256(data).hexdigest()[:16]


def _import_key(source: str, *place: int) -> str:
    """The idempotency key of the message at `place` in the file `source` names."""
    return f"import {source} " + ":".join(str(p) for p in place)


def _register(world: World, conversation: Conversation) -> None:
    known = {p.id.lower() for p in world.participants()}
    for human in sorted(conversation.humans):
        if human.lower() not in known and human.lower() not in RESERVED_SENDERS:
            world.add_human(human)
    for agent in sorted(conversation.agents):
        if agent.lower() not in known and agent.lower() not in RESERVED_SENDERS:
            world.add_agent(agent, **conversation.agent_settings)


def store_conversation(mem: Recall, conversation: Conversation, progress: Progress | None = None) -> int:
    """Create the world if needed, register speakers, post every message; returns how many
    were stored (not those imported from the same file before: `import_conversation`)."""
    return import_conversation(mem, conversation, progress).stored


def import_conversation(mem: Recall, conversation: Conversation, progress: Progress | None = None) -> Imported:
    """`store_conversation`, saying how many messages were already in the world (imported
    from the same file before) and so not stored again."""
    world = mem.world(conversation.world_id, create=True, name=conversation.name)
    _register(world, conversation)
    before = _message_count(world)
    mem.service.posting.import_messages(
        world.key, conversation.messages, progress=progress, trusted=conversation.trusted
    )
    # Counted by the world's messages: the import's own returns the stored message in place
    # of each one already there. A post by another process meanwhile is not one of ours.
    stored = min(max(_message_count(world) - before, 0), len(conversation.messages))
    # Found by their words at once: the first search after a bulk import copies nothing.
    mem.service.searcher.copy_new_messages()
    return Imported(stored, len(conversation.messages) - stored)


def _message_count(world: World) -> int:
    return sum(n for _, n in world.chats())


# -- LoCoMo ---------------------------------------------------------------------------------


def _locomo_time(raw: str, where: str) -> datetime:
    try:
        return datetime.strptime(raw.strip(), LOCOMO_DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInputError(where, f"{raw!r} is not a LoCoMo date like '1:56 pm on 8 May, 2023'") from None


def locomo_session_numbers(conversation: dict[str, Any]) -> list[int]:
    """Session numbers that have turns, in order (some files have dates without sessions)."""
    numbers = [int(k.split("_")[1]) for k in conversation if re.fullmatch(r"session_\d+", k)]
    return sorted(numbers)


def read_locomo(path: str | Path, speakers: str = "agents") -> list[Conversation]:
    """Parse a LoCoMo file (a list of samples) into one conversation per sample.

    `speakers="agents"` registers both speakers as agents that hear everything (context filter
    `all`), so each one's model view can be built; `"humans"` registers them as humans.
    """
    if speakers not in ("agents", "humans"):
        raise InvalidInputError("speakers", f"must be 'agents' or 'humans', got {speakers!r}")
    try:
        data = Path(path).read_bytes()
        samples = json.loads(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError("file", f"cannot read LoCoMo JSON from {path}: {exc}") from None
    source = file_label(data)
    if not isinstance(samples, list):
        raise InvalidInputError("file", "a LoCoMo file is a JSON list of samples")
    conversations = []
    for index, sample in enumerate(samples):
        where = f"sample {index}"
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise InvalidInputError(where, "has no 'conversation' object")
        sample_id = str(sample.get("sample_id") or f"sample-{index}")
        conv = sample["conversation"]
        conversation = Conversation(world_id=slug(f"locomo-{sample_id}"), name=f"LoCoMo {sample_id}", source=source)
        if speakers == "agents":
            conversation.agent_settings = {"context_filter": "all"}
        names: dict[str, str] = {}
        for number in locomo_session_numbers(conv):
            key = f"session_{number}"
            when = _locomo_time(str(conv.get(f"{key}_date_time", "")), f"{where} {key}_date_time")
            for turn in conv[key]:
                speaker = str(turn.get("speaker", ""))
                if speaker not in names:
                    names[speaker] = slug(speaker)
                text = str(turn.get("text") or "").strip()
                caption = turn.get("blip_caption")
                if not text and caption:
                    text = f"[shared a photo: {caption}]"
                metadata = {"dia_id": turn.get("dia_id"), "session": number}
                for extra in ("blip_caption", "img_url", "query"):
                    if turn.get(extra):
                        metadata[extra] = turn[extra]
                conversation.messages.append(
                    PostRequest(
                        sender=names[speaker],
                        content=text or "…",
                        created_at=when,
                        metadata=metadata,
                        idempotency_key=_import_key(source, index, len(conversation.messages)),
                    )
                )
        (conversation.agents if speakers == "agents" else conversation.humans).update(names.values())
        conversations.append(conversation)
    return conversations


# -- OpenAI-style JSONL -----------------------------------------------------------------------


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise InvalidInputError(f"{where}.content", "must be text or a list of content parts")


def _jsonl_lines(data: bytes) -> Iterator[tuple[int, dict[str, Any], str]]:
    """Each line's number, object and import key (the SHA-256 of the lines up to it)."""
    digest = hashlib.sha256()
    for number, raw in enumerate(data.splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInputError(f"line {number}", "is not UTF-8 text") from None
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"line {number}", f"is not valid JSON: {exc.msg}") from None
        if not isinstance(item, dict):
            raise InvalidInputError(f"line {number}", 'must be a JSON object like {"role": …, "content": …}')
        digest.update(raw.strip() + b"\n")  # blank lines and line ends do not change a line's key
        yield number, item, "import sha256:" + digest.copy().hexdigest()[:32]


def read_jsonl(path: str | Path, world_id: str | None = None, chat_id: str | None = None) -> Conversation:
    """Parse OpenAI-style chat lines: {role, content, name?, created_at|timestamp?, chat_id?}.

    `user` lines come from humans (their `name`, else `user`), `assistant` lines from agents
    (their `name`, else `assistant`), `system` lines from the system.
    """
    file = Path(path)
    if not file.is_file():
        raise InvalidInputError("file", f"{path} does not exist")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InvalidInputError("file", f"cannot read {path}: {exc}") from None
    source = file_label(data)
    conversation = Conversation(world_id=world_id or slug(file.stem), name=world_id or file.stem, source=source)
    for number, item, key in _jsonl_lines(data):
        where = f"line {number}"
        role = item.get("role")
        if role not in ("user", "assistant", "system"):
            raise InvalidInputError(f"{where}.role", f"must be user, assistant or system, got {role!r}")
        text = _text(item.get("content"), where)
        if not text.strip():
            raise InvalidInputError(f"{where}.content", "is empty")
        name = item.get("name")
        if role == "system":
            sender = "system"
        elif role == "user":
            sender = slug(str(name)) if name else "user"
            conversation.humans.add(sender)
        else:
            sender = slug(str(name)) if name else "assistant"
            conversation.agents.add(sender)
        when = item.get("created_at", item.get("timestamp"))
        conversation.messages.append(
            PostRequest(
                sender=sender,
                content=text,
                chat_id=item.get("chat_id", chat_id),
                created_at=None if when is None else parse_timestamp(when, f"{where}.created_at"),
                idempotency_key=key,
            )
        )
    return conversation
