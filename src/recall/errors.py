"""Typed errors: each says what was wrong and what to do about it.

Every interface (Python, HTTP, CLI) raises or maps these, so a caller can act on the
type and show the message as it is.
"""

from __future__ import annotations


class RecallError(Exception):
    """Base class of every error recall raises on purpose."""


class InvalidInputError(RecallError, ValueError):
    """The caller passed something recall cannot accept; nothing was stored."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class NotFoundError(RecallError, LookupError):
    """A world, participant or message the caller named does not exist."""


class UnknownWorldError(NotFoundError):
    def __init__(self, world_id: str) -> None:
        self.world_id = world_id
        super().__init__(
            f"unknown world {world_id!r}: create it first "
            f"(Recall.world({world_id!r}, create=True) or `recall world create {world_id}`)"
        )


class AmbiguousWorldError(RecallError):
    """Several tenants have a world of this id, and the caller named no tenant."""

    def __init__(self, world_id: str, tenants: int) -> None:
        self.world_id = world_id
        self.tenants = tenants
        super().__init__(
            f"world {world_id!r} exists in {tenants} tenants: name the tenant "
            f"(Recall.world({world_id!r}, tenant=...) or `recall --tenant TENANT ...`)"
        )


class UnknownParticipantError(NotFoundError):
    def __init__(self, world_id: str, participant_id: str, kind: str = "participant") -> None:
        self.world_id = world_id
        self.participant_id = participant_id
        super().__init__(
            f"unknown {kind} {participant_id!r} in world {world_id!r}: register it first "
            f"(world.add_agent(...) / world.add_human(...), or `recall agent add` / `recall human add`)"
        )


class PermissionDeniedError(RecallError):
    """The caller may not do this to what it named (HTTP 403), e.g. an agent deleting a memory
    the world's agents share."""


class ConflictError(RecallError):
    """The thing the caller tried to create already exists in an incompatible form."""


class BudgetExceededError(RecallError):
    """The parts of a context that are never cut do not fit the token budget."""

    def __init__(self, needed: int, budget: int, detail: str) -> None:
        self.needed = needed
        self.budget = budget
        super().__init__(
            f"max_tokens={budget} is too small: {detail} alone need {needed} tokens; "
            f"raise max_tokens to at least {needed} or shorten them"
        )


class UnknownFactError(NotFoundError):
    def __init__(self, scope: str, fact_id: object) -> None:
        super().__init__(f"unknown fact {fact_id!r} in scope {scope!r}: list the scope's facts to see their ids")


class UnknownNoteError(NotFoundError):
    def __init__(self, world_id: str, note_id: object) -> None:
        super().__init__(f"unknown memory {note_id!r} in world {world_id!r}: list the memories to see their ids")


#: Why text with a NUL character is refused: PostgreSQL cannot store it, and the same input
#: must be accepted or refused alike on every store.
NUL_MESSAGE = "must not contain NUL (\\x00) characters"
