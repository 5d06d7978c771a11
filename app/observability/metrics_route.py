"""`/metrics`: the process's Prometheus metrics (app/observability/metrics.py), behind the API
key when keys are configured."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

from app.http.auth import Authorized
from app.observability.metrics import exposition

router = APIRouter(tags=["operations"])


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(_: Authorized) -> Response:
    return Response(exposition(), media_type=CONTENT_TYPE_LATEST)
