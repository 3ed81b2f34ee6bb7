"""Storage: one protocol (`base.Store`), an embedded SQLite implementation, more to come."""

from recall.store.base import NewMessage, ParticipantRecord, Store, WorldRecord
from recall.store.sqlite import SQLiteStore

__all__ = ["NewMessage", "ParticipantRecord", "SQLiteStore", "Store", "WorldRecord", "open_store"]


def open_store(location: str) -> Store:
    """Open the store a location names: a file path (SQLite) or `:memory:`."""
    if location.startswith(("postgresql://", "postgres://")):
        from recall.errors import InvalidInputError

        raise InvalidInputError("db", "the PostgreSQL store is not available yet; use a SQLite file path")
    return SQLiteStore(location)
