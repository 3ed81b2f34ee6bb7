"""Stored text (fact contents, summary sections, messages, names) prints as it is: rich markup
in it is neither applied nor an error."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from recall import Recall
from recall.cli import app
from recall.demo import DEMO_WORLD
from tests.test_cli import db, recall  # noqa: F401 - the fixture is used by name

MARKUP = "[bold]x[/bold] and [/]"


def test_facts_list_prints_contents_and_sections_literally(db: Path) -> None:  # noqa: F811
    recall(db, "facts", "add", "user:maria", MARKUP)
    with Recall(db) as mem:
        mem.scope("user:maria").set_sections(top_of_mind=MARKUP)
    output = recall(db, "facts", "list", "user:maria")
    assert f"top_of_mind: {MARKUP}" in output
    assert output.count(MARKUP) == 2  # the fact's row and the section


def test_demo_prints_the_conversation_literally(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    with Recall(path) as mem:  # build_demo_world keeps a demo world that has participants
        world = mem.world(DEMO_WORLD, create=True)
        world.add_human("maria")
        world.add_agent("triage")
        world.post("maria", f"@triage {MARKUP}")
    result = CliRunner().invoke(app, ["demo", "--db", str(path)])
    assert result.exit_code == 0, result.output
    assert f"maria: @triage {MARKUP}" in result.output


def test_tables_print_names_and_texts_literally(tmp_path: Path) -> None:
    path = tmp_path / "cli.db"
    recall(path, "world", "create", "w", "--name", MARKUP)
    recall(path, "human", "add", "w", "maria")
    recall(path, "agent", "add", "w", "agent-a")
    recall(path, "post", "w", "--sender", "maria", "--chat", "c1", f"@agent-a {MARKUP}")
    assert MARKUP in recall(path, "world", "list")
    assert MARKUP in recall(path, "search", "w", "bold", "--method", "bm25")
    # The panel cuts lines at the terminal's width: the markup's start is enough.
    assert "@agent-a [bold]x[/bold]" in recall(path, "context", "w", "agent-a", "--chat", "c1", "--format", "table")
