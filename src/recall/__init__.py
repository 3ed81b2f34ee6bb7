"""recall: keep everything each participant heard; give each model call only what matters."""

from recall.api import Agent, Recall, World
from recall.core.context import Context, ContextBlock, ContextReport
from recall.core.models import AgentProfile, ContextFilter, Message, SenderType
from recall.core.observations import Action, Observation
from recall.errors import (
    AmbiguousWorldError,
    BudgetExceededError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    RecallError,
    UnknownParticipantError,
    UnknownWorldError,
)
from recall.service import PostRequest
from recall.settings import Settings

__version__ = "0.1.0"

__all__ = [
    "Action",
    "Agent",
    "AgentProfile",
    "AmbiguousWorldError",
    "BudgetExceededError",
    "ConflictError",
    "Context",
    "ContextBlock",
    "ContextFilter",
    "ContextReport",
    "InvalidInputError",
    "Message",
    "NotFoundError",
    "Observation",
    "PermissionDeniedError",
    "PostRequest",
    "Recall",
    "RecallError",
    "SenderType",
    "Settings",
    "UnknownParticipantError",
    "UnknownWorldError",
    "World",
]
