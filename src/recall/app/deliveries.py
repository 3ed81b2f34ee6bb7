"""An agent's deliveries: what it heard, its inbox (the unread ones), acknowledging them, replying,
and the inbox check that sends context once (spec §6).

Named apart from `core/inbox.py` (the pure split of an inbox page and the context slice) and
`server/inbox.py` (the long-poll notifier): this module reads and writes the deliveries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from recall import limits
from recall.app.calls import CallLog
from recall.app.context import Contexts
from recall.app.posting import Posting, PostRequest
from recall.app.validation import MAX_MESSAGE_ID, check_chat, check_int
from recall.app.worlds import Worlds
from recall.core.context_records import Context
from recall.core.inbox import CheckResult, RecalledPast, context_slice, split_unread
from recall.core.models import AgentProfile, Message
from recall.settings import Settings
from recall.store.base import Store
from recall.store.records import ContextSession

#: Unread deliveries read per page by an inbox check.
INBOX_PAGE = 200
DEFAULT_SESSION = "default"


@dataclass(frozen=True)
class PlainCheck:
    """One agent's inbox check without context (`Deliveries.check_many`)."""

    agent_id: str
    limit: int = 10
    chat_id: str | None = None
    #: Checked as `check` checks them, though a check without context uses neither.
    session: str = DEFAULT_SESSION
    context_limit: int | None = None


