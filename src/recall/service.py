"""Moved: the use cases are `recall.app` (service.py composes them); the lead removes this shim."""

from recall.app.deliveries import DEFAULT_SESSION, INBOX_PAGE  # moved: app/deliveries.py
from recall.app.posting import IMPORT_BATCH, PostRequest  # moved: app/posting.py
from recall.app.service import RecallService  # moved: app/service.py
from recall.app.validation import (  # moved: app/validation.py
    ID_PATTERN,
    MAX_HISTORY_LIMIT,
    MAX_ID_LENGTH,
    MAX_MESSAGE_ID,
    parse_timestamp,
)
from recall.app.worlds import Roster, profile_from_record  # moved: app/worlds.py

__all__ = [
    "DEFAULT_SESSION",
    "ID_PATTERN",
    "IMPORT_BATCH",
    "INBOX_PAGE",
    "MAX_HISTORY_LIMIT",
    "MAX_ID_LENGTH",
    "MAX_MESSAGE_ID",
    "PostRequest",
    "RecallService",
    "Roster",
    "parse_timestamp",
    "profile_from_record",
]
