"""Screenshots of the inspector's main pages, for the docs:

    .venv/bin/python -m tests.ui.screenshots docs/images

A server on the demo world in a temporary store, Debian's Chromium headless; one PNG per page.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from recall import Settings
from recall.demo import build_demo_world
from recall.server.config import ServerConfig
from tests.server.conftest import start_server, stop_server
from tests.ui.browser import launch

#: (file name, page, what to wait for before the picture)
PAGES = [
    ("inspector-world.png", "/ui/worlds/support", "#timeline .msg"),
    ("inspector-agent.png", "/ui/worlds/support/agents/billing?budget=400", "#candidates"),
    ("inspector-recalled.png", "/ui/worlds/support/agents/billing?chat=ticket-9", "#recalled-table"),
    ("inspector-facts.png", "/ui/scopes/user%3Amaria", "#facts-table"),
    ("inspector-search.png", "/ui/worlds/support/search?q=refund+invoice", "#results .hit"),
]


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        live = start_server(
            Path(tmp) / "demo.db", ServerConfig(rate_limit=0), Settings(embeddings="none", index_interval=0)
        )
        try:
            build_demo_world(live.mem)
            with sync_playwright() as playwright:
                browser = launch(playwright)
                page = browser.new_page(viewport={"width": 1200, "height": 820})
                for name, path, ready in PAGES:
                    page.goto(live.url + path)
                    expect(page.locator(ready).first).to_be_visible(timeout=20_000)
                    page.screenshot(path=str(folder / name))
                    print(folder / name)
                browser.close()
        finally:
            stop_server(live)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images"))
