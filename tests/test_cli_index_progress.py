"""After an import, `recall index --once` tells its progress on stderr, and `recall search` in one
world embeds that world's items alone (or none: it answers by keyword at once and says so)."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner, Result

from recall.cli import app
from recall.cli import search as search_command
from recall.cli.progress import ProgressReport

runner = CliRunner()
#: Turns of each conversation of the test's LoCoMo file.
TURNS = 24


def locomo_file(path: Path) -> Path:
    """A tiny LoCoMo file: conversations `a` (about a dog) and `b` (about a garden)."""
    topics = {"a": "my dog Biscuit chased the ball", "b": "the tomatoes in my garden are ripe"}
    samples = [
        {
            "sample_id": sample,
            "conversation": {
                "speaker_a": "Caroline",
                "speaker_b": "Melanie",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": ("Caroline", "Melanie")[i % 2], "dia_id": f"D1:{i + 1}", "text": f"{topic}, day {i}"}
                    for i in range(TURNS)
                ],
            },
        }
        for sample, topic in topics.items()
    ]
    path.write_text(json.dumps(samples))
    return path


def run(db: Path, *args: str) -> Result:
    result = runner.invoke(app, ["--db", str(db), *args])
    assert result.exit_code == 0, result.output
    return result


def without_vectors(db: Path) -> dict[str, int]:
    """Items without a vector, by world, as the store holds them."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT space, SUM(embedded = 0) FROM search_items GROUP BY space").fetchall()
    return {space: int(n) for space, n in rows}


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    db = tmp_path / "l.db"
    run(db, "import", "locomo", str(locomo_file(tmp_path / "locomo.json")))
    return db


def test_index_once_tells_its_progress_on_stderr(imported: Path) -> None:
    result = run(imported, "index", "--once")
    lines = result.stderr.splitlines()
    total = 2 * TURNS
    # The import copied the messages into the index (by their words); their vectors are left.
    assert lines[:2] == [f"embedded 0/{total} items", f"embedded {total}/{total} items"], result.stderr
    assert lines[-1] == f"indexed: {total} steps of work (messages copied + vectors stored)"
    assert without_vectors(imported) == {"locomo-a": 0, "locomo-b": 0}


def test_a_search_embeds_its_own_world_alone(imported: Path) -> None:
    result = run(imported, "search", "locomo-a", "Biscuit", "--json")
    hits = json.loads(result.stdout)
    assert hits and all("Biscuit" in hit["text"] for hit in hits)
    # World a's few items were embedded; world b's are left to the indexer.
    assert without_vectors(imported) == {"locomo-a": 0, "locomo-b": TURNS}
    assert "note:" not in result.stderr


def test_a_search_with_many_items_waiting_answers_by_keyword_at_once(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As after importing thousands of messages: more are waiting than a search embeds.
    monkeypatch.setattr(search_command, "SEARCH_EMBEDS_AT_MOST", TURNS - 1)
    result = run(imported, "search", "locomo-a", "Biscuit", "--json")
    hits = json.loads(result.stdout)
    assert hits and all("Biscuit" in hit["text"] for hit in hits)
    assert without_vectors(imported) == {"locomo-a": TURNS, "locomo-b": TURNS}  # nothing embedded
    note = (
        f"note: {TURNS} items of world locomo-a have no vectors yet: they were ranked by their words"
        " (the best few by meaning too); `recall index --once` embeds them"
    )
    assert note in " ".join(result.stderr.split()), result.stderr


def test_plain_progress_lines_are_throttled_and_quick_work_is_silent() -> None:
    lines = io.StringIO()
    with ProgressReport(Console(file=lines, width=120), every=3600) as progress:
        for done in range(0, 5001, 500):
            progress("embedded", "items", done, 5000)
    # The first line, then none until the work completes (an hour between lines).
    assert lines.getvalue().splitlines() == ["embedded 0/5,000 items", "embedded 5,000/5,000 items"]
    quiet = io.StringIO()
    with ProgressReport(
        Console(file=quiet, width=120), after=3600
    ) as progress:  # as a search's: silent unless it takes a while
        progress("copied", "messages", 0, 10)
        progress("copied", "messages", 10, 10)
    assert quiet.getvalue() == ""
