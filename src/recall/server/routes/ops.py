"""Health, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from recall.app.gate import Principal
from recall.server import answers
from recall.server.deps import Caller, operator_key, state_of

router = APIRouter(tags=["ops"])


@router.get("/healthz", summary="The process is up", **answers.answering(answers.Health))
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="The store is reachable and its migrations are current",
    responses={200: {"model": answers.Ready}, 503: {"model": answers.NotReady, "description": "Not ready"}},
)
def readyz(request: Request, _: Caller) -> JSONResponse:
    try:
        state_of(request).service.schema_version()
    except Exception as exc:  # noqa: BLE001 - any store failure means not ready
        return JSONResponse({"status": "unavailable", "error": str(exc)}, status_code=503)
    return JSONResponse({"status": "ready"})


@router.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
async def metrics(
    request: Request,
    # The counters cover every tenant: with keys, only an admin key reads them.
    _: Annotated[Principal, operator_key("read /metrics (its counters cover every tenant)")],
) -> str:
    state = state_of(request)
    return state.metrics.render(
        waiting=state.notifier.waiting(),
        rate_limited=state.limiter.rejected,
        extraction_queue=state.service.extraction.depth(),
    )
