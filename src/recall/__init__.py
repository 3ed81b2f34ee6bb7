"""recall: keep everything each participant heard; give each model call only what matters.

The whole public surface: the handles (`Recall`, `World`, `Agent`, `Scope`), the records they
return and take (also in `recall.records`), the protocols a caller may implement (`Store`,
`Summarizer`), `Settings`, and every error (`recall.errors`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recall import records
from recall.api import Agent, Recall, Scope, World
from recall.core.context_records import Summarizer
from recall.errors import (
    AmbiguousWorldError,
    AuthenticationError,
    BackendError,
    BudgetExceededError,
    ConflictError,
    EmbeddingModelMissingError,
    ExtractionParseError,
    InvalidInputError,
    ModelError,
    NotFoundError,
    PermissionDeniedError,
    RankFileError,
    RateLimitedError,
    RecallError,
    StoreBusyError,
    StoreOpenError,
    StoreVersionError,
    UnknownCallError,
    UnknownFactError,
    UnknownMemoryError,
    UnknownParticipantError,
    UnknownWorldError,
)
from recall.records import (
    Action,
    AgentProfile,
    BuildParams,
    CallDiff,
    CallItem,
    CallRecord,
    CheckResult,
    Context,
    ContextBlock,
    ContextFilter,
    ContextMessage,
    ContextReport,
    Decision,
    Fact,
    ItemChange,
    Memory,
    Message,
    Note,
    Observation,
    ParticipantRecord,
    PostRequest,
    Replay,
    ReportItem,
    SearchResult,
    SenderType,
    WorldRecord,
)
from recall.settings import Settings
from recall.store.base import Store
from recall.version import __version__ as __version__

if TYPE_CHECKING:
    from recall.records import SearchHit

__all__ = [
    "Action",
    "Agent",
    "AgentProfile",
    "AmbiguousWorldError",
    "AuthenticationError",
    "BackendError",
    "BudgetExceededError",
    "BuildParams",
    "CallDiff",
    "CallItem",
    "CallRecord",
    "CheckResult",
    "ConflictError",
    "Context",
    "ContextBlock",
    "ContextFilter",
    "ContextMessage",
    "ContextReport",
    "Decision",
    "EmbeddingModelMissingError",
    "ExtractionParseError",
    "Fact",
    "InvalidInputError",
    "ItemChange",
    "Note",
    "Message",
    "ModelError",
    "NotFoundError",
    "Memory",
    "Observation",
    "ParticipantRecord",
    "PermissionDeniedError",
    "PostRequest",
    "RankFileError",
    "RateLimitedError",
    "Recall",
    "RecallError",
    "Replay",
    "ReportItem",
    "Scope",
    "SearchHit",
    "SearchResult",
    "SenderType",
    "Settings",
    "Store",
    "StoreBusyError",
    "StoreOpenError",
    "StoreVersionError",
    "Summarizer",
    "UnknownCallError",
    "UnknownFactError",
    "UnknownMemoryError",
    "UnknownParticipantError",
    "UnknownWorldError",
    "World",
    "WorldRecord",
]


def __getattr__(name: str) -> Any:
    """Records whose modules load heavy libraries (numpy) come on first use."""
    if name in records.LAZY:
        return getattr(records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
