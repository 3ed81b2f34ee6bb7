"""Bring history from elsewhere into a store: conversations (LoCoMo benchmark files, OpenAI-style
JSONL: `conversations.py`) and what other memory systems give their users (mem0's `get_all`,
Zep's users and sessions, Letta's Agent File: `mem0.py`, `zep.py`, `letta.py`), each importable
again without storing anything twice. docs/importing.md has the formats and the mapping."""

from recall.importers.conversations import (
    LOCOMO_DATE_FORMAT,
    Conversation,
    Imported,
    file_label,
    import_conversation,
    locomo_session_numbers,
    read_jsonl,
    read_locomo,
    slug,
    store_conversation,
)
from recall.importers.letta import import_letta, read_letta
from recall.importers.mem0 import import_mem0, read_mem0
from recall.importers.plan import IMPORTED_FROM, ImportPlan
from recall.importers.report import ImportReport
from recall.importers.storing import store_plan
from recall.importers.zep import import_zep, read_zep

__all__ = [
    "IMPORTED_FROM",
    "LOCOMO_DATE_FORMAT",
    "Conversation",
    "ImportPlan",
    "ImportReport",
    "Imported",
    "file_label",
    "import_conversation",
    "import_letta",
    "import_mem0",
    "import_zep",
    "locomo_session_numbers",
    "read_jsonl",
    "read_letta",
    "read_locomo",
    "read_mem0",
    "read_zep",
    "slug",
    "store_conversation",
    "store_plan",
]
