"""The recalled past's candidates for a context (spec §3): what an agent's newest messages ask
about, searched for among everything it heard, and a reader of the passages packing reaches.
`app/context.py` gives the request to the builder (`core/recalled.py` packs it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recall.core.context import Scan
from recall.core.models import AgentProfile, Message, SenderType
from recall.core.recalled import Passage, RecallCandidate, RecallRequest, RecallSettings
from recall.core.routing import MENTION
from recall.settings import Settings
from recall.store.base import Store
from recall.store.records import WorldRecord

if TYPE_CHECKING:
    from recall.search.base import Ranked
    from recall.search.index import SearchIndex

#: Candidates the recalled past's search asks for: one per this many tokens it may fill,
#: within these bounds (LoCoMo's evidence lies up to a few hundred turns deep).
RECALLED_TOKENS_PER_CANDIDATE = 25
RECALLED_MIN_CANDIDATES = 20
RECALLED_MAX_CANDIDATES = 600
#: ... and at least one per this many messages the agent heard.
RECALLED_HEARD_PER_CANDIDATE = 8
#: Turns before the incoming messages that the second search of the recalled past reads, when
#: the newest message has fewer than FOLLOW_UP_TERMS words that are not stop words.
RECENT_QUERY_TURNS = 3
FOLLOW_UP_TERMS = 3
_SPEAKERS = (SenderType.HUMAN, SenderType.AGENT)
#: A paragraph's opening @mentions: they address the message, they are not what it is about.
_OPENING_MENTIONS = re.compile(rf"^(\s*{MENTION.pattern}[,:]?\s*)+", re.ASCII | re.MULTILINE)


@dataclass(frozen=True, eq=False)
class RecalledSearch:
    """Finds the recalled past's candidates in the search index of one store."""

    store: Store
    settings: Settings
    index: SearchIndex

    def request(
        self,
        world: WorldRecord,
        agent: AgentProfile,
        chat: str | None,
        scan: Scan,
        recent: Sequence[Message],
        settings: RecallSettings,
        budget: int,
        heard_count: int,
    ) -> RecallRequest | None:
        """The recalled past's candidates: a hybrid search for the newest incoming message, and
        one for the incoming before it and the recent conversation (its scores weighed down),
        among the messages the agent heard; None when it is off or there is nothing to search."""
        if settings.max_tokens <= 0:
            return None
        # With the index (numpy), not with `import recall`.
        from recall.search.base import WORD
        from recall.search.local_words import words
        from recall.search.stopwords import STOP_WORDS

        # Every stored message is found by its words, whether or not the indexer got to it: a
        # copy of what is new (a read when nothing is); embedding stays the indexer's work.
        self.index.index_messages()

        incoming = scan.incoming
        shown = {m.id for m in (*incoming, *scan.history)}
        newest = search_text(_about(incoming[-1].content)) if incoming else ""
        incoming_ids = {m.id for m in incoming}
        said = [m for m in recent if m.id not in incoming_ids and m.sender_type in _SPEAKERS][:RECENT_QUERY_TURNS]
        context = search_text("\n".join(_about(m.content) for m in (*reversed(said), *incoming[:-1])).strip())
        # The recent conversation is searched for only when the newest message says little on its
        # own ("and her sister?"): beside a question that names what it asks about, what the
        # last turns were about crowds out its answer (measured on LoCoMo, docs/benchmarks.md).
        follow_up = len(set(WORD.findall(newest.lower())) - STOP_WORDS) < FOLLOW_UP_TERMS
        recent_weight = self.settings.recalled_recent_weight if follow_up or not newest else 0.0
        queries = [(q, w) for q, w in ((newest, 1.0), (context, recent_weight)) if q and w > 0]
        if not queries:
            return RecallRequest((), settings, notes=("no recalled past: nothing to search for",))
        # The pool grows with what the budget may hold and with what the agent heard (evidence
        # deep in a long history must still be a candidate), within bounded work.
        wanted = max(
            min(settings.max_tokens, budget) // RECALLED_TOKENS_PER_CANDIDATE,
            heard_count // RECALLED_HEARD_PER_CANDIDATE,
        )
        k = max(RECALLED_MIN_CANDIDATES, min(RECALLED_MAX_CANDIDATES, wanted))
        if settings.limit:
            k = min(k, settings.limit + len(shown) + RECALLED_MIN_CANDIDATES)
        # Relative times ("last week") count back from when the newest message was written.
        now = incoming[-1].created_at if incoming else (recent[0].created_at if recent else None)
        scope = agent.recalled_scope or self.settings.recalled_scope
        best: dict[int, tuple[float, Ranked]] = {}
        for query, weight in queries:
            # Ranked, not searched: the messages are read below, the index's copies never.
            hits = self.index.ranked(
                query,
                tenant=world.tenant,
                space=world.id,
                kinds=("message",),
                k=k,
                method="hybrid",
                chat_id=(chat or "") if scope == "chat" else None,
                now=now,
                exclude=incoming_ids,
            )
            for hit in hits:
                score = hit.score * weight
                if hit.source_id not in best or best[hit.source_id][0] < score:
                    best[hit.source_id] = (score, hit)
        ranked = sorted(best.items(), key=lambda pair: (-pair[1][0], pair[0]))
        # Only what the agent heard (or wrote) is a candidate; the rest is never shown or listed.
        # The messages themselves are read as packing reaches them.
        heard = self.store.heard_ids(world.key, agent.id, [source for source, _ in ranked])
        candidates = [
            RecallCandidate(
                source,
                hit.sender or "",
                hit.chat_id,
                rank,
                score,
                hit.keyword_score,
                hit.similarity,
                hit.time_score,
                hit.part,
            )
            for rank, (source, (score, hit)) in enumerate(((s, v) for s, v in ranked if s in heard), 1)
        ]
        # A long message's relevant part is where the question's own words are, not the words
        # of the recent turns a follow-up also searched for (its stop words kept: measured on
        # BEAM 1-4, they find the sentence a question rests on more often than without).
        terms = frozenset(words(newest or context))
        return RecallRequest(tuple(candidates), settings, self._passages(world, agent, settings), terms, words)

    def _passages(
        self, world: WorldRecord, agent: AgentProfile, settings: RecallSettings
    ) -> Callable[[Sequence[RecallCandidate]], dict[int, Passage]]:
        """Reads candidates' passages: each message, and for a short one the turn it answers."""

        def read(candidates: Sequence[RecallCandidate]) -> dict[int, Passage]:
            # The candidates are what the agent heard (`heard_ids`); the turns before them are checked.
            heard = self.store.messages_among(world.key, [c.id for c in candidates])
            # Only a short passage brings the turn it answers; each word is at least one token
            # (split no further than one word past the limit: most passages are longer).
            most = settings.neighbour_tokens
            short = {i: m for i, m in heard.items() if len(m.content.split(None, most)) <= most}
            previous = self._turns_before(world, agent, short)
            return {i: Passage(m, previous.get(i)) for i, m in heard.items()}

        return read

    def _turns_before(
        self, world: WorldRecord, agent: AgentProfile, messages: Mapping[int, Message]
    ) -> dict[int, Message]:
        """The turn each message answers (its parent, else the one before it in its chat),
        where the agent heard it."""
        wanted = {m.id: m.parent_id for m in messages.values() if m.parent_id is not None}
        lacking = [i for i in messages if i not in wanted]
        wanted.update(self.store.turns_before(world.key, lacking))
        found = self.store.heard_among(world.key, agent.id, [i for i in wanted.values() if i not in messages])
        known = {**messages, **found}
        return {i: known[b] for i, b in wanted.items() if b in known}


def search_text(text: str) -> str:
    """What a context searches for in `text`: all of it, or, past the search's length cap, its
    opening and its end (where a long message usually says what it asks)."""
    from recall.search.base import MAX_QUERY_CHARS

    if len(text) <= MAX_QUERY_CHARS:
        return text
    half = (MAX_QUERY_CHARS - 3) // 2
    return f"{text[:half]} … {text[-half:]}"


def _about(content: str) -> str:
    """What a message says, without the @mentions that open its paragraphs."""
    return _OPENING_MENTIONS.sub("", content).strip()
