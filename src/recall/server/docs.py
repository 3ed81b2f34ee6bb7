"""The API docs at `/docs`: Swagger UI served from the `swagger-ui-bundle-v2` package, so the page
works offline (FastAPI's default loads it from a CDN, which leaves a blank page without one)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from swagger_ui_bundle import swagger_ui_path

from recall.server.static import add_asset_route

ASSETS_URL = "/docs/assets"

#: `/docs` and its assets; the app is created with `docs_url=None`, so FastAPI's own stays off.
router = APIRouter(include_in_schema=False)


@router.get("/docs")
async def docs(request: Request) -> HTMLResponse:
    app = request.app
    return get_swagger_ui_html(
        openapi_url=app.openapi_url or "/openapi.json",
        title=f"{app.title} API",
        swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
        # No badge that would send the schema to an outside validator.
        swagger_ui_parameters={"validatorUrl": None},
    )


add_asset_route(
    router,
    ASSETS_URL,
    Path(swagger_ui_path),
    {
        "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
        "swagger-ui.css": "text/css; charset=utf-8",
        "favicon-32x32.png": "image/png",
    },
)
