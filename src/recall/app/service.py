"""`RecallService`: the use cases composed over one store, its search index and the chat model.

Every interface (Python, HTTP, MCP, CLI, UI) calls these, so none disagree. Each part has one
job and is exposed as it is (`service.facts.add_facts(...)`); the names interfaces called on the
service before the split stay, as the parts' own bound methods (no second signature to keep).
"""

from __future__ import annotations

import atexit
import threading
import weakref

from recall.app.agent_state import AgentState
from recall.app.call_writer import CallWriter
from recall.app.calls import CallLog
from recall.app.context import Contexts
from recall.app.deliveries import Deliveries
from recall.app.extraction import Extraction
from recall.app.facts import Facts
from recall.app.lifecycle import Lifecycle
from recall.app.memories import SWEEP_INTERVAL, Memories
from recall.app.posting import Posting
from recall.app.search import Searcher
from recall.app.world_export import WorldExports
from recall.app.worlds import Worlds
from recall.llm.factory import chat_model_from_settings
from recall.llm.summarizer import LLMSummarizer
from recall.search.indexer import BackgroundIndexer
from recall.search.open import open_search_index
from recall.settings import Settings
from recall.store.base import PostListener, SharedRateLimits, Store


class RecallService:
    def __init__(self, store: Store, settings: Settings | None = None) -> None:
        self.store = store
        self.settings = settings = settings or Settings()
        #: The search index with its embedder, and its background indexer (None when off).
        self.index, self.indexer = open_search_index(store, settings)
        #: The configured chat model (extraction and history summaries), or None.
        self.model = chat_model_from_settings(settings)
        #: Summaries of older history (spec §3) with the configured chat model; None without one.
        self.summarizer = None if self.model is None else LLMSummarizer(self.model)

        self.worlds = worlds = Worlds(store)
        self.posting = posting = Posting(store, settings, worlds, self.indexer)
        self.agent_state = agent_state = AgentState(store, settings, worlds, posting)
        writer = CallWriter(store, settings)
        self.facts = facts = Facts(store, worlds, self.index, writer)
        #: Long-term memories (an agent's key-value notes are `agent_state`'s).
        self.memories = memories = Memories(store, worlds, self.index, writer)
        self.searcher = Searcher(settings, worlds, facts, self.index, memories)
        self.extraction = Extraction(store, settings, worlds, facts, self.model)
        self.contexts = Contexts(
            store, settings, worlds, posting, agent_state, self.index, self.summarizer, memories=memories
        )
        #: Recorded model calls: what each call's context held, replayed and compared.
        self.calls = CallLog(store, settings, worlds, self.contexts, writer)
        self.deliveries = Deliveries(store, settings, worlds, posting, self.contexts, self.calls)
        #: Deleting worlds, participants and messages; exporting and importing whole worlds.
        self.lifecycle = Lifecycle(store, worlds, self.extraction, self.index, self.calls)
        self.exports = WorldExports(store, settings, worlds, self.index, memories=memories)
        # A service never closed (a script's `mem = Recall(...)`) still has its threads stopped
        # at interpreter exit, before the runtime tears down: an indexer thread still inside the
        # embedding runtime then aborts the process. (Not when the service is collected: the
        # parts it made may live on without it.)
        _BACKGROUND.add(self.extraction)
        if self.indexer is not None:
            # Expired memories go even from worlds nobody reads (each read purges its world's).
            self.indexer.add_chore(memories.purge_expired, SWEEP_INTERVAL)
            _BACKGROUND.add(self.indexer)

    @property
    def post_count(self) -> int:
        """Messages this service has stored since it opened (see `wait_for_posts`)."""
        return self.posting.post_count

    # -- the store's capabilities, for the server's wiring ---------------------------------

    def schema_version(self) -> int:
        """The newest migration applied to the store (readiness checks)."""
        return self.store.schema_version()

    def shared_rate_limits(self) -> SharedRateLimits | None:
        """The store, when it keeps rate-limit buckets shared by every replica."""
        return self.store.rate_buckets

    def listen_for_posts(self, on_post: PostListener, stop: threading.Event) -> threading.Thread | None:
        """Hear posts other processes store, until `stop` is set (None: the store cannot tell)."""
        return None if self.store.announcer is None else self.store.announcer.listen(on_post, stop)

    def follow_index_worker(self) -> None:
        """Another process (the index worker) copies and embeds: keep only this process's copy of
        the index in memory, and its search graphs, in step with what it writes (a thread, stopped
        with the rest of the background work). Nothing to do when an indexer already runs here."""
        if self.index is not None and self.indexer is None:
            from recall.search.indexer import BackgroundIndexer

            self.indexer = BackgroundIndexer(self.index, indexing=False)
            self.indexer.add_chore(self.memories.purge_expired, SWEEP_INTERVAL)
            self.indexer.start()

    # -- closing ----------------------------------------------------------------------------

    def stop_background(self) -> None:
        """Stop background work (the extraction queue, the indexer) and wait for both threads to
        end, however long their current step takes (a model call is bounded by its timeout, an
        indexing step by its batch): the store closes next, and a thread left running would
        fail against it. Calling it again does nothing more."""
        for part in (self.extraction, self.indexer):
            if part is not None:
                _stop(part)
        self.calls.writer.stop()  # what is queued is written first

    def close(self) -> None:
        self.stop_background()
        self.store.close()


#: The extraction queues and indexers of every service made, while they exist.
_BACKGROUND: weakref.WeakSet[Extraction | BackgroundIndexer] = weakref.WeakSet()


def _stop(part: Extraction | BackgroundIndexer) -> None:
    if isinstance(part, Extraction):
        part.close()
    else:
        part.stop()
    _BACKGROUND.discard(part)


@atexit.register
def _stop_at_exit() -> None:
    for part in list(_BACKGROUND):
        _stop(part)
