"""Files served from the package (the inspector's, Swagger UI's): a fixed list per folder, so no
path from a request is ever joined to a folder, and nothing is fetched from a CDN."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse


def add_asset_route(router: APIRouter, url: str, folder: Path, assets: Mapping[str, str]) -> None:
    """Serve `url/{name}` for each name in `assets` (name -> media type) from `folder`; 404 else."""

    async def asset(name: str) -> FileResponse:
        media = assets.get(name)
        if media is None:
            raise HTTPException(404, "no such asset")
        return FileResponse(str(folder / name), media_type=media, headers={"X-Content-Type-Options": "nosniff"})

    router.add_api_route(url + "/{name}", asset, methods=["GET"], include_in_schema=False)
