"""The public records: what the Python API returns and takes, importable from one place.

Each is defined beside the code that makes it and re-exported here, so callers (and type
hints) need not know where that is. `SearchHit`'s module loads numpy, so it is
imported on first use: `import recall` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recall.app.calls import Replay
from recall.app.posting import PostRequest
from recall.app.search import SearchResult
from recall.core.calls import CallDiff, CallItem, CallRecord, ItemChange
from recall.core.context_parts import ContextBlock, ContextMessage, ContextReport, ReportItem
from recall.core.context_records import BuildParams, Context
from recall.core.facts import Fact
from recall.core.inbox import CheckResult
from recall.core.models import AgentProfile, ContextFilter, Message, SenderType
from recall.core.observations import Action, Observation
from recall.core.routing import Decision
from recall.store.records import Memory, Note, ParticipantRecord, WorldRecord

if TYPE_CHECKING:
    from recall.search.base import SearchHit

__all__ = [
    "Action",
    "AgentProfile",
    "BuildParams",
    "CallDiff",
    "CallItem",
    "CallRecord",
    "CheckResult",
    "Context",
    "ContextBlock",
    "ContextFilter",
    "ContextMessage",
    "ContextReport",
    "Decision",
    "Fact",
    "ItemChange",
    "Note",
    "Message",
    "Memory",
    "Observation",
    "ParticipantRecord",
    "PostRequest",
    "Replay",
    "ReportItem",
    "SearchHit",
    "SearchResult",
    "SenderType",
    "WorldRecord",
]

#: Records whose modules load heavy libraries, imported when first named.
LAZY = {"SearchHit": "recall.search.base"}


def __getattr__(name: str) -> Any:
    if name in LAZY:
        import importlib

        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
