"""A pip user can open what recall's help points at: the docs ship in the package (`recall
docs`), and no help text names a repository file the wheel does not have."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import typer
from click import Command
from typer.testing import CliRunner

from recall.cli import app

DOCS = Path(__file__).resolve().parents[1] / "docs"


def commands(group: Command, path: list[str]) -> Iterator[list[str]]:
    yield path
    for name, sub in getattr(group, "commands", {}).items():
        yield from commands(sub, [*path, name])


def test_no_help_text_points_at_a_file_of_the_repository() -> None:
    runner = CliRunner()
    for path in commands(typer.main.get_command(app), []):
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, path
        assert "docs/" not in result.output, (path, result.output)


def test_recall_docs_lists_and_prints_every_page_of_the_repository() -> None:
    runner = CliRunner()
    listing = runner.invoke(app, ["docs"]).output
    pages = sorted(DOCS.glob("*.md"))
    assert len(pages) > 10 and len(listing.splitlines()) == len(pages)
    for page in pages:
        assert page.stem in listing
        printed = runner.invoke(app, ["docs", page.stem])
        assert printed.exit_code == 0 and printed.output == page.read_text(encoding="utf-8")
    missing = runner.invoke(app, ["docs", "no-such-page"])
    assert missing.exit_code == 1 and "configuration" in missing.output
