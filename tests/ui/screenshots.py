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

#: (file name, page, what to wait for before the picture, the part to picture or None: the page)
PAGES = [
    ("inspector-world.png", "/ui/worlds/support", "#timeline .msg", None),
    ("inspector-agent.png", "/ui/worlds/support/agents/billing?budget=400", "#candidates", None),
    ("inspector-recalled.png", "/ui/worlds/support/agents/billing?chat=ticket-9", "#recalled-table", "#recalled"),
    ("inspector-facts.png", "/ui/scopes/user%3Amaria", "#facts-table", None),
    ("inspector-search.png", "/ui/worlds/support/search?q=refund+invoice", "#results .hit", None),
]


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        live = start_server(
            Path(tmp) / "demo.db", ServerConfig(rate_limit=0), Settings(embeddings="none", index_interval=0)
        )
        try:
            world = build_demo_world(live.mem)
            # A later ticket, so the agent page shows a recalled passage from the first one.
            asked = world.post("maria", "@billing is the refund of my double charge on its way?", chat="ticket-9")
            # Two recorded model calls of billing for that message, the second without the
            # recalled past and met by a model outage, and a fact edited since the first: the
            # calls timeline, and the first replayed.
            billing = world.agent("billing")
            first = billing.context("ticket-9", message=asked, record=True).call_id
            second = billing.context("ticket-9", message=asked, recalled_max_tokens=0, record=True).call_id
            assert first is not None and second is not None
            billing.call_outcome(first)
            billing.call_outcome(second, error="model server http://127.0.0.1:11434/v1 answered 503")
            fact = live.mem.scope("user:maria").list()[0]
            live.mem.scope("user:maria").update(fact.id, confidence=0.6)
            calls = "/ui/worlds/support/agents/billing/calls"
            pages = [
                *PAGES,
                ("inspector-calls.png", calls, "#calls-table tr[data-id]", None),
                ("inspector-call-replay.png", f"{calls}/{first}", "#diff-table", None),
            ]
            with sync_playwright() as playwright:
                browser = launch(playwright)
                page = browser.new_page(viewport={"width": 1200, "height": 820})
                for name, path, ready, part in pages:
                    page.goto(live.url + path)
                    expect(page.locator(ready).first).to_be_visible(timeout=20_000)
                    if part is None:
                        page.screenshot(path=str(folder / name))
                    else:
                        page.locator(part).screenshot(path=str(folder / name))
                    print(folder / name)
                browser.close()
        finally:
            stop_server(live)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images"))
