"""`recall docs`: the documentation pages, shipped inside the package, so a pip install can read
what help texts and error messages point at without this repository."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recall.cli.shared import fail

#: The pages (docs/*.md of the repository), installed as recall's package data.
PAGES = Path(__file__).resolve().parents[1] / "docs"


def pages() -> dict[str, Path]:
    """Each page by its name (the file name without `.md`)."""
    return {path.stem: path for path in sorted(PAGES.glob("*.md"))}


def title(path: Path) -> str:
    """The page's first heading."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def docs(
    page: Annotated[
        str | None, typer.Argument(help="A page to print as Markdown, e.g. configuration (default: list the pages).")
    ] = None,
    path: Annotated[bool, typer.Option("--path", help="Print the page's file path instead of its text.")] = False,
) -> None:
    """recall's documentation: list the pages, or print one (they ship with the package)."""
    found = pages()
    if page is None:
        width = max(map(len, found), default=0)
        for name, file in found.items():
            typer.echo(str(file) if path else f"{name:<{width}}  {title(file)}")
        return
    name = page.removesuffix(".md").removeprefix("docs/")
    if name not in found:
        fail(f"no page {page!r}; the pages: {', '.join(found)}")
    typer.echo(str(found[name]) if path else found[name].read_text(encoding="utf-8"), nl=path)