@dataclass(frozen=True, eq=False)
class Deliveries:
    """An agent's inbox, acks and replies."""

    store: Store
    settings: Settings
    worlds: Worlds
    posting: Posting
    #: Builds the recalled past a check with context carries (None: checks carry none).
    contexts: Contexts | None = None
    #: Records the context a check with context was built from, as a model call.
    calls: CallLog | None = None

    def inbox(
        self, world_id: str, agent_id: str, unread_only: bool = True, limit: int = 100, mark_read: bool = False
    ) -> list[tuple[Message, bool]]:
        world, agent = self.worlds.agent_in(world_id, agent_id)
        check_int("limit", limit, 1, 1000)
        entries = self.store.inbox(world, agent, unread_only, limit)
        if mark_read and entries:
            self.store.mark_read(world, agent, [m.id for m, _ in entries], datetime.now(UTC))
        return entries

    def ack(self, world_id: str, agent_id: str, message_ids: Sequence[int]) -> int:
        return self.ack_many(world_id, {agent_id: message_ids})

    def ack_many(self, world_id: str, acks: Mapping[str, Sequence[int]]) -> int:
        """`ack` for several agents of one world, in one write: how many messages were unread."""
        marks: dict[str, list[int]] = {}
        world, agents = self.worlds.agents_in(world_id, list(acks))
        for agent, message_ids in zip(agents, acks.values(), strict=True):
            if isinstance(agent, Exception):
                raise agent
            marks.setdefault(agent, []).extend(check_int("ids", i, 1, MAX_MESSAGE_ID) for i in message_ids)
        return self.store.mark_read_many(world, marks, datetime.now(UTC))

    def send(
        self,
        world_id: str,
        agent_id: str,
        content: str,
        chat_id: str | None = None,
        parent_id: int | None = None,
        idempotency_key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Message:
        """Post as the agent (its reply), threaded to `parent_id` when given."""
        world, agent = self.worlds.agent_in(world_id, agent_id)
        request = PostRequest(agent, content, chat_id, None, parent_id, None, idempotency_key, metadata)
        return self.posting.post(world, request)

    def check(
        self,
        world_id: str,
        agent_id: str,
        *,
        limit: int = 10,
        mark_read: bool = False,
        include_context: bool = False,
        context_limit: int | None = None,
        session: str = DEFAULT_SESSION,
        chat_id: str | None = None,
        refresh: bool = False,
        context_only_with_mentions: bool = False,
        record: bool = True,
    ) -> CheckResult:
        """The agent's new messages to answer, oldest first, and its context sent once (spec §6).

        Messages the agent is not addressed in need no answer: the check marks them read as it
        passes them (they stay in its memory). The others stay unread until `mark_read` or `ack`.
        Context is the agent's filtered memory of the chat (`chat_id`, else the chat of the
        newest mention); within a `session` only what was not sent before is sent again
        (`delta`), until `refresh` or the session's TTL. With context and `record`, the context
        it was built from is recorded as a model call (`call_id`): the agent's model gets it next.
        """
        world, agent_id = self.worlds.agent_in(world_id, agent_id)
        agent = self.worlds.get_agent(world, agent_id)
        depth, chat = self._check_arguments(limit, context_limit, session, chat_id)

        mentions: list[Message] = []
        passed = 0
        now = datetime.now(UTC)
        after = 0
        while len(mentions) < limit:
            unread = [m for m, _ in self.store.inbox(world, agent_id, True, INBOX_PAGE, after)]
            found, heard = split_unread(agent_id, unread, limit - len(mentions))
            mentions.extend(found)
            if heard:
                self.store.mark_read(world, agent_id, [m.id for m in heard], now)
                passed += len(heard)
            if len(unread) < INBOX_PAGE:
                break
            after = unread[-1].id
        chat = _answer_chat(chat_id, chat, mentions)
        if not include_context or (context_only_with_mentions and not mentions):
            result = CheckResult(tuple(mentions), chat_id=chat, passed=passed)
        else:
            result = self._context_once(
                world_id, world, agent, mentions, chat, depth, session, refresh, now, passed, record
            )
        if mark_read and mentions:
            # Last, once the answer is built: a check that fails leaves its mentions unread.
            self.store.mark_read(world, agent_id, [m.id for m in mentions], now)
        return result

    def _check_arguments(
        self, limit: int, context_limit: int | None, session: str, chat_id: str | None
    ) -> tuple[int, str | None]:
        """A check's arguments, refused as `check` refuses them: its context depth and chat."""
        check_int("limit", limit, 1, 1000)
        depth = check_int(
            "context_limit", self.settings.context_limit if context_limit is None else context_limit, 1, 100
        )
        limits.check_text("session", session, limits.MAX_SESSION, required=True)
        return depth, check_chat(chat_id)

    def check_many(self, world_id: str, checks: Sequence[PlainCheck]) -> list[CheckResult | Exception]:
        """`check` without context for many agents of one world at once (the checks one post
        wakes): each one's answer, or why it failed, from one read of all their inboxes and one
        write for the messages they pass. Nothing they return is marked read (see `ack_many`)."""
        results: list[CheckResult | Exception] = []
        wanted: list[tuple[int, str, PlainCheck, str | None]] = []
        world, agents = self.worlds.agents_in(world_id, [plain.agent_id for plain in checks])
        for index, (plain, agent) in enumerate(zip(checks, agents, strict=True)):
            try:
                if isinstance(agent, Exception):
                    raise agent
                _, chat = self._check_arguments(plain.limit, plain.context_limit, plain.session, plain.chat_id)
                wanted.append((index, agent, plain, chat))
                results.append(CheckResult())
            except Exception as exc:  # noqa: BLE001 - that check learns why
                results.append(exc)
        if not wanted:
            return results
        inboxes = self.store.unread_inboxes(world, sorted({agent for _, agent, _, _ in wanted}), INBOX_PAGE)
        passed: dict[str, list[int]] = {}
        for index, agent, plain, chat in wanted:
            unread = inboxes.get(agent, [])
            mentions, heard = split_unread(agent, unread, plain.limit)
            if len(unread) == INBOX_PAGE and len(mentions) < plain.limit:
                # A full page of mostly passed messages: the one-agent check reads on.
                results[index] = self.check(world, agent, limit=plain.limit, chat_id=plain.chat_id)
                continue
            passed.setdefault(agent, []).extend(m.id for m in heard)
            results[index] = CheckResult(
                tuple(mentions), chat_id=_answer_chat(plain.chat_id, chat, mentions), passed=len(heard)
            )
        self.store.mark_read_many(world, passed, datetime.now(UTC))
        return results

    def answer_known(self, plain: PlainCheck, mentions: Sequence[Message]) -> CheckResult:
        """`check_many`'s answer to a check whose new mentions are known without reading the
        store: a waiting check found none there, so once woken it has only the posts that woke
        it to answer (each delivered to it, and one it would respond to). Nothing is read or
        marked read: what it is not addressed in stays unread until a check reads the store."""
        _, chat = self._check_arguments(plain.limit, plain.context_limit, plain.session, plain.chat_id)
        ordered = sorted({m.id: m for m in mentions}.values(), key=lambda m: m.id)
        return CheckResult(tuple(ordered), chat_id=_answer_chat(plain.chat_id, chat, ordered))

    def _context_once(
        self,
        world_id: str,
        world: str,
        agent: AgentProfile,
        mentions: Sequence[Message],
        chat: str | None,
        depth: int,
        session: str,
        refresh: bool,
        now: datetime,
        passed: int,
        record: bool,
    ) -> CheckResult:
        state = self.store.get_context_session(world, agent.id, session, chat)
        ttl = timedelta(seconds=self.settings.context_session_ttl)
        full = refresh or state is None or now - state.refreshed_at > ttl
        floor = 0 if full or state is None else state.last_sent_id
        in_chat = [m.id for m in mentions if m.chat_id == chat]
        context, truncated = context_slice(
            agent,
            self.store.iter_heard(world, agent.id, chat),
            floor=floor,
            below=max(in_chat) if in_chat else None,
            exclude=set(in_chat),
            limit=depth,
        )
        newest = max([floor, *in_chat, *(m.id for m in context)])
        refreshed_at = now if full or state is None else state.refreshed_at
        recorded: list[str] = []

        def record_call(built: Context) -> None:
            if record and self.calls is not None and mentions:
                call_id = self.calls.record(built, "inbox").call_id
                recorded.extend([call_id] if call_id else [])

        trigger = max(in_chat, default=None)
        recalled, digest = self._recalled_once(world_id, agent, chat, trigger, depth, state, full, record_call)
        sent = ContextSession(newest, refreshed_at, digest)
        if sent != state:
            self.store.set_context_session(world, agent.id, session, chat, sent)
        call_id = recorded[0] if recorded else None
        return CheckResult(tuple(mentions), tuple(context), truncated, not full, chat, passed, recalled, call_id)

    def _recalled_once(
        self,
        world_id: str,
        agent: AgentProfile,
        chat: str | None,
        trigger: int | None,
        depth: int,
        state: ContextSession | None,
        full: bool,
        on_built: Callable[[Context], None] | None = None,
    ) -> tuple[RecalledPast | None, str]:
        """The recalled past for the check's newest mention in the chat, and its digest; its
        text is left out when this session was sent the same block already (context once).
        `on_built` is given the context it was taken from."""
        if self.contexts is None:
            return None, ""
        recalled = self.contexts.recalled_past(world_id, agent.id, chat, trigger, depth, on_built)
        if recalled.content is None:
            return recalled, ""
        digest = hashlib.sha256(recalled.content.encode()).hexdigest()
        if not full and state is not None and state.recalled_digest == digest:
            return replace(recalled, content=None, unchanged=True), digest
        return recalled, digest


def _answer_chat(asked: str | None, checked: str | None, mentions: Sequence[Message]) -> str | None:
    """The chat a check's answer is about: the one it asked for (`checked`: as validated), else
    the chat of its newest mention."""
    return mentions[-1].chat_id if asked is None and mentions else checked
