"""Which SQLite module the store runs on: the one this run of the suite asked for."""

from __future__ import annotations

import os
from pathlib import Path

from recall import Recall
from recall.store import sqlite as store_sqlite


def test_the_store_runs_on_the_module_this_run_asked_for(tmp_path: Path) -> None:
    stdlib = os.environ.get("RECALL_TEST_STDLIB_SQLITE") == "1"
    assert store_sqlite.sqlite3.__name__ == ("sqlite3" if stdlib else "pysqlite3.dbapi2")
    with Recall(str(tmp_path / "recall.db")) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("helper", system_prompt="You help.")
        world.post("maria", "@helper my parcel number is 4471")
        assert world.agent("helper").context().openai()[-1]["content"] == "@helper my parcel number is 4471"
