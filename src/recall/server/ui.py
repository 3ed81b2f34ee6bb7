"""The web inspector: what every agent heard and what its model saw, at `/` of `recall serve`.

The pages are one static shell (`ui/index.html`) with a small script (`ui/app.js`) that reads the
REST API with the key the user typed, kept in the browser's session storage. So the shell holds
no data and needs no auth; every piece of stored text reaches the page through the API and is
put into the document as text (never as HTML), so nothing stored can inject markup. The assets
are served from the package: no CDN, nothing fetched from elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse

from recall.server.static import add_asset_route

UI_DIR = Path(__file__).parent / "ui"
#: The shell's security headers: scripts and styles from this server only, no framing.
SHELL_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

#: The inspector: `/` redirects to `/ui/`, every `/ui/…` page is the shell.
router = APIRouter(include_in_schema=False)


@router.get("/")
async def root() -> RedirectResponse:
    return RedirectResponse("/ui/")


add_asset_route(
    router, "/ui/assets", UI_DIR, {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
)


@router.get("/ui/{page:path}")
async def shell(page: str) -> FileResponse:
    return FileResponse(UI_DIR / "index.html", media_type="text/html; charset=utf-8", headers=SHELL_HEADERS)
