"""Deleting worlds, participants and messages (spec §8), with the deletion reaching the search
index (vectors included) and the queued fact extractions.

What each deletion takes with it is the store's (`store/world_delete.py`); this module decides
which fact scopes go (a world's and its agents', an agent's, an erased human's `user:ID` in
the world's tenant), drops the queued extractions that would bring deleted text back, removes
the search items, re-indexes the messages whose indexed context quoted a deleted one, and
drops the caches of the world's roster.

Erasing a human (`erase=True`) deletes every message it sent in the world, its deliveries, and
the facts of `user:ID` in the world's tenant. Without `erase`, only the participant goes: the
messages it sent stay (every agent heard them, spec §1) and so do its `user:ID` facts, which
belong to the tenant, not to one world. An agent's deletion always takes what was private to
it (deliveries, read state, notes, turn counter, observations, private memories, its agent
facts); `erase` takes the messages it wrote too.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recall.app.extraction import Extraction
from recall.app.validation import MAX_MESSAGE_ID, check_int, could_be_stored
from recall.app.worlds import Worlds
from recall.errors import InvalidInputError, NotFoundError, UnknownParticipantError, UnknownWorldError
from recall.store.base import Store
from recall.store.records import ParticipantRecord, WorldRecord
from recall.store.world_records import FactScopes, Removed
from recall.suggest import close_matches

if TYPE_CHECKING:
    from recall.app.calls import CallLog
    from recall.search.index import SearchIndex

PARTICIPANT_KINDS = ("agent", "human")


def world_scopes(world: WorldRecord, people: list[ParticipantRecord], users: bool) -> FactScopes:
    """The fact scopes of a world in its tenant: its own and its agents', and with `users` its
    humans' `user:ID` (what an export holds)."""
    world_id = world.id.lower()
    scopes = [f"world:{world_id}"]
    scopes += [f"agent:{world_id}/{p.id.lower()}" for p in people if p.kind == "agent"]
    if users:
        scopes += [f"user:{p.id.lower()}" for p in people if p.kind == "human"]
    return FactScopes(world.tenant, tuple(scopes))


@dataclass(frozen=True, eq=False)
class Lifecycle:
    """Delete a world, a participant or a message with everything that belongs to it."""

    store: Store
    worlds: Worlds
    extraction: Extraction
    index: SearchIndex | None = None
    #: Recorded model calls: an erase takes the erased messages out of them.
    calls: CallLog | None = None

    def delete_world(self, world_id: str) -> Removed:
        """Delete the world (by key) and everything in it: participants, chats, messages,
        deliveries and read state, notes, observations, memories, and the facts of the world's
        and its agents' scopes. Its humans' `user:ID` facts stay (they belong to the tenant)."""
        world = self.worlds.get_world(world_id)
        scopes = world_scopes(world, self.store.list_participants(world.key), users=False)
        self.extraction.discard(world.tenant, scopes=scopes.scopes, threads=f"{world.id}/")
        try:
            removed = self.store.delete_world(world.key, scopes, then=self._unindex)
        finally:
            self.worlds._drop_caches()
        if removed is None:
            raise UnknownWorldError(world.id)
        return removed

    def delete_participant(
        self, world_id: str, participant_id: str, kind: str | None = None, *, erase: bool = False
    ) -> Removed:
        """Delete an agent or a human of the world (by key); `kind` ('agent' or 'human') when the
        caller named one. With `erase`, the messages it sent go too and, for a human, the facts
        of its `user:ID` in the world's tenant. UnknownParticipantError when there is none."""
        world = self.worlds.get_world(world_id)
        if kind is not None and kind not in PARTICIPANT_KINDS:
            raise InvalidInputError("kind", f"must be 'agent' or 'human', got {kind!r}")
        if not isinstance(erase, bool):
            raise InvalidInputError("erase", f"must be true or false, got {erase!r}")
        record = self.store.get_participant(world.key, participant_id) if could_be_stored(participant_id) else None
        if record is None or (kind is not None and record.kind != kind):
            people = [p.id for p in self.worlds.participants(world.key) if kind is None or p.kind == kind]
            close = close_matches(str(participant_id), people)
            raise UnknownParticipantError(world.id, str(participant_id), kind or "participant", close)
        scopes: tuple[str, ...]
        if record.kind == "agent":
            scopes = (f"agent:{world.id.lower()}/{record.id.lower()}",)
            threads: str | None = f"{world.id}/{record.id}/"
        else:
            scopes = (f"user:{record.id.lower()}",) if erase else ()
            threads = None
        self.extraction.discard(world.tenant, scopes=scopes, threads=threads)
        erasure = self.calls.scrubbing() if erase and self.calls is not None else nullcontext()
        try:
            with erasure as erasing:

                def then(db: Any, removed: Removed) -> None:
                    self._unindex(db, removed)
                    if erasing is not None:  # no record of a call keeps an erased message's id
                        erasing.forget(db, world.key, record.id, removed.messages)

                removed = self.store.delete_participant(
                    world.key, record.id, erase=erase, facts=FactScopes(world.tenant, scopes), then=then
                )
        finally:
            self.worlds._drop_caches(world.key.lower())
        if removed is None:
            raise UnknownParticipantError(world.id, record.id, record.kind)
        self.extraction.discard(world.tenant, messages=removed.messages)
        return removed

    def delete_message(self, world_id: str, message_id: int) -> Removed:
        """Delete one message of the world (by key) with its deliveries; replies to it become
        replies to its parent. NotFoundError when the world has no such message."""
        world = self.worlds.get_world(world_id)
        check_int("message_id", message_id, 1, MAX_MESSAGE_ID)
        with self.calls.scrubbing() if self.calls is not None else nullcontext() as scrub:

            def then(db: Any, removed: Removed) -> None:
                self._unindex(db, removed)
                if scrub is not None:  # no recorded call keeps a copy of its text
                    scrub.forget_copies(db, world.key, [("message", i) for i in removed.messages])

            removed = self.store.delete_messages(world.key, [message_id], then=then)
        if not removed.messages:
            raise NotFoundError(
                f"no message {message_id} in world {world.id!r}: nothing was deleted (list the world's messages"
                " to see their ids)"
            )
        self.extraction.discard(world.tenant, messages=removed.messages)
        return removed

    def _unindex(self, db: Any, removed: Removed) -> None:
        """The search items of what a deletion removed, in its transaction (`store.AlsoRemove`)."""
        if self.index is None:
            return
        items = {"message": removed.messages, "memory": removed.memories, "fact": removed.facts}
        if any(items.values()) or removed.successors:
            self.index.forget_in(db, items, removed.successors)
