"""Moved: long-term memory is split over `recall.app` (facts.py, memories.py, search.py,
extraction.py, context.py). `service.long_term` still answers the old names through
`LongTermMemory` below until the lead rewires its callers and removes this module."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall.app.context import LONG_TERM_HEADER, RECENT_SCAN, SIMILAR_HEADER  # moved: app/context.py
from recall.app.facts import EXPORT_FORMAT  # moved: app/facts.py
from recall.app.memories import MAX_NOTE_CHARS, NOTE_TYPE  # moved: app/memories.py
from recall.app.search import SEARCH_KINDS, SEARCH_METHODS, SearchResult  # moved: app/search.py

if TYPE_CHECKING:
    from recall.app.service import RecallService

__all__ = [
    "EXPORT_FORMAT",
    "LONG_TERM_HEADER",
    "MAX_NOTE_CHARS",
    "NOTE_TYPE",
    "RECENT_SCAN",
    "SEARCH_KINDS",
    "SEARCH_METHODS",
    "SIMILAR_HEADER",
    "LongTermMemory",
    "SearchResult",
]


class LongTermMemory:
    """`service.long_term`: the old names, bound to the service's parts."""

    def __init__(self, service: RecallService) -> None:
        facts, memories, searcher, extraction = (
            service.facts,
            service.long_term_memories,
            service.searcher,
            service.extraction,
        )
        self.store = service.store
        self.settings = service.settings
        self.index = service.index
        self.indexer = service.indexer
        self.model = service.model
        self.extraction = extraction.queue
        self.close = service.stop_background
        self.scope = facts.scope
        self.list_facts = facts.list_facts
        self.get_fact = facts.get_fact
        self.add_facts = facts.add_facts
        self.update_fact = facts.update_fact
        self.delete_fact = facts.delete_fact
        self.clear_facts = facts.clear_facts
        self.sections = facts.sections
        self.set_sections = facts.set_sections
        self.export_facts = facts.export_facts
        self.import_facts = facts.import_facts
        self.fact_scopes = facts.fact_scopes
        self.add_note = memories.add_note
        self.list_notes = memories.list_notes
        self.delete_note = memories.delete_note
        self.search = searcher.search
        self.refresh_index = searcher.refresh_index
        self.extract = extraction.extract
        self.flush_extraction = extraction.flush_extraction
        self.run_extraction = extraction.run_extraction
        self.context_blocks = service.contexts.gathered_blocks
