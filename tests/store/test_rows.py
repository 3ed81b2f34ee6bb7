"""Stored rows as records: the decoding every read shares."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields
from datetime import UTC, datetime

import pytest

from recall.core.models import Message, SenderType
from recall.store.rows import message_record


def test_a_message_row_decodes_to_the_message_its_constructor_makes() -> None:
    """The decoder fills the record's fields directly (no __init__): every field must be set,
    and the record must equal, and behave as, one made the ordinary way."""
    row = (7, "acme/w1", "ops", "ann", "human", "sms", 3, "hi @bot", '["bot"]', '["bot"]', '{"k": [1]}', 1.7e9)
    decoded = message_record(row)
    made = Message(
        id=7,
        world_id="w1",
        sender="ann",
        sender_type=SenderType.HUMAN,
        content="hi @bot",
        created_at=datetime.fromtimestamp(1.7e9, tz=UTC),
        chat_id="ops",
        channel="sms",
        parent_id=3,
        mentions=("bot",),
        addressed=("bot",),
        metadata={"k": [1]},
    )
    assert decoded == made
    assert set(vars(decoded)) == {f.name for f in fields(Message)}
    plain = message_record((8, "w1", "", "bot", "agent", None, None, "ok", "[]", "[]", "{}", 1.7e9))
    assert (plain.chat_id, plain.mentions, plain.metadata, plain.sender_type) == (None, (), {}, SenderType.AGENT)
    with pytest.raises(FrozenInstanceError):
        plain.content = "changed"  # type: ignore[misc]
