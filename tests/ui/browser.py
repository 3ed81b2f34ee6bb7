"""Debian's Chromium, headless, driven by Playwright (`make test` installs it when run as root)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Playwright

CHROMIUM = Path("/usr/bin/chromium")
#: Headless, no sandbox (tests run as root), and none of Chromium's own network traffic: this
#: machine's network is closed, and a page under test talks to the loopback server only.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launch(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
