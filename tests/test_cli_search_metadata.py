"""`recall search --metadata KEY=VALUE`: metadata filters from the command line, each value read
as JSON when it is JSON, else as text."""

from __future__ import annotations

import json
from pathlib import Path

from recall import Recall, Settings
from tests.test_cli import db, recall  # noqa: F401 - the fixture is used by name

__all__ = ["db"]


def test_search_metadata_options(db: Path) -> None:  # noqa: F811
    with Recall(db, Settings(index_interval=0, embeddings="none")) as mem:
        world = mem.world("w")
        world.post("maria", "my parcel was lost", metadata={"channel": "sms", "priority": 2, "code": "007"})
        world.post("maria", "my parcel is late", metadata={"channel": "email", "priority": 5, "vip": True})
        world.post("maria", "where is my parcel")
        world.add_memory("parcels go through Paris", channel="sms")

    def search(*options: str) -> set[str]:
        return {hit["text"] for hit in json.loads(recall(db, "search", "w", "parcel", "--json", *options))}

    lost, late, memory = "maria: my parcel was lost", "maria: my parcel is late", "parcels go through Paris"
    assert search("--metadata", "channel=sms") == {lost, memory}
    assert search("--metadata", "channel=sms", "--kind", "message") == {lost}
    assert search("--metadata", "priority=2") == {lost}  # a number: JSON
    assert search("--metadata", "channel=sms", "--metadata", "priority=2") == {lost}
    assert search("--metadata", "channel=sms", "--metadata", "priority=5") == set()
    assert search("--metadata", "vip=true") == {late}
    assert search("--metadata", "code=007") == {lost}  # not JSON: text
    assert search("--metadata", 'priority={"$gte": 3}') == {late}
    assert search("--metadata", 'channel={"$in": ["email", "fax"]}', "--method", "bm25") == {late}
    table = recall(db, "search", "w", "parcel", "--metadata", "channel=email")
    assert "late" in table and "lost" not in table

    assert "metadata: must be KEY=VALUE" in recall(db, "search", "w", "parcel", "--metadata", "channel", ok=False)
    unknown = recall(db, "search", "w", "parcel", "--metadata", 'channel={"$like": "s"}', ok=False)
    assert "metadata.channel" in unknown and "$like" in unknown
    twice = recall(db, "search", "w", "parcel", "--metadata", "a=1", "--metadata", "a=2", ok=False)
    assert "metadata.a" in twice and "twice" in twice
